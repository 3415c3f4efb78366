#!/usr/bin/env python3
"""tests/onnx/make_models.py — writes the real-model tests of the ONNX
importer into tests/onnx/models/, each in the layout of ONNX's backend test
cases (NAME/model.onnx, NAME/test_data_set_0/input_K.pb, output_K.pb), so
that tests/onnx/onnx_conformance runs them as the suite "weft":

  resnet_small      a CNN with residual blocks (Conv, BatchNormalization,
                    Relu, Add, MaxPool, GlobalAveragePool, Flatten, Gemm)
  mobilenet_small   a depthwise-separable CNN (grouped Conv, Clip as ReLU6,
                    1x1 convolutions, GlobalAveragePool, Reshape, Gemm)
  transformer_small a 2-layer transformer encoder as PyTorch exports it:
                    attention by MatMul, Reshape, Transpose, Softmax;
                    LayerNorm as ReduceMean-Sub-Pow-ReduceMean-Add-Sqrt-Div;
                    GELU in its Erf form; a symbolic batch dimension

The expected outputs are computed here with numpy in float64 from the same
weights (not by any ONNX runtime). Usage: python3 tests/onnx/make_models.py
(needs numpy and python3-onnx); the files it writes are committed."""
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "models")
rng = np.random.default_rng(20)


class G:
    """Collects nodes and initializers; names are unique."""

    def __init__(self):
        self.nodes, self.inits, self.k = [], [], 0

    def name(self, base):
        self.k += 1
        return f"{base}_{self.k}"

    def w(self, arr, base="w"):
        n = self.name(base)
        self.inits.append(numpy_helper.from_array(np.asarray(arr), n))
        return n

    def op(self, op, inputs, **attrs):
        out = self.name(op.lower())
        self.nodes.append(helper.make_node(op, inputs, [out],
                                           name=self.name("n_" + op),
                                           **attrs))
        return out


def f32(*shape, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype(np.float32)


# ---- numpy references --------------------------------------------------------


def conv_ref(x, w, b, stride=1, pad=0, group=1):
    n, c, h, wd = x.shape
    m, cg, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh = (h + 2 * pad - kh) // stride + 1
    ow = (wd + 2 * pad - kw) // stride + 1
    y = np.zeros((n, m, oh, ow))
    mg = m // group
    for g in range(group):
        xs = xp[:, g * cg:(g + 1) * cg]
        for o in range(g * mg, (g + 1) * mg):
            for i in range(kh):
                for j in range(kw):
                    patch = xs[:, :, i:i + stride * oh:stride,
                               j:j + stride * ow:stride]
                    y[:, o] += np.einsum("nchw,c->nhw", patch, w[o, :, i, j])
    return y + b.reshape(1, -1, 1, 1)


def bn_ref(x, s, o, m, v, eps=1e-5):
    sh = (1, -1, 1, 1)
    return (x - m.reshape(sh)) / np.sqrt(v.reshape(sh) + eps) * \
        s.reshape(sh) + o.reshape(sh)


def maxpool_ref(x, k=2, s=2):
    n, c, h, w = x.shape
    oh, ow = (h - k) // s + 1, (w - k) // s + 1
    y = np.full((n, c, oh, ow), -np.inf)
    for i in range(k):
        for j in range(k):
            y = np.maximum(y, x[:, :, i:i + s * oh:s, j:j + s * ow:s])
    return y


def erf(x):
    from math import erf as e
    return np.vectorize(e)(x)


def layernorm_ref(x, g, b, eps=1e-5):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * g + b


def softmax_ref(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


# ---- models -------------------------------------------------------------------


def conv_bn(g, x, cin, cout, k, stride, pad, group, params, relu=True):
    w, b = f32(cout, cin // group, k, k, scale=0.4), f32(cout, scale=0.1)
    s, o = (1 + 0.1 * f32(cout)), f32(cout, scale=0.1)
    m, v = f32(cout, scale=0.1), (1 + 0.2 * np.abs(f32(cout)))
    y = g.op("Conv", [x, g.w(w), g.w(b)], kernel_shape=[k, k],
             strides=[stride, stride], pads=[pad] * 4, group=group)
    y = g.op("BatchNormalization", [y, g.w(s), g.w(o), g.w(m), g.w(v)],
             epsilon=1e-5)
    params.append((w, b, stride, pad, group, s, o, m, v))
    return g.op("Relu", [y]) if relu else y


def conv_bn_ref(x, p, relu=True):
    w, b, stride, pad, group, s, o, m, v = p
    y = bn_ref(conv_ref(x, w, b, stride, pad, group), s, o, m, v)
    return np.maximum(y, 0) if relu else y


def resnet():
    g, p = G(), []
    x = "image"
    h = conv_bn(g, x, 3, 8, 3, 1, 1, 1, p)
    h = g.op("MaxPool", [h], kernel_shape=[2, 2], strides=[2, 2])
    for _ in range(2):
        r = conv_bn(g, h, 8, 8, 3, 1, 1, 1, p)
        r = conv_bn(g, r, 8, 8, 3, 1, 1, 1, p, relu=False)
        h = g.op("Relu", [g.op("Add", [r, h])])
    h = g.op("Flatten", [g.op("GlobalAveragePool", [h])], axis=1)
    fw, fb = f32(10, 8, scale=0.5), f32(10, scale=0.1)
    y = g.op("Gemm", [h, g.w(fw), g.w(fb)], transB=1)
    xin = f32(2, 3, 12, 12)

    def ref(xv):
        it = iter(p)
        h = conv_bn_ref(xv.astype(np.float64), next(it))
        h = maxpool_ref(h)
        for _ in range(2):
            r = conv_bn_ref(h, next(it))
            r = conv_bn_ref(r, next(it), relu=False)
            h = np.maximum(r + h, 0)
        h = h.mean((2, 3))
        return h @ fw.T + fb
    return g, [("image", xin, [2, 3, 12, 12])], y, ref(xin)


def mobilenet():
    g, p = G(), []
    x = "image"
    h = conv_bn(g, x, 3, 8, 3, 2, 1, 1, p)
    lo, hi = g.w(np.float32(0)), g.w(np.float32(6))
    h = g.op("Clip", [h, lo, hi])
    for cin, cout in [(8, 16), (16, 16)]:
        h = conv_bn(g, h, cin, cin, 3, 1, 1, cin, p)  # depthwise
        h = g.op("Clip", [h, lo, hi])
        h = conv_bn(g, h, cin, cout, 1, 1, 0, 1, p)  # pointwise
        h = g.op("Clip", [h, lo, hi])
    h = g.op("GlobalAveragePool", [h])
    h = g.op("Reshape", [h, g.w(np.array([0, -1], np.int64))])
    fw, fb = f32(5, 16, scale=0.5), f32(5, scale=0.1)
    y = g.op("Gemm", [h, g.w(fw), g.w(fb)], transB=1)
    xin = f32(2, 3, 16, 16)

    def ref(xv):
        it = iter(p)
        c6 = lambda v: np.clip(v, 0, 6)  # noqa: E731
        h = c6(conv_bn_ref(xv.astype(np.float64), next(it)))
        for _ in range(2):
            h = c6(conv_bn_ref(h, next(it)))
            h = c6(conv_bn_ref(h, next(it)))
        return h.mean((2, 3)) @ fw.T + fb
    return g, [("image", xin, [2, 3, 16, 16])], y, ref(xin)


def transformer():
    g = G()
    d, heads, ffn, seq = 16, 2, 32, 5
    dh = d // heads
    layers = []
    x = "tokens"
    h = x

    def layer_norm(h, gam, bet):
        mu = g.op("ReduceMean", [h], axes=[-1])
        dd = g.op("Sub", [h, mu])
        var = g.op("ReduceMean", [g.op("Pow", [dd, g.w(np.float32(2))])],
                   axes=[-1])
        den = g.op("Sqrt", [g.op("Add", [var, g.w(np.float32(1e-5))])])
        y = g.op("Div", [dd, den])
        return g.op("Add", [g.op("Mul", [y, g.w(gam)]), g.w(bet)])

    def heads_split(t):
        t = g.op("Reshape", [t, g.w(np.array([0, 0, heads, dh], np.int64))])
        return g.op("Transpose", [t], perm=[0, 2, 1, 3])

    for _ in range(2):
        P = {k: f32(d, d, scale=0.3) for k in ("q", "k", "v", "o")}
        B = {k: f32(d, scale=0.1) for k in ("q", "k", "v", "o")}
        W1, b1 = f32(d, ffn, scale=0.3), f32(ffn, scale=0.1)
        W2, b2 = f32(ffn, d, scale=0.3), f32(d, scale=0.1)
        g1, be1 = 1 + 0.1 * f32(d), f32(d, scale=0.1)
        g2, be2 = 1 + 0.1 * f32(d), f32(d, scale=0.1)
        layers.append((P, B, W1, b1, W2, b2, g1, be1, g2, be2))
        q, k, v = (g.op("Add", [g.op("MatMul", [h, g.w(P[n])]), g.w(B[n])])
                   for n in ("q", "k", "v"))
        q, k, v = heads_split(q), heads_split(k), heads_split(v)
        kt = g.op("Transpose", [k], perm=[0, 1, 3, 2])
        sc = g.op("Div", [g.op("MatMul", [q, kt]),
                          g.w(np.float32(np.sqrt(dh)))])
        a = g.op("MatMul", [g.op("Softmax", [sc], axis=-1), v])
        a = g.op("Transpose", [a], perm=[0, 2, 1, 3])
        a = g.op("Reshape", [a, g.w(np.array([0, 0, d], np.int64))])
        a = g.op("Add", [g.op("MatMul", [a, g.w(P["o"])]), g.w(B["o"])])
        h = layer_norm(g.op("Add", [h, a]), g1, be1)
        f = g.op("Add", [g.op("MatMul", [h, g.w(W1)]), g.w(b1)])
        # GELU, the Erf form: x * 0.5 * (1 + erf(x / sqrt 2))
        e = g.op("Erf", [g.op("Div", [f, g.w(np.float32(np.sqrt(2)))])])
        f = g.op("Mul", [g.op("Mul", [f, g.op("Add", [e, g.w(np.float32(1))])]),
                         g.w(np.float32(0.5))])
        f = g.op("Add", [g.op("MatMul", [f, g.w(W2)]), g.w(b2)])
        h = layer_norm(g.op("Add", [h, f]), g2, be2)
    xin = f32(3, seq, d)

    def ref(xv):
        h = xv.astype(np.float64)
        for P, B, W1, b1, W2, b2, g1, be1, g2, be2 in layers:
            def proj(n):
                t = h @ P[n] + B[n]
                return t.reshape(t.shape[0], seq, heads, dh).transpose(
                    0, 2, 1, 3)
            q, k, v = proj("q"), proj("k"), proj("v")
            a = softmax_ref(q @ k.transpose(0, 1, 3, 2) / np.sqrt(dh)) @ v
            a = a.transpose(0, 2, 1, 3).reshape(h.shape[0], seq, d)
            h = layernorm_ref(h + a @ P["o"] + B["o"], g1, be1)
            f = h @ W1 + b1
            f = f * 0.5 * (1 + erf(f / np.sqrt(2)))
            h = layernorm_ref(h + f @ W2 + b2, g2, be2)
        return h
    return g, [("tokens", xin, ["batch", seq, d])], h, ref(xin)


def write(name, build, opset=13):
    g, inputs, out, want = build()
    ins = [helper.make_tensor_value_info(n, TensorProto.FLOAT, shape)
           for n, _, shape in inputs]
    outs = [helper.make_tensor_value_info(out, TensorProto.FLOAT, list(want.shape))]
    graph = helper.make_graph(g.nodes, name, ins, outs, g.inits)
    m = helper.make_model(graph, producer_name="weft tests/onnx/make_models.py",
                          opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    d = os.path.join(OUT, name)
    os.makedirs(os.path.join(d, "test_data_set_0"), exist_ok=True)
    onnx.save(m, os.path.join(d, "model.onnx"))
    for i, (n, v, _) in enumerate(inputs):
        with open(os.path.join(d, "test_data_set_0", f"input_{i}.pb"),
                  "wb") as f:
            f.write(numpy_helper.from_array(v, n).SerializeToString())
    with open(os.path.join(d, "test_data_set_0", "output_0.pb"), "wb") as f:
        f.write(numpy_helper.from_array(want.astype(np.float32),
                                        out).SerializeToString())


write("resnet_small", resnet)
write("mobilenet_small", mobilenet)
write("transformer_small", transformer)
