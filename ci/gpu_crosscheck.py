#!/usr/bin/env python3
"""Makes real PyTorch produce the failures faultline models and prints, per
mechanism, the exact error PyTorch gave next to the signature faultline's repro
asserts for the same mechanism. Run by ci/gpu_run.sh on a GPU machine (needs
torch with CUDA; peft for the last case). Each case runs in a fresh
interpreter: the parent does the setup, forks, and the child makes the call.

Usage: ci/gpu_crosscheck.py [--json]. Exit 0 when every case ran (agreeing or
not: differences are findings for the report), 1 when a case could not run."""

import argparse
import json
import subprocess
import sys

# Runs in a fresh interpreter: SETUP in the parent, then fork, then ACTION in
# the child; prints {"parent": ..., "child": ...} with each error's type and text.
HARNESS = r'''
import json, os, sys, traceback
def describe(e):
    return {"type": type(e).__name__, "text": str(e).strip().splitlines()[0] if str(e).strip() else ""}
out = {"parent": None, "child": None}
try:
    import torch
    SETUP
except Exception as e:
    out["parent"] = describe(e)
    print(json.dumps(out)); sys.exit(0)
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    os.close(r)
    result = {"ok": True}
    try:
        value = ACTION
        result["value"] = repr(value)
    except Exception as e:
        result = describe(e)
    os.write(w, json.dumps(result).encode()); os._exit(0)
os.close(w)
data = b""
while True:
    chunk = os.read(r, 65536)
    if not chunk: break
    data += chunk
os.waitpid(pid, 0)
out["child"] = json.loads(data.decode() or '{"type": "none", "text": "the child reported nothing"}')
print(json.dumps(out))
'''

CANNOT_REINIT = ("Cannot re-initialize CUDA in forked subprocess. To use CUDA with multiprocessing, "
                 "you must use the 'spawn' start method")

# mechanism, parent setup, child action, faultline's signature (where it is asserted)
CASES = [
    ("CUDA tensor in the parent, fork, CUDA in the child",
     "torch.zeros(1, device='cuda')", "torch.zeros(1, device='cuda')",
     {"name": "cudaErrorInitializationError", "code": 3, "text": CANNOT_REINIT,
      "where": "LazyInitCuda (reference/runtime/lazy_init.h), F4 legacy"}),
    # PyTorch's device_count() asks NVML first (PyTorch PR 122815 era), which
    # initializes nothing: the child works. Observed on torch 2.11 (2026-11-24).
    ("torch.cuda.device_count() in the parent, fork, CUDA in the child",
     "torch.cuda.device_count()", "torch.zeros(1, device='cuda')",
     {"ok": True, "where": "conformance nvml_count_does_not_initialize; F9 (device_count() counts through NVML)"}),
    # cudaGetDeviceCount itself initializes CUDA (conformance first_call_initializes:
    # the driver would fail the child's first call with 3), and PyTorch knows it:
    # its count marks the fork poisoned, so its guard answers first (observed on
    # torch 2.11, 2026-11-24, where we had expected the driver's 3).
    ("cudaGetDeviceCount (torch._C._cuda_getDeviceCount()) in the parent, fork, CUDA in the child",
     "torch._C._cuda_getDeviceCount()", "torch.zeros(1, device='cuda')",
     {"name": "cudaErrorInitializationError", "code": 3, "text": CANNOT_REINIT,
      "where": "conformance first_call_initializes (cudaGetDeviceCount initializes CUDA); LazyInitCuda's guard"}),
    ("tensor pinned in the parent, is_pinned() in a forked child",
     "globals().__setitem__('t', torch.zeros(1024).pin_memory())", "t.is_pinned()",
     {"name": "cudaErrorInitializationError", "code": 3, "text": "initialization error",
      "where": "conformance pinned_memory_in_forked_child; F1 legacy (cudaPointerGetAttributes failed: "
               "initialization error)"}),
    # peft before 0.12.0 imported torch.utils.cpp_extension when imported
    # (#1877, fixed by PR 1879): see peft_case() for which variant applies.
    ("import peft, fork, CUDA in the child",
     "__import__('peft')", "torch.zeros(1, device='cuda')", None),
]

PEFT_FIXED_IN = (0, 12, 0)  # the first release after PR 1879 (merged 2024-06; #1877 was on 0.11.1)


def peft_case():
    """F4's signature for the installed peft: legacy before 0.12.0, fixed after."""
    try:
        from importlib.metadata import version
        installed = version("peft")
    except Exception:  # noqa: BLE001 - no peft: the case says so when it runs
        installed = "not installed"
    parts = tuple(int(p) for p in installed.split(".")[:3] if p.isdigit()) if installed[0].isdigit() else ()
    if parts and parts >= PEFT_FIXED_IN:
        return installed, {"ok": True, "where": f"F4 fixed (peft {installed} has PR 1879: the import touches no CUDA)"}
    where = "F4 legacy (peft not installed: this case cannot agree)" if not parts else \
        f"F4 legacy (peft {installed}: the import initializes CUDA)"
    return installed, {"name": "cudaErrorInitializationError", "code": 3, "text": CANNOT_REINIT, "where": where}


def agrees(signature, child):
    if child is None:
        return False
    if signature.get("ok"):
        return bool(child.get("ok"))
    return not child.get("ok") and signature["text"] in child.get("text", "")


def describe_expected(signature):
    if signature.get("ok"):
        return f"no error [{signature['where']}]"
    return f"{signature['name']} ({signature['code']}) '{signature['text']}' [{signature['where']}]"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="print JSON rows instead of a table")
    args = parser.parse_args()
    rows, could_not_run = [], 0
    peft_version, peft_signature = peft_case()
    for mechanism, setup, action, signature in CASES:
        signature = signature or peft_signature
        program = HARNESS.replace("SETUP", setup).replace("ACTION", action)
        try:
            done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=120)
            result = json.loads(done.stdout.strip().splitlines()[-1])
        except (subprocess.TimeoutExpired, json.JSONDecodeError, IndexError) as e:
            result = {"parent": {"type": "harness", "text": f"{type(e).__name__}"}, "child": None}
        if result["parent"] is not None:
            could_not_run += 1
        rows.append({"mechanism": mechanism, "pytorch_parent_error": result["parent"],
                     "pytorch_child": result["child"], "faultline": signature,
                     "agrees": agrees(signature, result["child"])})
    try:
        import torch  # noqa: F401  (versions for the record only)
        versions = {"torch": torch.__version__, "cuda": torch.version.cuda, "peft": peft_version}
    except Exception as e:  # pragma: no cover - no torch here
        versions = {"torch": f"unavailable ({type(e).__name__})"}
    if args.json:
        print(json.dumps(rows, indent=2))
    else:
        print(f"PyTorch {versions}")
        for r in rows:
            child, parent = r["pytorch_child"] or {}, r["pytorch_parent_error"]
            if parent is not None:
                got = f"could not run: the parent's setup failed with {parent['type']}: {parent['text']}"
            else:
                got = "no error" if child.get("ok") else f"{child.get('type')}: {child.get('text')}"
            print(f"- {r['mechanism']}\n    PyTorch: {got}\n    faultline: {describe_expected(r['faultline'])}"
                  f"\n    agrees: {'yes' if r['agrees'] else 'NO'}")
    print(json.dumps({"versions": versions}), file=sys.stderr)
    return 1 if could_not_run else 0


if __name__ == "__main__":
    sys.exit(main())
