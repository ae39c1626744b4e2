#!/bin/bash
# Checks `repro run|all --repeat N`: counts in the table and the JSON, the
# exit status, progress on stderr, and the usage error for a bad N.
set -u
REPRO="$1"
fail() { echo "FAIL: $*" >&2; exit 1; }
out="$TEST_TMPDIR/out" err="$TEST_TMPDIR/err"

"$REPRO" run F3 --variant fixed --repeat 0 >"$out" 2>"$err"
[ $? -eq 2 ] || fail "--repeat 0: expected exit 2"
grep -q "repro: --repeat is '0'; expected a number of runs in 1..2147483647" "$err" || fail "--repeat 0: message: $(cat "$err")"
# With --json, a usage error is also JSON on stdout.
"$REPRO" run F3 --variant fixed --repeat 0 --json >"$out" 2>"$err"
[ $? -eq 2 ] || fail "--repeat 0 --json: expected exit 2"
python3 -c "import json,sys; e=json.load(open(sys.argv[1]))['error']; assert e == sys.argv[2], e" "$out" \
  "repro: --repeat is '0'; expected a number of runs in 1..2147483647" \
  || fail "--repeat 0 --json: $(cat "$out")"

"$REPRO" run F3 --variant fixed --repeat 3 >"$out" 2>"$err"
[ $? -eq 0 ] || fail "run F3 fixed x3: expected exit 0; $(cat "$out" "$err")"
head -1 "$out" | grep -q "matched k of N$" || fail "table header: $(head -1 "$out")"
grep -Eq "^F3 +fixed +simcuda +passes +passed +yes +3 of 3$" "$out" || fail "table row: $(cat "$out")"
grep -q "running F3 fixed on simcuda x3 ... matched 3 of 3" "$err" || fail "progress: $(cat "$err")"

"$REPRO" run F3 --variant legacy --repeat 2 --json >"$out" 2>"$err"
[ $? -eq 0 ] || fail "run F3 legacy x2 --json: expected exit 0"
python3 - "$out" <<'PY' || fail "json: $(cat "$out")"
import json, sys
rows = json.load(open(sys.argv[1]))
assert len(rows) == 1, rows
r = rows[0]
assert (r["variant"], r["runs"], r["matched_runs"], r["matched"]) == ("legacy", 2, 2, True), r
# The row says what the error had to show: the variant's signature on this runtime.
sig = r["signature"]
assert (sig["name"], sig["code"], sig["step"]) == ("failed_precondition", 0, "DistEmbedding.forward"), sig
assert (sig["name"], sig["step"]) == (r["error"]["name"], r["error"]["step"]), r
PY

# Without --repeat the table keeps its columns and the JSON says 1 of 1;
# each row carries the variant's transcript, and progress still goes to stderr.
"$REPRO" run F3 --variant fixed --json >"$out" 2>"$err"
python3 -c "import json,sys; r=json.load(open(sys.argv[1]))[0]; assert (r['runs'], r['matched_runs']) == (1, 1), r; assert isinstance(r['transcript'], str) and r['transcript'], r; assert r['signature'] is None, r" "$out" \
  || fail "json without --repeat: $(cat "$out")"
grep -q "running F3 fixed on simcuda ..." "$err" || fail "json progress: $(cat "$err")"

# --runtime cuda where no device is usable (none visible, or no driver at
# all): exit 4 and the reason, nothing run; with --json the reason as JSON.
CUDA_VISIBLE_DEVICES= "$REPRO" run F3 --variant fixed --runtime cuda --json >"$out" 2>"$err"
[ $? -eq 4 ] || fail "--runtime cuda without a device: expected exit 4; $(cat "$out" "$err")"
grep -q "repro: --runtime cuda, but no CUDA device is usable here (" "$err" || fail "no device: $(cat "$err")"
python3 -c "import json,sys; e=json.load(open(sys.argv[1]))['error']; assert e.startswith('--runtime cuda, but no CUDA device'), e" "$out" \
  || fail "no device --json: $(cat "$out")"
# An unknown failure with --json: the usage error as JSON too.
"$REPRO" run F99 --json >"$out" 2>"$err"
[ $? -eq 2 ] || fail "run F99: expected exit 2"
python3 -c "import json,sys; e=json.load(open(sys.argv[1]))['error']; assert e.startswith(\"unknown failure 'F99'\"), e" "$out" \
  || fail "F99 --json: $(cat "$out")"
# FAULTLINE_RUNTIME is --runtime's default; a bad value is a usage error that names it.
FAULTLINE_RUNTIME=simcuda "$REPRO" run F3 --variant fixed --json >"$out" 2>"$err"
python3 -c "import json,sys; r=json.load(open(sys.argv[1]))[0]; assert r['runtime'] == 'simcuda', r" "$out" \
  || fail "FAULTLINE_RUNTIME=simcuda: $(cat "$out" "$err")"
FAULTLINE_RUNTIME=gpu "$REPRO" run F3 --variant fixed >"$out" 2>"$err"
[ $? -eq 2 ] || fail "FAULTLINE_RUNTIME=gpu: expected exit 2"
grep -q "repro: FAULTLINE_RUNTIME is 'gpu'; expected simcuda, cuda or auto" "$err" || fail "FAULTLINE_RUNTIME=gpu: $(cat "$err")"
FAULTLINE_RUNTIME=gpu "$REPRO" run F3 --variant fixed --runtime simcuda >"$out" 2>"$err"
[ $? -eq 0 ] || fail "--runtime wins over FAULTLINE_RUNTIME: $(cat "$err")"
# Found by a new user's trial: the usage errors CLI11 left vague, and
# output that never reached stdout reported as success.
"$REPRO" bogus >"$out" 2>"$err"
[ $? -eq 2 ] || fail "repro bogus: expected exit 2"
grep -qx "repro: unknown command 'bogus'; expected list, run or all (repro --help)" "$err" || fail "bogus: $(cat "$err")"
"$REPRO" run F3 --repeat abc >"$out" 2>"$err"
[ $? -eq 2 ] || fail "--repeat abc: expected exit 2"
grep -qx "repro: --repeat is 'abc'; expected a number of runs in 1..2147483647" "$err" || fail "--repeat abc: $(cat "$err")"
"$REPRO" run F3 --repeat 2147483648 >"$out" 2>"$err"
[ $? -eq 2 ] || fail "--repeat 2147483648: expected exit 2"
grep -qx "repro: --repeat is '2147483648'; expected a number of runs in 1..2147483647" "$err" || fail "--repeat 2^31: $(cat "$err")"
"$REPRO" run F3 --variant "" >"$out" 2>"$err"
[ $? -eq 2 ] || fail "--variant '': expected exit 2 (it ran every variant)"
grep -qx "repro: --variant is ''; expected a variant name (leave --variant out to run every variant)" "$err" ||
  fail "--variant '': $(cat "$err")"
"$REPRO" list --json >/dev/full 2>"$err"
[ $? -eq 1 ] || fail "list --json >/dev/full: expected exit 1"
grep -qx "repro: writing the output to stdout failed: No space left on device" "$err" || fail "/dev/full: $(cat "$err")"
"$REPRO" run F3 --variant fixed --runtime simcuda >/dev/full 2>"$err"
[ $? -eq 1 ] || fail "run >/dev/full: expected exit 1"

# --upstream hands the command to upstream.py (usage checked before any
# install, so none of these reach the package index): --with needs it,
# --runtime does not apply, and upstream.py's own usage errors come back
# with its exit status (and as JSON with --json).
"$REPRO" run F4 --with peft=/nowhere >"$out" 2>"$err"
[ $? -eq 2 ] || fail "--with without --upstream: expected exit 2"
grep -q "^--with requires --upstream" "$err" || fail "--with without --upstream: $(cat "$err")"
"$REPRO" run F4 --upstream --runtime simcuda >"$out" 2>"$err"
[ $? -eq 2 ] || fail "--upstream --runtime: expected exit 2"
grep -qx "repro: --runtime does not apply to --upstream (the upstream variants run on drop-in simcuda)" "$err" ||
  fail "--upstream --runtime: $(cat "$err")"
"$REPRO" run F99 --upstream --json >"$out" 2>"$err"
[ $? -eq 2 ] || fail "run F99 --upstream: expected exit 2; $(cat "$out" "$err")"
python3 -c "import json,sys; e=json.load(open(sys.argv[1]))['error']; assert \"failure 'F99' has no upstream variant; expected one of F4\" in e, e" "$out" \
  || fail "F99 --upstream --json: $(cat "$out")"
"$REPRO" run F4 --upstream --with peft >"$out" 2>"$err"
[ $? -eq 2 ] || fail "--with peft: expected exit 2"
grep -q "error: --with 'peft': expected NAME=PATH (e.g. peft=./peft)" "$err" || fail "--with peft: $(cat "$err")"
echo PASS
