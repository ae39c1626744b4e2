#!/usr/bin/env bash
# For a machine with an NVIDIA GPU and Bazel: builds the GPU bundle here
# (ci/gpu_bundle.sh) and runs it here (ci/gpu_run.sh), so that it runs
# exactly what a GPU machine without Bazel runs: the gpu-tagged tests with
# their targets' environment, repro all --runtime cuda, compute-sanitizer
# (memcheck, racecheck, initcheck, synccheck) with its positive control, the
# PyTorch cross-check and the device benchmark. Writes report.json,
# summary.txt and logs.txt to OUTDIR (default: gpu-run in the current folder).
# Usage: ci/gpu.sh [OUTDIR] [ci/gpu_run.sh options but --bundle, e.g. --only tests --repeat 3 --budget-s 3600]
# Exit (ci/gpu_run.sh's): 0 all passed, 1 something failed (or the build
# did), 2 usage, 3 no usable CUDA device, 4 all that ran passed but some
# tests need more GPUs than this machine has (F8, F9, the 2-GPU conformance
# scenarios).
set -uo pipefail
for arg in "$@"; do
  case "$arg" in
    -h|--help) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    --bundle|--bundle=*|--check-args)
      echo "ci/gpu.sh: $arg is not for ci/gpu.sh (it builds its own bundle; ci/gpu_run.sh --bundle runs one you have)" >&2
      exit 2 ;;
  esac
done
case "${1:-}" in
  -*|"") out=gpu-run ;;  # options only: the default OUTDIR
  *) out=$1; shift ;;
esac
case "$out" in /*) ;; *) out="$PWD/$out" ;; esac  # the caller's folder, before the cd
cd "$(dirname "$0")/.."
ci/gpu_run.sh "$out" "$@" --check-args || exit 2  # a bad option, before minutes of building

# The steps run in the background so that a SIGTERM or SIGINT reaches them
# (gpu_run.py then kills its tests' process groups and removes its files);
# bash would otherwise wait for a foreground child before its trap ran.
child=0
work=""
end_on_signal() {
  [ "$child" -eq 0 ] || { kill -TERM "$child" 2>/dev/null; wait "$child"; }
  exit "$1"
}
trap 'end_on_signal 143' TERM
trap 'end_on_signal 130' INT
trap '[ -z "$work" ] || rm -rf "$work"' EXIT
run() {
  "$@" &
  child=$!
  wait "$child"
  local code=$?
  child=0
  return "$code"
}
work=$(mktemp -d "${TMPDIR:-/tmp}/faultline-gpu-sh.XXXXXX") || exit 1
run ci/gpu_bundle.sh --out "$work/fl.tar.xz" || { echo "ci/gpu.sh: building the bundle failed" >&2; exit 1; }
run ci/gpu_run.sh "$out" "$@" --bundle "$work/fl.tar.xz"
