#!/usr/bin/env python3
"""bench/python_train.py — mlp or cnn training throughput (samples/s)
driven from Python, against bench/train (the same workload from C: the
input pipeline from its cache, Adam lr 1e-3, batch 64) run as a child
process, alternating rounds; prints one JSON line per round pair and a
summary with the ratio of medians (goal: Python >= 0.95x C). Each round
also runs one epoch in alternating blocks of steps made from Python and
from C on the same prepared step (Callable.time_c), which a loaded machine
disturbs far less than separate runs ("interleaved_ratio").

    PYTHONPATH=... python3 bench/python_train.py --model mlp [--limit N]
        [--rounds R] [--threads N] [--c-bench bench/train]

Data: Fashion-MNIST from /usr/share/datasets/fashion-mnist."""

import argparse
import json
import os
import statistics
import subprocess
import time

import numpy as np

import weft

DATA = "/usr/share/datasets/fashion-mnist"


def build(model, limit, batch, threads, seed=1):
    cnn = model == "cnn"
    ds = weft.Dataset.from_files(
        os.path.join(DATA, "train-images-idx3-ubyte.gz"), format="idx",
        options={"label_file": "auto"})
    if limit:
        ds = ds.shard(max(1, 60000 // limit), 0)
    ds = ds.cache().shuffle(60000, seed=42).batch(batch)
    ds = ds.map_scale("image", 1.0 / 255.0).map_cast("label", weft.int32)
    ds = ds.prefetch(4)
    g = weft.Graph(seed=seed)
    with g.as_default():
        it = ds.make_iterator()
        el = it.get_next(name="train_data")
        x = weft.reshape(el["image"], np.array(
            [-1, 28, 28, 1] if cnn else [-1, 784], np.int64))
        m = weft.Model()
        with m.training():
            if cnn:
                h = m.conv2d(x, 16, 3, activation="relu")
                h = m.max_pool(h, 2)
                h = m.conv2d(h, 32, 3, activation="relu")
                h = m.max_pool(h, 2)
                logits = m.dense(m.flatten(h), 10)
            else:
                h = m.dense(x, 256, activation="relu")
                h = m.dense(h, 128, activation="relu")
                logits = m.dense(h, 10)
            loss = m.sparse_softmax_cross_entropy(logits, el["label"])
        train = weft.train.AdamOptimizer(1e-3).minimize(loss, model=m)
        init = weft.global_variables_initializer()
    cfg = {"threads": {"inter_op": threads}} if threads else None
    s = weft.Session(g, config=cfg)
    s.run(init)
    return s, s.make_callable(loss, targets=[train]), it


def epoch(step, it, batch, total):
    seen = 0
    t0 = time.perf_counter()
    while True:
        try:
            step()
        except weft.OutOfRangeError:
            break
        seen += batch
    dt = time.perf_counter() - t0
    it.reset()
    return min(seen, total) / dt


def interleaved(step, it, batch, block=4):
    """One epoch in alternating blocks of `block` steps, called from Python
    and from C (Callable.time_c) on the same session and data: seconds per
    step of each, immune to load that comes and goes slower than a block.
    A block cut short by the end of the data is not counted."""
    tp = tc = 0.0
    np_ = nc = 0
    while True:
        t0 = time.perf_counter()
        try:
            for _ in range(block):
                step()
        except weft.OutOfRangeError:
            break
        tp += time.perf_counter() - t0
        np_ += block
        try:
            tc += step.time_c(block)
        except weft.OutOfRangeError:
            break
        nc += block
    it.reset()
    return batch * np_ / tp, batch * nc / tc


def c_bench(path, model, limit, threads):
    cmd = [path, "--model", model, "--warm", "1"]
    if limit:
        cmd += ["--limit", str(limit)]
    if threads:
        cmd += ["--threads", str(threads)]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True)
    for line in out.stdout.splitlines():
        r = json.loads(line)
        if r.get("bench") == "train":
            return r["samples_per_s"]
    raise RuntimeError("bench/train printed no result")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--model", choices=("mlp", "cnn"), default="mlp")
    p.add_argument("--limit", type=int, default=0)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--threads", type=int, default=0)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--c-bench", default=os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "train"))
    a = p.parse_args()
    total = a.limit if a.limit else 60000
    s, step, it = build(a.model, a.limit, a.batch, a.threads)
    epoch(step, it, a.batch, total)           # fill the cache, warm up
    py, c, ip, ic = [], [], [], []
    for r in range(a.rounds):
        py.append(epoch(step, it, a.batch, total))
        c.append(c_bench(a.c_bench, a.model, a.limit, a.threads))
        p_, c_ = interleaved(step, it, a.batch)
        ip.append(p_)
        ic.append(c_)
        print(json.dumps({"bench": "python-train", "model": a.model,
                          "round": r, "python_samples_per_s": round(py[-1]),
                          "c_samples_per_s": round(c[-1]),
                          "interleaved_python_samples_per_s": round(p_),
                          "interleaved_c_samples_per_s": round(c_)}),
              flush=True)
    s.close()
    med = statistics.median
    print(json.dumps({"bench": "python-train-summary", "model": a.model,
                      "limit": a.limit, "rounds": a.rounds,
                      "python_samples_per_s": round(med(py)),
                      "c_samples_per_s": round(med(c)),
                      "ratio": round(med(py) / med(c), 3),
                      "interleaved_ratio": round(
                          med([p_ / c_ for p_, c_ in zip(ip, ic)]), 3)}))


if __name__ == "__main__":
    main()
