#!/usr/bin/env python3
"""bench/onnx_vs_ort.py — weft's ONNX import next to ONNX Runtime, in one
run: a resnet18-shaped CNN (torchvision's layout: 7x7 stem, 4 stages of 2
basic blocks, 224x224 input, 1000 classes) and a BERT-tiny-shaped encoder
(2 layers, hidden 128, 2 heads, feed-forward 512, sequence 128, as PyTorch
exports it: attention by MatMul/Softmax, LayerNorm decomposed, GELU's Erf
form), both built here with the onnx helper API and random weights. For
batch 1 (latency) and batch 32 (throughput), on 2 threads each (--threads),
it prints
weft's and ONNX Runtime's time per run, the speed ratio, and the largest
difference between their outputs.

With --source torch the same two models are written as PyTorch modules
(torch.nn layers, random weights, BatchNorm in eval mode) and exported by
torch.onnx.export (TorchScript exporter, opset 17, dynamic batch), so the
graphs are what PyTorch users hand over: BatchNormalization nodes, Gemm,
Flatten, the exporter's own LayerNormalization and the Erf GELU.

Needs numpy, onnx and onnxruntime (pip, e.g. in a venv: python3 -m venv
/tmp/ortvenv && /tmp/ortvenv/bin/pip install onnxruntime onnx numpy), torch
for --source torch, and the built bench/onnx_infer. Never run by CI.

Each side's time is the median run of --iters runs (the machine's slow
moments move a mean, not a median); with --rounds N the two sides
alternate N times and the median of the rounds is printed.

Usage: python3 bench/onnx_vs_ort.py [--iters N] [--rounds N]
                                    [--models resnet18,bert]
                                    [--source helper|torch]"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
rng = np.random.default_rng(1)


class G:
    def __init__(self):
        self.nodes, self.inits, self.k = [], [], 0

    def name(self, base):
        self.k += 1
        return f"{base}_{self.k}"

    def w(self, arr):
        n = self.name("w")
        self.inits.append(numpy_helper.from_array(np.asarray(arr), n))
        return n

    def op(self, op, inputs, **attrs):
        out = self.name(op.lower())
        self.nodes.append(helper.make_node(op, inputs, [out], **attrs))
        return out


def f32(*shape, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def conv_bn(g, x, cin, cout, k, stride, relu=True):
    w = f32(cout, cin, k, k, scale=np.sqrt(2.0 / (cin * k * k)))
    y = g.op("Conv", [x, g.w(w)], kernel_shape=[k, k],
             strides=[stride, stride], pads=[k // 2] * 4)
    y = g.op("BatchNormalization",
             [y, g.w(1 + 0.1 * f32(cout)), g.w(f32(cout, scale=0.1)),
              g.w(f32(cout, scale=0.1)), g.w(1 + 0.1 * np.abs(f32(cout)))])
    return g.op("Relu", [y]) if relu else y


def resnet18():
    g = G()
    h = conv_bn(g, "input", 3, 64, 7, 2)
    h = g.op("MaxPool", [h], kernel_shape=[3, 3], strides=[2, 2],
             pads=[1, 1, 1, 1])
    cin = 64
    for cout, stride in [(64, 1), (128, 2), (256, 2), (512, 2)]:
        for b in range(2):
            s = stride if b == 0 else 1
            r = conv_bn(g, h, cin, cout, 3, s)
            r = conv_bn(g, r, cout, cout, 3, 1, relu=False)
            sc = conv_bn(g, h, cin, cout, 1, s, relu=False) \
                if (s != 1 or cin != cout) else h
            h = g.op("Relu", [g.op("Add", [r, sc])])
            cin = cout
    h = g.op("Flatten", [g.op("GlobalAveragePool", [h])], axis=1)
    y = g.op("Gemm", [h, g.w(f32(1000, 512, scale=0.05)),
                      g.w(f32(1000, scale=0.01))], transB=1)
    inp = helper.make_tensor_value_info("input", TensorProto.FLOAT,
                                        ["batch", 3, 224, 224])
    return g, inp, y, lambda b: f32(b, 3, 224, 224)


def bert_tiny(seq=128, d=128, heads=2, ffn=512, vocab=30522):
    g = G()
    dh = d // heads
    h = g.op("Gather", [g.w(f32(vocab, d, scale=0.02)), "input_ids"])
    h = g.op("Add", [h, g.w(f32(seq, d, scale=0.02))])

    def layer_norm(h):
        mu = g.op("ReduceMean", [h], axes=[-1])
        dd = g.op("Sub", [h, mu])
        var = g.op("ReduceMean", [g.op("Pow", [dd, g.w(np.float32(2))])],
                   axes=[-1])
        y = g.op("Div", [dd, g.op("Sqrt", [g.op("Add", [
            var, g.w(np.float32(1e-12))])])])
        return g.op("Add", [g.op("Mul", [y, g.w(1 + 0.1 * f32(d))]),
                            g.w(f32(d, scale=0.1))])

    def split(t):
        t = g.op("Reshape", [t, g.w(np.array([0, 0, heads, dh], np.int64))])
        return g.op("Transpose", [t], perm=[0, 2, 1, 3])

    h = layer_norm(h)
    for _ in range(2):
        q, k, v = (split(g.op("Add", [g.op("MatMul", [h, g.w(
            f32(d, d, scale=0.05))]), g.w(f32(d, scale=0.02))]))
            for _ in range(3))
        kt = g.op("Transpose", [k], perm=[0, 1, 3, 2])
        sc = g.op("Div", [g.op("MatMul", [q, kt]),
                          g.w(np.float32(np.sqrt(dh)))])
        a = g.op("MatMul", [g.op("Softmax", [sc], axis=-1), v])
        a = g.op("Reshape", [g.op("Transpose", [a], perm=[0, 2, 1, 3]),
                             g.w(np.array([0, 0, d], np.int64))])
        a = g.op("Add", [g.op("MatMul", [a, g.w(f32(d, d, scale=0.05))]),
                         g.w(f32(d, scale=0.02))])
        h = layer_norm(g.op("Add", [h, a]))
        f = g.op("Add", [g.op("MatMul", [h, g.w(f32(d, ffn, scale=0.05))]),
                         g.w(f32(ffn, scale=0.02))])
        e = g.op("Erf", [g.op("Div", [f, g.w(np.float32(np.sqrt(2)))])])
        f = g.op("Mul", [g.op("Mul", [f, g.op("Add", [e, g.w(
            np.float32(1))])]), g.w(np.float32(0.5))])
        f = g.op("Add", [g.op("MatMul", [f, g.w(f32(ffn, d, scale=0.05))]),
                         g.w(f32(d, scale=0.02))])
        h = layer_norm(g.op("Add", [h, f]))
    inp = helper.make_tensor_value_info("input_ids", TensorProto.INT64,
                                        ["batch", seq])
    return g, inp, h, lambda b: rng.integers(0, vocab, (b, seq),
                                             dtype=np.int64)


def torch_models():
    """{name: (module, example input maker)} of the PyTorch versions."""
    import torch
    from torch import nn

    torch.manual_seed(1)

    class Block(nn.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.c1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
            self.b1 = nn.BatchNorm2d(cout)
            self.c2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
            self.b2 = nn.BatchNorm2d(cout)
            self.down = None
            if stride != 1 or cin != cout:
                self.down = nn.Sequential(
                    nn.Conv2d(cin, cout, 1, stride, bias=False),
                    nn.BatchNorm2d(cout))

        def forward(self, x):
            y = self.b2(self.c2(torch.relu(self.b1(self.c1(x)))))
            return torch.relu(y + (x if self.down is None else self.down(x)))

    class ResNet18(nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = nn.Sequential(
                nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64),
                nn.ReLU(), nn.MaxPool2d(3, 2, 1))
            blocks, cin = [], 64
            for cout, stride in [(64, 1), (128, 2), (256, 2), (512, 2)]:
                blocks += [Block(cin, cout, stride), Block(cout, cout, 1)]
                cin = cout
            self.blocks = nn.Sequential(*blocks)
            self.fc = nn.Linear(512, 1000)

        def forward(self, x):
            x = nn.functional.adaptive_avg_pool2d(self.blocks(self.stem(x)), 1)
            return self.fc(torch.flatten(x, 1))

    class Layer(nn.Module):
        def __init__(self, d, heads, ffn):
            super().__init__()
            self.heads = heads
            self.q, self.k, self.v, self.o = (nn.Linear(d, d)
                                              for _ in range(4))
            self.ln1, self.ln2 = nn.LayerNorm(d, eps=1e-12), nn.LayerNorm(
                d, eps=1e-12)
            self.f1, self.f2 = nn.Linear(d, ffn), nn.Linear(ffn, d)

        def forward(self, h):
            b, t, d = h.shape
            dh = d // self.heads

            def split(x):
                return x.reshape(b, t, self.heads, dh).transpose(1, 2)
            q, k, v = split(self.q(h)), split(self.k(h)), split(self.v(h))
            a = torch.softmax(q @ k.transpose(-1, -2) / dh ** 0.5, dim=-1)
            a = (a @ v).transpose(1, 2).reshape(b, t, d)
            h = self.ln1(h + self.o(a))
            f = self.f2(nn.functional.gelu(self.f1(h)))
            return self.ln2(h + f)

    class BertTiny(nn.Module):
        def __init__(self, seq=128, d=128, heads=2, ffn=512, vocab=30522):
            super().__init__()
            self.tok = nn.Embedding(vocab, d)
            self.pos = nn.Parameter(torch.randn(seq, d) * 0.02)
            self.ln = nn.LayerNorm(d, eps=1e-12)
            self.layers = nn.Sequential(*(Layer(d, heads, ffn)
                                          for _ in range(2)))

        def forward(self, ids):
            return self.layers(self.ln(self.tok(ids) + self.pos))

    return {"resnet18": (ResNet18(), lambda b: f32(b, 3, 224, 224)),
            "bert": (BertTiny(), lambda b: rng.integers(
                0, 30522, (b, 128), dtype=np.int64))}


def export(name, d):
    """The PyTorch version of model name exported to ONNX in d."""
    import torch
    module, make_input = torch_models()[name]
    module.eval()
    path = os.path.join(d, name + "-torch.onnx")
    x = torch.from_numpy(make_input(1))
    torch.onnx.export(module, (x,), path, dynamo=False, opset_version=17,
                      input_names=["input"], output_names=["output"],
                      dynamic_axes={"input": {0: "batch"},
                                    "output": {0: "batch"}})
    return path, make_input


def save(name, build, d):
    g, inp, out, make_input = build()
    outv = helper.make_tensor_value_info(out, TensorProto.FLOAT, None)
    m = helper.make_model(helper.make_graph(g.nodes, name, [inp], [outv],
                                            g.inits),
                          opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    path = os.path.join(d, name + ".onnx")
    onnx.save(m, path)
    return path, make_input


def time_ort(path, x, iters, threads):
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    s = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    name = s.get_inputs()[0].name
    for _ in range(2):
        y = s.run(None, {name: x})[0]
    times = []
    for _ in range(iters):
        t0 = time.perf_counter()
        y = s.run(None, {name: x})[0]
        times.append(time.perf_counter() - t0)
    return float(np.median(times)), y


def time_weft(path, x, iters, d, threads):
    xin, yout = os.path.join(d, "x.npy"), os.path.join(d, "y.npy")
    np.save(xin, x)
    exe = os.path.join(HERE, "onnx_infer")
    r = subprocess.run([exe, path, xin, "--out", yout, "--iters",
                        str(iters), "--warmup", "2", "--intra", str(threads)],
                       capture_output=True, text=True)
    if r.returncode:
        sys.exit("onnx_infer failed: " + r.stderr)
    res = json.loads(r.stdout.strip().splitlines()[-1])
    return res["ms_median"] / 1e3, np.load(yout)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--iters", type=int, default=5)
    ap.add_argument("--models", default="resnet18,bert")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=1,
                    help="weft and ONNX Runtime alternated this many times "
                         "(each in a process of its own for weft); the "
                         "median of the rounds is printed")
    ap.add_argument("--source", choices=("helper", "torch"), default="helper",
                    help="build the models with the onnx helper API, or as "
                         "PyTorch modules exported by torch.onnx.export")
    args = ap.parse_args()
    builds = {"resnet18": resnet18, "bert": bert_tiny}
    with tempfile.TemporaryDirectory() as d:
        print(f"{'model':10} {'batch':>5} {'weft ms':>10} {'ort ms':>10} "
              f"{'speed':>7} {'max |diff|':>11}")
        for name in args.models.split(","):
            path, make_input = (export(name, d) if args.source == "torch"
                                else save(name, builds[name], d))
            for batch in (1, 32):
                x = make_input(batch)
                tws, tos = [], []
                for _ in range(args.rounds):
                    tw, yw = time_weft(path, x, args.iters, d, args.threads)
                    to, yo = time_ort(path, x, args.iters, args.threads)
                    tws.append(tw)
                    tos.append(to)
                tw, to = float(np.median(tws)), float(np.median(tos))
                diff = float(np.max(np.abs(yw.astype(np.float64) - yo)))
                print(f"{name:10} {batch:5d} {tw * 1e3:10.2f} "
                      f"{to * 1e3:10.2f} {to / tw:6.2f}x {diff:11.3g}",
                      flush=True)


if __name__ == "__main__":
    main()
