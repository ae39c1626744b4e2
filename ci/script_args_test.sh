#!/usr/bin/env bash
# The CI scripts answer --help and refuse bad arguments before they install
# or build anything: ci/setup.sh is not among this test's files, so a script
# that ran it first would fail with another status than the one expected.
set -uo pipefail
cd "$(dirname "$0")/.."
export HOME="${HOME:-$TEST_TMPDIR}"  # Bazel gives a test no HOME; fuzz.sh's default --work is under it

source bench/check_lib.sh
expect() {  # expect <wanted status> <command...>
  local wanted=$1
  shift
  "$@" >/dev/null 2>&1
  check "$* (exit status)" "$wanted" "$?"
}

expect 0 ci/test.sh --help
expect 2 ci/test.sh --bogus
# The whole usage, its exit statuses included.
test_said=$(ci/test.sh --help 2>&1)
grep -q '^Exit: 0 every stage green' <<<"$test_said"
check "ci/test.sh --help ends with its exit statuses" 0 "$?"
expect 0 ci/repro.sh --help
expect 0 ci/repro.sh --json --help
expect 0 ci/gpu_bundle.sh --help
expect 2 ci/gpu_bundle.sh --bogus
expect 2 ci/gpu_bundle.sh --out
expect 0 ci/gpu.sh --help
expect 0 ci/gpu.sh out --help
expect 2 ci/gpu.sh out --bundle=b.tar.xz
expect 2 ci/gpu.sh out --check-args
expect 2 ci/gpu.sh out --bundle b.tar.xz
expect 2 ci/gpu.sh out --bogus
expect 2 ci/gpu.sh out --simulate --only sanitizer
expect 0 ci/gpu_run.sh out --check-args
expect 2 ci/gpu_run.sh out --budget-s 0 --check-args
expect 2 ci/gpu_run.sh out --only nothing --check-args
expect 0 ci/gpu_run.sh out --repeat 3 --check-args
expect 2 ci/gpu_run.sh out --repeat 0 --check-args
expect 2 ci/gpu_run.sh out --repeat x --check-args
expect 2 env GTEST_REPEAT=2 ci/gpu_run.sh out --check-args
expect 2 ci/gpu.sh out --repeat 0
# --budget-s is gpu_run.sh's, not a --bundle: gpu.sh passes it on (its check says so, not gpu.sh's refusal).
gpu_said=$(ci/gpu.sh out --budget-s 0 2>&1)
grep -q -- '--budget-s is 0' <<<"$gpu_said"
check "ci/gpu.sh passes --budget-s to ci/gpu_run.sh" 0 "$?"
expect 0 ci/fuzz.sh --help
expect 2 ci/fuzz.sh --targets ""
# fuzz.sh exits 2 for a failed setup too: its message must be the usage one.
fuzz_said=$(ci/fuzz.sh --targets "" 2>&1)
grep -q -- '--targets is empty' <<<"$fuzz_said"
check "ci/fuzz.sh --targets \"\" names --targets" 0 "$?"

finish script_args_test
