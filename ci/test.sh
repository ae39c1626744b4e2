#!/usr/bin/env bash
# Runs the whole CPU test suite: the plain build, then everything again under
# AddressSanitizer + UndefinedBehaviorSanitizer, then the tests that start
# threads under ThreadSanitizer. GPU tests are filtered out here
# (ci/gpu.sh runs them on a machine with a GPU). Installs what is missing.
set -uo pipefail
cd "$(dirname "$0")/.."
ci/setup.sh || exit 1
source ci/lib.sh

status=0
# The plain stage builds every target (gpu tests and benchmarks included, so
# that a broken build shows here); the sanitizer stages build only the tests
# they run (--build_tests_only).
run_stage cpu //... || status=1
run_stage asan-ubsan --config=asan-ubsan --build_tests_only //... || status=1
# TSan reports races between threads, so its stage runs the tests whose
# processes start threads (tag "threaded", kept true by
# reference/process/thread_census.h) except the MPI ones (OpenMPI's own
# threads are not instrumented).
run_stage tsan --config=tsan --build_tests_only --test_tag_filters=threaded,-gpu,-benchmark,-mpi //... || status=1
print_totals
exit "$status"
