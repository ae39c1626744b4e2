#!/usr/bin/env python3
"""PyPI's CUDA build of PyTorch, unmodified, over drop-in simcuda.

Each scenario runs in a fresh process under ci/simcuda.sh (with --report),
prints what it observed as one `RESULT {json}` line, and the driver compares
that, the process report and stderr with the result real CUDA gives
(docs/simcuda-dropin.md, "PyTorch").

    torch_scenarios.py --python VENV_PYTHON --launcher ci/simcuda.sh [--only NAME] [--json]

Exit: 0 every scenario gave its expected result, 1 one did not, 2 usage.
"""
import json
import os
import sys

import scenario_runner
from scenario_runner import result

UUID1 = "GPU-5eed0000-0000-4000-8000-000000000001"
FORK_MESSAGE = ("Cannot re-initialize CUDA in forked subprocess. To use CUDA with multiprocessing, "
                "you must use the 'spawn' start method")


# --- Scenarios: each runs in its own process, under simulated CUDA.

def s_is_available():
    import torch
    result(available=torch.cuda.is_available())


def s_device_count():
    import torch
    result(count=torch.cuda.device_count(), initialized=torch.cuda.is_initialized())


def s_init():
    import torch
    torch.cuda.init()
    result(initialized=torch.cuda.is_initialized(), name=torch.cuda.get_device_name(0),
           capability=list(torch.cuda.get_device_capability(0)))


def s_copies():
    import torch
    x = torch.arange(1000, dtype=torch.float32) * 0.5
    y = torch.empty(1000, device="cuda")
    y.copy_(x)
    back = y.cpu()
    z = x.cuda().cpu()
    result(device=str(y.device), equal=bool(torch.equal(back, x)) and bool(torch.equal(z, x)),
           sum=float(back.sum()))


def s_pinned():
    import torch
    p = torch.empty(64, pin_memory=True)
    result(pinned=p.is_pinned(), plain=torch.empty(64).is_pinned())


def s_fork_after_init():
    import torch
    x = torch.empty(8, device="cuda")
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        observed = {}
        try:
            torch.empty(2, device="cuda")
            observed["new_tensor"] = "ok"
        except RuntimeError as e:
            observed["new_tensor"] = str(e).splitlines()[0]
        try:
            x.cpu()
            observed["inherited_cpu"] = "ok"
        except RuntimeError as e:
            observed["inherited_cpu"] = str(e).splitlines()[0]
        os.write(w, json.dumps(observed).encode())
        os._exit(0)
    os.close(w)
    child = json.loads(os.read(r, 65536).decode())
    os.waitpid(pid, 0)
    result(parent_still_works=x.cpu().shape[0] == 8, **child)


def s_fork_before_init():
    import torch
    pid = os.fork()
    if pid == 0:
        try:
            t = torch.arange(4, dtype=torch.float32).cuda()
            os._exit(0 if float(t.cpu().sum()) == 6.0 else 1)
        except RuntimeError:
            os._exit(2)
    _, status = os.waitpid(pid, 0)
    result(child_exit=os.waitstatus_to_exitcode(status))


def spawned_child(queue):
    import torch
    t = torch.arange(3, dtype=torch.float32).cuda()
    queue.put(float(t.cpu().sum()))


def s_spawn_after_init():
    import multiprocessing
    import torch
    torch.empty(1, device="cuda")
    ctx = multiprocessing.get_context("spawn")
    queue = ctx.Queue()
    p = ctx.Process(target=spawned_child, args=(queue,))
    p.start()
    got = queue.get(timeout=120)
    p.join()
    result(child_sum=got, child_exit=p.exitcode)


def s_dataloader_pinned():
    import torch
    from torch.utils.data import DataLoader, TensorDataset
    data = TensorDataset(torch.arange(32, dtype=torch.float32))
    loader = DataLoader(data, batch_size=8, num_workers=2, pin_memory=True)
    batches = [b[0] for b in loader]
    result(batches=len(batches), all_pinned=all(b.is_pinned() for b in batches),
           total=float(sum(b.sum() for b in batches)))


def s_visible_empty():
    import torch
    result(available=torch.cuda.is_available(), count=torch.cuda.device_count())


def s_visible_one():
    import torch
    props = torch.cuda.get_device_properties(0)
    result(count=torch.cuda.device_count(), uuid="GPU-" + str(props.uuid))


def s_set_device():
    import torch
    torch.cuda.set_device(1)
    t = torch.empty(256, device="cuda")
    result(device=str(t.device), allocated_on_1=torch.cuda.memory_allocated(1) > 0,
           allocated_on_0=torch.cuda.memory_allocated(0))


def s_kernel_refused():
    import torch
    try:
        torch.ones(3, device="cuda")
        first = "ok"
    except RuntimeError as e:
        first = str(e).splitlines()[0]
    after = torch.empty(3, device="cuda").shape[0]
    result(kernel=first, works_after=after == 3)


SCENARIOS = {
    # name: (function, simcuda.sh options, extra environment, expected RESULT, checks on report/stderr)
    "is_available": (s_is_available, [], {}, {"available": True}, {"initialized": True}),
    "device_count": (s_device_count, ["--devices", "2"], {}, {"count": 2, "initialized": False},
                     {"initialized": False}),
    "init": (s_init, [], {"FAULTLINE_SIMCUDA_DEVICE_NAME": "NVIDIA H100 80GB HBM3"},
             {"initialized": True, "name": "NVIDIA H100 80GB HBM3", "capability": [9, 0]}, {"initialized": True}),
    "copies": (s_copies, [], {}, {"device": "cuda:0", "equal": True, "sum": 249750.0}, {}),
    "pinned": (s_pinned, [], {}, {"pinned": True, "plain": False}, {}),
    "fork_after_init": (s_fork_after_init, [], {},
                        {"new_tensor": FORK_MESSAGE, "inherited_cpu": "CUDA error: initialization error",
                         "parent_still_works": True},
                        {"stderr": "was forked after CUDA was initialized in pid", "forked_child_fails": True,
                         "where": (s_fork_after_init, 2)}),  # torch.empty(device="cuda")
    "fork_before_init": (s_fork_before_init, [], {}, {"child_exit": 0}, {}),
    "spawn_after_init": (s_spawn_after_init, [], {}, {"child_sum": 3.0, "child_exit": 0}, {}),
    "dataloader_pinned": (s_dataloader_pinned, [], {}, {"batches": 4, "all_pinned": True, "total": 496.0}, {}),
    "visible_empty": (s_visible_empty, ["--devices", "2"], {"CUDA_VISIBLE_DEVICES": ""},
                      {"available": False, "count": 0}, {}),
    "visible_one": (s_visible_one, ["--devices", "2"], {"CUDA_VISIBLE_DEVICES": "1"},
                    {"count": 1, "uuid": UUID1}, {}),
    "visible_uuid": (s_visible_one, ["--devices", "2"], {"CUDA_VISIBLE_DEVICES": UUID1},
                     {"count": 1, "uuid": UUID1}, {}),
    "set_device": (s_set_device, ["--devices", "2"], {},
                   {"device": "cuda:1", "allocated_on_1": True, "allocated_on_0": 0}, {}),
    "kernel_refused": (s_kernel_refused, [], {},
                       {"kernel": "CUDA error: no kernel image is available for execution on the device",
                        "works_after": True},
                       {"stderr": "simcuda runs no device code"}),
}


if __name__ == "__main__":
    sys.exit(scenario_runner.main(__doc__, SCENARIOS, __file__,
                                  python_help="the python of a venv with PyPI's CUDA torch (ci/py_venv.sh)"))
