#!/usr/bin/env bash
# For a machine with an NVIDIA GPU and Bazel: builds the GPU bundle here
# (ci/gpu_bundle.sh) and runs it here (ci/gpu_run.sh), so that it runs
# exactly what a GPU machine without Bazel runs: the gpu-tagged tests with
# their targets' environment, repro all --runtime cuda, compute-sanitizer
# (memcheck, racecheck, initcheck, synccheck) with its positive control, the
# PyTorch cross-check and the device benchmark. Writes report.json,
# summary.txt and logs.txt to OUTDIR (default: gpu-run in the current folder).
# Usage: ci/gpu.sh [OUTDIR] [ci/gpu_run.sh options but --bundle, e.g. --only tests --budget-s 3600]
# Exit (ci/gpu_run.sh's): 0 all passed, 1 something failed (or the build
# did), 2 usage, 3 no usable CUDA device, 4 all that ran passed but some
# tests need more GPUs than this machine has (F8, F9, the 2-GPU conformance
# scenarios).
set -uo pipefail
case "${1:-}" in
  -h|--help) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  -*) out=gpu-run ;;  # options only: the default OUTDIR
  *) out=${1:-gpu-run}; [ $# -gt 0 ] && shift ;;
esac
for arg in "$@"; do
  [ "$arg" != --bundle ] || { echo "ci/gpu.sh: it builds its own bundle; run ci/gpu_run.sh --bundle for one you have" >&2; exit 2; }
done
case "$out" in /*) ;; *) out="$PWD/$out" ;; esac  # the caller's folder, before the cd
cd "$(dirname "$0")/.."
ci/gpu_run.sh "$out" --check-args "$@" || exit 2  # a bad option, before minutes of building
work=$(mktemp -d "${TMPDIR:-/tmp}/faultline-gpu-sh.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT
ci/gpu_bundle.sh --out "$work/fl.tar.xz" || { echo "ci/gpu.sh: building the bundle failed" >&2; exit 1; }
ci/gpu_run.sh "$out" --bundle "$work/fl.tar.xz" "$@"
