#!/usr/bin/env bash
# Tests ci/lib.sh's run_stage against a stand-in `bazel` (a shell function):
# a stage whose bazel fails, or whose log shows a failed test, returns
# non-zero and is counted; a green stage returns 0. ci/test.sh's exit status
# is what CI trusts, so this is what keeps a red suite from landing.
set -uo pipefail
cd "$(dirname "$0")/.."
source ci/lib.sh

failures=0
expect() {  # expect <what> <wanted status> <status>
  if [ "$3" -ne "$2" ]; then
    echo "FAIL: $1: status $3, expected $2" >&2
    failures=$((failures + 1))
  fi
}
nonzero() { [ "$1" -ne 0 ] && echo 1 || echo 0; }

# The stages' logs go to a folder of this test's own, to be counted.
logs="$(mktemp -d "${TEST_TMPDIR:-/tmp}/lib_test.XXXX")"
export TMPDIR="$logs"
logs_of() { find "$logs" -name "faultline-$1.*.log" | wc -l; }

bazel() { echo "//a:test   PASSED in 0.1s"; echo "Executed 1 out of 1 test: 1 test passes."; return 0; }
run_stage green >/dev/null; expect "green stage" 0 $?
expect "a green stage's log is removed" 0 "$(logs_of green)"

bazel() { echo "//a:test   FAILED in 0.1s"; echo "Executed 1 out of 1 test: 1 fails locally."; return 3; }
run_stage red >/dev/null; expect "stage with a failed test (bazel exit 3)" 1 "$(nonzero $?)"
expect "a red stage's log is kept" 1 "$(logs_of red)"

bazel() { echo "ERROR: build did not complete"; return 1; }
run_stage broken >/dev/null; expect "stage whose build failed" 1 "$(nonzero $?)"

bazel() { echo "//a:test   FAILED in 0.1s"; return 0; }
run_stage lying >/dev/null; expect "failed test with bazel exit 0" 1 "$(nonzero $?)"

bazel() { return 0; }  # nothing for the filter to print
run_stage quiet >/dev/null; expect "green stage printing nothing" 0 $?

totals="$(print_totals)"
[ "$totals" = "1 passed, 3 failed" ] || { echo "FAIL: totals '$totals', expected '1 passed, 3 failed'" >&2; failures=$((failures + 1)); }

# ci/test.sh --json: one object whose stages and totals match the runs above.
json="$(print_json)"
got="$(python3 -c 'import json,sys; d=json.loads(sys.stdin.read())
import os
print(d["passed"], d["failed"], d["ok"], [(s["stage"], s["passed"], s["failed"], s["ok"],
      s["log"] and os.path.exists(s["log"]) and "kept") for s in d["stages"]])' <<<"$json")"
want="1 3 False [('green', 1, 0, True, None), ('red', 0, 1, False, 'kept'), ('broken', 0, 0, False, 'kept'), ('lying', 0, 1, False, 'kept'), ('quiet', 0, 0, True, None)]"
[ "$got" = "$want" ] || { echo "FAIL: print_json gave '$got', expected '$want' (from: $json)" >&2; failures=$((failures + 1)); }

# A log path with a quote and a backslash stays valid JSON (in a subshell:
# the totals above stay as they are).
odd="$(mktemp -d "$logs/o\"d\\d.XXXX")"
got="$(TMPDIR="$odd"; bazel() { return 1; }; run_stage odd >/dev/null
  print_json | python3 -c 'import json,sys; print(json.load(sys.stdin)["stages"][-1]["log"])' 2>&1)"
case "$got" in
  "$odd"/faultline-odd.*.log) ;;
  *) echo "FAIL: a log path with a quote and a backslash: '$got'" >&2; failures=$((failures + 1)) ;;
esac
# A script stage (ci/dropin_tier.sh): its --json summary gives the counts;
# exit 3 ("not run": no package index) is counted as not run, never passed.
# In a subshell: the totals above stay as they are.
got="$(
  tier() { echo '{"passed": 2, "failed": 0, "not_run": ["torch: no index"]}'; return 3; }
  run_script_stage tier tier >/dev/null 2>&1; status=$?
  echo "$status $TOTAL_PASSED $TOTAL_FAILED $TOTAL_NOT_RUN $(print_totals) $(print_json | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["ok"], d["not_run"])')"
)"
want="3 3 3 1 3 passed, 3 failed, 1 not run False 1"
[ "$got" = "$want" ] || { echo "FAIL: a script stage that could not run: '$got', expected '$want'" >&2; failures=$((failures + 1)); }
got="$(
  tier() { echo 'not json'; return 1; }
  run_script_stage tier tier >/dev/null 2>&1; echo "$? $TOTAL_FAILED"
)"
[ "$got" = "1 4" ] || { echo "FAIL: a script stage that failed without a summary: '$got', expected '1 4'" >&2; failures=$((failures + 1)); }
rm -rf "$logs"

if [ "$failures" -ne 0 ]; then
  echo "lib_test: $failures failed" >&2
  exit 1
fi
echo "lib_test: run_stage passes green stages and fails red ones, keeps only red ones' logs, print_json says so, even of odd log paths; script stages count not-run apart (12 checks)"
