#!/usr/bin/env bash
# The real-package tier: PyPI's CUDA builds of PyTorch (2.15.0 for CUDA 13,
# 2.7.1 for CUDA 12) and numba-cuda, unmodified, over drop-in simcuda.
# Creates the cached venvs it needs (ci/py_venv.sh), then runs every
# scenario of reference/dropin/torch_scenarios.py (numba_scenarios.py)
# under ci/simcuda.sh, then the catalog's upstream variants (the real
# peft and torch releases, repro/upstream/upstream.py all) and a user's
# patch validated with --with (repro/upstream/validate_patch_test.sh).
# Usage: ci/dropin_tier.sh [--json] [--install-only]   (--json: one JSON
# summary on stdout, progress on stderr; --install-only: make every venv
# and overlay the tier uses and run nothing, without Bazel, so that
# ci/test.sh can download them while it builds)
# Exit: 0 every scenario passed, 1 one failed (or an install failed),
# 2 bad usage, 3 not run: the package index cannot be reached (the reason
# is printed; never a pass).
set -uo pipefail
cd "$(dirname "$0")/.."
json=0 install_only=0
for arg in "$@"; do
  case "$arg" in
    --json) json=1 ;;
    --install-only) install_only=1 ;;
    -h|--help) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "ci/dropin_tier.sh: unknown argument '$arg' (try --help)" >&2; exit 2 ;;
  esac
done
if [ "$json" -eq 1 ]; then exec 3>&1 1>&2; else exec 3>/dev/null; fi

# package set, then the scenarios that run on it
readonly RUNS=(torch-2.15.0:torch_scenarios.py torch-2.7.1:torch_scenarios.py numba-cuda-0.20.1:numba_scenarios.py)
if [ "$install_only" -eq 1 ]; then
  status=0
  combine() {  # combine <exit>: any failure (1) outweighs "not run" (3), which outweighs 0
    case "$1" in 0) ;; 3) [ "$status" -eq 1 ] || status=3 ;; *) status=1 ;; esac
  }
  for run in "${RUNS[@]}"; do
    ci/py_venv.sh "${run%%:*}" >/dev/null
    combine $?
  done
  python3 repro/upstream/upstream.py install --json >&3
  combine $?
  exit "$status"
fi

# The drop-in libraries, built once: every ci/simcuda.sh call below (the
# scenarios, upstream.py, the --with check) then skips Bazel.
if [ -z "${FAULTLINE_SIMCUDA_LIB_DIR:-}" ]; then
  bazel build --config=ci //reference/dropin >/dev/null 2>&1 &&
    FAULTLINE_SIMCUDA_LIB_DIR="$(bazel info --config=ci bazel-bin 2>/dev/null)/reference/dropin" ||
    { echo "ci/dropin_tier.sh: building //reference/dropin failed (run: bazel build //reference/dropin)" >&2; exit 1; }
  export FAULTLINE_SIMCUDA_LIB_DIR
fi

passed=0 failed=0
rows=() not_run=()
for run in "${RUNS[@]}"; do
  set_name=${run%%:*} scenarios=${run#*:}
  echo "--- $set_name: the venv"
  py=$(ci/py_venv.sh "$set_name" | tail -n 1)
  rc=${PIPESTATUS[0]}
  if [ "$rc" -eq 3 ]; then
    not_run+=("$set_name: the Python package index cannot be reached")
    continue
  elif [ "$rc" -ne 0 ] || [ ! -x "$py" ]; then
    echo "ci/dropin_tier.sh: $set_name: the venv could not be made (exit $rc)"
    failed=$((failed + 1))
    rows+=("$(jq -cn --arg set "$set_name" --arg error "ci/py_venv.sh exited $rc" '{set: $set, ok: false, error: $error}')")
    continue
  fi
  echo "--- $set_name: $scenarios under ci/simcuda.sh"
  out=$(python3 "reference/dropin/$scenarios" --python "$py" --launcher ci/simcuda.sh --json)
  counts=$(python3 -c 'import json,sys; r=json.loads(sys.stdin.read()); s=r["scenarios"]; print(sum(x["ok"] for x in s), sum(not x["ok"] for x in s))' <<<"$out") ||
    counts="0 1"
  read -r ok bad <<<"$counts"
  passed=$((passed + ok))
  failed=$((failed + bad))
  rows+=("$(jq -cn --arg set "$set_name" --argjson result "${out:-null}" '{set: $set, result: $result}' 2>/dev/null ||
    jq -cn --arg set "$set_name" '{set: $set, result: null}')")
  echo "--- $set_name: $ok passed, $bad failed"
done

# The upstream variants and the --with check print a JSON summary of their own.
for check in "upstream:python3 repro/upstream/upstream.py all --json" \
  "upstream --with:repro/upstream/validate_patch_test.sh --json"; do
  name=${check%%:*} command=${check#*:}
  echo "--- $name: $command"
  out=$($command)
  rc=$?
  counts=$(python3 -c 'import json,sys
r = json.loads(sys.stdin.read())
if "results" in r:  # upstream.py
    print(sum(x["matched"] for x in r["results"]), sum(not x["matched"] for x in r["results"]), len(r["not_run"]))
else:
    print(r["passed"], r["failed"], len(r["not_run"]))' <<<"$out") || counts="0 1 0"
  read -r ok bad skipped <<<"$counts"
  passed=$((passed + ok))
  failed=$((failed + bad))
  [ "$rc" -ne 3 ] || not_run+=("$name: the Python package index cannot be reached ($skipped not run)")
  [ "$rc" -eq 0 ] || [ "$rc" -eq 3 ] || [ "$bad" -ne 0 ] || failed=$((failed + 1))
  rows+=("$(jq -cn --arg set "$name" --argjson result "${out:-null}" '{set: $set, result: $result}' 2>/dev/null ||
    jq -cn --arg set "$name" '{set: $set, result: null}')")
  echo "--- $name: $ok passed, $bad failed"
done

for reason in "${not_run[@]}"; do echo "NOT RUN: $reason"; done
echo "dropin tier: $passed passed, $failed failed, ${#not_run[@]} not run"
{ printf '%s\n' "${rows[@]}" | jq -cs --argjson passed "$passed" --argjson failed "$failed" \
    --args '{passed: $passed, failed: $failed, not_run: $ARGS.positional, runs: .}' "${not_run[@]}"; } >&3
if [ "$failed" -ne 0 ]; then exit 1; fi
if [ "${#not_run[@]}" -ne 0 ]; then exit 3; fi
exit 0
