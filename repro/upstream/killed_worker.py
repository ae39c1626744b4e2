"""F7's pattern with a current torch: a DataLoader worker is SIGKILLed (as
the OOM killer does) before it sends a batch. The fixed loader raises at
once (its SIGCHLD handler); the old one waited forever.

Prints "trainer: <the error, pids as N>" and "trainer: the loader raised
instead of hanging" (exit 0), or says it finished without an error (exit 1).
"""
import os
import re
import signal
import sys

import torch  # noqa: F401  (the DataLoader's process machinery)
from torch.utils.data import DataLoader, Dataset


class KilledAtOnce(Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, index):
        os.kill(os.getpid(), signal.SIGKILL)


try:
    for _ in DataLoader(KilledAtOnce(), batch_size=1, num_workers=1, collate_fn=list):
        pass
except RuntimeError as e:
    print("trainer:", re.sub(r"pid(\(s\))? [0-9, ]+", r"pid\1 N", str(e).splitlines()[0]), flush=True)
    print("trainer: the loader raised instead of hanging", flush=True)
    sys.exit(0)
print("trainer: the loop finished without an error", flush=True)
sys.exit(1)
