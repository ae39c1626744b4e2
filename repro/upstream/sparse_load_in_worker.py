"""The bug reports behind F13 (PyTorch #153143) and F14 (#144687): a
fork-started DataLoader worker (num_workers=1, pin_memory=True) loads a
sparse tensor with torch.load, after the parent initialized CUDA (153143)
or with no CUDA in the script at all (144687, --no-cuda-in-parent).

    python sparse_load_in_worker.py [--no-cuda-in-parent]

The issue's script, with two changes: the tensor file is written to a
temporary folder (removed at the end), and the parent initializes CUDA with torch.empty(1, device="cuda:0") instead
of the issue's torch.zeros (a fill kernel simcuda cannot run; the
initialization is what matters). Prints "trainer: loaded the sparse tensor
in the worker" and exits 0, or "trainer: <the first line of the worker's
error> <its last line>" and exits 1.
"""
import os
import sys
import tempfile

import torch
from torch.utils.data import DataLoader, Dataset

PATH = None  # set before the workers fork, which inherit it


class OperatorDataset(Dataset):
    def __len__(self):
        return 1

    def __getitem__(self, idx):
        return torch.load(PATH, weights_only=True, map_location="cpu")


def main(folder):
    global PATH
    PATH = os.path.join(folder, "sparse_tensor.pth")
    if "--no-cuda-in-parent" in sys.argv:
        print("trainer: no CUDA in the script, torch", torch.__version__, flush=True)
    else:
        torch.empty(1, device="cuda:0")
        print("trainer: CUDA initialized, torch", torch.__version__, flush=True)
    torch.save(torch.randn(5, 5).to_sparse().to("cpu"), PATH)
    loader = DataLoader(OperatorDataset(), batch_size=None, num_workers=1, pin_memory=True)
    try:
        for _ in loader:
            pass
    except RuntimeError as e:
        lines = [l for l in str(e).splitlines() if l.strip()]
        last = next((l for l in lines if l.startswith("RuntimeError: ")), lines[-1])
        print("trainer:", lines[0], last, flush=True)
        return 1
    print("trainer: loaded the sparse tensor in the worker", flush=True)
    return 0


if __name__ == "__main__":
    with tempfile.TemporaryDirectory(prefix="faultline-f13-") as folder:
        status = main(folder)
    sys.exit(status)
