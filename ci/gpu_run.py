#!/usr/bin/env python3
"""Runs faultline's GPU suite from the bundle of ci/gpu_bundle.sh on a machine
with a GPU and no Bazel: every gpu test with the environment Bazel would give
it (runtime cuda), `repro all --runtime cuda --json`, the PyTorch cross-check,
the device benchmark, and compute-sanitizer (memcheck, racecheck, initcheck,
synccheck) on every test that launches kernels.
Each step has its own timeout so the whole run fits in one 10-minute call.

Writes OUTDIR/report.json, OUTDIR/summary.txt and OUTDIR/logs.txt. A test
passes only if its binary exits 0 with no failed and no skipped test case: a
GPU run cannot pass by skipping. Exit status: 0 when everything passed, 1 when
something failed, 2 for a usage error, 3 when there is no usable CUDA device
(then nothing runs and every test counts as "could not run"), 4 when
everything that ran passed but some tests and repro variants need more GPUs
than the machine has (tag multi_device: F8, F9 and the 2-GPU conformance
scenarios need 2; they count as "not run").
Usage errors (exit 2, before any step runs and with no OUTDIR left behind):
a bad option, an OUTDIR that cannot be created or written, a --bundle that
is missing, is not a readable archive or has no usable manifest.json."""

import argparse
import concurrent.futures
import errno
import json
import math
import os
import platform
import re
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
import xml.etree.ElementTree as ET
import zlib

try:  # a Python built without lzma still runs an uncompressed or gzip bundle
    import lzma
    ARCHIVE_ERRORS = (tarfile.TarError, EOFError, zlib.error, lzma.LZMAError)
except ImportError:
    ARCHIVE_ERRORS = (tarfile.TarError, EOFError, zlib.error)

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
DEFAULT_BUNDLE = os.path.join(REPO, ".gpu-bundle", "faultline-gpu-bundle.tar.xz")
STEPS = ("tests", "repro", "crosscheck", "bench", "sanitizer")
SIMULATED_STEPS = ("tests", "repro", "bench")  # the sanitizer and the cross-check need a GPU
LOG_TAIL = 4000  # characters of a passing step's output kept in logs.txt
FAILED_LOG_TAIL = 60000  # of a failing one: every failed assertion, with what was observed
SANITIZER_JOBS = 4  # compute-sanitizer runs at a time
# memcheck: out-of-bounds and misaligned accesses, leaks; racecheck: shared-
# memory hazards; initcheck: reads of device memory never written;
# synccheck: invalid uses of __syncthreads and warp synchronisation.
SANITIZER_TOOLS = ("memcheck", "racecheck", "initcheck", "synccheck")
SANITIZER_EXCLUSIONS = os.path.join(HERE, "sanitizer_exclusions.json")
NOT_RUN = "not run"  # the machine has too few GPUs for it: neither passed nor failed
# The process groups of the steps running now (several at once in the
# sanitizer step), so that a SIGTERM can kill them all. A set's add, discard
# and copy are atomic under the GIL: no lock, which the signal handler could
# otherwise find held by the very thread it interrupted.
LIVE_GROUPS = set()
STOPPING = threading.Event()  # set by a SIGTERM or SIGINT: no new step starts


def log(message):
    print(message, flush=True)


def kill_group(pgid):
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):  # nothing left in it
        pass


def wait_group(proc, timeout):
    """Waits up to `timeout` s for proc, the leader of a session of its own;
    returns (exit code or None on timeout, output bytes). However it ends
    (exit, timeout, an exception such as SystemExit from a SIGTERM), the whole
    group is then killed: a test's forked workers, repro's variants and the
    cross-check's children must not outlive their step holding a GPU context."""
    LIVE_GROUPS.add(proc.pid)
    try:
        if STOPPING.is_set():  # the SIGTERM came between Popen and the add above
            kill_group(proc.pid)
        try:
            out, _ = proc.communicate(timeout=timeout)
            return proc.returncode, out
        except subprocess.TimeoutExpired as first:
            kill_group(proc.pid)
            try:  # the rest of the output, now that no one in the group can write
                out, _ = proc.communicate(timeout=10)
            except subprocess.TimeoutExpired as again:  # one that left the group still holds the pipe
                out = again.stdout or first.stdout or b""
            return None, out
    finally:
        # Strays left by a step that exited, or the step itself on an
        # exception. The leader may be reaped already; while any stray lives,
        # Linux keeps the number allocated as their group id (kernel/pid.c
        # frees a pid only when no task uses it as pid, group or session),
        # so this cannot reach another process's group; with no stray left
        # there is nothing to kill, and a reused number would have to lead a
        # group of its own within these microseconds.
        kill_group(proc.pid)
        proc.wait()
        if proc.stdout:
            proc.stdout.close()
        LIVE_GROUPS.discard(proc.pid)


def stop(signum, frame):
    """SIGTERM/SIGINT: kill every step's group, then exit through the
    `finally`s, which remove the unpacked bundle (faultline-gpu.* in TMPDIR)."""
    if STOPPING.is_set():  # a second signal: the cleanup is stuck; kill again and leave now
        for pgid in list(LIVE_GROUPS):
            kill_group(pgid)
        os._exit(128 + signum)
    STOPPING.set()
    for pgid in list(LIVE_GROUPS):
        kill_group(pgid)
    # os.write, not print: the signal may have interrupted a print, and
    # buffered writes are not reentrant.
    os.write(2, f"gpu_run: stopped by signal {signum}; killed the running steps\n".encode())
    sys.exit(128 + signum)


class Run:
    """The bundle, unpacked, and everything recorded so far."""

    def __init__(self, root, out_dir, deadline, runtime, devices, repeat, manifest):
        self.devices = devices  # visible devices, from device_probe
        self.repeat = repeat  # times each test binary runs its cases, and repro each variant (--repeat)
        self.runtime = runtime  # "cuda"; "simcuda" only to check this runner on a machine without a GPU
        self.root = root
        self.out_dir = out_dir
        self.deadline = deadline
        self.manifest = manifest  # as load_manifest checked it
        self.results = []
        self.logs = []

    def remaining(self):
        return self.deadline - time.monotonic()

    def base_env(self):
        env = dict(os.environ)
        lib = os.path.join(self.root, "lib")
        env["LD_LIBRARY_PATH"] = lib + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
        env["FAULTLINE_CUDA_STUB"] = os.path.join(lib, "stubs", "libcuda.so")
        return env

    def test_env(self, test, scratch):
        """The environment `bazel test` gives a test, plus the target's own env."""
        env = self.base_env()
        runfiles = os.path.join(self.root, test["runfiles"])
        env.update({
            "TEST_SRCDIR": runfiles, "RUNFILES_DIR": runfiles, "TEST_WORKSPACE": self.manifest["workspace"],
            "TEST_TMPDIR": scratch, "TEST_TARGET": test["label"], "XML_OUTPUT_FILE": os.path.join(scratch, "test.xml"),
            "GTEST_OUTPUT": "xml:" + os.path.join(scratch, "test.xml"), "HOME": scratch,
        })
        env.update(test["env"])
        env["FAULTLINE_TEST_RUNTIME"] = self.runtime
        # gtest runs every case this many times in one process and exits 1
        # if any pass failed (the XML keeps only the last pass).
        env["GTEST_REPEAT"] = str(self.repeat)
        return env

    def execute(self, name, argv, env, cwd, timeout):
        """Runs argv; returns (exit code or None on timeout, output, seconds)."""
        timeout = max(1, min(timeout, self.remaining()))
        start = time.monotonic()
        if STOPPING.is_set():  # a queued sanitizer job after a SIGTERM
            code, output = None, "[not started: gpu_run is stopping]"
        else:
            try:
                # A session of its own: its pid is the group that wait_group kills.
                proc = subprocess.Popen(argv, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                        start_new_session=True)
            except OSError as e:
                code, output = 127, f"could not start {argv[0]}: {e}"
            else:
                code, out = wait_group(proc, timeout)
                output = out.decode(errors="replace")
                if code is None:
                    output += f"\n[killed after {timeout:.0f} s]"
        seconds = time.monotonic() - start
        keep = LOG_TAIL if code == 0 else FAILED_LOG_TAIL
        self.logs.append(f"===== {name} (exit {code}, {seconds:.1f} s)\n{output[-keep:]}\n")
        return code, output, seconds

    def record(self, step, name, status, seconds=0.0, detail="", **extra):
        row = {"step": step, "name": name, "status": status, "seconds": round(seconds, 1), "detail": detail}
        row.update(extra)
        self.results.append(row)
        log(f"  {status:<13} {step:<10} {name} ({seconds:.1f} s){': ' + detail if detail else ''}")


def earlier_passes(output, counts):
    """With GTEST_REPEAT above 1 the XML holds only the last pass: the
    cases any pass failed or skipped, read from gtest's console lines, and
    the counts raised to them."""
    def cases(mark):  # a case's own end line, "Suite.Name (3 ms)" or "Inst/Suite.Name/1, where GetParam() = 1 (3 ms)"
        return sorted(set(re.findall(r"^\[  " + mark + r" \] ([^\s,]+\.[^\s,]+)(?:, where .*)? \(\d+ ms\)$", output, re.M)))
    failed, skipped = cases("FAILED "), cases("SKIPPED")
    counts["failures"] = max(counts["failures"], len(failed))
    counts["skipped"] = max(counts["skipped"], len(skipped))
    return failed


def gtest_verdict(xml_path, code, output, repeat=1):
    """Returns (status, detail, counts) for one gtest binary that ran its
    cases `repeat` times (GTEST_REPEAT)."""
    counts = {"tests": 0, "failures": 0, "skipped": 0}
    first_failure = ""
    if os.path.exists(xml_path):
        try:
            for case in ET.parse(xml_path).getroot().iter("testcase"):
                counts["tests"] += 1
                failure = case.find("failure")
                if failure is not None:
                    counts["failures"] += 1
                    if not first_failure:
                        first_failure = f"{case.get('classname')}.{case.get('name')}: " + \
                                        (failure.get("message") or "").strip().splitlines()[0:3].__str__()
                if case.get("result") == "skipped" or case.find("skipped") is not None:
                    counts["skipped"] += 1
        except ET.ParseError:
            pass
    failed_in_a_pass = earlier_passes(output, counts) if repeat > 1 else []
    if failed_in_a_pass and not first_failure:
        first_failure = f"{', '.join(failed_in_a_pass)} failed in one of the {repeat} passes"
    if code is None:
        return "timed out", "killed at its timeout", counts
    if code == 127 or (counts["tests"] == 0 and code != 0 and "error while loading shared libraries" in output):
        return "could not run", output.strip().splitlines()[-1] if output.strip() else f"exit {code}", counts
    if counts["failures"] or code != 0:
        if not first_failure:
            lines = [l for l in output.splitlines() if "Failure" in l or "error" in l.lower()]
            first_failure = lines[0] if lines else f"exit {code}"
        return "failed", first_failure, counts
    if counts["skipped"]:
        return "failed", f"{counts['skipped']} test case(s) skipped: a GPU run must not skip", counts
    if counts["tests"] == 0:
        return "failed", "ran no test case", counts
    return "passed", f"{counts['tests']} test cases", counts


def gpus_needed(test):
    return 2 if "multi_device" in test["tags"] else 1


def run_tests(run):
    log(f"=== tests (runtime {run.runtime})")
    for test in run.manifest["tests"]:
        if gpus_needed(test) > run.devices:
            run.record("tests", test["label"], NOT_RUN,
                       detail=f"needs {gpus_needed(test)} GPUs; this machine has {run.devices}")
            continue
        scratch = tempfile.mkdtemp(prefix="test.")
        try:
            cwd = os.path.join(run.root, test["runfiles"], run.manifest["workspace"])
            os.makedirs(cwd, exist_ok=True)
            code, output, seconds = run.execute(test["label"], [os.path.join(run.root, test["binary"])],
                                                run.test_env(test, scratch), cwd, test["timeout_s"] * run.repeat)
            status, detail, counts = gtest_verdict(os.path.join(scratch, "test.xml"), code, output, run.repeat)
            if status == "passed" and run.repeat > 1:
                detail += f", each {run.repeat} times"
            run.record("tests", test["label"], status, seconds, detail, **counts)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)


def run_repro(run):
    repeat = ["--repeat", str(run.repeat)] if run.repeat > 1 else []
    log(f"=== repro all --runtime {run.runtime} --json {' '.join(repeat)}".rstrip())
    repro = os.path.join(run.root, run.manifest["repro"])
    code, output, seconds = run.execute("repro all", [repro, "all", "--runtime", run.runtime, "--json"] + repeat,
                                        run.base_env(), os.path.dirname(repro), 240 * run.repeat)
    rows = []
    start = output.find("[")
    try:
        rows = json.loads(output[start:output.rfind("]") + 1]) if start >= 0 else []
    except json.JSONDecodeError:
        pass
    not_run = [r for r in rows if r.get("not_run")]
    mismatched = [f"{r['id']} {r['variant']}: expected {r['expected']}, got {r['outcome']}" +
                  (f" ({r.get('matched_runs')} of {r.get('runs')} runs matched)" if run.repeat > 1 else "")
                  for r in rows if not r.get("matched") and not r.get("not_run")]
    ran = len(rows) - len(not_run)
    if code is None:
        status, detail = "timed out", "killed at its timeout"
    elif rows and not mismatched and code == (3 if not_run else 0):  # repro's 3: only not-run variants missed
        runs = sum(r.get("runs", 1) for r in rows if not r.get("not_run"))
        status, detail = "passed", f"{ran} variants matched" + (f", {runs} of {runs} runs" if run.repeat > 1 else "")
    else:
        status, detail = "failed", "; ".join(mismatched) or f"exit {code}"
    run.record("repro", f"repro all --runtime {run.runtime}", status, seconds, detail, rows=rows)
    for r in not_run:
        run.record("repro", f"{r['id']} {r['variant']}", NOT_RUN, detail=r["not_run"])


def find_sanitizer():
    found = shutil.which("compute-sanitizer")
    for path in (found, "/usr/local/cuda/bin/compute-sanitizer",
                 "/usr/local/cuda/compute-sanitizer/compute-sanitizer"):
        if path and os.path.exists(path):
            return path
    return None


def sanitizer_exclusions():
    with open(SANITIZER_EXCLUSIONS) as f:
        return {label: entry for label, entry in json.load(f).items() if not label.startswith("_")}


def sanitize_one(run, tool_path, test, tool, gtest_filter=None):
    """Runs one test under one compute-sanitizer tool; returns (status, seconds, detail, output)."""
    name = f"{tool} {test['label']}" + (f" --gtest_filter={gtest_filter}" if gtest_filter else "")
    scratch = tempfile.mkdtemp(prefix="sanitize.")
    try:
        env = run.test_env(test, scratch)
        env["GTEST_REPEAT"] = "1"  # --repeat is for the tests step; under the sanitizer once is the budget
        env["RC_PARAMS"] = "max_success=10"  # property tests: fewer cases under the sanitizer
        cwd = os.path.join(run.root, test["runfiles"], run.manifest["workspace"])
        os.makedirs(cwd, exist_ok=True)
        # --report-api-errors no: the tests provoke API errors on purpose (a
        # double free, an unregistered pointer) and assert them; the sanitizer
        # is here for what kernels do to memory.
        argv = [tool_path, "--tool", tool, "--error-exitcode", "86", "--target-processes", "all",
                "--report-api-errors", "no", os.path.join(run.root, test["binary"])]
        if gtest_filter:
            argv.append("--gtest_filter=" + gtest_filter)
        code, output, seconds = run.execute(name, argv, env, cwd, 240)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    reports = [l for l in output.splitlines() if l.startswith("=========") and "SUMMARY" not in l
               and any(word in l for word in ("Invalid", "hazard", "Hazard", "Error", "Uninitialized", "Barrier"))]
    if code is None:
        return "timed out", seconds, "killed at its timeout", output
    if code == 86 or reports:
        return "failed", seconds, reports[0] if reports else "sanitizer error", output
    if code != 0:
        return "failed", seconds, f"the test failed under {tool} (exit {code})", output
    return "passed", seconds, "0 errors", output


def sanitizer_control(run, tool_path, test, control):
    """The positive control: one case that must make the sanitizer report."""
    status, seconds, _, output = sanitize_one(run, tool_path, test, control["tool"], control["case"])
    seen = control["report"] in output
    run.record("sanitizer", f"{control['tool']} catches {control['case'].split('/')[-1]} ({test['label']})",
               "passed" if seen else "failed", seconds,
               f"reported \"{control['report']}\"" if seen else f"no \"{control['report']}\" report ({status})")


def run_sanitizer(run):
    """Every SANITIZER_TOOLS tool on every kernel test, SANITIZER_JOBS at a time
    (the GPU machine has many cores; each job is its own process)."""
    tool_path = find_sanitizer()
    kernel_tests = [t for t in run.manifest["tests"] if t["launches_kernels"] and gpus_needed(t) <= run.devices]
    log(f"=== compute-sanitizer {', '.join(SANITIZER_TOOLS)} on {len(kernel_tests)} kernel tests")
    if not kernel_tests:  # checking nothing must not read as a pass
        run.record("sanitizer", "compute-sanitizer", "failed",
                   detail="the bundle has no kernel test (tag kernels) this machine can run")
        return
    jobs = [(test, tool) for test in kernel_tests for tool in SANITIZER_TOOLS]
    if tool_path is None:
        for test, tool in jobs:
            run.record("sanitizer", f"{tool} {test['label']}", "could not run", detail="compute-sanitizer not found")
        return
    exclusions = sanitizer_exclusions()
    filters = {label: "-" + ":".join(entry["exclude"]) for label, entry in exclusions.items()}
    with concurrent.futures.ThreadPoolExecutor(max_workers=SANITIZER_JOBS) as pool:
        futures = [pool.submit(sanitize_one, run, tool_path, test, tool, filters.get(test["label"]))
                   for test, tool in jobs]
        for (test, tool), future in zip(jobs, futures):
            status, seconds, detail, _ = future.result()
            if test["label"] in filters:
                detail += f" ({len(exclusions[test['label']]['exclude'])} driver-observing cases left out: " \
                          "ci/sanitizer_exclusions.json)"
            run.record("sanitizer", f"{tool} {test['label']}", status, seconds, detail)
    for test in kernel_tests:
        control = exclusions.get(test["label"], {}).get("expect_report")
        if control:
            sanitizer_control(run, tool_path, test, control)


def run_crosscheck(run):
    log("=== PyTorch cross-check")
    script = os.path.join(HERE, "gpu_crosscheck.py")
    # The machine's own environment: the bundle's libraries (Debian's libstdc++
    # among them) must not shadow the ones PyTorch was built against.
    code, output, seconds = run.execute("crosscheck", [sys.executable, script, "--json"], dict(os.environ), REPO, 180)
    rows = []
    try:
        rows = json.loads(output[output.find("["):output.rfind("]") + 1])
    except (json.JSONDecodeError, ValueError):
        pass
    differing = [r["mechanism"] for r in rows if not r.get("agrees")]
    if code is None:
        run.record("crosscheck", "pytorch", "timed out", seconds, "killed at its timeout", rows=rows)
    elif code != 0 or not rows:
        run.record("crosscheck", "pytorch", "failed", seconds, f"exit {code}", rows=rows)
    else:
        run.record("crosscheck", "pytorch", "passed" if not differing else "failed", seconds,
                   "faultline and PyTorch agree" if not differing else "differ: " + ", ".join(differing), rows=rows)


def run_bench(run):
    """The device benchmark (bench/device_bench.cc); its JSON lands in OUTDIR."""
    log(f"=== device benchmark (runtime {run.runtime})")
    if not run.manifest.get("device_bench"):
        run.record("bench", "device_bench", "could not run", detail="the bundle has no device_bench")
        return
    out_json = os.path.join(run.out_dir, "device_bench.json")
    env = run.base_env()
    env["FAULTLINE_RUNTIME"] = run.runtime
    argv = [os.path.join(run.root, run.manifest["device_bench"]), "--benchmark_out=" + out_json,
            "--benchmark_out_format=json"]
    code, output, seconds = run.execute("device_bench", argv, env, run.root, 200)
    rows = [l for l in output.splitlines() if l.startswith("BM_")]
    if code is None:
        run.record("bench", "device_bench", "timed out", seconds, "killed at its timeout", rows=rows)
    elif code != 0:
        run.record("bench", "device_bench", "failed", seconds, (output.strip().splitlines() or [f"exit {code}"])[-1],
                   rows=rows)
    else:
        run.record("bench", "device_bench", "passed", seconds, f"{len(rows)} benchmarks; device_bench.json",
                   rows=rows)
        report_bench(run, out_json)


def report_bench(run, bench_json):
    """The rows as the docs take them and the device goals (bench/device_report.py), into
    OUTDIR/device_report.md; its last line, goals_met=..., is the step's detail."""
    argv = [sys.executable, os.path.join(REPO, "bench", "device_report.py"), bench_json, "--runtime", run.runtime]
    code, output, seconds = run.execute("device_report", argv, run.base_env(), REPO, 30)
    with open(os.path.join(run.out_dir, "device_report.md"), "w") as f:
        f.write(output)
    last = (output.strip().splitlines() or [f"exit {code}"])[-1]
    run.record("bench", "device_report", "passed" if code == 0 else "failed", seconds, f"{last}; device_report.md")


def machine_facts():
    facts = {"kernel": platform.release(), "glibc": platform.libc_ver()[1], "python": platform.python_version()}
    try:
        smi = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,memory.total", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=30)
        facts["gpu"] = smi.stdout.strip() if smi.returncode == 0 else f"nvidia-smi failed: {smi.stderr.strip()}"
    except (OSError, subprocess.TimeoutExpired) as e:
        facts["gpu"] = f"nvidia-smi unavailable ({e.__class__.__name__})"
    return facts


def write_report(run, facts, probe, started):
    counts = {}
    for row in run.results:
        counts[row["status"]] = counts.get(row["status"], 0) + 1
    report = {"machine": facts, "probe": probe, "counts": counts, "results": run.results,
              "seconds": round(time.monotonic() - started, 1)}
    with open(os.path.join(run.out_dir, "report.json"), "w") as f:
        json.dump(report, f, indent=2)
    lines = [f"faultline GPU run: {facts.get('gpu')}; glibc {facts['glibc']}; kernel {facts['kernel']}",
             f"probe: {probe.get('devices')} device(s){'; ' + probe['reason'] if probe.get('reason') else ''}"]
    lines += [f"{r['status']:<13} {r['step']:<10} {r['name']} ({r['seconds']} s){': ' + r['detail'] if r['detail'] else ''}"
              for r in run.results]
    lines.append(", ".join(f"{n} {s}" for s, n in sorted(counts.items())) + f" in {report['seconds']} s")
    with open(os.path.join(run.out_dir, "summary.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")
    with open(os.path.join(run.out_dir, "logs.txt"), "w") as f:
        f.write("".join(run.logs))
    return counts


class BundleError(Exception):
    """A --bundle that is not what ci/gpu_bundle.sh writes: a usage error.
    Its message follows "the bundle 'PATH' "."""


def unreadable(reason):
    return BundleError(f"is not a readable archive from ci/gpu_bundle.sh: {reason}")


# What manifest.json must hold (ci/gpu_bundle.py writes it), with each value's type.
MANIFEST_KEYS = {"tests": list, "repro": str, "device_probe": str, "workspace": str}
MANIFEST_TEST_KEYS = {"label": str, "binary": str, "runfiles": str, "env": dict, "timeout_s": (int, float),
                      "launches_kernels": bool, "tags": list}


def unpack_bundle(bundle, work):
    """Extracts the bundle into work; raises BundleError if it is not a
    readable archive, OSError if work cannot be written."""
    if os.path.isfile(bundle) and os.path.getsize(bundle) == 0:
        raise unreadable("empty file")
    try:
        tar = tarfile.open(bundle)
    except tarfile.ReadError as e:
        if str(e).startswith("file could not be opened successfully"):  # one line per method tried
            raise unreadable("not a tar archive, plain or compressed (gzip, bzip2, xz)") from None
        raise unreadable(str(e).splitlines()[0] if str(e) else "ReadError") from None
    except ARCHIVE_ERRORS as e:
        raise unreadable(str(e) or e.__class__.__name__) from None
    except OSError as e:  # of the bundle itself: a folder, a file it may not read
        raise unreadable(e.strerror or str(e)) from None
    with tar:
        try:
            tar.extractall(work)
            # The rest of a compressed stream, so that its checksum (at the
            # end of gzip and xz streams) is checked: extractall stops at the
            # archive's end marker, and a corrupt bundle would unpack silently.
            while tar.fileobj.read(1 << 20):
                pass
        except ARCHIVE_ERRORS as e:  # truncated or corrupt
            raise unreadable(str(e) or e.__class__.__name__) from None
        except OSError as e:
            if e.errno is None:  # bz2's "Invalid data stream": the archive, not the disk
                raise unreadable(str(e)) from None
            raise


def load_manifest(root):
    """Reads and checks faultline-gpu/manifest.json once, right after the
    extraction; raises BundleError naming what is missing."""
    def unusable(problem):
        return BundleError(f"is not usable: its manifest.json{problem}")

    def check(entry, keys, where):
        for key, kind in keys.items():
            if key not in entry:
                raise unusable(f"{where} has no '{key}'")
            if not isinstance(entry[key], kind) or (kind is not bool and isinstance(entry[key], bool)):
                expected = kind.__name__ if isinstance(kind, type) else "number"
                raise unusable(f"{where} has '{key}' as a {type(entry[key]).__name__}; expected a {expected}")

    path = os.path.join(root, "manifest.json")
    if not os.path.isfile(path):
        raise BundleError("has no manifest.json (faultline-gpu/manifest.json): it is not from ci/gpu_bundle.sh")
    try:
        with open(path) as f:
            manifest = json.load(f)
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise unusable(f" is not valid JSON: {e}") from None
    if not isinstance(manifest, dict):
        raise unusable(f" holds a {type(manifest).__name__}; expected an object")
    check(manifest, MANIFEST_KEYS, "")
    for i, test in enumerate(manifest["tests"]):
        if not isinstance(test, dict):
            raise unusable(f"'s tests[{i}] is a {type(test).__name__}; expected an object")
        check(test, MANIFEST_TEST_KEYS, f"'s tests[{i}] ({test.get('label', 'no label')})")
    if not os.path.isfile(os.path.join(root, manifest["device_probe"])):  # every run starts with it
        raise unusable(f" names device_probe '{manifest['device_probe']}', which the bundle does not hold")
    return manifest


def outdir_problem(out_dir):
    """Why OUTDIR cannot be created or written, or None; creates nothing
    of OUTDIR (--check-args leaves no trace). OUTDIR must be a writable
    folder if it exists, else its nearest existing ancestor must be. As
    root, a missing OUTDIR's ancestor is also tried by creating and removing
    a scratch folder in it: access() grants root every write but on a
    read-only mount, and root may not create folders in /proc either."""
    path = os.path.abspath(out_dir)
    if os.path.lexists(path):
        if not os.path.isdir(path):
            return f"cannot write to OUTDIR '{out_dir}': it exists and is not a folder"
        if not os.access(path, os.W_OK | os.X_OK):
            return f"cannot write to OUTDIR '{out_dir}': {os.strerror(errno.EACCES)}"
        return None
    ancestor = os.path.dirname(path)
    while not os.path.lexists(ancestor):
        ancestor = os.path.dirname(ancestor)
    if not os.path.isdir(ancestor):
        return f"cannot create OUTDIR '{out_dir}': {os.strerror(errno.ENOTDIR)} ('{ancestor}' is not a folder)"
    if not os.access(ancestor, os.W_OK | os.X_OK):
        return f"cannot create OUTDIR '{out_dir}': {os.strerror(errno.EACCES)} (in '{ancestor}')"
    if os.geteuid() == 0:
        try:
            os.rmdir(tempfile.mkdtemp(prefix=".gpu_run-check.", dir=ancestor))
        except OSError as e:
            return f"cannot create OUTDIR '{out_dir}': {e.strerror or e}"
    return None


def main():
    # No abbreviations: ci/gpu.sh must be able to tell every option apart.
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], allow_abbrev=False)
    parser.add_argument("out_dir", help="folder for report.json, summary.txt and logs.txt")
    parser.add_argument("--bundle", default=DEFAULT_BUNDLE, help="archive from ci/gpu_bundle.sh (default %(default)s)")
    parser.add_argument("--only", action="append", choices=STEPS, help="run only this step (repeatable)")
    parser.add_argument("--budget-s", type=float, default=570, help="wall-clock budget for all steps (default 570)")
    parser.add_argument("--repeat", type=int, default=1,
                        help="run each test binary's cases and each repro variant N times (a flake check; the "
                             "sanitizer, cross-check and benchmark run once); default 1")
    parser.add_argument("--simulate", action="store_true",
                        help="check this runner without a GPU: tests and repro on simcuda (sanitizer and "
                             "cross-check need a GPU and are left out); never a GPU validation")
    parser.add_argument("--check-args", action="store_true",
                        help="only check the arguments (exit 0 or 2), as ci/gpu.sh does before it builds")
    args = parser.parse_args()
    if not (math.isfinite(args.budget_s) and args.budget_s > 0):
        parser.error(f"--budget-s is {args.budget_s}; expected a finite number of seconds > 0")
    if args.repeat < 1:
        parser.error(f"--repeat is {args.repeat}; expected a number of runs >= 1")
    if "GTEST_REPEAT" in os.environ:  # it would be overridden: say so rather than run each case once
        parser.error(f"GTEST_REPEAT={os.environ['GTEST_REPEAT']} is set; use --repeat N instead")
    steps = args.only or list(STEPS)
    if args.simulate:
        steps = [s for s in steps if s in SIMULATED_STEPS]
    if not steps:  # nothing would run, and "0 passed" must not read as a validation
        parser.error(f"--only {' '.join(args.only)} with --simulate leaves no step to run "
                     f"(--simulate runs only {', '.join(SIMULATED_STEPS)})")
    problem = outdir_problem(args.out_dir)
    if problem:
        print(f"gpu_run: {problem}", file=sys.stderr)
        return 2
    if args.check_args:
        return 0
    # The steps run in folders of their own: paths must not depend on the cwd.
    given_out_dir, given_bundle = args.out_dir, args.bundle
    args.out_dir, args.bundle = os.path.abspath(args.out_dir), os.path.abspath(args.bundle)
    if not os.path.exists(args.bundle):
        print(f"gpu_run: no bundle at {args.bundle}; build it with ci/gpu_bundle.sh", file=sys.stderr)
        return 2
    started = time.monotonic()
    # The default SIGTERM ends Python without running the `finally` below,
    # leaving the unpacked bundle behind (and every step's processes).
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    work = tempfile.mkdtemp(prefix="faultline-gpu.")
    try:
        # The bundle is unpacked and checked before OUTDIR is created: a bad
        # one leaves no OUTDIR behind.
        try:
            unpack_bundle(args.bundle, work)
            manifest = load_manifest(os.path.join(work, "faultline-gpu"))
        except BundleError as e:
            print(f"gpu_run: the bundle '{given_bundle}' {e}", file=sys.stderr)
            return 2
        except OSError as e:
            print(f"gpu_run: cannot unpack the bundle into {work}: {e.strerror or e}", file=sys.stderr)
            return 1
        try:
            os.makedirs(args.out_dir, exist_ok=True)
        except OSError as e:
            print(f"gpu_run: cannot create OUTDIR '{given_out_dir}': {e.strerror or e}", file=sys.stderr)
            return 2
        runtime = "simcuda" if args.simulate else "cuda"
        run = Run(os.path.join(work, "faultline-gpu"), args.out_dir, started + args.budget_s, runtime, 0, args.repeat,
                  manifest)
        facts = machine_facts()
        log(f"gpu_run: {facts['gpu']}; glibc {facts['glibc']}; kernel {facts['kernel']}")
        code, output, _ = run.execute("device_probe", [os.path.join(run.root, run.manifest["device_probe"]),
                                                       "--runtime", runtime, "--json"],
                                      run.base_env(), work, 60)
        try:
            probe = json.loads(output.strip().splitlines()[-1])
        except (json.JSONDecodeError, IndexError):
            probe = {"devices": 0, "reason": f"device_probe failed (exit {code}): {output.strip()[-300:]}"}
        if args.simulate:
            log("gpu_run: --simulate: tests, repro and bench on simcuda; this checks the runner, it validates no GPU")
        if probe.get("devices", 0) <= 0:
            hints = {35: "no driver", 34: "only the stub driver", 100: "no device or none visible", 3: "initialization error"}
            reason = f"{probe['error']} ({probe['code']}): {hints.get(probe['code'], 'see report.json')}" \
                if probe.get("error") else (probe.get("reason") or "no device")
            for test in run.manifest["tests"]:
                run.record("tests", test["label"], "could not run", detail=reason)
            n = len(run.manifest["tests"])
            write_report(run, facts, probe, started)
            print(f"gpu_run: no CUDA device ({reason}): {n} of {n} tests could not run", file=sys.stderr)
            return 3
        # simcuda gives each multi-GPU test and variant the devices it needs.
        run.devices = probe["devices"] if runtime == "cuda" else 2
        log(f"gpu_run: {probe['devices']} {runtime} device(s)")
        for step, function in (("tests", run_tests), ("repro", run_repro), ("crosscheck", run_crosscheck),
                               ("bench", run_bench), ("sanitizer", run_sanitizer)):
            if step in steps:
                function(run)
        counts = write_report(run, facts, probe, started)
        bad = sum(n for status, n in counts.items() if status not in ("passed", NOT_RUN))
        not_run = counts.get(NOT_RUN, 0)
        why = f" (they need more GPUs than the {run.devices} here)" if not_run else ""
        log(f"gpu_run: {counts.get('passed', 0)} passed, {bad} failed or timed out, {not_run} not run{why}; "
            f"report in {args.out_dir}")
        if bad:
            return 1
        return 4 if not_run else 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
