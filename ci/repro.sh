#!/usr/bin/env bash
# The main job: reproduces every documented failure and validates each fix,
# on real CUDA when a GPU is present and on simcuda otherwise. Installs what
# is missing. Extra arguments go to `repro all` (e.g. --json, --runtime simcuda).
# Usage: ci/repro.sh [--json] [--runtime simcuda|cuda|auto] [--repeat N]
# Exit: as `repro all` (0 every outcome matched, 1 one did not, 2 usage,
# 3 all that ran matched but some need 2 GPUs, 4 --runtime cuda and no
# usable device), or 5 when the setup or the build failed (with --json,
# stdout then holds {"error": "..."} after 2, 4 and 5).
set -uo pipefail
# Help is answered here: not after an apt-get and a build.
for arg in "$@"; do
  case "$arg" in -h|--help) sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;; esac
done
cd "$(dirname "$0")/.."
json=0
for arg in "$@"; do [ "$arg" = --json ] && json=1; done
could_not_run() {
  echo "ci/repro.sh: $1" >&2
  if [ "$json" -eq 1 ]; then printf '{"error": "%s"}\n' "$1"; fi
  exit 5
}
ci/setup.sh >&2 || could_not_run "ci/setup.sh failed (see above)"
bazel build --config=ci //repro >&2 || could_not_run "building //repro failed (see above)"
# This configuration's output folder (the bazel-bin link follows whatever build ran last).
bin="$(bazel info --config=ci bazel-bin 2>/dev/null)" || could_not_run "bazel info failed"
exec "$bin/repro/repro" all "$@"
