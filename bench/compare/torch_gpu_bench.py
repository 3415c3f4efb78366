#!/usr/bin/env python3
"""bench/compare/torch_gpu_bench.py — the cnn training workload of
torch_bench.py (same network, Adam lr 1e-3, batch 64, one epoch of
Fashion-MNIST) on a CUDA GPU, printing one JSON line in the shape of weft's
bench/train, so that it sits next to `bench/train --model cnn` run with
cuda first in `[devices] order` (tests/gpu/run.sh runs both).

  python3 torch_gpu_bench.py                     # samples/s over one epoch
  python3 torch_gpu_bench.py --weft train.json   # also the ratio to weft's

How it is measured: the training images are read once into pinned host
memory as uint8; after --warm steps one epoch is timed, each step slicing a
shuffled batch on the host, copying it to the GPU (non_blocking), scaling it
to [0, 1] there and running forward, loss, backward and Adam.step; the
clock stops after torch.cuda.synchronize(). weft's pipeline also batches on
the host and copies each batch in. --data-on gpu keeps the whole set on the
GPU instead (no copy per step: PyTorch's best case). TF32 stays at
PyTorch's defaults unless --tf32 says otherwise; the line records both
flags. --weft FILE reads weft's train line (the first JSON line of FILE
with "bench": "train") and adds weft's samples/s and weft/PyTorch
(> 1: weft is faster).
"""
import argparse
import json
import os
import sys
import time

import torch
from torch import nn

sys.dont_write_bytecode = True  # no __pycache__ beside the sources
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from peer_common import FASHION, emit, read_idx  # noqa: E402
from torch_bench import cnn  # noqa: E402


def weft_line(path):
    """weft's bench/train record in path, or None."""
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line.startswith("{"):
                continue
            try:
                rec = json.loads(line)
            except ValueError:
                continue
            if rec.get("bench") == "train":
                return rec
    return None


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--warm", type=int, default=20, help="warm-up steps")
    p.add_argument("--limit", type=int, default=0,
                   help="train on every (60000/LIMIT)-th sample only")
    p.add_argument("--data", default=FASHION)
    p.add_argument("--data-on", choices=("host", "gpu"), default="host")
    p.add_argument("--tf32", choices=("default", "on", "off"),
                   default="default")
    p.add_argument("--weft", metavar="FILE",
                   help="weft's bench/train output, for the ratio")
    a = p.parse_args()

    if not torch.cuda.is_available():
        emit({"bench": "train", "framework": "torch", "model": "cnn",
              "skipped": "torch.cuda.is_available() is False"})
        return 1
    dev = torch.device("cuda:0")
    if a.tf32 != "default":
        torch.backends.cuda.matmul.allow_tf32 = a.tf32 == "on"
        torch.backends.cudnn.allow_tf32 = a.tf32 == "on"

    images = torch.from_numpy(
        read_idx(f"{a.data}/train-images-idx3-ubyte.gz").copy())
    labels = torch.from_numpy(
        read_idx(f"{a.data}/train-labels-idx1-ubyte.gz").astype("int64"))
    if a.limit:
        keep = max(1, 60000 // a.limit)
        images, labels = images[::keep].contiguous(), labels[::keep].contiguous()
    n = images.shape[0]
    if a.data_on == "gpu":
        images, labels = images.to(dev), labels.to(dev)
    else:
        images, labels = images.pin_memory(), labels.pin_memory()

    torch.manual_seed(42)
    model = cnn().to(dev)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = nn.CrossEntropyLoss()
    gen = torch.Generator().manual_seed(42)

    def step(idx):
        if a.data_on == "gpu":
            idx = idx.to(dev, non_blocking=True)
            x, y = images[idx], labels[idx]
        else:
            x = images[idx].pin_memory().to(dev, non_blocking=True)
            y = labels[idx].pin_memory().to(dev, non_blocking=True)
        x = x.view(-1, 1, 28, 28).float().div_(255.0)
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        return loss

    order = torch.randperm(n, generator=gen)
    for i in range(a.warm):
        step(order[(i * a.batch) % n:][:a.batch])
    torch.cuda.synchronize()
    order = torch.randperm(n, generator=gen)
    t0 = time.perf_counter()
    for i in range(0, n, a.batch):
        loss = step(order[i:i + a.batch])
    torch.cuda.synchronize()
    dt = time.perf_counter() - t0
    last = float(loss)
    steps = (n + a.batch - 1) // a.batch
    rec = {"bench": "train", "framework": "torch", "model": "cnn",
           "device": torch.cuda.get_device_name(0), "batch": a.batch,
           "samples": n, "seconds": round(dt, 3),
           "samples_per_s": round(n / dt, 1),
           "ms_per_step": round(dt / steps * 1e3, 4),
           "last_loss": round(last, 4),
           "data": f"{a.data_on} memory (uint8), after {a.warm} warm-up steps",
           "torch": torch.__version__, "cuda": torch.version.cuda,
           "cudnn": torch.backends.cudnn.version(),
           "matmul_allow_tf32": torch.backends.cuda.matmul.allow_tf32,
           "cudnn_allow_tf32": torch.backends.cudnn.allow_tf32}
    if a.weft:
        w = weft_line(a.weft)
        if w and w.get("samples_per_s"):
            rec["weft_samples_per_s"] = w["samples_per_s"]
            rec["weft_vs_torch"] = round(w["samples_per_s"] / (n / dt), 4)
        else:
            rec["weft_vs_torch"] = None
            rec["weft_note"] = f"no bench/train line with samples/s in {a.weft}"
    emit(rec)
    return 0


if __name__ == "__main__":
    sys.exit(main())
