#!/usr/bin/env bash
# The main job: reproduces every documented failure and validates each fix,
# on real CUDA when a GPU is present and on simcuda otherwise. Installs what
# is missing. Its arguments go to `repro all`, checked before any install.
# Usage: ci/repro.sh [--json] [--runtime simcuda|cuda|auto] [--repeat N]
#        ci/repro.sh --upstream [--json] [--repeat N]
# --upstream runs the catalog's upstream variants instead: the real package
# releases before and after each fix, over drop-in simcuda
# (repro/upstream/upstream.py; cached venvs under ~/.cache/faultline).
# Exit: as `repro all` (0 every outcome matched, 1 one did not, 2 usage,
# 3 all that ran matched but some need 2 GPUs, or with --upstream some
# could not reach the package index, 4 --runtime cuda and no usable
# device), or 5 when the setup or the build failed (with --json, stdout
# then holds {"error": "..."} after 2, 4 and 5).
set -uo pipefail
# Help is answered here: not after an apt-get and a build.
for arg in "$@"; do
  case "$arg" in -h|--help) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;; esac
done
cd "$(dirname "$0")/.."
json=0
for arg in "$@"; do [ "$arg" = --json ] && json=1; done
fail() {  # fail <status> <message>
  echo "ci/repro.sh: $2" >&2
  if [ "$json" -eq 1 ]; then jq -cn --arg error "$2" '{error: $error}'; fi
  exit "$1"
}
could_not_run() { fail 5 "$1"; }
usage_error() { fail 2 "$1 (usage: ci/repro.sh [--json] [--runtime simcuda|cuda|auto] [--repeat N] | --upstream [--json] [--repeat N])"; }
# The arguments `repro all` takes, checked here: not after an apt-get and a
# build. Exactly what the usage above says, in CLI11's two spellings
# (--runtime cuda, --runtime=cuda); --runtime and --repeat at most once.
runtime_given="" repeat_given="" upstream=0
check_runtime() {
  [ -z "$runtime_given" ] || usage_error "--runtime given twice ('$runtime_given', then '$1'); give it once"
  runtime_given=$1
  case "$1" in
    simcuda|cuda|auto) ;;
    *) usage_error "--runtime is '$1'; expected simcuda, cuda or auto" ;;
  esac
}
check_repeat() {
  [ -z "$repeat_given" ] || usage_error "--repeat given twice ('$repeat_given', then '$1'); give it once"
  repeat_given=$1
  # As repro reads it (ParseWhole<int>): decimal digits only, within int.
  local digits=${1#"${1%%[!0]*}"}  # without leading zeros
  if ! [[ "$1" =~ ^[0-9]+$ ]] || [ -z "$digits" ]; then
    usage_error "--repeat is '$1'; expected a whole number of runs >= 1"
  elif [ "${#digits}" -gt 10 ] || [ "$digits" -gt 2147483647 ]; then
    usage_error "--repeat is '$1'; expected at most 2147483647"
  fi
}
args=("$@")
for ((i = 0; i < ${#args[@]}; i++)); do
  arg=${args[i]}
  case "$arg" in
    --json) ;;
    --upstream) upstream=1 ;;
    --runtime|--repeat)
      next=${args[i + 1]-}
      if [ $((i + 1)) -ge ${#args[@]} ] || [[ "$next" == --* ]]; then  # the end, or the next option
        if [ "$arg" = --runtime ]; then usage_error "--runtime needs a value: simcuda, cuda or auto"; fi
        usage_error "--repeat needs a value: a number of runs N >= 1"
      fi
      i=$((i + 1))
      if [ "$arg" = --runtime ]; then check_runtime "$next"; else check_repeat "$next"; fi ;;
    --runtime=*) check_runtime "${arg#--runtime=}" ;;
    --repeat=*) check_repeat "${arg#--repeat=}" ;;
    --json=*) usage_error "--json takes no value (got '$arg')" ;;
    -*) usage_error "unknown option '$arg'; expected --json, --runtime, --repeat or --upstream" ;;
    *) usage_error "unexpected argument '$arg' (\`repro all\` takes no positional argument)" ;;
  esac
done
if [ "$upstream" -eq 1 ] && [ -n "$runtime_given" ]; then
  usage_error "--runtime does not apply to --upstream (the upstream variants run on drop-in simcuda)"
fi
ci/setup.sh >&2 || could_not_run "ci/setup.sh failed (see above)"
if [ "$upstream" -eq 1 ]; then
  bazel build --config=ci //reference/dropin >&2 || could_not_run "building //reference/dropin failed (see above)"
  upstream_args=(all)
  for arg in "$@"; do [ "$arg" = --upstream ] || upstream_args+=("$arg"); done
  exec python3 repro/upstream/upstream.py "${upstream_args[@]}"
fi
bazel build --config=ci //repro >&2 || could_not_run "building //repro failed (see above)"
# This configuration's output folder (the bazel-bin link follows whatever build ran last).
bin="$(bazel info --config=ci bazel-bin 2>/dev/null)" || could_not_run "bazel info failed"
exec "$bin/repro/repro" all "$@"
