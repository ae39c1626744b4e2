#!/usr/bin/env bash
# Runs the whole CPU test suite: the plain build, then everything again under
# AddressSanitizer + UndefinedBehaviorSanitizer, then the multiprocess and
# threaded tests under ThreadSanitizer. GPU tests are filtered out here
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
run_stage tsan --config=tsan --build_tests_only --test_tag_filters=multiprocess,threaded,-gpu,-benchmark,-mpi //... || status=1
print_totals
exit "$status"
