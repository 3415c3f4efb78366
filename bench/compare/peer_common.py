"""bench/compare/peer_common.py — what the peer scripts (torch_bench.py,
tf_bench.py, ort_bench.py, torch_gpu_bench.py) share: where Fashion-MNIST
lies and how its idx files read, the JSON line each result is printed as,
the process's peak RSS, and the cnn-infer timing loop, bounded below in
time as bench/cnn_infer.c is so that every side's figure covers the same
span of the machine's load. Needs NumPy only.
"""
import gzip
import json
import resource
import time

import numpy as np

FASHION = "/usr/share/datasets/fashion-mnist"
# cnn-infer: the least seconds of warm-up and of measured calls per batch
# size (bench/cnn_infer.c's WARM_S and MEASURE_S)
WARM_S = 0.3
MEASURE_S = 2.0


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
    """One result as a JSON line, flushed at once."""
    print(json.dumps(record), flush=True)


def peak_rss_mib():
    """The process's peak resident set so far (getrusage ru_maxrss), MiB."""
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def timed_calls(call, batch, steps, warmup):
    """Mean and best seconds of call(), the cnn on a batch of `batch`
    returning something with a shape: warm-up until `warmup` calls and
    WARM_S seconds have passed, then measured calls until `steps` calls and
    MEASURE_S seconds of them. Each result must be (batch, 10)."""
    times, total, start = [], 0.0, time.perf_counter()
    i = 0
    while True:
        warming = i < warmup or time.perf_counter() - start < WARM_S
        if not warming and len(times) >= steps and total >= MEASURE_S:
            break
        t0 = time.perf_counter()
        y = call()
        dt = time.perf_counter() - t0
        if tuple(y.shape) != (batch, 10):
            raise SystemExit(f"cnn-infer produced shape {tuple(y.shape)}")
        if not warming:
            times.append(dt)
            total += dt
        i += 1
    return total / len(times), min(times)
