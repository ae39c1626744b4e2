"""The pattern behind F6 (Triton PR 9578 / PR 10935): the parent asks
Triton's NVIDIA backend whether it is active, as vllm.triton_utils does at
import, then forks a worker that uses CUDA through torch.

    python triton_probe_then_fork.py [--torch-first]

Triton 3.8's is_active() takes PR 10935's path (torch's availability check)
when torch is already imported, else PR 9578's raw cuInit(0), which
initializes the driver in the parent. --torch-first imports torch before the
probe. Prints "child: CUDA works" and exits 0, or "child: <the error's first
line>" and exits 1. Run with PYTORCH_NVML_BASED_CUDA_CHECK=1, so that
torch's own check counts through NVML (without it torch.cuda.is_available()
poisons the fork by itself: F5).
"""
import os
import sys
import tempfile

if "--torch-first" in sys.argv:
    import torch  # noqa: F401
with tempfile.TemporaryDirectory(prefix="faultline-f6-triton-") as cache:
    os.environ["TRITON_CACHE_DIR"] = cache  # nothing of Triton's outlives the run
    import triton
    from triton.backends import backends

    active = backends["nvidia"].driver.is_active()
print(f"parent: triton {triton.__version__}: nvidia is_active() = {active}", flush=True)
import torch  # noqa: E402

print("parent: torch.cuda.is_initialized() =", torch.cuda.is_initialized(), flush=True)
pid = os.fork()
if pid == 0:
    try:
        torch.empty(1, device="cuda")
        print("child: CUDA works", flush=True)
        os._exit(0)
    except RuntimeError as e:
        print("child:", str(e).splitlines()[0], flush=True)
        os._exit(1)
_, status = os.waitpid(pid, 0)
sys.exit(os.waitstatus_to_exitcode(status))
