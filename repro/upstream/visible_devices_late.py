"""F9's pattern: a program counts the devices, then narrows
CUDA_VISIBLE_DEVICES (as a launcher that assigns one GPU per worker does),
and counts again, before CUDA is initialized. A release that caches the
count answers the stale number.

Prints "count: 2, then 1 after CUDA_VISIBLE_DEVICES=0" when the second
count follows the variable, "count: 2, then 2 (stale) ..." when it does not.
Exits 0 when the count followed the variable, 1 when it was stale.
"""
import os
import sys

import torch

before = torch.cuda.device_count()
os.environ["CUDA_VISIBLE_DEVICES"] = "0"
after = torch.cuda.device_count()
stale = " (stale)" if after != 1 else ""
print(f"count: {before}, then {after}{stale} after CUDA_VISIBLE_DEVICES=0", flush=True)
sys.exit(1 if stale else 0)
