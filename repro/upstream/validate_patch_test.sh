#!/usr/bin/env bash
# Shows `upstream.py run F4 --with peft=PATH` both ways on a source tree of
# the pre-fix release (peft 0.11.1's sdist from PyPI): unpatched it
# reproduces F4; with F4-peft-local-import.patch (the upstream fix's change,
# peft PR 1879: the import that initializes CUDA moved into the function that
# needs it) it passes.
# Usage: validate_patch_test.sh [--json]
# Exit: 0 both as expected, 1 not, 3 not run (no package index).
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
json=0
[ "${1:-}" = --json ] && json=1
if [ "$json" -eq 1 ]; then exec 3>&1 1>&2; else exec 3>/dev/null; fi
summary() { echo "{\"passed\": $1, \"failed\": $2, \"not_run\": [$3]}" >&3; }
work=$(mktemp -d -t faultline-validate-patch.XXXXXX) || exit 1
trap 'rm -rf "$work"' EXIT
if ! python3 -m pip download --quiet --no-deps --no-binary :all: --dest "$work" peft==0.11.1 >/dev/null 2>&1; then
  echo "NOT RUN: the peft 0.11.1 source distribution cannot be fetched (no package index)"
  summary 0 0 '"F4 --with: the Python package index cannot be reached"'
  exit 3
fi
tar -xzf "$work"/peft-0.11.1.tar.gz -C "$work" && mv "$work/peft-0.11.1" "$work/unpatched" &&
  cp -r "$work/unpatched" "$work/patched" &&
  (cd "$work/patched" && patch --quiet -p1 <"$here/F4-peft-local-import.patch") ||
  { echo "FAIL: could not unpack or patch peft 0.11.1"; summary 0 1 ""; exit 1; }
passed=0 failed=0
for tree in unpatched:reproduced patched:passed; do
  name=${tree%%:*} want=${tree#*:}
  got=$(python3 "$here/upstream.py" run F4 --with "peft=$work/$name" --json |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["results"][0]["outcome"])')
  if [ "$got" = "$want" ]; then
    echo "ok: peft 0.11.1 $name: $got"
    passed=$((passed + 1))
  else
    echo "FAIL: peft 0.11.1 $name: $got, expected $want"
    failed=$((failed + 1))
  fi
done
summary "$passed" "$failed" ""
[ "$failed" -eq 0 ]
