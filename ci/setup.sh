#!/usr/bin/env bash
# Installs every Debian package faultline needs. Idempotent: when everything
# is already there it only checks (a second or two).
set -euo pipefail

PACKAGES=(
  bazel-bootstrap          # Bazel 4.2.3, WORKSPACE mode
  g++ git python3
  jq                       # the CI scripts' JSON
  clang-format-14          # ci/format_check.sh
  googletest libgtest-dev libgmock-dev  # GoogleTest / GoogleMock (libgmock.a, gmock/ headers)
  librapidcheck-dev        # property tests
  librandom123-dev         # Philox counter-based RNG
  libopenmpi-dev openmpi-bin
  iproute2                 # ip(8): the multi-host tests' network namespaces
  python3-venv             # bench/graphbolt/setup_venv.sh (the GraphBolt peer)
  libbenchmark-dev         # Google Benchmark
  libcli11-dev nlohmann-json3-dev
  libbackward-cpp-dev libdw-dev  # where-CUDA-was-initialized backtraces
  libc6-dbg                # glibc's frames in them (F4, F6: CUDA initialized inside dlopen)
  libclang-rt-14-dev       # sanitizer runtimes
)

missing=()
for pkg in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done

if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
else
  echo "setup: all Debian packages present"
fi

if [ ! -x /usr/local/cuda/bin/nvcc ]; then
  echo "setup: error: the CUDA toolkit is missing (expected /usr/local/cuda/bin/nvcc)." >&2
  echo "setup: kernels compile with nvcc even without a GPU; install the toolkit there first." >&2
  exit 1
fi
echo "setup: $(bazel --version 2>/dev/null), $(/usr/local/cuda/bin/nvcc --version | tail -1)"
