# python/tests/test_onnx.py — ONNX models through the Python package:
# weft.saved_model.import_model imports the real models of tests/onnx/models
# (made by tests/onnx/make_models.py with numpy references) into a saved
# model that runs and matches the reference; a file that is not a model is
# refused with an error naming it.
import os
import struct

import numpy as np
import pytest

import weft

from conftest import SRCDIR

MODELS = os.path.join(SRCDIR, "tests", "onnx", "models")


def _varint(b, i):
    v = shift = 0
    while True:
        c = b[i]
        i += 1
        v |= (c & 0x7F) << shift
        shift += 7
        if c < 0x80:
            return v, i


def read_tensor(path):
    """A float TensorProto with raw_data, read from its wire format (the
    onnx package is not needed): dims (1), data_type (2), raw_data (9)."""
    b = open(path, "rb").read()
    i, dims, raw, dtype = 0, [], b"", None
    while i < len(b):
        key, i = _varint(b, i)
        field, wire = key >> 3, key & 7
        if wire == 0:
            v, i = _varint(b, i)
            if field == 1:
                dims.append(v)
            elif field == 2:
                dtype = v
        elif wire == 2:
            n, i = _varint(b, i)
            if field == 1:  # packed dims
                j = i
                while j < i + n:
                    v, j = _varint(b, j)
                    dims.append(v)
            elif field == 9:
                raw = b[i:i + n]
            i += n
        elif wire == 5:
            i += 4
        elif wire == 1:
            i += 8
    assert dtype == 1, "float tensors only"
    return np.frombuffer(raw, dtype="<f4").reshape(dims)


@pytest.mark.parametrize("name", ["resnet_small", "transformer_small"])
def test_import_model_runs_like_the_reference(tmp_path, name):
    d = os.path.join(MODELS, name)
    m = weft.saved_model.import_model(os.path.join(d, "model.onnx"),
                                      tmp_path / "saved")
    sig = m.signatures["serving_default"]
    x = read_tensor(os.path.join(d, "test_data_set_0", "input_0.pb"))
    want = read_tensor(os.path.join(d, "test_data_set_0", "output_0.pb"))
    out = m.run({sig["inputs"][0]["key"]: x})
    got = out[sig["outputs"][0]["key"]]
    np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-5)


def test_import_model_refuses_what_is_not_a_model(tmp_path):
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"\x08\x07" + struct.pack("<I", 0xFFFFFFFF) * 4)
    with pytest.raises(weft.Error, match="bad.onnx"):
        weft.saved_model.import_model(bad, tmp_path / "saved", format="onnx")
    assert not os.path.exists(tmp_path / "saved")


STRNORM = ("/usr/share/libonnx-testdata/data/simple/"
           "test_strnorm_model_monday_insensintive_upper_twodim")


@pytest.mark.skipif(not os.path.isdir(STRNORM),
                    reason="Debian's libonnx-testdata is not installed")
def test_string_model_imports_and_runs(tmp_path):
    m = weft.saved_model.import_model(os.path.join(STRNORM, "model.onnx"),
                                      tmp_path / "saved")
    sig = m.signatures["serving_default"]
    x = np.array([["Monday", "tuesday", "wednesday", "Monday", "tuesday",
                   "wednesday"]])
    out = m.run({sig["inputs"][0]["key"]: x})
    got = out[sig["outputs"][0]["key"]]
    assert got.shape == (1, 4)
    assert list(got[0]) == ["TUESDAY", "WEDNESDAY", "TUESDAY", "WEDNESDAY"]
