#!/usr/bin/env python3
"""bench/compare/ort_bench.py — the cnn of DESIGN.md in ONNX Runtime: batch-1
latency and batch-64 throughput, one JSON line each in the shape of
bench/cnn_infer. Not training (ONNX Runtime's training is a separate
package) and not PyTorch's own figures (torch_bench.py).

  python3 ort_bench.py [--threads 2] [--model cnn.onnx]

The model is the PyTorch cnn with random weights (seed 42), exported with
torch.onnx.export (opset 13, dynamic batch; the TorchScript exporter
under torch 2) to a temporary file unless
--model names one; timing does not depend on the weights. The session runs
with intra_op_num_threads = --threads, one inter-op thread, sequential
execution and all graph optimisations. Needs onnxruntime, PyTorch and NumPy.
"""
import argparse
import os
import sys
import tempfile

import numpy as np
import onnxruntime as ort

sys.dont_write_bytecode = True  # no __pycache__ beside the sources
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from peer_common import emit, timed_calls  # noqa: E402


def export_cnn(path):
    import torch
    from torch_bench import cnn
    torch.manual_seed(42)
    model = cnn().eval()
    kw = dict(input_names=["images"], output_names=["logits"],
              dynamic_axes={"images": {0: "batch"}, "logits": {0: "batch"}},
              opset_version=13)
    x = torch.rand(1, 1, 28, 28)
    try:  # torch 2: the TorchScript exporter, as torch 1.13 has it
        torch.onnx.export(model, x, path, dynamo=False, **kw)
    except TypeError:  # torch 1.x: no dynamo argument
        torch.onnx.export(model, x, path, **kw)


def run(sess, batch, steps, warmup):
    """Mean and best seconds per call on a random batch."""
    x = np.random.default_rng(42).random((batch, 1, 28, 28), np.float32)
    return timed_calls(lambda: sess.run(None, {"images": x})[0], batch, steps,
                       warmup)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--model", help="an exported cnn (default: export one)")
    p.add_argument("--steps1", type=int, default=200)
    p.add_argument("--steps64", type=int, default=20)
    a = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = a.model or os.path.join(tmp, "cnn.onnx")
        if not a.model:
            export_cnn(path)
        so = ort.SessionOptions()
        so.intra_op_num_threads = a.threads
        so.inter_op_num_threads = 1
        so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        sess = ort.InferenceSession(path, so,
                                    providers=["CPUExecutionProvider"])
    mean1, best1 = run(sess, 1, a.steps1, 10)
    mean64, _ = run(sess, 64, a.steps64, 2)
    tag = f"onnxruntime {ort.__version__}"
    emit({"bench": "cnn-infer", "batch": 1, "threads": a.threads,
          "latency_ms": round(mean1 * 1e3, 4),
          "latency_ms_best": round(best1 * 1e3, 4), "runtime": tag})
    emit({"bench": "cnn-infer", "batch": 64, "threads": a.threads,
          "samples_per_s": round(64 / mean64, 1),
          "ms_per_batch": round(mean64 * 1e3, 3), "runtime": tag})


if __name__ == "__main__":
    sys.exit(main())
