#!/usr/bin/env bash
# Checks that every C++ and CUDA source file of the project is formatted as
# .clang-format says (clang-format-14, Debian's; ci/setup.sh installs it).
# Usage: ci/format_check.sh [--json] [--fix]
#   --json  one JSON summary on stdout ({"passed", "failed", "not_run",
#           "unformatted"}); the files' diffs go to stderr
#   --fix   format the files in place instead of checking them
# Exit: 0 every file is formatted (or --fix formatted them), 1 some are not
# (each named, with its diff), 2 bad usage or clang-format-14 missing.
set -uo pipefail
cd "$(dirname "$0")/.."
json=0 fix=0
for arg in "$@"; do
  case "$arg" in
    --json) json=1 ;;
    --fix) fix=1 ;;
    -h|--help) sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "ci/format_check.sh: unknown argument '$arg' (try --help)" >&2; exit 2 ;;
  esac
done
command -v clang-format-14 >/dev/null ||
  { echo "ci/format_check.sh: clang-format-14 is missing (run ci/setup.sh)" >&2; exit 2; }
mapfile -t files < <(git ls-files '*.cc' '*.h' '*.cu' '*.cuh')
if [ "$fix" -eq 1 ]; then
  clang-format-14 -i "${files[@]}"
  echo "ci/format_check.sh: formatted ${#files[@]} files" >&2
  exit 0
fi
unformatted=()
for f in "${files[@]}"; do
  if ! clang-format-14 "$f" | diff -u --label "$f" --label "$f (formatted)" "$f" - >&2; then
    unformatted+=("$f")
  fi
done
echo "ci/format_check.sh: ${#files[@]} files, ${#unformatted[@]} not formatted${unformatted:+ (fix: ci/format_check.sh --fix)}" >&2
if [ "$json" -eq 1 ]; then
  jq -cn --argjson passed $((${#files[@]} - ${#unformatted[@]})) --argjson failed "${#unformatted[@]}" \
    --args '{passed: $passed, failed: $failed, not_run: [], unformatted: $ARGS.positional}' "${unformatted[@]}"
fi
[ "${#unformatted[@]}" -eq 0 ]
