#!/usr/bin/env bash
# Builds the GPU suite here (a machine with Bazel, no GPU needed) and packs it
# into .gpu-bundle/faultline-gpu-bundle.tar.xz for ci/gpu_run.sh on a GPU
# machine that has no Bazel. Installs what is missing. Prints the size.
# Usage: ci/gpu_bundle.sh [--out PATH] [--json]
set -euo pipefail
# --out is the caller's path: made absolute before the cd to the repository.
args=()
while [ $# -gt 0 ]; do
  if [ "$1" = --out ] && [ $# -ge 2 ]; then
    case "$2" in /*) args+=(--out "$2") ;; *) args+=(--out "$PWD/$2") ;; esac
    shift 2
  else
    args+=("$1")
    shift
  fi
done
set -- ${args[@]+"${args[@]}"}
cd "$(dirname "$0")/.."
case "${1:-}" in -h|--help) python3 ci/gpu_bundle.py --help; exit 0 ;; esac
ci/setup.sh >&2
echo "gpu_bundle: building the gpu-tagged tests, the repro CLI and the device benchmark" >&2
targets=$(bazel query 'attr(tags, "gpu", tests(//...))' 2>/dev/null)
bazel build --config=ci $targets //repro:repro //reference/runtime:device_probe //bench:device_bench >&2
python3 ci/gpu_bundle.py "$@"
