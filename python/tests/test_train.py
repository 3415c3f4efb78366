# python/tests/test_train.py — training from Python: models with layers,
# losses and metrics, optimizers with learning-rate schedules,
# initializers, checkpoints (files, numbered in a directory, read back)
# and saved models (export, load, run a signature).
import os

import numpy as np
import pytest

import weft


def _toy(n=256, seed=0):
    """Two Gaussian blobs in 4-d, labels 0/1."""
    r = np.random.default_rng(seed)
    y = r.integers(0, 2, n).astype(np.int32)
    x = r.normal(0, 1, (n, 4)).astype(np.float32) + 2.0 * y[:, None]
    return x, y


def _build(opt, seed=1):
    g = weft.Graph(seed=seed)
    with g.as_default():
        x = weft.placeholder(weft.float32, (None, 4), name="x")
        y = weft.placeholder(weft.int32, (None,), name="y")
        m = weft.Model()
        with m.training():
            h = m.dense(x, 16, activation="relu")
            logits = m.dense(h, 2)
            loss = m.sparse_softmax_cross_entropy(logits, y)
        train = opt.minimize(loss, model=m)
        with m.inference():
            h2 = m.dense(x, 16, activation="relu")
            acc = m.accuracy(m.dense(h2, 2), y)
        init = weft.global_variables_initializer()
    return g, x, y, m, loss, train, acc, init


@pytest.mark.parametrize("opt", [
    weft.train.AdamOptimizer(0.01),
    weft.train.GradientDescentOptimizer(
        0.5, schedule=weft.train.ExponentialDecay(100, 0.5)),
    weft.train.MomentumOptimizer(0.1, momentum=0.9),
    weft.train.RMSPropOptimizer(0.01),
    weft.train.AdagradOptimizer(0.3),
    weft.train.AdamWOptimizer(0.01, weight_decay=0.01,
                              schedule=weft.train.CosineDecay(200, 0.1)),
    weft.train.AdamOptimizer(schedule=weft.train.PiecewiseConstant(
        [50, 100], [0.02, 0.01, 0.005]), warmup_steps=5),
], ids=["adam", "sgd-exp", "momentum", "rmsprop", "adagrad", "adamw-cos",
        "adam-piecewise"])
def test_optimizers_learn(opt):
    g, x, y, m, loss, train, acc, init = _build(opt)
    xs, ys = _toy()
    with weft.Session(g) as s:
        s.run(init)
        first = s.run(loss, {x: xs, y: ys})
        step = s.make_callable([loss, train], [x, y])
        for _ in range(150):
            step(xs, ys)
        last, a = s.run([loss, acc], {x: xs, y: ys})
        gs = s.run(m.global_step())
    assert last < 0.5 * first
    assert a > 0.9
    assert gs == 150


def test_initializers_and_get_variable():
    g = weft.Graph(seed=3)
    with g.as_default():
        m = weft.Model()
        z = m.variable("z", (3,), initializer=weft.initializers.zeros())
        c = m.variable("c", (2, 2), initializer=weft.initializers.constant(
            0.5))
        u = m.variable("u", (1000,),
                       initializer=weft.initializers.random_uniform(0.1))
        n = m.variable("n", (100, 100),
                       initializer=weft.initializers.he_normal())
        gv = weft.get_variable("gv", (4,), initializer="ones")
        init = weft.global_variables_initializer()
    with weft.Session(g) as s:
        s.run(init)
        rz, rc, ru, rn, rg = s.run([z, c, u, n, gv])
    np.testing.assert_array_equal(rz, 0)
    np.testing.assert_array_equal(rc, 0.5)
    assert np.all(np.abs(ru) <= 0.1) and ru.std() > 0.03
    assert abs(rn.std() - np.sqrt(2 / 100)) < 0.02
    np.testing.assert_array_equal(rg, 1)
    names = [v[0] for v in m.variables()]
    assert "z" in names and "n" in names


def test_checkpoints(tmp_path):
    g = weft.Graph()
    with g.as_default():
        v = weft.Variable(np.arange(4, dtype=np.float32), name="v")
        inc = v.assign_add(np.ones(4, np.float32))
        init = weft.global_variables_initializer()
        read = v.read_value()
    saver = weft.train.Saver(max_to_keep=2)
    d = str(tmp_path / "ckpt")
    with weft.Session(g) as s:
        s.run(init)
        path = saver.save(s, str(tmp_path / "one.wckpt"))
        for step in (1, 2, 3):
            s.run(inc)
            saver.save(s, d, global_step=step)
        assert weft.train.list_checkpoints(d) == [2, 3]
        latest = weft.train.latest_checkpoint(d)
        assert latest and os.path.exists(latest)
        tensors, meta = weft.train.load_checkpoint(latest)
        np.testing.assert_array_equal(tensors["v"], np.arange(4) + 3)
        saver.restore(s, path)
        np.testing.assert_array_equal(s.run(read), np.arange(4))
        saver.restore(s, d)          # a directory: its latest
        np.testing.assert_array_equal(s.run(read), np.arange(4) + 3)
        with pytest.raises(weft.Error):
            saver.restore(s, str(tmp_path / "missing.wckpt"))


def test_saved_model(tmp_path):
    xs, ys = _toy(64)
    g, x, y, m, loss, train, acc, init = _build(
        weft.train.AdamOptimizer(0.01))
    with g.as_default():
        with m.inference():
            h = m.dense(x, 16, activation="relu")
            logits = m.dense(h, 2)
            probs = weft.softmax(logits)
    d = str(tmp_path / "model")
    with weft.Session(g) as s:
        s.run(init)
        for _ in range(20):
            s.run(train, {x: xs, y: ys})
        expect = s.run(probs, {x: xs})
        weft.saved_model.export(s, d, {"serve": {
            "inputs": {"x": x}, "outputs": {"probs": probs}}})
    sm = weft.saved_model.load(d)
    assert list(sm.signatures) == ["serve"]
    assert sm.signatures["serve"]["inputs"][0]["key"] == "x"
    out = sm.run({"x": xs})
    np.testing.assert_allclose(out["probs"], expect, rtol=1e-5, atol=1e-6)
    with pytest.raises(weft.InvalidArgumentError, match="nope"):
        sm.run({"nope": xs})
    with pytest.raises(weft.NotFoundError):
        sm.run({"x": xs}, signature="other")


@pytest.mark.parametrize("opt", [
    weft.train.GradientDescentOptimizer(0.1),
    weft.train.MomentumOptimizer(0.05, momentum=0.9),
    weft.train.AdamOptimizer(0.1)], ids=["sgd", "momentum", "adam"])
def test_minimize_python_variables(opt):
    """Least squares on weft.Variable objects, updated by apply ops."""
    r = np.random.default_rng(1)
    xs = r.normal(0, 1, (64, 3)).astype(np.float32)
    ys = xs @ np.array([1.0, -2.0, 0.5], np.float32) + 0.3
    g = weft.Graph()
    with g.as_default():
        x = weft.placeholder(weft.float32, (None, 3))
        y = weft.placeholder(weft.float32, (None,))
        w = weft.Variable(np.zeros(3, np.float32), name="w")
        b = weft.Variable(np.float32(0.0), name="b")
        pred = weft.reduce_sum(x * w, axes=[1]) + b
        err = pred - y
        loss = weft.reduce_mean(err * err)
        train = opt.minimize(loss, var_list=[w, b])
        init = weft.global_variables_initializer()
    with weft.Session(g) as s:
        s.run(init)
        for _ in range(300):
            s.run(train, {x: xs, y: ys})
        rw, rb = s.run([w, b])
    np.testing.assert_allclose(rw, [1.0, -2.0, 0.5], atol=0.02)
    assert abs(rb - 0.3) < 0.02
    with pytest.raises(weft.UnimplementedError):
        weft.train.RMSPropOptimizer(0.1).minimize(loss, var_list=[w])


def _has_op(name):
    return hasattr(weft.raw_ops, name)


def test_data_parallel_graph():
    """set_data_parallel makes minimize average gradients with AllReduce
    and init_op end with a broadcast of task 0's variables (building needs
    no job; the collectives come from the MPI transport plugin)."""
    if not _has_op("AllReduce"):
        pytest.skip("no transport plugin with AllReduce in this build")
    g = weft.Graph(seed=3)
    with g.as_default():
        x = weft.placeholder(weft.float32, (None, 4), name="x")
        y = weft.placeholder(weft.int32, (None,), name="y")
        m = weft.Model()
        m.set_data_parallel(bucket_bytes=1 << 20)
        with m.training():
            logits = m.dense(m.dense(x, 8, activation="relu"), 2)
            loss = m.sparse_softmax_cross_entropy(logits, y)
        weft.train.AdamOptimizer(0.01).minimize(loss, model=m)
        m.init_op()
        m.broadcast_op()
    ops = [op.type for op in g.get_operations()]
    assert "AllReduce" in ops
    assert "Broadcast" in ops


_DP_SCRIPT = r"""
import numpy as np, weft
def run(dp):
    g = weft.Graph(seed=5)
    with g.as_default():
        x = weft.placeholder(weft.float32, (None, 4), name="x")
        y = weft.placeholder(weft.int32, (None,), name="y")
        m = weft.Model()
        if dp:
            m.set_data_parallel()
        with m.training():
            loss = m.sparse_softmax_cross_entropy(
                m.dense(m.dense(x, 8, activation="relu"), 2), y)
        train = weft.train.AdamOptimizer(0.05).minimize(loss, model=m)
        init = m.init_op()
    r = np.random.default_rng(0)
    xv = r.normal(0, 1, (64, 4)).astype(np.float32)
    yv = (xv[:, 0] > 0).astype(np.int32)
    with weft.Session(g) as s:
        s.run(init)
        out = [s.run([loss, train], {x: xv, y: yv})[0] for _ in range(5)]
    return np.array(out, dtype=np.float32)
assert weft.parallel_task_batch(64) == 64
a, b = run(False), run(True)
assert np.array_equal(a, b), (a, b)
print("same losses", a[-1])
"""


def test_data_parallel_job_of_one_task_trains_as_alone(tmp_path):
    """A job of one process (MPI joined as a singleton, in a child so that
    MPI's lifetime is its own): the per-task batch is the global batch and
    data-parallel training gives the same losses as training alone, bit
    for bit."""
    if not _has_op("AllReduce"):
        pytest.skip("no transport plugin with AllReduce in this build")
    import subprocess
    import sys
    script = tmp_path / "dp.py"
    script.write_text(_DP_SCRIPT)
    env = dict(os.environ)
    env.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
    env.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    r = subprocess.run([sys.executable, str(script)], env=env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "same losses" in r.stdout
