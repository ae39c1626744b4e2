#!/usr/bin/env bash
# Runs the GPU suite on a machine with a GPU but no Bazel (the bundle from
# ci/gpu_bundle.sh): tests, repro all --runtime cuda, compute-sanitizer, the
# PyTorch cross-check. Writes report.json, summary.txt and logs.txt to OUTDIR.
# Usage: ci/gpu_run.sh OUTDIR [--bundle PATH] [--only STEP]... [--budget-s S] [--repeat N]
# Exit: 0 all passed, 1 something failed, 2 usage, 3 no usable CUDA device,
# 4 all that ran passed but some tests need more GPUs than the machine has.
# Relative paths are the caller's (no cd: gpu_run.py finds the repository
# from its own path).
set -uo pipefail
exec python3 "$(dirname "$0")/gpu_run.py" "$@"
