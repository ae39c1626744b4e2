#!/usr/bin/env bash
# gpu_run.py's verdict on a test binary run with --repeat N: gtest keeps
# only the last pass in its XML, so a case that failed or skipped in an
# earlier pass must still fail the test (a GPU run cannot pass by skipping).
# The console text below is what gtest 1.12 prints for GTEST_REPEAT=2 when
# R.FailsOnlyFirst fails and R.SkipsOnlyFirst skips in pass 1 only.
set -uo pipefail
cd "$(dirname "$0")/.."
export PYTHONDONTWRITEBYTECODE=1  # no __pycache__ left in ci/
source bench/check_lib.sh
cat > "$WORK/last.xml" <<'XML'
<testsuites><testsuite>
<testcase classname="R" name="FailsOnlyFirst"/><testcase classname="R" name="SkipsOnlyFirst"/>
<testcase classname="Inst/P" name="FailsFirst/1"/>
</testsuite></testsuites>
XML
cat > "$WORK/console.txt" <<'OUT'
Repeating all tests (iteration 1) . . .
[ RUN      ] R.FailsOnlyFirst
rep2.cc:3: Failure
[  FAILED  ] R.FailsOnlyFirst (0 ms)
[ RUN      ] R.SkipsOnlyFirst
[  SKIPPED ] R.SkipsOnlyFirst (0 ms)
[ RUN      ] Inst/P.FailsFirst/1
[  FAILED  ] Inst/P.FailsFirst/1, where GetParam() = 1 (0 ms)
[  SKIPPED ] 1 test, listed below:
[  SKIPPED ] R.SkipsOnlyFirst
[  FAILED  ] 2 tests, listed below:
[  FAILED  ] R.FailsOnlyFirst
Repeating all tests (iteration 2) . . .
[ RUN      ] R.FailsOnlyFirst
[       OK ] R.FailsOnlyFirst (0 ms)
[  PASSED  ] 3 tests.
OUT
grep -v 'FAILED' "$WORK/console.txt" > "$WORK/skipped_only.txt"
verdict() {  # verdict <exit code> <console file> <repeat>: "status|detail|failures|skipped"
  python3 - "$WORK/last.xml" "$1" "$2" "$3" <<'PY'
import sys
sys.path.insert(0, "ci")
import gpu_run
status, detail, counts = gpu_run.gtest_verdict(sys.argv[1], int(sys.argv[2]), open(sys.argv[3]).read(), int(sys.argv[4]))
print(f"{status}|{detail}|{counts['failures']}|{counts['skipped']}")
PY
}
check "a case failed in pass 1 of 2 (gtest exits 1)" \
  "failed|Inst/P.FailsFirst/1, R.FailsOnlyFirst failed in one of the 2 passes|2|1" "$(verdict 1 "$WORK/console.txt" 2)"
check "a case skipped in pass 1 of 2 (gtest exits 0)" \
  "failed|1 test case(s) skipped: a GPU run must not skip|0|1" "$(verdict 0 "$WORK/skipped_only.txt" 2)"
check "the last pass alone passed" "passed|3 test cases|0|0" "$(verdict 0 /dev/null 2)"
finish gpu_run_verdict_test
