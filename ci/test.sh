#!/usr/bin/env bash
# Runs the format check (ci/format_check.sh), then the whole CPU test
# suite: the plain build, then everything again under
# AddressSanitizer + UndefinedBehaviorSanitizer, then the tests that start
# threads under ThreadSanitizer, then the real-package tier (PyPI's CUDA
# torch builds over drop-in simcuda, ci/dropin_tier.sh). GPU tests are
# filtered out here (ci/gpu.sh runs them on a machine with a GPU). Installs
# what is missing; the tier's packages download while Bazel builds.
# Usage: ci/test.sh [--json]   (--json: progress on stderr, then one JSON
# object on stdout: each stage's passed / failed / seconds / log, totals;
# a red stage's log is kept in TMPDIR and named, a green one's removed)
# Exit: 0 every stage green, 1 a stage failed or setup failed, 2 usage,
# 3 every stage that ran was green but the real-package tier could not run
# (no package index; the reason is printed).
set -uo pipefail
cd "$(dirname "$0")/.."
JSON=0
for arg in "$@"; do
  case "$arg" in
    --json) JSON=1 ;;
    -h|--help) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "ci/test.sh: unknown argument '$arg' (try --help)" >&2; exit 2 ;;
  esac
done
if [ "$JSON" -eq 1 ]; then exec 3>&1 1>&2; fi  # fd 3: the JSON; progress to stderr
if ! ci/setup.sh; then
  if [ "$JSON" -eq 1 ]; then echo '{"stages": [], "passed": 0, "failed": 0, "ok": false, "error": "ci/setup.sh failed"}' >&3; fi
  exit 1
fi
source ci/lib.sh

# The real-package tier's venvs are gigabytes of wheels: download them
# while Bazel builds, at the lowest priority so that the build does not
# wait for them. Its own stage reuses what this made (or makes the rest;
# the venv locks keep two installs apart) and alone decides pass or fail.
install_log="$(mktemp -t faultline-dropin-install.XXXX.log)"
setsid nice -n 19 ci/dropin_tier.sh --install-only >"$install_log" 2>&1 &
install_pid=$!
trap 'kill -- -"$install_pid" 2>/dev/null; rm -f "$install_log"' EXIT  # an interrupted run leaves no pip, no log
trap 'exit 130' INT
trap 'exit 143' TERM
echo "=== dropin: installing its packages in the background (log: $install_log)"

status=0
# The plain stage builds every target (gpu tests and benchmarks included, so
# that a broken build shows here); the sanitizer stages build only the tests
# they run (--build_tests_only).
run_script_stage format ci/format_check.sh || status=1
run_stage cpu //... || status=1
run_stage asan-ubsan --config=asan-ubsan --build_tests_only //... || status=1
# TSan reports races between threads, so its stage runs the tests whose
# processes start threads (tag "threaded", kept true by
# reference/process/thread_census.h) except the MPI ones (OpenMPI's own
# threads are not instrumented).
run_stage tsan --config=tsan --build_tests_only --test_tag_filters=threaded,-gpu,-mpi //... || status=1
echo "=== dropin: the background install, to its end:"
if [ -n "$(jobs -rp)" ]; then follow=(tail -n +1 -f --pid="$install_pid"); else follow=(cat); fi
"${follow[@]}" "$install_log" | grep --line-buffered -vE '^\s*$' &
follower=$!
wait "$install_pid"  # in the background, so that an INT or TERM is handled at once
install_rc=$?
trap - EXIT
wait "$follower"
if [ "$install_rc" -eq 0 ]; then rm -f "$install_log"; else echo "=== dropin: the background install exited $install_rc (log: $install_log); the stage tries again"; fi
run_script_stage dropin ci/dropin_tier.sh
case $? in
  0) ;;
  3) [ "$status" -ne 0 ] || status=3 ;;
  *) status=1 ;;
esac
print_totals
if [ "$JSON" -eq 1 ]; then print_json >&3; fi
exit "$status"
