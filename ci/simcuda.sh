#!/usr/bin/env bash
# Runs any program on simulated CUDA: the stand-in libcudart.so.13 and .12,
# libcuda.so.1 and libnvidia-ml.so.1 (reference/dropin) are preloaded and on
# the library path of CMD and of every process it starts (fork, spawn, exec),
# so unmodified programs (python with PyPI's CUDA torch, pytest, a C binary)
# get real CUDA's process semantics without a GPU. Builds what is missing.
# Usage: ci/simcuda.sh [--devices N] [--report FILE.json] -- CMD [ARGS...]
#   --devices N        simulate N devices (0..64; default 1)
#   --report FILE.json write, per process: pid, parent, fork or exec, where it
#                      initialized CUDA, whether it was forked after
#                      initialization, its first failing CUDA call
# Exit: CMD's status (128+N when a signal N ended it), 2 bad usage,
# 5 the setup or the build failed. docs/simcuda-dropin.md.
set -uo pipefail
usage="usage: ci/simcuda.sh [--devices N] [--report FILE.json] -- CMD [ARGS...] (try --help)"
usage_error() { echo "ci/simcuda.sh: $1; $usage" >&2; exit 2; }
devices="" report=""
while [ $# -gt 0 ]; do
  case "$1" in
    -h|--help) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    --devices|--report)
      [ $# -ge 2 ] || usage_error "$1 needs a value"
      if [ "$1" = --devices ]; then devices=$2; else report=$2; fi
      shift 2 ;;
    --devices=*) devices=${1#--devices=}; shift ;;
    --report=*) report=${1#--report=}; shift ;;
    --) shift; break ;;
    *) usage_error "unexpected argument '$1' before '--'" ;;
  esac
done
[ $# -gt 0 ] || usage_error "no command after '--'"
if [ -n "$devices" ]; then
  [[ "$devices" =~ ^[0-9]+$ ]] && [ "${#devices}" -le 2 ] && [ "$devices" -le 64 ] ||
    usage_error "--devices is '$devices'; expected a whole number in 0..64"
fi
if [ -n "$report" ]; then
  report_parent=$(dirname -- "$report")
  [ -d "$report_parent" ] && [ -w "$report_parent" ] ||
    usage_error "--report is '$report'; its folder '$report_parent' is not a writable folder"
  [ ! -d "$report" ] || usage_error "--report is '$report', a folder; expected a file name"
fi

# The libraries: FAULTLINE_SIMCUDA_LIB_DIR when given (the tests give their
# runfiles), else built here.
libs=${FAULTLINE_SIMCUDA_LIB_DIR:-}
if [ -z "$libs" ]; then
  top="$(cd "$(dirname "$0")/.." && pwd)"
  (cd "$top" && ci/setup.sh >/dev/null && bazel build --config=ci //reference/dropin 2>/dev/null) ||
    { echo "ci/simcuda.sh: building //reference/dropin failed (run: bazel build //reference/dropin)" >&2; exit 5; }
  libs="$(cd "$top" && bazel info --config=ci bazel-bin 2>/dev/null)/reference/dropin" ||
    { echo "ci/simcuda.sh: bazel info failed" >&2; exit 5; }
fi
for lib in libcuda.so.1 libcudart.so.13 libcudart.so.12 libnvidia-ml.so.1; do
  [ -f "$libs/$lib" ] || { echo "ci/simcuda.sh: $libs/$lib is missing" >&2; exit 5; }
done

# The report's folder is made before the preload: no helper runs under it.
if [ -n "$report" ]; then
  report_dir=$(mktemp -d -t faultline-simcuda-report.XXXXXX) || { echo "ci/simcuda.sh: mktemp failed" >&2; exit 5; }
  trap 'rm -rf "$report_dir"' EXIT
fi
export LD_LIBRARY_PATH="$libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# Libraries built with a sanitizer (the test suite's ASan and TSan stages)
# need its runtime first in the preload list of an uninstrumented program.
sanitizer_runtime=$(ldd "$libs/libcuda.so.1" 2>/dev/null | awk '$1 ~ /^lib(asan|tsan)\.so/ {print $3; exit}')
# Preloaded, the stand-in runtimes satisfy libcudart.so.13 and .12 before
# any DT_RPATH of the program's own libraries (PyTorch's point at its
# wheels). A program binds the one whose version node it was linked against.
export LD_PRELOAD="${sanitizer_runtime:+$sanitizer_runtime }$libs/libcuda.so.1 $libs/libcudart.so.13 $libs/libcudart.so.12${LD_PRELOAD:+ $LD_PRELOAD}"
[ -z "$devices" ] || export FAULTLINE_SIMCUDA_DEVICES="$devices"
if [ -z "$report" ]; then
  exec "$@"
fi
export FAULTLINE_SIMCUDA_REPORT_DIR="$report_dir"
"$@"
status=$?
unset LD_PRELOAD FAULTLINE_SIMCUDA_REPORT_DIR
python3 - "$report_dir" "$report" <<'PY' || echo "ci/simcuda.sh: could not write the report $report" >&2
import json, os, sys
folder, out = sys.argv[1], sys.argv[2]
processes = []
for name in sorted(os.listdir(folder)):
    if name.endswith(".json"):
        with open(os.path.join(folder, name)) as f:
            processes.append(json.load(f))
processes.sort(key=lambda p: p["pid"])
tmp = out + ".tmp"
with open(tmp, "w") as f:
    json.dump({"processes": processes}, f, indent=2)
    f.write("\n")
os.replace(tmp, out)
PY
exit "$status"
