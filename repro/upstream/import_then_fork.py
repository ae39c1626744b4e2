"""The pattern of the bug reports behind F4 and F5: something in the parent
touches CUDA (an import, a device count), then a forked worker uses CUDA.

    python import_then_fork.py MODULE|--is-available

The parent imports MODULE (or calls torch.cuda.is_available()), forks, and
the child allocates a CUDA tensor. Prints "child: CUDA works" and exits 0, or
"child: <PyTorch's error>" and exits 1.
"""
import importlib
import os
import sys

import torch

if sys.argv[1] == "--is-available":
    print("parent: torch.cuda.is_available() =", torch.cuda.is_available(), flush=True)
else:
    module = importlib.import_module(sys.argv[1])
    print(f"parent: imported {sys.argv[1]} {getattr(module, '__version__', '')}", flush=True)
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
