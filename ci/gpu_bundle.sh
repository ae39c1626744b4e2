#!/usr/bin/env bash
# Builds the GPU suite here (a machine with Bazel, no GPU needed) and packs it
# into .gpu-bundle/faultline-gpu-bundle.tar.xz for ci/gpu_run.sh on a GPU
# machine that has no Bazel. Installs what is missing. Prints the size.
# Usage: ci/gpu_bundle.sh [--out PATH] [--json]
# Exit: 0 written, 1 the setup, the query, the build or the packing failed,
# 2 usage.
set -euo pipefail
# --out is the caller's path: made absolute before the cd to the repository.
args=()
while [ $# -gt 0 ]; do
  if [ "$1" = --out ] && [ $# -ge 2 ]; then
    case "$2" in /*|""|-*) args+=(--out "$2") ;; *) args+=(--out "$PWD/$2") ;; esac  # -*: for argparse to reject
    shift 2
  else
    case "$1" in
      --out=/*|--out=) args+=("$1") ;;
      --out=*) args+=(--out "$PWD/${1#--out=}") ;;
      *) args+=("$1") ;;
    esac
    shift
  fi
done
set -- ${args[@]+"${args[@]}"}
cd "$(dirname "$0")/.."
# Help, or a bad argument, is answered before minutes of setup and building.
for arg in "$@"; do
  case "$arg" in -h|--help) python3 ci/gpu_bundle.py --help; exit 0 ;; esac
done
python3 ci/gpu_bundle.py --check-args "$@" || exit 2
ci/setup.sh >&2 || { echo "gpu_bundle: ci/setup.sh failed (see above)" >&2; exit 1; }
echo "gpu_bundle: building the gpu-tagged tests, the repro CLI and the device benchmark" >&2
# Bazel's own exit codes (2: a bad command line) must not read as our usage error.
if ! targets=$(bazel query 'attr(tags, "gpu", tests(//...))'); then
  echo "gpu_bundle: bazel query failed (see above)" >&2
  exit 1
fi
bazel build --config=ci $targets //repro:repro //reference/runtime:device_probe //bench:device_bench >&2 ||
  { echo "gpu_bundle: the build failed (see above)" >&2; exit 1; }
# exec: a SIGTERM sent to this script reaches gpu_bundle.py, which then
# removes its staging folder and temporary archive.
exec python3 ci/gpu_bundle.py "$@"
