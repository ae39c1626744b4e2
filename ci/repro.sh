#!/usr/bin/env bash
# The main job: reproduces every documented failure and validates each fix,
# on real CUDA when a GPU is present and on simcuda otherwise. Installs what
# is missing. Extra arguments go to `repro all` (e.g. --json, --runtime simcuda).
set -euo pipefail
cd "$(dirname "$0")/.."
ci/setup.sh >&2
bazel run --config=ci //repro -- all "$@"
