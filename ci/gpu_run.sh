#!/usr/bin/env bash
# Runs the GPU suite on a machine with a GPU but no Bazel (the bundle from
# ci/gpu_bundle.sh): tests, repro all --runtime cuda, compute-sanitizer, the
# PyTorch cross-check. Writes report.json, summary.txt and logs.txt to OUTDIR.
# Usage: ci/gpu_run.sh OUTDIR [--bundle PATH] [--only STEP]... [--budget-s S]
# Exit: 0 all passed, 1 something failed, 2 usage, 3 no usable CUDA device.
set -uo pipefail
cd "$(dirname "$0")/.."
exec python3 ci/gpu_run.py "$@"
