# python/tests/test_plugin.py — a third-party op plugin from Python: the
# SDK's example Swish plugin built here, loaded with weft.load_plugin; its
# op gets a generated function with the plugin's docs, computes what NumPy
# does, and differentiates (against finite differences) inside training.
import inspect
import os

import numpy as np
import pytest

import weft


def test_load_plugin_errors(tmp_path):
    with pytest.raises(weft.NotFoundError):
        weft.load_plugin(str(tmp_path / "missing.so"))
    bad = tmp_path / "bad.so"
    bad.write_bytes(b"not an ELF file")
    with pytest.raises(weft.Error):
        weft.load_plugin(str(bad))


def test_swish_from_python(swish_plugin):
    names = weft.load_plugin(swish_plugin)
    assert "example-swish" in names
    f = weft.ops.swish
    assert f is weft.raw_ops.Swish
    assert "beta" in inspect.signature(f).parameters
    assert "sigmoid" in f.__doc__ and "example-swish" in f.__doc__
    g = weft.Graph()
    with g.as_default():
        x = weft.placeholder(weft.float64, (5,), name="x")
        y = weft.swish(x, beta=1.5)
        loss = weft.reduce_sum(y * y)
        (dx,) = weft.gradients(loss, [x])
    a = np.array([-2.0, -0.5, 0.0, 0.7, 3.0])
    with weft.Session(g) as s:
        ry, rdx = s.run([y, dx], {x: a})
        np.testing.assert_allclose(ry, a / (1 + np.exp(-1.5 * a)), rtol=1e-12)
        eps = 1e-6
        for i in range(5):
            e = np.zeros(5)
            e[i] = eps
            fd = (s.run(loss, {x: a + e}) - s.run(loss, {x: a - e})) / (2 * eps)
            assert abs(rdx[i] - fd) < 1e-6 * max(1, abs(fd))


def test_swish_in_training(swish_plugin):
    weft.load_plugin(swish_plugin)
    r = np.random.default_rng(0)
    xs = r.normal(0, 1, (128, 3)).astype(np.float32)
    ys = (xs.sum(1) > 0).astype(np.int32)
    g = weft.Graph(seed=2)
    with g.as_default():
        x = weft.placeholder(weft.float32, (None, 3))
        y = weft.placeholder(weft.int32, (None,))
        m = weft.Model()
        h = weft.swish(m.dense(x, 8))
        loss = m.sparse_softmax_cross_entropy(m.dense(h, 2), y)
        train = weft.train.AdamOptimizer(0.05).minimize(loss, model=m)
        init = weft.global_variables_initializer()
    with weft.Session(g) as s:
        s.run(init)
        first = s.run(loss, {x: xs, y: ys})
        for _ in range(60):
            s.run(train, {x: xs, y: ys})
        assert s.run(loss, {x: xs, y: ys}) < 0.3 * first
