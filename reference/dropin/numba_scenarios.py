#!/usr/bin/env python3
"""PyPI's numba-cuda, unmodified, over drop-in simcuda: its memory API.

Each scenario runs in a fresh process under ci/simcuda.sh (with --report),
prints what it observed as one `RESULT {json}` line, and the driver compares
that, the process report and stderr with the result real CUDA gives (the
figures that describe a device are simcuda's: 16 GiB, the name asked for).

    numba_scenarios.py --python VENV_PYTHON --launcher ci/simcuda.sh [--only NAME] [--json]

The venv holds numba-cuda 0.20.1, numba 0.62.1, llvmlite 0.45.1, numpy 2.3.5
(pip install numba-cuda==0.20.1 numba==0.62.1 llvmlite==0.45.1 numpy==2.3.5;
~300 MB). 0.20.1 is the last numba-cuda with its own ctypes binding (from
0.21.0 on it requires cuda-bindings, which reaches the driver through
cuGetProcAddress_v2); the ctypes binding binds each driver function by name
with dlsym, trying NAME_v2 before NAME, and is chosen by
NUMBA_CUDA_USE_NVIDIA_BINDING=0, which the scenarios get unless the
environment already sets it. The scenarios also run under numba-cuda 0.30.4
with cuda-bindings 13.5.0 (NUMBA_CUDA_USE_NVIDIA_BINDING=1), where they pass
and fail alike, except visible_empty, whose message then names the code as
`<CUresult.CUDA_ERROR_NO_DEVICE: 100>`. No scenario compiles a kernel (no
libNVVM is needed; cuda.is_available() is False without one, whatever the
driver says).

Exit: 0 every scenario gave its expected result, 1 one did not, 2 usage.
"""
import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

UUID0 = "GPU-5eed0000-0000-4000-8000-000000000000"
UUID1 = "GPU-5eed0000-0000-4000-8000-000000000001"
GIB16 = 16 << 30
FORK_ERROR = "numba.cuda.cudadrv.error.CudaDriverError: CUDA initialized before forking"

# CUpointer_attribute and CUmemorytype values (cuda.h).
POINTER_ATTRIBUTE_MEMORY_TYPE = 2
POINTER_ATTRIBUTE_IS_MANAGED = 8
POINTER_ATTRIBUTE_DEVICE_ORDINAL = 9


def result(**observed):
    print("RESULT " + json.dumps(observed), flush=True)


def error_text(e):
    """What numba raised: its class and the first line of its message."""
    lines = str(e).splitlines()
    return f"{type(e).__module__}.{type(e).__qualname__}: {lines[0] if lines else ''}"


def pointer_attribute(address, attribute):
    """cuPointerGetAttribute(attribute) of `address`, through numba's own driver binding."""
    import ctypes
    from numba.cuda.cudadrv import driver as numba_driver
    driver = numba_driver.driver
    # The NVIDIA binding: numba-cuda >= 0.21 (no USE_NV_BINDING: only that one), or NUMBA_CUDA_USE_NVIDIA_BINDING=1.
    if getattr(numba_driver, "USE_NV_BINDING", True):
        from cuda.bindings import driver as binding
        return int(driver.cuPointerGetAttribute(binding.CUpointer_attribute(attribute), address))
    value = ctypes.c_int(-1)
    driver.cuPointerGetAttribute(ctypes.byref(value), attribute, address)
    return value.value


def device_address(array):
    return array.device_ctypes_pointer.value


# --- Scenarios: each runs in its own process, under simulated CUDA.

def s_to_device():
    import numpy as np
    from numba import cuda
    x = np.arange(10)
    d = cuda.to_device(x)
    back = d.copy_to_host()
    result(back=back.tolist(), dtype=str(back.dtype), equal=bool(np.array_equal(back, x)),
           memory_type=pointer_attribute(device_address(d), POINTER_ATTRIBUTE_MEMORY_TYPE))


def s_pinned_array():
    import numpy as np
    from numba import cuda
    p = cuda.pinned_array(16, dtype=np.float32)
    p[:] = np.arange(16)  # host-accessible: written and read on the host
    round_trip = cuda.to_device(p).copy_to_host()
    into = cuda.pinned_array(16, dtype=np.float32)
    cuda.to_device(np.arange(16, dtype=np.float32) * 2).copy_to_host(into)
    result(type=type(p).__name__, shape=list(p.shape), host_sum=float(p.sum()),
           memory_type=pointer_attribute(p.ctypes.data, POINTER_ATTRIBUTE_MEMORY_TYPE),
           round_trip=bool(np.array_equal(round_trip, p)), into_pinned_sum=float(into.sum()))


def s_mapped_and_registered():
    import numpy as np
    from numba import cuda
    m = cuda.mapped_array(8, dtype=np.int64)  # cuMemHostAlloc(DEVICEMAP) + cuMemHostGetDevicePointer
    m[:] = np.arange(8)
    plain = np.arange(6, dtype=np.int64)
    with cuda.pinned(plain):  # cuMemHostRegister
        registered_type = pointer_attribute(plain.ctypes.data, POINTER_ATTRIBUTE_MEMORY_TYPE)
        copied = cuda.to_device(plain).copy_to_host().tolist()
    result(mapped_sum=int(m.sum()), mapped_type=pointer_attribute(m.ctypes.data, POINTER_ATTRIBUTE_MEMORY_TYPE),
           registered_type=registered_type, registered_copy=copied)


def s_device_array():
    import numpy as np
    from numba import cuda
    d = cuda.device_array(10, dtype=np.int64)
    d.copy_to_device(np.arange(10) * 3)
    e = cuda.device_array_like(d)
    e.copy_to_device(d)  # device to device
    result(shape=list(d.shape), dtype=str(d.dtype), back=d.copy_to_host().tolist(), d2d=e.copy_to_host().tolist(),
           memory_type=pointer_attribute(device_address(d), POINTER_ATTRIBUTE_MEMORY_TYPE))


def s_gpus():
    from numba import cuda
    result(count=len(cuda.gpus), ids=[g.id for g in cuda.gpus], names=[g.name if isinstance(g.name, str) else g.name.decode() for g in cuda.gpus],
           capabilities=[list(g.compute_capability) for g in cuda.gpus], uuids=[g.uuid for g in cuda.gpus])


def s_gpus_switch():
    # `with cuda.gpus[1]` pushes device 1's primary context (cuCtxPushCurrent);
    # leaving pops it (cuCtxPopCurrent), and device 0's is current again.
    import numpy as np
    from numba import cuda
    a = cuda.to_device(np.arange(3))
    with cuda.gpus[1]:
        inside = cuda.current_context().device.id
        b = cuda.to_device(np.arange(3))
    after = cuda.current_context().device.id
    c = cuda.to_device(np.arange(3))
    result(a=pointer_attribute(device_address(a), POINTER_ATTRIBUTE_DEVICE_ORDINAL), inside=inside,
           b=pointer_attribute(device_address(b), POINTER_ATTRIBUTE_DEVICE_ORDINAL), after=after,
           c=pointer_attribute(device_address(c), POINTER_ATTRIBUTE_DEVICE_ORDINAL),
           values=[x.copy_to_host().tolist() for x in (a, b, c)])


def s_memory_info():
    import numpy as np
    from numba import cuda
    ctx = cuda.current_context()
    start = ctx.get_memory_info()
    d = cuda.device_array(1 << 20, dtype=np.uint8)
    taken = ctx.get_memory_info()
    del d
    ctx.memory_manager.deallocations.clear()  # numba defers cuMemFree; flush it
    freed = ctx.get_memory_info()
    result(total=start.total, free_at_start=start.free, taken_by_1mib=start.free - taken.free,
           returned_after_free=freed.free == start.free, total_unchanged=taken.total == freed.total == start.total)


def s_stream():
    import numpy as np
    from numba import cuda
    s = cuda.stream()
    d = cuda.to_device(np.arange(5), stream=s)  # cuMemcpyHtoDAsync
    back = d.copy_to_host(stream=s)             # cuMemcpyDtoHAsync
    s.synchronize()
    cuda.synchronize()
    result(back=back.tolist())


def s_stream_device_to_device():
    import numpy as np
    from numba import cuda
    s = cuda.stream()
    d = cuda.to_device(np.arange(6), stream=s)
    e = cuda.device_array_like(d, stream=s)
    e.copy_to_device(d, stream=s)  # cuMemcpyDtoDAsync
    back = e.copy_to_host(stream=s)
    s.synchronize()
    result(back=back.tolist())


def s_default_streams():
    # CU_STREAM_LEGACY (0x1) and CU_STREAM_PER_THREAD (0x2): handles every
    # stream-taking driver function accepts.
    import numpy as np
    from numba import cuda
    observed = {}
    for name, stream in (("legacy", cuda.legacy_default_stream()), ("per_thread", cuda.per_thread_default_stream())):
        try:
            back = cuda.to_device(np.arange(4), stream=stream).copy_to_host(stream=stream)
            stream.synchronize()
            observed[name] = back.tolist()
        except Exception as e:  # noqa: BLE001: recorded, compared
            observed[name] = error_text(e)
    result(**observed)


def s_events():
    import numpy as np
    from numba import cuda
    s = cuda.stream()
    start, end = cuda.event(), cuda.event()
    start.record(s)
    cuda.to_device(np.arange(1000), stream=s)
    end.record(s)
    end.synchronize()
    result(query=end.query(), elapsed_nonnegative=cuda.event_elapsed_time(start, end) >= 0)


def s_managed_array():
    import numpy as np
    from numba import cuda
    m = cuda.managed_array(4, dtype=np.int64)  # cuMemAllocManaged
    m[:] = np.arange(4)
    result(sum=int(m.sum()), is_managed=pointer_attribute(m.ctypes.data, POINTER_ATTRIBUTE_IS_MANAGED))


def s_close_then_reuse():
    # cuda.close() pops contexts until cuCtxGetCurrent answers NULL, then
    # releases and resets each primary context (cuDevicePrimaryCtxReset).
    import numpy as np
    from numba import cuda
    cuda.to_device(np.arange(3))
    cuda.close()
    result(after=cuda.to_device(np.arange(3)).copy_to_host().tolist())


def s_detect():
    from numba import cuda
    result(detect=bool(cuda.detect()))


def s_fork_after_init():
    import numpy as np
    from numba import cuda
    x = cuda.to_device(np.arange(8))
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        observed = {}
        try:
            cuda.to_device(np.arange(2))
            observed["new_array"] = "ok"
        except Exception as e:  # noqa: BLE001: recorded, compared
            observed["new_array"] = error_text(e)
        try:
            x.copy_to_host()
            observed["inherited_copy"] = "ok"
        except Exception as e:  # noqa: BLE001
            observed["inherited_copy"] = error_text(e)
        os.write(w, json.dumps(observed).encode())
        os._exit(0)
    os.close(w)
    child = json.loads(os.read(r, 65536).decode())
    os.waitpid(pid, 0)
    result(parent_still_works=x.copy_to_host().tolist() == list(range(8)), **child)


def s_fork_before_init():
    import numpy as np
    from numba import cuda  # loads libcuda.so.1; cuInit waits for the first use
    pid = os.fork()
    if pid == 0:
        try:
            ok = cuda.to_device(np.arange(4)).copy_to_host().sum() == 6
            os._exit(0 if ok else 1)
        except Exception:  # noqa: BLE001
            os._exit(2)
    _, status = os.waitpid(pid, 0)
    result(child_exit=os.waitstatus_to_exitcode(status))


def spawned_child(queue):
    import numpy as np
    from numba import cuda
    queue.put(int(cuda.to_device(np.arange(3)).copy_to_host().sum()))


def s_spawn_after_init():
    import multiprocessing
    import numpy as np
    from numba import cuda
    cuda.to_device(np.arange(1))
    ctx = multiprocessing.get_context("spawn")
    queue = ctx.Queue()
    p = ctx.Process(target=spawned_child, args=(queue,))
    p.start()
    got = queue.get(timeout=120)
    p.join()
    result(child_sum=got, child_exit=p.exitcode)


def s_visible_empty():
    from numba import cuda
    try:
        count = len(cuda.gpus)  # the first use runs cuInit, which finds no device
    except Exception as e:  # noqa: BLE001: recorded, compared
        count = error_text(e)
    result(gpus=count, driver_available=cuda.cudadrv.driver.driver.is_available)


def s_visible_one():
    from numba import cuda
    result(count=len(cuda.gpus), uuid=cuda.gpus[0].uuid)


H100 = {"FAULTLINE_SIMCUDA_DEVICE_NAME": "NVIDIA H100 80GB HBM3"}
SCENARIOS = {
    # name: (function, simcuda.sh options, extra environment, expected RESULT,
    #        checks on report/stderr, and "timeout": seconds where a hang is the failure to expect)
    "to_device": (s_to_device, [], {},
                  {"back": list(range(10)), "dtype": "int64", "equal": True, "memory_type": 2}, {"initialized": True}),
    "pinned_array": (s_pinned_array, [], {},
                     {"type": "ndarray", "shape": [16], "host_sum": 120.0, "memory_type": 1, "round_trip": True,
                      "into_pinned_sum": 240.0}, {}),
    "mapped_and_registered": (s_mapped_and_registered, [], {},
                              {"mapped_sum": 28, "mapped_type": 1, "registered_type": 1,
                               "registered_copy": list(range(6))}, {}),
    "device_array": (s_device_array, [], {},
                     {"shape": [10], "dtype": "int64", "back": [3 * i for i in range(10)],
                      "d2d": [3 * i for i in range(10)], "memory_type": 2}, {}),
    "gpus": (s_gpus, ["--devices", "2"], H100,
             {"count": 2, "ids": [0, 1], "names": ["NVIDIA H100 80GB HBM3"] * 2, "capabilities": [[9, 0], [9, 0]],
              "uuids": [UUID0, UUID1]}, {"initialized": True}),
    "gpus_switch": (s_gpus_switch, ["--devices", "2"], {},
                    {"a": 0, "inside": 1, "b": 1, "after": 0, "c": 0, "values": [[0, 1, 2]] * 3}, {}),
    "memory_info": (s_memory_info, [], {},
                    {"total": GIB16, "free_at_start": GIB16, "taken_by_1mib": 1 << 20, "returned_after_free": True,
                     "total_unchanged": True}, {}),
    "stream": (s_stream, [], {}, {"back": list(range(5))}, {}),
    "stream_device_to_device": (s_stream_device_to_device, [], {}, {"back": list(range(6))}, {}),
    "default_streams": (s_default_streams, [], {}, {"legacy": [0, 1, 2, 3], "per_thread": [0, 1, 2, 3]}, {}),
    "events": (s_events, [], {}, {"query": True, "elapsed_nonnegative": True}, {}),
    "managed_array": (s_managed_array, [], {}, {"sum": 6, "is_managed": 1}, {}),
    "close_then_reuse": (s_close_then_reuse, [], {}, {"after": [0, 1, 2]}, {"timeout": 20}),
    "detect": (s_detect, [], {}, {"detect": True}, {}),
    "fork_after_init": (s_fork_after_init, [], {},
                        {"new_array": FORK_ERROR, "inherited_copy": FORK_ERROR, "parent_still_works": True},
                        {"stderr": "was forked after CUDA was initialized in pid", "forked_child_fails": True,
                         "where_names_script_line": True}),
    "fork_before_init": (s_fork_before_init, [], {}, {"child_exit": 0}, {}),
    "spawn_after_init": (s_spawn_after_init, [], {}, {"child_sum": 3, "child_exit": 0}, {}),
    "visible_empty": (s_visible_empty, ["--devices", "2"], {"CUDA_VISIBLE_DEVICES": ""},
                      {"gpus": "numba.cuda.cudadrv.error.CudaSupportError: Error at driver init: "
                               "Call to cuInit results in CUDA_ERROR_NO_DEVICE (100)", "driver_available": False}, {}),
    "visible_one": (s_visible_one, ["--devices", "2"], {"CUDA_VISIBLE_DEVICES": "1"}, {"count": 1, "uuid": UUID1}, {}),
    "visible_uuid": (s_visible_one, ["--devices", "2"], {"CUDA_VISIBLE_DEVICES": UUID1},
                     {"count": 1, "uuid": UUID1}, {}),
}


def run_scenario(name, python, launcher, timeout):
    fn, options, env_extra, expected, checks = SCENARIOS[name]
    timeout = min(timeout, checks.get("timeout", timeout))
    with tempfile.TemporaryDirectory() as tmp:
        report = os.path.join(tmp, "report.json")
        env = dict(os.environ, **env_extra)
        env.setdefault("NUMBA_CUDA_USE_NVIDIA_BINDING", "0")
        started = time.monotonic()
        # Its own session, so that a hang is ended with every process it started.
        proc = subprocess.Popen([launcher, *options, "--report", report, "--", python, os.path.abspath(__file__),
                                 "--scenario", name], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, start_new_session=True)
        timed_out = False
        try:
            stdout, stderr = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            os.killpg(proc.pid, signal.SIGKILL)
            stdout, stderr = proc.communicate()
        seconds = time.monotonic() - started
        processes = []
        if os.path.exists(report):
            with open(report) as f:
                processes = json.load(f)["processes"]
    problems = []
    lines = [l for l in stdout.splitlines() if l.startswith("RESULT ")]
    observed = json.loads(lines[-1][len("RESULT "):]) if lines else None
    if timed_out:
        problems.append(f"timed out after {timeout:g}s; stderr: {stderr[-2000:]}")
    elif observed is not None and set(observed) == {"raised"}:
        problems.append(f"raised {observed['raised']}")
    elif proc.returncode != 0 or observed is None:
        problems.append(f"exit {proc.returncode}, no RESULT line; stderr: {stderr[-2000:]}")
    elif observed != expected:
        problems.append(f"observed {observed}, expected {expected}")
    main = [p for p in processes if p["start"] == "exec" and "--scenario" in p["command"]]
    if "initialized" in checks:
        was = bool(main) and main[0]["initialized_where"] is not None
        if was != checks["initialized"]:
            problems.append(f"report: CUDA initialized is {was}, expected {checks['initialized']}")
    if "stderr" in checks and checks["stderr"] not in stderr:
        problems.append(f"stderr lacks {checks['stderr']!r}: {stderr[-2000:]}")
    if checks.get("forked_child_fails"):
        forked = [p for p in processes if p["start"] == "fork"]
        if not forked or not forked[0]["forked_after_initialization"] or \
                (forked[0]["first_failing_call"] or {}).get("code") != 3:
            problems.append(f"report: no forked child with a first failing call of code 3: {forked}")
    if checks.get("where_names_script_line"):
        # The parent initialized CUDA at s_fork_after_init's third line (cuda.to_device).
        line = s_fork_after_init.__code__.co_firstlineno + 3
        want = f'File "{os.path.abspath(__file__)}", line {line} in s_fork_after_init'
        if want not in stderr:
            problems.append(f"stderr lacks the initialization site {want!r}: {stderr[-2000:]}")
    return {"scenario": name, "ok": not problems, "seconds": round(seconds, 2), "observed": observed,
            "expected": expected, "problems": problems}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scenario", help=argparse.SUPPRESS)
    parser.add_argument("--python", help="the python of a venv with numba-cuda 0.20.1 (see above)")
    parser.add_argument("--launcher", help="ci/simcuda.sh")
    parser.add_argument("--only", action="append", choices=sorted(SCENARIOS), help="run only these scenarios")
    parser.add_argument("--json", action="store_true", help="one JSON object on stdout")
    parser.add_argument("--timeout", type=float, default=300, help="seconds per scenario (default 300)")
    args = parser.parse_args()
    if args.scenario:
        try:
            SCENARIOS[args.scenario][0]()
        except Exception as e:  # noqa: BLE001: what numba raised is the observation
            import traceback
            traceback.print_exc()
            result(raised=error_text(e))
            return 1
        return 0
    if not args.python or not args.launcher:
        parser.error("--python and --launcher are required")
    rows = []
    for name in args.only or SCENARIOS:
        row = run_scenario(name, args.python, args.launcher, args.timeout)
        rows.append(row)
        print(f"{'ok  ' if row['ok'] else 'FAIL'} {name:22s} {row['seconds']:6.2f}s {row['observed']}",
              file=sys.stderr, flush=True)
        for p in row["problems"]:
            print(f"     {p}", file=sys.stderr)
    ok = all(r["ok"] for r in rows)
    if args.json:
        print(json.dumps({"ok": ok, "scenarios": rows}, indent=2))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
