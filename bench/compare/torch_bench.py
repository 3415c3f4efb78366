#!/usr/bin/env python3
"""bench/compare/torch_bench.py — the workloads of DESIGN.md in PyTorch, one
per process, printing one JSON line per result in the shape of weft's bench
programs. Not the thread/allocator search (compare.py runs this script under
each setting) and not ONNX Runtime (ort_bench.py).

  python3 torch_bench.py train --model mlp|cnn|transformer [--compile on|off]
  python3 torch_bench.py infer [--compile on|off]  # cnn batch-1 latency, batch-64 throughput
  python3 torch_bench.py gemm                    # GFLOP/s, N = 512, 1024, 2048
  python3 torch_bench.py dispatch                # 10,000 x+1 ops on a scalar

Needs PyTorch and NumPy; runs torch.set_num_threads(2) (--threads). Training
reads Fashion-MNIST into memory as uint8 once, then times whole epochs
(whole batches only) until --min-seconds have passed (one epoch at least;
0 by default) after a few warm-up steps: each step slices a shuffled batch,
scales it to [0, 1]
and runs forward, loss, backward and the Adam update. With --compile on the
model runs through torch.compile (the warm-up steps compile it; the
optimizer step stays eager); compare.py runs both and keeps the better.
The cnn and transformer training lines also carry the process's peak RSS
(getrusage ru_maxrss), so run each in a process of its own; with --eval
the test accuracy after --epochs epochs (the timed ones counted) is added.
"""
import argparse
import os
import sys
import time

import numpy as np
import torch
from torch import nn

sys.dont_write_bytecode = True  # no __pycache__ beside the sources
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from peer_common import (FASHION, emit, peak_rss_mib,  # noqa: E402
                         read_idx, timed_calls)


def mlp():
    return nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 128),
                         nn.ReLU(), nn.Linear(128, 10))


def cnn():
    return nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(),
                         nn.MaxPool2d(2), nn.Conv2d(16, 32, 3, padding=1),
                         nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                         nn.Linear(7 * 7 * 32, 10))


class Positions(nn.Module):
    """x (N, T, D) plus a learned (T, D) table, N(0, 0.02^2)."""

    def __init__(self, t, d):
        super().__init__()
        self.table = nn.Parameter(torch.randn(t, d) * 0.02)

    def forward(self, x):
        return x + self.table


class Block(nn.Module):
    """A pre-LayerNorm encoder block: 4-head self-attention, GELU MLP."""

    def __init__(self, d=64, heads=4, mlp=128):
        super().__init__()
        self.ln1 = nn.LayerNorm(d, eps=1e-5)
        self.attn = nn.MultiheadAttention(d, heads, batch_first=True)
        self.ln2 = nn.LayerNorm(d, eps=1e-5)
        self.mlp = nn.Sequential(nn.Linear(d, mlp), nn.GELU(),
                                 nn.Linear(mlp, d))

    def forward(self, x):
        h = self.ln1(x)
        x = x + self.attn(h, h, h, need_weights=False)[0]
        return x + self.mlp(self.ln2(x))


class Transformer(nn.Module):
    """DESIGN.md's transformer: 28 row tokens of 28 -> 64, learned
    positions, 2 blocks, a final layer norm, the mean over tokens, dense 10."""

    def __init__(self):
        super().__init__()
        self.embed = nn.Linear(28, 64)
        self.pos = Positions(28, 64)
        self.blocks = nn.Sequential(Block(), Block())
        self.ln = nn.LayerNorm(64, eps=1e-5)
        self.head = nn.Linear(64, 10)

    def forward(self, x):
        h = self.ln(self.blocks(self.pos(self.embed(x))))
        return self.head(h.mean(dim=1))


def transformer():
    return Transformer()


MODELS = {"mlp": (mlp, (-1, 784)), "cnn": (cnn, (-1, 1, 28, 28)),
          "transformer": (transformer, (-1, 28, 28))}


COMPILE = "off"


def setting():
    """The environment settings that compare.py varies, for the record."""
    keys = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MALLOC_MMAP_THRESHOLD_",
            "MALLOC_TRIM_THRESHOLD_")
    env = " ".join(f"{k}={os.environ[k]}" for k in keys if k in os.environ)
    mode = "torch.compile" if COMPILE == "on" else "eager"
    return f"{mode}, {env}" if env else mode


def bench_train(a):
    images = torch.from_numpy(
        read_idx(f"{a.data}/train-images-idx3-ubyte.gz").copy())
    labels = torch.from_numpy(
        read_idx(f"{a.data}/train-labels-idx1-ubyte.gz").astype(np.int64))
    if a.limit:
        keep = max(1, 60000 // a.limit)
        images, labels = images[::keep].contiguous(), labels[::keep].contiguous()
    n = images.shape[0]
    make, shape = MODELS[a.model]
    torch.manual_seed(42)
    model = make()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, eps=1e-7)
    loss_fn = nn.CrossEntropyLoss()
    gen = torch.Generator().manual_seed(42)
    run = torch.compile(model) if a.compile == "on" else model

    def step(idx):
        x = images[idx].view(shape).float().div_(255.0)
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(run(x), labels[idx])
        loss.backward()
        opt.step()
        return loss.detach()

    order = torch.randperm(n, generator=gen)
    for i in range(a.warm):
        step(order[(i * a.batch) % (n - a.batch + 1):][:a.batch])
    # Whole batches only: a last partial batch would make torch.compile
    # compile a second shape inside the timed epoch.
    steps = n // a.batch
    # Whole epochs until --min-seconds have passed (one at least).
    t0 = time.perf_counter()
    timed = 0
    while True:
        order = torch.randperm(n, generator=gen)
        for i in range(steps):
            loss = step(order[i * a.batch:(i + 1) * a.batch])
        last = float(loss)
        timed += 1
        dt = time.perf_counter() - t0
        if dt >= a.min_seconds:
            break
    rec = {"bench": "train", "model": a.model, "batch": a.batch,
           "threads": a.threads, "samples": timed * steps * a.batch,
           "epochs_timed": timed, "seconds": round(dt, 3),
           "samples_per_s": round(timed * steps * a.batch / dt, 1),
           "ms_per_step": round(dt / (timed * steps) * 1e3, 4),
           "last_loss": round(last, 4),
           "data": f"in memory (uint8), after {a.warm} warm-up steps",
           "setting": setting(), "runtime": f"torch {torch.__version__}"}
    if a.eval:
        for _ in range(a.epochs - timed):
            order = torch.randperm(n, generator=gen)
            for i in range(steps):
                step(order[i * a.batch:(i + 1) * a.batch])
        timg = torch.from_numpy(
            read_idx(f"{a.data}/t10k-images-idx3-ubyte.gz").copy())
        tlab = torch.from_numpy(
            read_idx(f"{a.data}/t10k-labels-idx1-ubyte.gz").astype(np.int64))
        model.eval()
        with torch.inference_mode():
            pred = model(timg.view(shape).float().div_(255.0)).argmax(1)
        rec["test_accuracy"] = round(float((pred == tlab).float().mean()), 4)
        rec["epochs"] = a.epochs
    emit(rec)
    if a.model != "mlp":
        emit({"bench": "train-peak-rss", "model": a.model, "batch": a.batch,
              "threads": a.threads,
              "peak_rss_mib": peak_rss_mib(),
              "setting": setting()})


def run_infer(run, batch, steps, warmup):
    """Mean and best seconds per call of run(x) on a random batch."""
    x = torch.rand(batch, 1, 28, 28)
    return timed_calls(lambda: run(x), batch, steps, warmup)


def bench_infer(a):
    torch.manual_seed(42)
    model = cnn().eval()
    run = torch.compile(model) if a.compile == "on" else model
    with torch.inference_mode():
        mean1, best1 = run_infer(run, 1, a.steps1, 10)
        mean64, _ = run_infer(run, 64, a.steps64, 2)
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
          "us_per_node_median": round(sorted(times)[len(times) // 2] / nodes
                                      * 1e6, 4),
          "mode": "eager, inference_mode", "setting": setting()})


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("workload", choices=("train", "infer", "gemm", "dispatch"))
    p.add_argument("--model", choices=("mlp", "cnn", "transformer"),
                   default="mlp")
    p.add_argument("--compile", choices=("on", "off"), default="off",
                   help="run the model through torch.compile (train, infer)")
    p.add_argument("--epochs", type=int, default=1,
                   help="epochs in all with --eval (the timed ones counted)")
    p.add_argument("--min-seconds", type=float, default=0.0,
                   help="time whole epochs until this many seconds passed")
    p.add_argument("--eval", action="store_true",
                   help="print the test accuracy after training")
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
    global COMPILE
    COMPILE = a.compile
    torch.set_num_threads(a.threads)
    {"train": bench_train, "infer": bench_infer, "gemm": bench_gemm,
     "dispatch": bench_dispatch}[a.workload](a)


if __name__ == "__main__":
    sys.exit(main())
