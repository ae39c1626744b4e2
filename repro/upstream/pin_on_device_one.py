"""F8's pattern with a current torch and two simulated devices: the current
device is 1 and a DataLoader pins its batches (pin_memory=True); the fixed
pin-memory thread sets device 1 first, so device 0 never gets a context.
The primary contexts' states are read from the driver (cuDevicePrimaryCtxGetState).

Prints "main: device 0 has no context" (exit 0) or what it found (exit 1).
"""
import ctypes
import sys

import torch
from torch.utils.data import DataLoader, TensorDataset

torch.cuda.set_device(1)
loader = DataLoader(TensorDataset(torch.arange(16, dtype=torch.float32)), batch_size=4, num_workers=2,
                    pin_memory=True)
pinned = all(batch[0].is_pinned() for batch in loader)
driver = ctypes.CDLL("libcuda.so.1")
state = {}
for device in (0, 1):
    flags, active = ctypes.c_uint(), ctypes.c_int()
    driver.cuDevicePrimaryCtxGetState(device, ctypes.byref(flags), ctypes.byref(active))
    state[device] = active.value
print(f"main: batches pinned {pinned}, contexts {state}", flush=True)
if pinned and state == {0: 0, 1: 1}:
    print("main: device 0 has no context", flush=True)
    sys.exit(0)
sys.exit(1)
