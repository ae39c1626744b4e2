#!/usr/bin/env bash
# For a machine with an NVIDIA GPU: the gpu-tagged tests (real-CUDA unit and
# property tests, the conformance test on real CUDA), the repros on
# --runtime=cuda, and compute-sanitizer memcheck, racecheck, initcheck and synccheck on the kernel
# tests. Prints the device and a summary line for docs/gpu-validation.md.
# Exit 0 all passed, 1 something failed, 2 usage, 4 all that ran passed but
# the multi_device tests (F8, F9, the 2-GPU conformance scenarios) need 2 GPUs and this machine has fewer.
# Usage: ci/gpu.sh   (no arguments; a machine without Bazel runs the bundle:
# ci/gpu_bundle.sh here, ci/gpu_run.sh there)
set -uo pipefail
for arg in "$@"; do
  case "$arg" in
    -h|--help) sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "ci/gpu.sh: unknown argument '$arg' (try --help)" >&2; exit 2 ;;
  esac
done
cd "$(dirname "$0")/.."
ci/setup.sh || exit 1
source ci/lib.sh
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader

status=0
not_run=0  # tests and variants that need more GPUs than this machine has (tag multi_device)
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
if [ "${gpus:-0}" -lt 2 ]; then
  echo "=== ${gpus:-0} GPU(s): the multi_device tests (F8, F9, the 2-GPU conformance scenarios) need 2 and are not run"
  run_stage gpu --config=gpu --test_tag_filters=gpu,-multi_device //... || status=1
  not_run=1
else
  run_stage gpu --config=gpu //... || status=1
fi
echo "=== repro all --runtime cuda"
bazel run --config=ci //repro -- all --runtime cuda
case $? in 0) ;; 3) not_run=1 ;; *) status=1 ;; esac

SANITIZER="$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer /usr/local/cuda/compute-sanitizer/compute-sanitizer 2>/dev/null | head -1 || true)"
if [ -n "$SANITIZER" ]; then
  # Every gpu test that launches kernels (fl_device_tests(launches_kernels = True) tags it "kernels").
  # An empty list would build nothing and read as a pass: that is a failure.
  if ! kernel_tests=$(bazel query 'attr(tags, "kernels", attr(tags, "gpu", tests(//...)))') || [ -z "$kernel_tests" ]; then
    echo "=== compute-sanitizer: bazel query found no kernel tests (tag kernels); nothing was checked" >&2
    status=1
    kernel_tests=""
  fi
  [ -z "$kernel_tests" ] || bazel build --config=ci $kernel_tests || status=1
  for t in $kernel_tests; do
    bin="bazel-bin/$(echo "${t#//}" | tr ':' '/')"
    # Cases that observe the driver itself, which the sanitizer changes (ci/sanitizer_exclusions.json).
    filter=$(python3 -c 'import json,sys; e=json.load(open("ci/sanitizer_exclusions.json")).get(sys.argv[1]); print("--gtest_filter=-" + ":".join(e["exclude"]) if e else "")' "$t")
    for tool in memcheck racecheck initcheck synccheck; do
      echo "=== compute-sanitizer --tool ${tool} ${t} ${filter}"
      "$SANITIZER" --tool "$tool" --error-exitcode 1 --report-api-errors no "$bin" $filter || status=1
    done
  done
else
  echo "=== compute-sanitizer not found: memcheck/racecheck skipped"
  status=1
fi
print_totals
[ "$status" -eq 0 ] && [ "$not_run" -eq 1 ] && { echo "gpu: everything that ran passed; the multi_device tests need 2 GPUs (exit 4)"; exit 4; }
exit "$status"
