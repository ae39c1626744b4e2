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
import json
import os
import sys

import scenario_runner
from scenario_runner import error_text, result

UUID0 = "GPU-5eed0000-0000-4000-8000-000000000000"
UUID1 = "GPU-5eed0000-0000-4000-8000-000000000001"
GIB16 = 16 << 30
FORK_ERROR = "numba.cuda.cudadrv.error.CudaDriverError: CUDA initialized before forking"

# CUpointer_attribute and CUmemorytype values (cuda.h).
POINTER_ATTRIBUTE_MEMORY_TYPE = 2
POINTER_ATTRIBUTE_IS_MANAGED = 8
POINTER_ATTRIBUTE_DEVICE_ORDINAL = 9


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
                         "where": (s_fork_after_init, 3)}),  # cuda.to_device: where CUDA starts
    "fork_before_init": (s_fork_before_init, [], {}, {"child_exit": 0}, {}),
    "spawn_after_init": (s_spawn_after_init, [], {}, {"child_sum": 3, "child_exit": 0}, {}),
    "visible_empty": (s_visible_empty, ["--devices", "2"], {"CUDA_VISIBLE_DEVICES": ""},
                      {"gpus": "numba.cuda.cudadrv.error.CudaSupportError: Error at driver init: "
                               "Call to cuInit results in CUDA_ERROR_NO_DEVICE (100)", "driver_available": False}, {}),
    "visible_one": (s_visible_one, ["--devices", "2"], {"CUDA_VISIBLE_DEVICES": "1"}, {"count": 1, "uuid": UUID1}, {}),
    "visible_uuid": (s_visible_one, ["--devices", "2"], {"CUDA_VISIBLE_DEVICES": UUID1},
                     {"count": 1, "uuid": UUID1}, {}),
}


if __name__ == "__main__":
    sys.exit(scenario_runner.main(__doc__, SCENARIOS, __file__, env_defaults={"NUMBA_CUDA_USE_NVIDIA_BINDING": "0"},
                                  python_help="the python of a venv with numba-cuda 0.20.1 (ci/py_venv.sh)"))
