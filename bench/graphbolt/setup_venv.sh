#!/usr/bin/env bash
# Creates (or reuses) a cached virtualenv holding DGL GraphBolt for the
# graphbolt_sample.py benchmark peer, installing only from PyPI.
#
# Versions: DGL 2.2.x publishes no Linux wheels on PyPI (only win_amd64 for
# 2.2.1, only macOS for 2.2.0; Linux builds live on data.dgl.ai, which is not
# reachable here), and there is no sdist. The newest Linux x86_64 DGL wheel on
# PyPI is 2.1.0 (cp38..cp312), whose GraphBolt ships native libraries for
# torch 2.0.0 .. 2.2.1, so the pins are dgl 2.1.0 + torch 2.2.1 (+ torchdata
# 0.7.1 for torchdata.datapipes, numpy<2 for torch 2.2's ABI).
#
# Download size: PyPI's Linux torch wheel is the CUDA 12.1 build (756 MB) and
# pulls ~2.5 GB of nvidia-* wheels plus triton. torch is installed with
# --no-deps; if `import torch` then fails (it does: libtorch_cuda.so links
# cudart/cublas/cudnn/cufft/cupti/nvtx) only those six nvidia wheels are
# added, at the versions torch's metadata pins; if that still fails the full
# `pip install torch==...` is the fallback.
#
# Env: FAULTLINE_GRAPHBOLT_VENV (venv dir), FAULTLINE_GRAPHBOLT_PYTHON
# (interpreter used to create it, default python3).
# Prints the venv's python path as the last stdout line on success; on failure
# prints one "setup_venv.sh: ..." line to stderr and exits non-zero.
set -euo pipefail

DGL_VERSION="2.1.0"
TORCH_VERSION="2.2.1"
TORCHDATA_VERSION="0.7.1"
VENV="${FAULTLINE_GRAPHBOLT_VENV:-$HOME/.cache/faultline/graphbolt-venv}"
BASE_PYTHON="${FAULTLINE_GRAPHBOLT_PYTHON:-python3}"
PY="$VENV/bin/python"
LOG="$VENV.install.log"

die() {
  echo "setup_venv.sh: $*" >&2
  exit 1
}

# Prints nothing and succeeds when the venv has the pinned, working stack.
check_ready() {
  [[ -x "$PY" ]] || return 1
  DGLBACKEND=pytorch "$PY" - "$DGL_VERSION" "$TORCH_VERSION" >/dev/null 2>&1 <<'EOF'
import sys
import numpy
import torch
import dgl
import dgl.graphbolt as gb
assert dgl.__version__ == sys.argv[1], dgl.__version__
assert torch.__version__.split("+")[0] == sys.argv[2], torch.__version__
assert int(numpy.__version__.split(".")[0]) < 2, numpy.__version__
g = gb.fused_csc_sampling_graph(torch.tensor([0, 2, 3, 3]), torch.tensor([1, 2, 0]))
s = g.sample_neighbors(torch.tensor([0, 1]), torch.LongTensor([1]))
assert s.sampled_csc.indices.numel() == 2
EOF
}

check_torch() {
  "$PY" -c "import torch; torch.ones(2).sum()" >>"$LOG" 2>&1
}

pip_install() {
  echo "+ pip install $*" >>"$LOG"
  "$PY" -m pip install --disable-pip-version-check --no-input "$@" >>"$LOG" 2>&1
}

if check_ready; then
  echo "$PY"
  exit 0
fi

command -v "$BASE_PYTHON" >/dev/null 2>&1 || die "base interpreter '$BASE_PYTHON' not found (set FAULTLINE_GRAPHBOLT_PYTHON)"
"$BASE_PYTHON" -c 'import sys; sys.exit(0 if (3, 8) <= sys.version_info[:2] <= (3, 12) else 1)' \
  || die "$BASE_PYTHON is $("$BASE_PYTHON" -V 2>&1); dgl $DGL_VERSION + torch $TORCH_VERSION from PyPI need CPython 3.8-3.12 (set FAULTLINE_GRAPHBOLT_PYTHON)"
[[ "$(uname -s)-$(uname -m)" == "Linux-x86_64" ]] || die "only Linux x86_64 is supported (PyPI has Linux x86_64 wheels of dgl $DGL_VERSION)"

mkdir -p "$(dirname "$VENV")" 2>/dev/null || die "cannot create $(dirname "$VENV") (set FAULTLINE_GRAPHBOLT_VENV)"
# One install at a time per venv: another run's `rm -rf "$VENV"` or `: >"$LOG"`
# below would pull the venv or the log from under this one. Once it holds the
# lock, a run uses the venv another one finished meanwhile, if it is ready.
exec 9>"$VENV.lock" || die "cannot open $VENV.lock"
if ! flock -n 9; then
  echo "setup_venv.sh: another run is installing into $VENV; waiting for it ($VENV.lock)"
  flock 9 || die "could not lock $VENV.lock"
fi
if check_ready; then
  echo "$PY"
  exit 0
fi
# A venv without a working pip (one whose creation failed half-way, e.g.
# without Debian's python3-venv) is made again, not trusted.
if [[ ! -x "$PY" ]] || ! "$PY" -m pip --version >/dev/null 2>&1; then
  rm -rf "$VENV"
  venv_err="$("$BASE_PYTHON" -m venv "$VENV" 2>&1 >/dev/null)" || {
    rm -rf "$VENV"
    die "'$BASE_PYTHON -m venv $VENV' failed (is python3-venv installed?): $venv_err"
  }
fi
: >"$LOG"
echo "setup_venv.sh: installing dgl $DGL_VERSION + torch $TORCH_VERSION into $VENV (log: $LOG)"

# 1. torch without its CUDA dependency wheels, plus its pure-python deps.
pip_install --no-deps "torch==$TORCH_VERSION" || die "pip install torch==$TORCH_VERSION failed (see $LOG)"
pip_install "numpy<2" filelock "typing-extensions>=4.8.0" sympy networkx jinja2 fsspec \
  || die "pip install of torch's python deps failed (see $LOG)"

if ! check_torch; then
  # 2. The CUDA libraries libtorch links at load time, at torch's pinned versions.
  mapfile -t nv_reqs < <("$PY" - <<'EOF'
import importlib.metadata as md
import re
want = {"nvidia-cuda-runtime-cu12", "nvidia-nvtx-cu12", "nvidia-cuda-cupti-cu12",
        "nvidia-cufft-cu12", "nvidia-cublas-cu12", "nvidia-cudnn-cu12"}
for req in md.requires("torch") or []:
    m = re.match(r"\s*([A-Za-z0-9_.-]+)\s*\(?\s*==\s*([^);\s]+)", req)
    if m and m.group(1).lower() in want:
        print(f"{m.group(1)}=={m.group(2)}")
EOF
  )
  if ((${#nv_reqs[@]} > 0)) && pip_install --no-deps "${nv_reqs[@]}" && check_torch; then
    :
  else
    # 3. Full install with every dependency torch declares.
    echo "setup_venv.sh: minimal torch install does not import; falling back to full torch install"
    pip_install "torch==$TORCH_VERSION" "numpy<2" || die "pip install torch==$TORCH_VERSION (full) failed (see $LOG)"
    check_torch || die "'import torch' fails in $VENV even after the full install (see $LOG)"
  fi
fi

# 4. DGL and torchdata without deps (their declared deps would drag in other
#    torch versions), then the deps dgl.graphbolt actually imports.
pip_install --no-deps "dgl==$DGL_VERSION" "torchdata==$TORCHDATA_VERSION" \
  || die "pip install dgl==$DGL_VERSION torchdata==$TORCHDATA_VERSION failed (see $LOG)"
pip_install "numpy<2" scipy networkx requests "urllib3>=1.25" tqdm psutil "pandas<3" pyyaml pydantic \
  || die "pip install of dgl's python deps failed (see $LOG)"

if ! check_ready; then
  err="$(DGLBACKEND=pytorch "$PY" -c 'import dgl.graphbolt' 2>&1 | tail -n 1 || true)"
  die "venv built but dgl.graphbolt check failed: ${err:-unknown error} (see $LOG)"
fi
echo "$PY"
