"""The bug report behind F15 (accelerate #3524): with torchao installed,
`from accelerate import notebook_launcher` initializes CUDA, so the workers
notebook_launcher forks cannot use it.

    python notebook_launch.py

The parent imports accelerate and starts two workers with
notebook_launcher (fork, as in a notebook; on a free port rather than the
default 29500, which an earlier run may still hold); each worker creates an
Accelerator and allocates a CUDA tensor. Prints "parent: notebook_launcher
finished" and exits 0, or "worker: <the error's first line>" (from each
worker that got to print it before the launcher stopped the others) and
exits 1.
"""
import os
import socket
import sys

import torch

import accelerate
from accelerate import Accelerator, notebook_launcher


def say(line):
    os.write(1, (line + "\n").encode())  # one write: the two workers' lines never interleave


def worker():
    try:
        Accelerator()
        torch.empty(1, device="cuda")
        say("worker: CUDA works")
    except RuntimeError as e:
        say("worker: " + str(e).splitlines()[0])
        raise


if __name__ == "__main__":
    print(f"parent: accelerate {accelerate.__version__}, torch.cuda.is_initialized() = "
          f"{torch.cuda.is_initialized()}", flush=True)
    with socket.socket() as probe:  # a free port: the default 29500 may still be held by an earlier run
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    try:
        notebook_launcher(worker, num_processes=2, use_port=str(port))
    except Exception as e:  # torch's ChildFailedError: the workers' errors are printed above
        print("parent: notebook_launcher failed:", type(e).__name__, flush=True)
        sys.exit(1)
    print("parent: notebook_launcher finished", flush=True)
