#!/usr/bin/env python3
"""tests/fuzz/seeds_onnx.py — writes the seed corpus of the ONNX importer's
fuzz target (tests/fuzz/corpus/onnx/): small models built with the onnx
package's helper API that between them use initializers of every storage
(typed fields, raw data, external data), symbolic dimensions, attributes
of several kinds, and ops whose parameters are inputs.

Usage: python3 tests/fuzz/seeds_onnx.py [DIR]   (needs python3-onnx)"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "corpus", "onnx")
os.makedirs(out, exist_ok=True)
rng = np.random.default_rng(0)
F = TensorProto.FLOAT


def vi(name, shape, t=F):
    return helper.make_tensor_value_info(name, t, shape)


TRAINING = "ai.onnx.preview.training"


def save(name, nodes, inputs, outputs, inits=(), opset=13, training=False):
    g = helper.make_graph(nodes, name, inputs, outputs, list(inits))
    ops = [helper.make_opsetid("", opset)] if opset else []
    if training:
        ops.append(helper.make_opsetid(TRAINING, 1))
    m = helper.make_model(g, opset_imports=ops)
    m.ir_version = 8
    onnx.save(m, os.path.join(out, name + ".onnx"))


def arr(name, *shape, raw=True):
    a = rng.standard_normal(shape).astype(np.float32)
    if raw:
        return numpy_helper.from_array(a, name)
    return helper.make_tensor(name, F, shape, a.ravel().tolist())


save("dense", [helper.make_node("Gemm", ["x", "w", "b"], ["h"], transB=1),
               helper.make_node("Relu", ["h"], ["y"])],
     [vi("x", ["N", 4])], [vi("y", ["N", 3])],
     [arr("w", 3, 4), arr("b", 3, raw=False)])
save("conv", [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1],
                               strides=[2, 2], group=1),
              helper.make_node("BatchNormalization",
                               ["c", "s", "o", "m", "v"], ["bn"]),
              helper.make_node("MaxPool", ["bn"], ["p"], kernel_shape=[2, 2],
                               auto_pad="SAME_UPPER"),
              helper.make_node("GlobalAveragePool", ["p"], ["y"])],
     [vi("x", [1, 2, 8, 8])], [vi("y", [1, 3, 1, 1])],
     [arr("w", 3, 2, 3, 3), arr("s", 3), arr("o", 3), arr("m", 3),
      numpy_helper.from_array(np.ones(3, np.float32), "v")])
shape = numpy_helper.from_array(np.array([0, -1], np.int64), "shape")
axes = numpy_helper.from_array(np.array([1], np.int64), "axes")
save("shapes", [helper.make_node("Reshape", ["x", "shape"], ["r"]),
                helper.make_node("Unsqueeze", ["r", "axes"], ["u"]),
                helper.make_node("Transpose", ["u"], ["t"], perm=[2, 1, 0]),
                helper.make_node("Softmax", ["t"], ["y"], axis=0)],
     [vi("x", ["N", 2, 3])], [vi("y", [6, 1, "N"])], [shape, axes])
save("where", [helper.make_node("Less", ["a", "b"], ["c"]),
               helper.make_node("Where", ["c", "a", "b"], ["y"]),
               helper.make_node("ReduceSum", ["y", "axes"], ["s"],
                                keepdims=0)],
     [vi("a", [2, 3]), vi("b", [3])], [vi("s", [2])], [axes])
save("slice", [helper.make_node("Slice", ["x", "st", "en", "ax", "sp"],
                                ["y"])],
     [vi("x", [4, 5]), vi("st", [1], TensorProto.INT64),
      vi("en", [1], TensorProto.INT64), vi("ax", [1], TensorProto.INT64),
      vi("sp", [1], TensorProto.INT64)], [vi("y", None)], opset=13)
save("old_opset", [helper.make_node("Softmax", ["x"], ["s"], axis=1),
                   helper.make_node("Pad", ["s"], ["y"], pads=[0, 1, 0, 1],
                                    mode="reflect")],
     [vi("x", [2, 3])], [vi("y", [2, 5])], opset=9)
cst = helper.make_node("Constant", [], ["k"], value=helper.make_tensor(
    "k", F, [1], [2.0]))
save("constant", [cst, helper.make_node("Pow", ["x", "k"], ["p"]),
                  helper.make_node("Erf", ["p"], ["y"])],
     [vi("x", [3])], [vi("y", [3])])
# ai.onnx.preview.training: Gradient, and an optimizer step in a model of
# that domain alone
save("gradient", [helper.make_node("Mul", ["a", "b"], ["c"]),
                  helper.make_node("Gradient", ["a", "b"], ["da", "db"],
                                   domain=TRAINING, xs=["a", "b"], y="c")],
     [vi("a", [2]), vi("b", [2])], [vi("c", [2]), vi("da", [2])],
     training=True)
save("adam", [helper.make_node("Adam", ["R", "T", "X", "G", "V", "H"],
                               ["X2", "V2", "H2"], domain=TRAINING,
                               alpha=0.9, beta=0.99)],
     [vi("R", []), vi("T", [], TensorProto.INT64)] +
     [vi(n, [3]) for n in "XGVH"], [vi("X2", [3])], opset=0, training=True)
# strings: a string input, a string initializer, StringNormalizer and casts
# to and from strings
S = TensorProto.STRING
save("strings", [helper.make_node("StringNormalizer", ["w"], ["n"],
                                  case_change_action="LOWER",
                                  stopwords=["monday"]),
                 helper.make_node("Cast", ["x"], ["xs"], to=S),
                 helper.make_node("Cast", ["k"], ["kf"], to=F)],
     [vi("w", ["N"], S), vi("x", [2])],
     [vi("n", [None], S), vi("xs", [2], S), vi("kf", [2])],
     [helper.make_tensor("k", S, [2], [b"1.5", b"-INF"])])
# external data beside the model (the fuzzer rewrites only the model)
ext = arr("w", 4, 4)
save("external", [helper.make_node("MatMul", ["x", "w"], ["y"])],
     [vi("x", [1, 4])], [vi("y", [1, 4])], [ext])
m = onnx.load(os.path.join(out, "external.onnx"))
onnx.external_data_helper.convert_model_to_external_data(
    m, all_tensors_to_one_file=True, location="external.bin",
    size_threshold=0)
onnx.save(m, os.path.join(out, "external.onnx"))
# the data file would only be one more (unparsable) model to the fuzzer
os.remove(os.path.join(out, "external.bin"))
