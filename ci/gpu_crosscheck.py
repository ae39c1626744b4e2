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
    ("torch.cuda.device_count() in the parent, fork, CUDA in the child",
     "torch.cuda.device_count()", "torch.zeros(1, device='cuda')",
     {"name": "cudaErrorInitializationError", "code": 3, "text": "initialization error",
      "where": "conformance first_call_initializes (cudaGetDeviceCount initializes CUDA)"}),
    ("tensor pinned in the parent, is_pinned() in a forked child",
     "globals().__setitem__('t', torch.zeros(1024).pin_memory())", "t.is_pinned()",
     {"name": "cudaErrorInitializationError", "code": 3, "text": "initialization error",
      "where": "conformance pinned_memory_in_forked_child; F1 legacy (cudaPointerGetAttributes failed: "
               "initialization error)"}),
    ("import peft, fork, CUDA in the child",
     "__import__('peft')", "torch.zeros(1, device='cuda')",
     {"name": "cudaErrorInitializationError", "code": 3, "text": CANNOT_REINIT,
      "where": "F4 legacy (a library that initializes CUDA when it is loaded)"}),
]


def agrees(signature, child):
    if child is None or child.get("ok"):
        return False
    return signature["text"] in child.get("text", "")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="print JSON rows instead of a table")
    args = parser.parse_args()
    rows, could_not_run = [], 0
    for mechanism, setup, action, signature in CASES:
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
        versions = {"torch": torch.__version__, "cuda": torch.version.cuda}
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
            print(f"- {r['mechanism']}\n    PyTorch: {got}\n    faultline: {r['faultline']['name']} "
                  f"({r['faultline']['code']}) '{r['faultline']['text']}' [{r['faultline']['where']}]"
                  f"\n    agrees: {'yes' if r['agrees'] else 'NO'}")
    print(json.dumps({"versions": versions}), file=sys.stderr)
    return 1 if could_not_run else 0


if __name__ == "__main__":
    sys.exit(main())
