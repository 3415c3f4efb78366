#!/usr/bin/env python3
"""bench/compare/torch_bench.py — the workloads of DESIGN.md in PyTorch, one
per process, printing one JSON line per result in the shape of weft's bench
programs. Not the thread/allocator search (compare.py runs this script under
each setting) and not ONNX Runtime (ort_bench.py).

  python3 torch_bench.py train --model mlp|cnn   # samples/s over one epoch
  python3 torch_bench.py infer                   # cnn batch-1 latency, batch-64 throughput
  python3 torch_bench.py gemm                    # GFLOP/s, N = 512, 1024, 2048
  python3 torch_bench.py dispatch                # 10,000 x+1 ops on a scalar

Needs PyTorch and NumPy; runs torch.set_num_threads(2) (--threads). Training
reads Fashion-MNIST into memory as uint8 once, then times one epoch after a
few warm-up steps: each step slices a shuffled batch, scales it to [0, 1]
and runs forward, loss, backward and the Adam update. The cnn training line
also carries the process's peak RSS (getrusage ru_maxrss), so run it in a
process of its own.
"""
import argparse
import gzip
import json
import os
import resource
import sys
import time

import numpy as np
import torch
from torch import nn

FASHION = "/usr/share/datasets/fashion-mnist"


def mlp():
    return nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 128),
                         nn.ReLU(), nn.Linear(128, 10))


def cnn():
    return nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(),
                         nn.MaxPool2d(2), nn.Conv2d(16, 32, 3, padding=1),
                         nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                         nn.Linear(7 * 7 * 32, 10))


def read_idx(path):
    """An idx file (gzipped) as a uint8 array shaped by its header."""
    with gzip.open(path, "rb") as f:
        data = f.read()
    if data[2] != 0x08:
        raise SystemExit(f"{path}: element type {data[2]:#x}, expected uint8")
    rank = data[3]
    dims = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big")
            for i in range(rank)]
    return np.frombuffer(data, np.uint8, offset=4 + 4 * rank).reshape(dims)


def emit(record):
    print(json.dumps(record), flush=True)


def setting():
    """The environment settings that compare.py varies, for the record."""
    keys = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MALLOC_MMAP_THRESHOLD_",
            "MALLOC_TRIM_THRESHOLD_")
    return " ".join(f"{k}={os.environ[k]}" for k in keys if k in os.environ) \
        or "default"


def bench_train(a):
    images = torch.from_numpy(
        read_idx(f"{a.data}/train-images-idx3-ubyte.gz").copy())
    labels = torch.from_numpy(
        read_idx(f"{a.data}/train-labels-idx1-ubyte.gz").astype(np.int64))
    if a.limit:
        keep = max(1, 60000 // a.limit)
        images, labels = images[::keep].contiguous(), labels[::keep].contiguous()
    n = images.shape[0]
    shape = (-1, 1, 28, 28) if a.model == "cnn" else (-1, 784)
    torch.manual_seed(42)
    model = cnn() if a.model == "cnn" else mlp()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = nn.CrossEntropyLoss()
    gen = torch.Generator().manual_seed(42)

    def step(idx):
        x = images[idx].view(shape).float().div_(255.0)
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), labels[idx])
        loss.backward()
        opt.step()
        return loss

    order = torch.randperm(n, generator=gen)
    for i in range(a.warm):
        step(order[(i * a.batch) % n:][:a.batch])
    order = torch.randperm(n, generator=gen)
    t0 = time.perf_counter()
    for i in range(0, n, a.batch):
        loss = step(order[i:i + a.batch])
    last = float(loss)
    dt = time.perf_counter() - t0
    steps = (n + a.batch - 1) // a.batch
    emit({"bench": "train", "model": a.model, "batch": a.batch,
          "threads": a.threads, "samples": n, "seconds": round(dt, 3),
          "samples_per_s": round(n / dt, 1),
          "ms_per_step": round(dt / steps * 1e3, 4), "last_loss": round(last, 4),
          "data": f"in memory (uint8), after {a.warm} warm-up steps",
          "setting": setting()})
    if a.model == "cnn":
        emit({"bench": "train-peak-rss", "model": "cnn", "batch": a.batch,
              "threads": a.threads,
              "peak_rss_mib": round(
                  resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
              "setting": setting()})


def run_infer(run, batch, steps, warmup):
    """Mean and best seconds per call of run(x) on a random batch."""
    x = torch.rand(batch, 1, 28, 28)
    times = []
    for i in range(warmup + steps):
        t0 = time.perf_counter()
        y = run(x)
        dt = time.perf_counter() - t0
        if tuple(y.shape) != (batch, 10):
            raise SystemExit(f"cnn-infer produced shape {tuple(y.shape)}")
        if i >= warmup:
            times.append(dt)
    return sum(times) / len(times), min(times)


def bench_infer(a):
    torch.manual_seed(42)
    model = cnn().eval()
    with torch.inference_mode():
        mean1, best1 = run_infer(model, 1, a.steps1, 10)
        mean64, _ = run_infer(model, 64, a.steps64, 2)
    emit({"bench": "cnn-infer", "batch": 1, "threads": a.threads,
          "latency_ms": round(mean1 * 1e3, 4),
          "latency_ms_best": round(best1 * 1e3, 4), "setting": setting()})
    emit({"bench": "cnn-infer", "batch": 64, "threads": a.threads,
          "samples_per_s": round(64 / mean64, 1),
          "ms_per_batch": round(mean64 * 1e3, 3), "setting": setting()})


def bench_gemm(a):
    for n in (512, 1024, 2048):
        x, y = torch.rand(n, n), torch.rand(n, n)
        out = torch.empty(n, n)
        reps = max(3, int(2e10 / (2 * n ** 3)))
        torch.mm(x, y, out=out)
        best = 1e30
        for _ in range(reps):
            t0 = time.perf_counter()
            torch.mm(x, y, out=out)
            best = min(best, time.perf_counter() - t0)
        emit({"bench": "gemm", "n": n, "threads": a.threads,
              "gflops": round(2 * n ** 3 / best * 1e-9, 1), "runs": reps,
              "setting": setting()})


def bench_dispatch(a):
    nodes = 10000

    def chain(x):
        for _ in range(nodes):
            x = x + 1
        return x

    x0 = torch.zeros(())
    with torch.inference_mode():
        for _ in range(3):
            if float(chain(x0)) != nodes:
                raise SystemExit("dispatch computed a wrong value")
        times = []
        for _ in range(a.steps):
            t0 = time.perf_counter()
            chain(x0)
            times.append(time.perf_counter() - t0)
    emit({"bench": "dispatch", "nodes": nodes, "steps": a.steps,
          "threads": a.threads,
          "us_per_node": round(sum(times) / len(times) / nodes * 1e6, 4),
          "us_per_node_best": round(min(times) / nodes * 1e6, 4),
          "mode": "eager, inference_mode", "setting": setting()})


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("workload", choices=("train", "infer", "gemm", "dispatch"))
    p.add_argument("--model", choices=("mlp", "cnn"), default="mlp")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--limit", type=int, default=0,
                   help="train on every (60000/LIMIT)-th sample only")
    p.add_argument("--warm", type=int, default=20, help="warm-up steps")
    p.add_argument("--steps1", type=int, default=200)
    p.add_argument("--steps64", type=int, default=20)
    p.add_argument("--steps", type=int, default=20, help="dispatch runs")
    p.add_argument("--data", default=FASHION)
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    {"train": bench_train, "infer": bench_infer, "gemm": bench_gemm,
     "dispatch": bench_dispatch}[a.workload](a)


if __name__ == "__main__":
    sys.exit(main())
