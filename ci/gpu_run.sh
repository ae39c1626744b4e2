#!/usr/bin/env bash
# Runs the GPU suite on a machine with a GPU but no Bazel (the bundle from
# ci/gpu_bundle.sh): tests, repro all --runtime cuda, the PyTorch
# cross-check, device_bench, compute-sanitizer. Writes report.json,
# summary.txt and logs.txt to OUTDIR (the bench step device_bench.json and
# device_report.md too). --simulate runs it on simcuda; --help lists all.
# Usage: ci/gpu_run.sh OUTDIR [--bundle PATH] [--only STEP]... [--budget-s S] [--repeat N]
#        [--simulate] [--check-args]
# Exit: 0 all passed, 1 something failed, 2 usage, 3 no usable CUDA device,
# 4 all that ran passed but some tests need more GPUs than the machine has.
# Relative paths are the caller's (no cd: gpu_run.py finds the repository
# from its own path).
set -uo pipefail
exec python3 "$(dirname "$0")/gpu_run.py" "$@"
