#!/usr/bin/env bash
# For a machine with an NVIDIA GPU: the gpu-tagged tests (real-CUDA unit and
# property tests, the conformance test on real CUDA), the repros on
# --runtime=cuda, and compute-sanitizer memcheck and racecheck on the kernel
# tests. Prints the device and a summary line for docs/gpu-validation.md.
set -uo pipefail
cd "$(dirname "$0")/.."
ci/setup.sh || exit 1
source ci/lib.sh
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader

status=0
run_stage gpu --config=gpu //... || status=1
echo "=== repro all --runtime cuda"
bazel run --config=ci //repro -- all --runtime cuda || status=1

SANITIZER="$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer /usr/local/cuda/compute-sanitizer/compute-sanitizer 2>/dev/null | head -1 || true)"
if [ -n "$SANITIZER" ]; then
  # Every gpu test that launches kernels (fl_device_tests(launches_kernels = True) tags it "kernels").
  kernel_tests=$(bazel query 'attr(tags, "kernels", attr(tags, "gpu", tests(//...)))' 2>/dev/null)
  bazel build --config=ci $kernel_tests || status=1
  for t in $kernel_tests; do
    bin="bazel-bin/$(echo "${t#//}" | tr ':' '/')"
    for tool in memcheck racecheck; do
      echo "=== compute-sanitizer --tool ${tool} ${t}"
      "$SANITIZER" --tool "$tool" --error-exitcode 1 "$bin" || status=1
    done
  done
else
  echo "=== compute-sanitizer not found: memcheck/racecheck skipped"
  status=1
fi
print_totals
exit "$status"
