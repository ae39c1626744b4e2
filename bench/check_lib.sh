# Sourced by the bench shell tests: a scratch folder removed on exit, and
# check / finish for tests that report every failed check before exiting.
WORK="$(mktemp -d "${TEST_TMPDIR:-/tmp}/bench_test.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
failures=0
check() {  # check <what> <wanted> <got>
  if [ "$2" != "$3" ]; then
    echo "FAIL: $1: got '$3', expected '$2'" >&2
    failures=$((failures + 1))
  fi
}
finish() {  # finish <test name>: exit 1 if any check failed
  if [ "$failures" -ne 0 ]; then
    echo "$1: $failures check(s) failed" >&2
    exit 1
  fi
  echo "$1: all checks passed"
  exit 0
}
