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
expect_said() {  # expect_said <wanted status> <text the output must hold> <command...>: no traceback either
  local wanted=$1 text=$2 said
  shift 2
  said=$("$@" 2>&1)
  check "$* (exit status)" "$wanted" "$?"
  grep -qF -- "$text" <<<"$said"
  check "$* says \"$text\"" 0 "$?"
  grep -q Traceback <<<"$said"
  check "$* prints no traceback" 1 "$?"
}

expect 0 ci/test.sh --help
expect 2 ci/test.sh --bogus
# The whole usage, its exit statuses included.
test_said=$(ci/test.sh --help 2>&1)
grep -q '^Exit: 0 every stage green' <<<"$test_said"
check "ci/test.sh --help ends with its exit statuses" 0 "$?"
expect 0 ci/repro.sh --help
expect 0 ci/repro.sh --json --help
expect 0 ci/simcuda.sh --help
expect 2 ci/simcuda.sh --bogus -- true
expect 2 ci/simcuda.sh --devices 65 -- true
expect 0 ci/dropin_tier.sh --help
expect 2 ci/dropin_tier.sh --bogus
expect 2 ci/dropin_tier.sh --install-only --bogus
expect_said 0 "--install-only" ci/dropin_tier.sh --help
expect 0 ci/py_venv.sh --help
expect 2 ci/py_venv.sh
expect 2 ci/py_venv.sh torch-1.0.0
# Every other argument is checked before ci/setup.sh. Checked on a copy of
# the script beside a stub setup that fails (exit 5) and a stub bazel and
# repro: a script that got past its check would not reach the real setup or
# Bazel, even when this test runs outside Bazel in a checkout.
mkdir -p "$WORK/repro/ci" "$WORK/repro/bin" "$WORK/repro/out/repro"
cp ci/repro.sh ci/lib.sh "$WORK/repro/ci/"
printf '#!/bin/sh\n[ "${STUB_SETUP_OK:-}" = 1 ] || { echo "stub ci/setup.sh ran" >&2; exit 1; }\n' \
  >"$WORK/repro/ci/setup.sh"
printf '#!/bin/sh\n[ "$1" != info ] || echo "%s"\n' "$WORK/repro/out" >"$WORK/repro/bin/bazel"
printf '#!/bin/sh\nprintf "[%%s]" "$@"\n' >"$WORK/repro/out/repro/repro"
chmod +x "$WORK/repro/ci/setup.sh" "$WORK/repro/bin/bazel" "$WORK/repro/out/repro/repro"
repro_sh() { PATH="$WORK/repro/bin:$PATH" "$WORK/repro/ci/repro.sh" "$@"; }  # ci/repro.sh, copied
expect 0 repro_sh --help
expect_said 2 "unknown option '--bogus'" repro_sh --bogus
expect_said 2 "unexpected argument 'stray'" repro_sh stray
expect_said 2 "--repeat is '0'" repro_sh --repeat 0
expect_said 2 "--repeat is 'abc'" repro_sh --repeat abc
expect_said 2 "--repeat is '0'" repro_sh --repeat=0
expect_said 2 "--repeat is '000'" repro_sh --repeat 000
expect_said 2 "--repeat is '+3'" repro_sh --repeat +3
expect_said 2 "expected at most 2147483647" repro_sh --repeat 2147483648
expect_said 2 "--repeat needs a value" repro_sh --repeat
expect_said 2 "--runtime is 'cpu'" repro_sh --runtime cpu
expect_said 2 "--runtime is 'cpu'" repro_sh --runtime=cpu
expect_said 2 "--runtime needs a value" repro_sh --runtime --json
expect_said 2 "--runtime given twice" repro_sh --runtime cuda --runtime simcuda
expect_said 2 "--json takes no value" repro_sh --json=false
# With --json the refusal is also on stdout, as JSON (the value's quote escaped).
repro_said=$(repro_sh --json --runtime 'c"pu' 2>/dev/null)
python3 -c 'import json, sys; assert "--runtime is" in json.loads(sys.argv[1])["error"]' "$repro_said" 2>/dev/null
check "ci/repro.sh --json --runtime 'c\"pu' prints {\"error\": ...}: $repro_said" 0 "$?"
# Every valid spelling passes the check and reaches \`repro all\` unchanged.
for valid in "" "--json" "--json --json" "--runtime simcuda" "--runtime=cuda" "--runtime auto --repeat 3 --json" \
             "--repeat=12 --runtime=simcuda" "--repeat 02" "--repeat 2147483647"; do
  got=$(STUB_SETUP_OK=1 repro_sh $valid 2>/dev/null)
  wanted="[all]$(for a in $valid; do printf '[%s]' "$a"; done)"
  check "ci/repro.sh $valid runs repro $wanted" "$wanted" "$got"
done
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
expect 0 ci/gpu_run.sh "$WORK/out" --check-args
[ ! -e "$WORK/out" ]
check "ci/gpu_run.sh OUTDIR --check-args creates no OUTDIR" 0 "$?"
expect_said 2 "cannot create OUTDIR '/proc/nope/x'" ci/gpu_run.sh /proc/nope/x --check-args
touch "$WORK/file"
expect_said 2 "cannot create OUTDIR '$WORK/file/out'" ci/gpu_run.sh "$WORK/file/out" --check-args
expect_said 2 "cannot write to OUTDIR '$WORK/file'" ci/gpu_run.sh "$WORK/file" --check-args
expect_said 2 "--budget-s is inf; expected a finite number" ci/gpu_run.sh "$WORK/out" --budget-s inf --check-args
expect_said 2 "--budget-s is nan; expected a finite number" ci/gpu_run.sh "$WORK/out" --budget-s nan --check-args
expect 2 ci/gpu_run.sh out --budget-s 0 --check-args
expect 2 ci/gpu_run.sh out --only nothing --check-args
expect 0 ci/gpu_run.sh "$WORK/out" --repeat 3 --check-args
expect 2 ci/gpu_run.sh out --repeat 0 --check-args
expect 2 ci/gpu_run.sh out --repeat x --check-args
expect 2 env GTEST_REPEAT=2 ci/gpu_run.sh out --check-args
# A bad bundle is a usage error, with no OUTDIR and no unpacked bundle left behind.
mkdir -p "$WORK/tmp"
echo "not an archive" >"$WORK/bad.tar.xz"
: >"$WORK/empty.tar.xz"
mkdir -p "$WORK/b/faultline-gpu" "$WORK/b/other"
echo '{"tests": [], "repro": "bin/repro/repro", "workspace": "_main"}' >"$WORK/b/faultline-gpu/manifest.json"
tar -C "$WORK/b" -cf "$WORK/no_probe.tar" faultline-gpu
tar -C "$WORK/b" -cf "$WORK/no_manifest.tar" other
expect_said 2 "cannot create OUTDIR '/proc/nope/x'" ci/gpu_run.sh /proc/nope/x --bundle "$WORK/bad.tar.xz"
for bundle in bad.tar.xz empty.tar.xz; do
  expect_said 2 "the bundle '$WORK/$bundle' is not a readable archive from ci/gpu_bundle.sh" \
    env TMPDIR="$WORK/tmp" ci/gpu_run.sh "$WORK/out/run" --bundle "$WORK/$bundle"
done
expect_said 2 "its manifest.json has no 'device_probe'" \
  env TMPDIR="$WORK/tmp" ci/gpu_run.sh "$WORK/out/run" --bundle "$WORK/no_probe.tar"
expect_said 2 "the bundle '$WORK/no_manifest.tar' has no manifest.json" \
  env TMPDIR="$WORK/tmp" ci/gpu_run.sh "$WORK/out/run" --bundle "$WORK/no_manifest.tar"
[ ! -e "$WORK/out" ]
check "a bad bundle leaves no OUTDIR behind" 0 "$?"
check "a bad bundle leaves no unpacked bundle behind" "" "$(ls -A "$WORK/tmp")"
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
