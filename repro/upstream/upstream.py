#!/usr/bin/env python3
"""Catalog failures reproduced with the real upstream releases, over drop-in simcuda.

Each upstream variant runs the bug report's pattern (a small script here)
with real packages from PyPI under ci/simcuda.sh: `upstream-legacy` with the
release before the fix must reproduce the failure's exact error text,
`upstream-fixed` with the release that has the fix must pass. `--with
NAME=PATH` puts a user's own source tree (or wheel) of NAME in place of the
pinned release, to validate a patch before sending it upstream:
"reproduced" means the patch does not fix it, "passed" that it does.

    upstream.py list [--json]
    upstream.py run FAILURE [--variant V] [--with NAME=PATH]... [--repeat N] [--json]
    upstream.py all [--repeat N] [--json]
    upstream.py install [--json]   (every variant's venv and overlay, nothing run)

Packages: the base venv is ci/py_venv.sh's (torch from PyPI); a variant's
other packages go into an overlay folder, hash-named after its pins under
~/.cache/faultline (FAULTLINE_CACHE), put first on PYTHONPATH.
Exit: 0 every outcome matched, 1 one did not, 2 bad usage, 3 every variant
that ran matched but some could not run (no package index: "not run" with
the reason, never a pass).
"""
import argparse
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.realpath(__file__))  # the source tree, also from runfiles
TOP = os.path.dirname(os.path.dirname(HERE))
FORK_ERROR = ("Cannot re-initialize CUDA in forked subprocess. To use CUDA with multiprocessing, "
              "you must use the 'spawn' start method")

# peft's own requirements at releases of its time (installed without their
# dependencies, so the base venv's torch and numpy stay as they are).
PEFT_DEPS = ["transformers==4.41.2", "accelerate==0.30.1", "tokenizers==0.19.1", "safetensors==0.4.3",
             "huggingface-hub==0.23.4", "regex==2024.5.15", "requests==2.32.3", "urllib3==2.2.1",
             "certifi==2024.6.2", "idna==3.7", "charset-normalizer==3.3.2", "tqdm==4.66.4", "psutil==5.9.8",
             "pyyaml==6.0.1", "packaging==24.1"]

# accelerate's requirements at its 1.6/1.7 releases (May 2025), and the
# torchao whose float8 module accelerate 1.6.0 imports at import time.
ACCELERATE_DEPS = ["torchao==0.10.0", "huggingface-hub==0.30.2", "safetensors==0.5.3", "psutil==7.0.0",
                   "pyyaml==6.0.2", "packaging==24.2", "requests==2.32.3", "urllib3==2.4.0", "certifi==2025.1.31",
                   "idna==3.10", "charset-normalizer==3.4.1", "tqdm==4.67.1"]


# One row per variant: the failure, the variant, the base venv, the
# overlay's pins, the script and its arguments, extra environment, the
# simulated devices, and what must happen: `signature`, the exact line the
# failure prints (it must reproduce), or None (it must pass: exit 0 with
# the `passes_with` line).
WORKS = "child: CUDA works"
VARIANTS = [
    {"failure": "F4", "variant": "upstream-legacy", "base": "torch-2.15.0",
     "overlay": ["peft==0.11.1"] + PEFT_DEPS, "script": ["import_then_fork.py", "peft"], "env": {},
     "signature": "child: " + FORK_ERROR, "passes_with": WORKS,
     "what": "peft 0.11.1: `import peft` initializes CUDA (torch.utils.cpp_extension at import, "
             "peft #1877); a forked worker then cannot use CUDA"},
    {"failure": "F4", "variant": "upstream-fixed", "base": "torch-2.15.0",
     "overlay": ["peft==0.12.0"] + PEFT_DEPS, "script": ["import_then_fork.py", "peft"], "env": {},
     "signature": None, "passes_with": WORKS,
     "what": "peft 0.12.0 (PR 1879: the import moved into the function that needs it): the worker works"},
    {"failure": "F5", "variant": "upstream-legacy", "base": "torch-2.15.0", "overlay": [],
     "script": ["import_then_fork.py", "--is-available"], "env": {}, "signature": "child: " + FORK_ERROR,
     "passes_with": WORKS,
     "what": "torch 2.15.0: torch.cuda.is_available() counts devices through CUDA, which initializes "
             "it (PyTorch 83973); a forked worker then cannot use CUDA"},
    {"failure": "F5", "variant": "upstream-fixed", "base": "torch-2.15.0", "overlay": [],
     "script": ["import_then_fork.py", "--is-available"], "env": {"PYTORCH_NVML_BASED_CUDA_CHECK": "1"},
     "signature": None, "passes_with": WORKS,
     "what": "torch 2.15.0 with PYTORCH_NVML_BASED_CUDA_CHECK=1 (PR 85951): is_available() asks NVML, "
             "CUDA stays uninitialized, the worker works"},
    {"failure": "F9", "variant": "upstream-legacy", "base": "torch-2.3.1", "overlay": [], "devices": 2,
     "script": ["visible_devices_late.py"], "env": {},
     "signature": "count: 2, then 2 (stale) after CUDA_VISIBLE_DEVICES=0",
     "passes_with": "count: 2, then 1 after CUDA_VISIBLE_DEVICES=0",
     "what": "torch 2.3.1: device_count() caches its answer (an lru_cache), so narrowing "
             "CUDA_VISIBLE_DEVICES afterwards leaves it stale (PyTorch #95073)"},
    {"failure": "F9", "variant": "upstream-fixed", "base": "torch-2.4.0", "overlay": [], "devices": 2,
     "script": ["visible_devices_late.py"], "env": {}, "signature": None,
     "passes_with": "count: 2, then 1 after CUDA_VISIBLE_DEVICES=0",
     "what": "torch 2.4.0 (PR 122815: the cache is dropped while CUDA is uninitialized): the count follows"},
    {"failure": "F6", "variant": "upstream-legacy", "base": "torch-2.15.0", "overlay": ["triton==3.8.0"],
     "script": ["triton_probe_then_fork.py"], "env": {"PYTORCH_NVML_BASED_CUDA_CHECK": "1"},
     "signature": "child: CUDA error: initialization error", "passes_with": WORKS,
     "what": "triton 3.8.0, asked before torch is imported: is_active() calls cuInit(0) (PR 9578, the path "
             "PR 10935 left), which initializes the driver in the parent; a forked worker then cannot use CUDA"},
    {"failure": "F6", "variant": "upstream-fixed", "base": "torch-2.15.0", "overlay": ["triton==3.8.0"],
     "script": ["triton_probe_then_fork.py", "--torch-first"], "env": {"PYTORCH_NVML_BASED_CUDA_CHECK": "1"},
     "signature": None, "passes_with": WORKS,
     "what": "triton 3.8.0 with torch imported first: is_active() asks torch (PR 10935), which counts through "
             "NVML; the driver stays uninitialized and the worker works"},
    {"failure": "F7", "variant": "upstream-fixed", "base": "torch-2.15.0", "overlay": [],
     "script": ["killed_worker.py"], "env": {}, "signature": None,
     "passes_with": "trainer: the loader raised instead of hanging",
     "what": "torch 2.15.0: a DataLoader worker SIGKILLed before its first batch; the loader raises "
             "'DataLoader worker (pid(s) N) exited unexpectedly' instead of hanging (PR 11985)"},
    {"failure": "F8", "variant": "upstream-fixed", "base": "torch-2.15.0", "overlay": [], "devices": 2,
     "script": ["pin_on_device_one.py"], "env": {}, "signature": None,
     "passes_with": "main: device 0 has no context",
     "what": "torch 2.15.0, two devices, current device 1: a pin_memory=True DataLoader pins through "
             "device 1's context; device 0 never gets one (PR 4196)"},
    {"failure": "F13", "variant": "upstream-legacy", "base": "torch-2.7.1", "overlay": [],
     "script": ["sparse_load_in_worker.py"], "env": {},
     "signature": "trainer: Caught RuntimeError in DataLoader worker process 0. "
                  "RuntimeError: CUDA error: initialization error",
     "passes_with": "trainer: loaded the sparse tensor in the worker",
     "what": "torch 2.7.1: CUDA initialized in the parent, then torch.load of a sparse tensor in a forked "
             "DataLoader worker checks its pinning through CUDA (PyTorch #153143)"},
    {"failure": "F13", "variant": "upstream-fixed", "base": "torch-2.15.0", "overlay": [],
     "script": ["sparse_load_in_worker.py"], "env": {},
     "signature": None, "passes_with": "trainer: loaded the sparse tensor in the worker",
     "what": "torch 2.15.0 (PR 154638, in 2.8.0: sparse tensors load with check_pinning=False): the worker "
             "loads it"},
    {"failure": "F14", "variant": "upstream-legacy", "base": "torch-2.6.0", "overlay": [],
     "script": ["sparse_load_in_worker.py", "--no-cuda-in-parent"], "env": {},
     "signature": "trainer: Caught RuntimeError in DataLoader worker process 0. "
                  "RuntimeError: CUDA error: initialization error",
     "passes_with": "trainer: loaded the sparse tensor in the worker",
     "what": "torch 2.6.0: the script never touches CUDA, but the pin_memory DataLoader's "
             "torch.cuda.is_available() initializes it before forking the worker, whose torch.load of a "
             "sparse tensor then checks pinning through CUDA (PyTorch #144687)"},
    {"failure": "F14", "variant": "upstream-fixed", "base": "torch-2.7.1", "overlay": [],
     "script": ["sparse_load_in_worker.py", "--no-cuda-in-parent"], "env": {},
     "signature": None, "passes_with": "trainer: loaded the sparse tensor in the worker",
     "what": "torch 2.7.1: the loader still initializes CUDA, but the worker's is_pinned() answers "
             "without a CUDA call: the worker loads it"},
    {"failure": "F15", "variant": "upstream-legacy", "base": "torch-2.7.1",
     "overlay": ["accelerate==1.6.0"] + ACCELERATE_DEPS, "script": ["notebook_launch.py"], "env": {},
     "signature": "worker: " + FORK_ERROR, "passes_with": "parent: notebook_launcher finished",
     "what": "accelerate 1.6.0 with torchao 0.10.0: `from accelerate import notebook_launcher` imports "
             "torchao.float8, which initializes CUDA; the forked workers cannot use it (accelerate #3524)"},
    {"failure": "F15", "variant": "upstream-fixed", "base": "torch-2.7.1",
     "overlay": ["accelerate==1.7.0"] + ACCELERATE_DEPS, "script": ["notebook_launch.py"], "env": {},
     "signature": None, "passes_with": "parent: notebook_launcher finished",
     "what": "accelerate 1.7.0 (torchao imported only where FP8 training needs it): the workers use CUDA"},
]
VARIANTS.sort(key=lambda row: int(row["failure"][1:]))  # catalog order; legacy stays before fixed


class NotRun(Exception):
    """The variant could not run here (no package index); never a pass."""


def log(text):
    print(text, file=sys.stderr, flush=True)


def cache_dir():
    return os.environ.get("FAULTLINE_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "faultline")


def base_python(set_name):
    proc = subprocess.run([os.path.join(TOP, "ci", "py_venv.sh"), set_name], stdout=subprocess.PIPE, text=True)
    if proc.returncode == 3:
        raise NotRun(f"{set_name}: the Python package index cannot be reached")
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not lines:
        raise RuntimeError(f"ci/py_venv.sh {set_name} exited {proc.returncode}")
    return lines[-1]


def index_reachable(python):
    with tempfile.TemporaryDirectory() as probe:
        return subprocess.run([python, "-m", "pip", "download", "--no-deps", "--quiet", "--dest", probe,
                               "filelock==4.3.1"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0


def overlay(python, pins):
    """The folder holding `pins` (pip --target, without dependencies), made once."""
    if not pins:
        return None
    digest = hashlib.sha256(" ".join(pins).encode()).hexdigest()[:12]
    folder = os.path.join(cache_dir(), f"overlay-{pins[0].replace('==', '-')}-{digest}")
    if os.path.isfile(os.path.join(folder, ".complete")):
        return folder
    os.makedirs(cache_dir(), exist_ok=True)
    with open(folder + ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one install per folder; a second run waits, then reuses it
        if os.path.isfile(os.path.join(folder, ".complete")):
            return folder
        log(f"upstream: installing {' '.join(pins)} into {folder}")
        staging = folder + ".partial"
        shutil.rmtree(staging, ignore_errors=True)
        proc = subprocess.run([python, "-m", "pip", "install", "--disable-pip-version-check", "--no-input",
                               "--no-deps", "--target", staging, *pins], stdout=sys.stderr, stderr=subprocess.PIPE,
                              text=True)
        if proc.returncode != 0:
            shutil.rmtree(staging, ignore_errors=True)
            if not index_reachable(python):
                raise NotRun(f"the Python package index cannot be reached (installing {pins[0]})")
            raise RuntimeError(f"pip install --target of {pins[0]} failed: {proc.stderr.strip()[-800:]}")
        open(os.path.join(staging, ".complete"), "w").close()
        shutil.rmtree(folder, ignore_errors=True)
        os.rename(staging, folder)
    return folder


def user_code(python, name, path, scratch):
    """The folder that puts the user's NAME first on PYTHONPATH."""
    path = os.path.abspath(path)
    if os.path.isdir(path):
        for candidate in (os.path.join(path, "src"), path):
            if os.path.isdir(os.path.join(candidate, name)):
                return candidate
        raise ValueError(f"--with {name}={path}: the folder has neither src/{name}/ nor {name}/ "
                         f"(expected a source tree of {name})")
    if os.path.isfile(path) and path.endswith(".whl"):
        target = os.path.join(scratch, f"with-{name}")
        proc = subprocess.run([python, "-m", "pip", "install", "--disable-pip-version-check", "--no-input",
                               "--no-deps", "--target", target, path], stdout=sys.stderr, stderr=sys.stderr)
        if proc.returncode != 0:
            raise ValueError(f"--with {name}={path}: pip could not install the wheel")
        return target
    raise ValueError(f"--with {name}={path}: expected a source tree folder or a .whl file")


def run_variant(row, withs, scratch):
    started = time.monotonic()
    python = base_python(row["base"])
    paths = [user_code(python, name, path, scratch) for name, path in withs]
    folder = overlay(python, row["overlay"])
    if folder:
        paths.append(folder)
    env = dict(os.environ, **row["env"])
    env["PYTHONPATH"] = os.pathsep.join(paths + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    env["PYTHONDONTWRITEBYTECODE"] = "1"  # the cached overlays stay as installed
    report = os.path.join(scratch, "report.json")
    devices = ["--devices", str(row["devices"])] if "devices" in row else []
    command = [os.path.join(TOP, "ci", "simcuda.sh"), *devices, "--report", report, "--", python,
               os.path.join(HERE, row["script"][0]), *row["script"][1:]]
    proc = subprocess.run(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=600)
    transcript = proc.stdout
    # Where the script's own process initialized CUDA (simcuda's report).
    initialized_where = None
    if os.path.exists(report):
        with open(report) as f:
            for p in json.load(f)["processes"]:
                if p["start"] == "exec" and row["script"][0] in p["command"] and p["initialized_where"]:
                    initialized_where = p["initialized_where"]
    lines = transcript.splitlines()
    if row["signature"] is not None and proc.returncode != 0 and row["signature"] in lines:
        outcome = "reproduced"
    elif proc.returncode == 0 and row["passes_with"] in lines:
        outcome = "passed"
    else:
        outcome = f"error (exit {proc.returncode})"
    expected = "reproduced" if row["signature"] is not None and not withs else "passed"
    if withs:
        expected = None  # a user's patch: the outcome is the answer
    return {"failure": row["failure"], "variant": row["variant"] + (" --with" if withs else ""),
            "packages": ", ".join(row["overlay"][:1] + [row["base"].replace("-", " ")] +
                                  [f"{n} from {p}" for n, p in withs]),
            "expected": expected or "either", "outcome": outcome,
            "matched": outcome == expected if expected else outcome in ("reproduced", "passed"),
            "signature": row["signature"], "seconds": round(time.monotonic() - started, 1),
            "initialized_where": initialized_where, "transcript": transcript}


def install_all(as_json):
    """Makes every variant's base venv and overlay (cached), so that a later
    run spends no time on downloads; ci/test.sh does this while Bazel builds."""
    made, failed, not_run = [], [], []
    for base, pins in dict.fromkeys((r["base"], tuple(r["overlay"])) for r in VARIANTS):
        name = f"{pins[0]} (on {base})" if pins else base
        try:
            overlay(base_python(base), list(pins))
            made.append(name)
            log(f"ready     {name}")
        except NotRun as e:
            not_run.append(str(e))
            log(f"not run   {name}: {e}")
        except RuntimeError as e:
            failed.append(f"{name}: {e}")
            log(f"FAILED    {name}: {e}")
    if as_json:
        print(json.dumps({"ok": not failed and not not_run, "ready": made, "failed": failed, "not_run": not_run}))
    return 1 if failed else 3 if not_run else 0


def parse_withs(values):
    withs = []
    for value in values or []:
        name, sep, path = value.partition("=")
        if not sep or not name or not path:
            raise ValueError(f"--with '{value}': expected NAME=PATH (e.g. peft=./peft)")
        withs.append((name, path))
    return withs


class Parser(argparse.ArgumentParser):
    """Usage errors exit 2; with --json they are also {"error": ...} on stdout."""

    def error(self, message):
        if "--json" in sys.argv:
            print(json.dumps({"error": f"{self.prog}: error: {message}"}))
        super().error(message)


def main():
    parser = Parser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    sub.add_parser("list", help="the upstream variants").add_argument("--json", action="store_true")
    run = sub.add_parser("run", help="one failure's upstream variants")
    run.add_argument("failure")
    run.add_argument("--variant", choices=["upstream-legacy", "upstream-fixed"])
    run.add_argument("--with", dest="withs", action="append", metavar="NAME=PATH",
                     help="the user's source tree or wheel of NAME in place of the pinned release")
    run.add_argument("--repeat", type=int, default=1)
    run.add_argument("--json", action="store_true")
    every = sub.add_parser("all", help="every upstream variant")
    every.add_argument("--repeat", type=int, default=1)
    every.add_argument("--json", action="store_true")
    sub.add_parser("install", help="make every variant's venv and overlay; run nothing").add_argument(
        "--json", action="store_true")
    args = parser.parse_args()

    if args.command == "list":
        rows = [{k: r[k] for k in ("failure", "variant", "base", "overlay", "signature", "what")} for r in VARIANTS]
        if args.json:
            print(json.dumps(rows, indent=2))
        else:
            for r in rows:
                print(f"{r['failure']:4s} {r['variant']:16s} {r['what']}")
        return 0
    if args.command == "install":
        return install_all(args.json)
    if args.repeat < 1:
        parser.error(f"--repeat is {args.repeat}; expected a whole number of runs >= 1")
    try:
        withs = parse_withs(getattr(args, "withs", None))
    except ValueError as e:
        parser.error(str(e))
    selected = VARIANTS
    if args.command == "run":
        selected = [r for r in VARIANTS if r["failure"] == args.failure and
                    (args.variant is None or r["variant"] == args.variant)]
        if not selected:
            known = sorted({r["failure"] for r in VARIANTS}, key=lambda f: int(f[1:]))
            parser.error(f"failure '{args.failure}' has no upstream variant{' ' + args.variant if args.variant else ''}"
                         f"; expected one of {', '.join(known)}")
        if withs:  # the user's code replaces the release: the pre-fix variant's script decides
            selected = [r for r in selected if r["variant"] == "upstream-legacy"] or selected[:1]

    results, not_run = [], []
    with tempfile.TemporaryDirectory(prefix="faultline-upstream-") as scratch:
        for row in selected:
            for attempt in range(args.repeat):
                name = f"{row['failure']} {row['variant']}"
                try:
                    result = run_variant(row, withs, scratch)
                except NotRun as e:
                    not_run.append({"failure": row["failure"], "variant": row["variant"], "reason": str(e)})
                    log(f"not run   {name}: {e}")
                    break
                except (RuntimeError, ValueError, subprocess.TimeoutExpired) as e:
                    result = {"failure": row["failure"], "variant": row["variant"], "expected": "?",
                              "outcome": f"error: {e}", "matched": False, "transcript": ""}
                results.append(result)
                mark = "matched" if result["matched"] else "MISMATCH"
                log(f"{mark:9s} {name}{' --with' if withs else ''}: {result['outcome']} "
                    f"(expected {result['expected']}, {result.get('seconds', 0)} s)")
                if not result["matched"]:
                    log(result["transcript"][-3000:])
    ok = all(r["matched"] for r in results)
    if args.json:
        print(json.dumps({"ok": ok and not not_run, "results": results, "not_run": not_run}, indent=2))
    else:
        print(f"{'failure':8s}{'variant':24s}{'expected':12s}{'outcome':12s}matched")
        for r in results:
            print(f"{r['failure']:8s}{r['variant']:24s}{r['expected']:12s}{r['outcome']:12s}{r['matched']}")
        for n in not_run:
            print(f"{n['failure']:8s}{n['variant']:24s}not run: {n['reason']}")
    if not ok:
        return 1
    return 3 if not_run else 0


if __name__ == "__main__":
    sys.exit(main())
