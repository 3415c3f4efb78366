#!/usr/bin/env python3
"""bench/compare/tf_bench.py — the workloads of DESIGN.md in TensorFlow 2
(tensorflow-cpu, Keras layers, a tf.function step with XLA on or off), one
per process, printing one JSON line per result in the shape of weft's bench
programs. Not the choice between XLA on and off (compare.py runs both and
keeps the better) and not PyTorch or ONNX Runtime (torch_bench.py,
ort_bench.py).

  python3 tf_bench.py train --model mlp|cnn|transformer [--xla on|off]
  python3 tf_bench.py infer [--xla on|off]   # cnn batch-1 latency, batch-64 throughput
  python3 tf_bench.py gemm                   # GFLOP/s, N = 512, 1024, 2048
  python3 tf_bench.py dispatch               # 10,000 x+1 ops in one tf.function

Threads: intra_op = --threads (2), inter_op 1. Training reads Fashion-MNIST
into memory as uint8 once; every step takes a shuffled batch of --batch
(64; the last partial batch is dropped so that XLA compiles one shape),
scales it to [0, 1] inside the step and runs forward, loss, gradients and
Adam (lr 1e-3, epsilon 1e-7 as Keras has it). After --warm steps whole
epochs are timed until --min-seconds have passed (one at least; 0 by
default). Training lines carry the process's peak RSS (ru_maxrss); with
--eval the test accuracy after --epochs epochs in all (the timed ones
counted) is added. Dispatch runs with Grappler off (its constant folding would
remove the chain); gemm uses tf.linalg.matmul eagerly.
"""
import argparse
import os
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

sys.dont_write_bytecode = True  # no __pycache__ beside the sources
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from peer_common import (FASHION, emit, peak_rss_mib,  # noqa: E402
                         read_idx, timed_calls)


class Positions(tf.keras.layers.Layer):
    """x (N, T, D) plus a learned (T, D) table, N(0, 0.02^2)."""

    def build(self, shape):
        self.table = self.add_weight(
            name="positions", shape=(shape[1], shape[2]),
            initializer=tf.keras.initializers.RandomNormal(stddev=0.02))

    def call(self, x):
        return x + self.table


def model_of(name):
    L = tf.keras.layers
    if name == "mlp":
        return tf.keras.Sequential([
            tf.keras.Input((784,)), L.Dense(256, activation="relu"),
            L.Dense(128, activation="relu"), L.Dense(10)])
    if name == "cnn":
        return tf.keras.Sequential([
            tf.keras.Input((28, 28, 1)),
            L.Conv2D(16, 3, padding="same", activation="relu"),
            L.MaxPooling2D(2), L.Conv2D(32, 3, padding="same",
                                        activation="relu"),
            L.MaxPooling2D(2), L.Flatten(), L.Dense(10)])
    # The transformer of DESIGN.md: rows as tokens, pre-LayerNorm blocks.
    x = inp = tf.keras.Input((28, 28))
    x = L.Dense(64)(x)
    x = Positions()(x)
    for _ in range(2):
        h = L.LayerNormalization(epsilon=1e-5)(x)
        h = L.MultiHeadAttention(num_heads=4, key_dim=16)(h, h)
        x = x + h
        h = L.LayerNormalization(epsilon=1e-5)(x)
        h = L.Dense(128, activation=lambda v: tf.nn.gelu(v, approximate=False))(h)
        x = x + L.Dense(64)(h)
    x = L.LayerNormalization(epsilon=1e-5)(x)
    x = L.GlobalAveragePooling1D()(x)
    return tf.keras.Model(inp, L.Dense(10)(x))


SHAPES = {"mlp": (-1, 784), "cnn": (-1, 28, 28, 1), "transformer": (-1, 28, 28)}


def bench_train(a):
    images = read_idx(f"{a.data}/train-images-idx3-ubyte.gz")
    labels = read_idx(f"{a.data}/train-labels-idx1-ubyte.gz").astype(np.int32)
    if a.limit:
        keep = max(1, 60000 // a.limit)
        images, labels = images[::keep], labels[::keep]
    n = images.shape[0]
    shape = SHAPES[a.model]
    tf.keras.utils.set_random_seed(42)
    model = model_of(a.model)
    opt = tf.keras.optimizers.Adam(1e-3, epsilon=1e-7)
    loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    @tf.function(jit_compile=a.xla == "on")
    def step(xb, yb):
        x = tf.reshape(tf.cast(xb, tf.float32) / 255.0, shape)
        with tf.GradientTape() as tape:
            loss = loss_fn(yb, model(x, training=True))
        grads = tape.gradient(loss, model.trainable_variables)
        opt.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    rng = np.random.default_rng(42)
    steps = n // a.batch

    def epoch():
        order = rng.permutation(n)
        loss = None
        for i in range(steps):
            idx = order[i * a.batch:(i + 1) * a.batch]
            loss = step(images[idx], labels[idx])
        return float(loss)

    order = rng.permutation(n)
    for i in range(a.warm):
        idx = order[(i * a.batch) % (n - a.batch):][:a.batch]
        step(images[idx], labels[idx])
    # Whole epochs until --min-seconds have passed (one at least).
    t0 = time.perf_counter()
    timed = 0
    while True:
        last = epoch()
        timed += 1
        dt = time.perf_counter() - t0
        if dt >= a.min_seconds:
            break
    for _ in range(a.epochs - timed):
        last = epoch()
    rec = {"bench": "train", "model": a.model, "batch": a.batch,
           "threads": a.threads, "samples": timed * steps * a.batch,
           "epochs_timed": timed, "seconds": round(dt, 3),
           "samples_per_s": round(timed * steps * a.batch / dt, 1),
           "ms_per_step": round(dt / (timed * steps) * 1e3, 4),
           "last_loss": round(last, 4),
           "data": f"in memory (uint8), after {a.warm} warm-up steps",
           "setting": f"tf.function, XLA {a.xla}",
           "runtime": f"tensorflow {tf.__version__}"}
    if a.eval:
        timg = read_idx(f"{a.data}/t10k-images-idx3-ubyte.gz")
        tlab = read_idx(f"{a.data}/t10k-labels-idx1-ubyte.gz")
        logits = model(tf.reshape(tf.cast(timg, tf.float32) / 255.0, shape),
                       training=False)
        rec["test_accuracy"] = round(float(np.mean(
            np.argmax(logits.numpy(), 1) == tlab)), 4)
        rec["epochs"] = a.epochs
    emit(rec)
    emit({"bench": "train-peak-rss", "model": a.model, "batch": a.batch,
          "threads": a.threads, "peak_rss_mib": peak_rss_mib(),
          "setting": f"tf.function, XLA {a.xla}"})


def bench_infer(a):
    tf.keras.utils.set_random_seed(42)
    model = model_of("cnn")
    run = tf.function(lambda x: model(x, training=False),
                      jit_compile=a.xla == "on")
    rng = np.random.default_rng(42)
    x1 = tf.constant(rng.random((1, 28, 28, 1), np.float32))
    x64 = tf.constant(rng.random((64, 28, 28, 1), np.float32))
    mean1, best1 = timed_calls(lambda: run(x1).numpy(), 1, a.steps1, 10)
    mean64, _ = timed_calls(lambda: run(x64).numpy(), 64, a.steps64, 2)
    tag = f"tf.function, XLA {a.xla}"
    emit({"bench": "cnn-infer", "batch": 1, "threads": a.threads,
          "latency_ms": round(mean1 * 1e3, 4),
          "latency_ms_best": round(best1 * 1e3, 4), "setting": tag})
    emit({"bench": "cnn-infer", "batch": 64, "threads": a.threads,
          "samples_per_s": round(64 / mean64, 1),
          "ms_per_batch": round(mean64 * 1e3, 3), "setting": tag})


def bench_gemm(a):
    for n in (512, 1024, 2048):
        rng = np.random.default_rng(n)
        x = tf.constant(rng.random((n, n), np.float32))
        y = tf.constant(rng.random((n, n), np.float32))
        reps = max(3, int(2e10 / (2 * n ** 3)))
        tf.linalg.matmul(x, y).numpy()
        best = 1e30
        for _ in range(reps):
            t0 = time.perf_counter()
            tf.linalg.matmul(x, y).numpy()
            best = min(best, time.perf_counter() - t0)
        emit({"bench": "gemm", "n": n, "threads": a.threads,
              "gflops": round(2 * n ** 3 / best * 1e-9, 1), "runs": reps,
              "setting": "eager tf.linalg.matmul"})


def bench_dispatch(a):
    nodes = 10000
    tf.config.optimizer.set_experimental_options(
        {"disable_meta_optimizer": True})

    @tf.function(jit_compile=False)
    def chain(x):
        for _ in range(nodes):
            x = x + 1.0
        return x

    x0 = tf.constant(0.0)
    for _ in range(3):
        if float(chain(x0)) != nodes:
            raise SystemExit("dispatch computed a wrong value")
    times = []
    for _ in range(a.steps):
        t0 = time.perf_counter()
        chain(x0).numpy()
        times.append(time.perf_counter() - t0)
    emit({"bench": "dispatch", "nodes": nodes, "steps": a.steps,
          "threads": a.threads,
          "us_per_node": round(sum(times) / len(times) / nodes * 1e6, 4),
          "us_per_node_best": round(min(times) / nodes * 1e6, 4),
          "us_per_node_median": round(sorted(times)[len(times) // 2] / nodes
                                      * 1e6, 4),
          "mode": "tf.function, Grappler off", "setting": "XLA off"})


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("workload", choices=("train", "infer", "gemm", "dispatch"))
    p.add_argument("--model", choices=("mlp", "cnn", "transformer"),
                   default="mlp")
    p.add_argument("--xla", choices=("on", "off"), default="off")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--limit", type=int, default=0,
                   help="train on every (60000/LIMIT)-th sample only")
    p.add_argument("--warm", type=int, default=20, help="warm-up steps")
    p.add_argument("--epochs", type=int, default=1,
                   help="epochs in all (the timed ones counted)")
    p.add_argument("--min-seconds", type=float, default=0.0,
                   help="time whole epochs until this many seconds passed")
    p.add_argument("--eval", action="store_true",
                   help="print the test accuracy after training")
    p.add_argument("--steps1", type=int, default=200)
    p.add_argument("--steps64", type=int, default=20)
    p.add_argument("--steps", type=int, default=5, help="dispatch runs")
    p.add_argument("--data", default=FASHION)
    a = p.parse_args()
    tf.config.threading.set_intra_op_parallelism_threads(a.threads)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    {"train": bench_train, "infer": bench_infer, "gemm": bench_gemm,
     "dispatch": bench_dispatch}[a.workload](a)


if __name__ == "__main__":
    sys.exit(main())
