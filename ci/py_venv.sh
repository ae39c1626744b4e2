#!/usr/bin/env bash
# Creates (or reuses) a cached virtual environment holding a pinned set of
# real users' CUDA packages from PyPI, for the drop-in simcuda tests:
# PyPI's CUDA builds of PyTorch, or numba-cuda. For torch only what the build
# needs to load is installed: torch itself with --no-deps, its pure-Python
# requirements, and the few CUDA wheels whose libraries the toolkit in
# /usr/local/cuda cannot stand in for (facts: ../shared/cuda-abi/README.md).
# The CUDA runtime itself comes from simcuda (ci/simcuda.sh): the venv has no
# libcudart, and 2.7.1 (CUDA 12.6) imports only with a libcudart.so.12
# preloaded (the install check preloads the real one from outside the venv).
# Usage: ci/py_venv.sh SET   (SET: torch-2.15.0, torch-2.7.1, torch-2.6.0, torch-2.4.0,
#                             torch-2.3.1, numba-cuda-0.20.1)
# Prints the venv's python as the last stdout line; progress on stderr.
# Exit: 0 ready, 2 bad usage, 3 not run: the package index cannot be reached
# (the reason on stderr), 1 the install failed (see the log it names).
# Env: FAULTLINE_CACHE (default ~/.cache/faultline).
set -uo pipefail
case "${1:-}" in
  -h|--help) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
esac
[ $# -eq 1 ] || { echo "ci/py_venv.sh: expected one argument, the package set (try --help)" >&2; exit 2; }
set_name=$1
version=${set_name#torch-}
check_cudart=""  # a runtime wheel whose libcudart the import check preloads (the toolkit has no match)
main_packages=("torch==$version")
check_import="import torch; assert torch.__version__.startswith('$version'), torch.__version__"
case "$set_name" in
  torch-2.15.0)  # CUDA 13.2 build: NCCL, NVSHMEM, cuSPARSELt and cuFile are not in the 13.0 toolkit (or too old)
    cuda_wheels=(nvidia-nccl-cu13==2.30.7 nvidia-nvshmem-cu13==3.7.2 nvidia-cusparselt-cu13==0.8.1
                 nvidia-cufile==1.20.0.107) ;;
  torch-2.6.0)  # CUDA 12.4 build, for F14's upstream variant; it loads the same sonames as 2.7.1, so it
                # takes 2.7.1's wheels (one download in pip's cache for both)
    cuda_wheels=(nvidia-cublas-cu12==12.6.4.1 nvidia-cufft-cu12==11.3.0.4 nvidia-cuda-cupti-cu12==12.6.80
                 nvidia-cusparselt-cu12==0.6.3)
    check_cudart=nvidia-cuda-runtime-cu12==12.4.127 ;;  # torch's pin; for the import check only
  torch-2.7.1)  # CUDA 12.6 build: these sonames are not in the 13.0 toolkit (cuBLAS .12, cuFFT .11, CUPTI .12)
          # or not at all (cuFile, cuSPARSELt); libcusparse.so.12, libcurand.so.10, libcudnn.so.9 and
          # libnccl.so.2 load from the toolkit (same sonames), which saves 1.06 GB of wheels
    cuda_wheels=(nvidia-cublas-cu12==12.6.4.1 nvidia-cufft-cu12==11.3.0.4 nvidia-cuda-cupti-cu12==12.6.80
                 nvidia-cufile-cu12==1.11.1.6 nvidia-cusparselt-cu12==0.6.3)
    check_cudart=nvidia-cuda-runtime-cu12==12.6.77 ;;  # torch's pin; for the import check only
  torch-2.3.1|torch-2.4.0)  # CUDA 12.1 builds, for F9's upstream variants (2.3.1 caches the device
                            # count, 2.4.0 does not); cuSPARSE, cuRAND and NCCL load from the toolkit
    cuda_wheels=(nvidia-cublas-cu12==12.1.3.1 nvidia-cufft-cu12==11.0.2.54 nvidia-cuda-cupti-cu12==12.1.105
                 nvidia-nvtx-cu12==12.1.105)
    # 2.3.1 links cuDNN 8 (the toolkit has 9, which 2.4.0 links)
    [ "$set_name" = torch-2.4.0 ] || cuda_wheels+=(nvidia-cudnn-cu12==8.9.2.26)
    python_deps=(filelock==4.3.1 typing-extensions==4.16.0 sympy==1.14.0 mpmath==1.3.0 networkx==3.6.1
                 jinja2==3.1.6 markupsafe==3.0.4 fsspec==2026.9.0 numpy==1.26.4)  # built against numpy 1
    check_cudart=nvidia-cuda-runtime-cu12==12.1.105 ;;
  numba-cuda-0.20.1)  # the last numba-cuda with its own ctypes binding (no cuda-bindings)
    main_packages=(numba-cuda==0.20.1 numba==0.62.1 llvmlite==0.45.1)
    check_import="import os; os.environ['NUMBA_CUDA_USE_NVIDIA_BINDING'] = '0'; import numba.cuda"
    cuda_wheels=()
    python_deps=(numpy==2.3.5) ;;
  *) echo "ci/py_venv.sh: unknown package set '$set_name'; expected torch-2.15.0, torch-2.7.1, torch-2.6.0, torch-2.4.0, torch-2.3.1 or numba-cuda-0.20.1" >&2
     exit 2 ;;
esac
[ -n "${python_deps+set}" ] ||
  python_deps=(filelock==4.3.1 typing-extensions==4.16.0 sympy==1.14.0 mpmath==1.3.0 networkx==3.6.1
               jinja2==3.1.6 markupsafe==3.0.4 fsspec==2026.9.0 numpy==2.4.6 setuptools==80.9.0)
pins="${main_packages[*]} ${cuda_wheels[*]} ${python_deps[*]}"
hash=$(printf '%s' "$pins" | sha256sum | cut -c1-12)
cache=${FAULTLINE_CACHE:-$HOME/.cache/faultline}
venv="$cache/venv-$set_name-$hash"
py="$venv/bin/python"
log="$venv.install.log"

ready() { [ -x "$py" ] && [ -f "$venv/.complete" ]; }
if ready; then echo "$py"; exit 0; fi
mkdir -p "$cache" || { echo "ci/py_venv.sh: cannot create $cache (set FAULTLINE_CACHE)" >&2; exit 1; }
exec 9>"$venv.lock" || { echo "ci/py_venv.sh: cannot open $venv.lock" >&2; exit 1; }
if ! flock -n 9; then
  echo "ci/py_venv.sh: another run is installing into $venv; waiting for it" >&2
  flock 9
fi
if ready; then echo "$py"; exit 0; fi
# Is the index reachable at all? Without it this is "not run", never a pass.
probe=$(mktemp -d) || { echo "ci/py_venv.sh: mktemp failed" >&2; exit 1; }
python3 -m pip download --no-deps --dest "$probe" --quiet filelock==4.3.1 >/dev/null 2>&1
reached=$?
rm -rf "$probe"
if [ "$reached" -ne 0 ]; then
  echo "ci/py_venv.sh: not run: the Python package index cannot be reached (pip download filelock failed)" >&2
  exit 3
fi
rm -rf "$venv"
# The largest set takes 3.9 GB installed, plus a wheel being unpacked: say
# so up front rather than fail half-way with pip's "No space left on device".
free_kb=$(df -Pk "$cache" | awk 'NR == 2 { print $4 }')
if [ -n "$free_kb" ] && [ "$free_kb" -lt $((5 * 1024 * 1024)) ]; then
  echo "ci/py_venv.sh: $cache has $((free_kb / 1024)) MB free; installing $set_name needs about 5 GB" \
    "(free some space, or set FAULTLINE_CACHE to a roomier folder)" >&2
  exit 1
fi
python3 -m venv "$venv" >/dev/null 2>&1 || { rm -rf "$venv"; echo "ci/py_venv.sh: python3 -m venv failed (is python3-venv installed?)" >&2; exit 1; }
: >"$log"
echo "ci/py_venv.sh: installing $set_name into $venv (log: $log)" >&2
install() {  # install <what> <pip args...>: pip's progress bar on stderr
  echo "ci/py_venv.sh: pip install $1" >&2
  shift
  "$py" -m pip install --disable-pip-version-check --no-input --progress-bar on "$@" 2>&1 | tee -a "$log" |
    grep --line-buffered -E '^(Collecting|Downloading|Installing|Successfully)' >&2
  return "${PIPESTATUS[0]}"
}
install "${main_packages[*]} (no dependencies)" --no-deps "${main_packages[@]}" &&
  install "their Python requirements" --no-deps "${python_deps[@]}" &&
  { [ "${#cuda_wheels[@]}" -eq 0 ] ||
    install "the CUDA wheels torch loads that the toolkit lacks" --no-deps "${cuda_wheels[@]}"; } ||
  { echo "ci/py_venv.sh: the install failed (see $log)" >&2; exit 1; }
preload=${LD_PRELOAD:-}
if [ -n "$check_cudart" ]; then  # the real runtime, unpacked outside the venv and removed after the check
  rt=$(mktemp -d) || { echo "ci/py_venv.sh: mktemp failed" >&2; exit 1; }
  echo "ci/py_venv.sh: pip download $check_cudart (for the import check only)" >&2
  "$py" -m pip download --disable-pip-version-check --no-input --no-deps --dest "$rt" "$check_cudart" >>"$log" 2>&1 &&
    "$py" - "$rt" >>"$log" 2>&1 <<'EOF' || { rm -rf "$rt"; echo "ci/py_venv.sh: fetching $check_cudart failed (see $log)" >&2; exit 1; }
import glob, shutil, sys, zipfile
wheel, = glob.glob(sys.argv[1] + "/*.whl")
with zipfile.ZipFile(wheel) as z:
    name, = [n for n in z.namelist() if n.endswith("/lib/libcudart.so.12")]
    with z.open(name) as src, open(sys.argv[1] + "/libcudart.so.12", "wb") as dst:
        shutil.copyfileobj(src, dst)
EOF
  preload="$rt/libcudart.so.12${preload:+ $preload}"
fi
LD_PRELOAD=$preload "$py" -c "$check_import" >>"$log" 2>&1
status=$?
[ -z "$check_cudart" ] || rm -rf "$rt"
[ "$status" -eq 0 ] || { echo "ci/py_venv.sh: '$check_import' fails in $venv (see $log)" >&2; exit 1; }
touch "$venv/.complete"
echo "ci/py_venv.sh: ready: $(du -sh "$venv" | cut -f1) in $venv" >&2
echo "$py"
