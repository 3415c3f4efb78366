# python/tests/test_session.py — running graphs: nested fetches, targets,
# feeds by name, callables, run options and metadata (Chrome traces),
# close and context managers, arrays without copies both ways (buffer
# protocol and DLPack), the GIL released during steps, sessions under a
# config of their own.
import collections
import json
import threading

import numpy as np
import pytest

import weft


@pytest.fixture
def xy(graph):
    x = weft.placeholder(weft.float32, (None, 4), name="x")
    y = weft.identity(x * 2.0, name="y")
    return graph, x, y


def test_nested_fetches(xy):
    g, x, y = xy
    a = np.ones((2, 4), np.float32)
    Pair = collections.namedtuple("Pair", "first second")
    with weft.Session(g) as s:
        r = s.run({"a": [y, (x, y)], "b": Pair(y, {"c": y})}, {x: a})
    assert isinstance(r, dict) and isinstance(r["a"], list)
    assert isinstance(r["a"][1], tuple) and isinstance(r["b"], Pair)
    np.testing.assert_array_equal(r["a"][0], 2 * a)
    np.testing.assert_array_equal(r["a"][1][0], a)
    np.testing.assert_array_equal(r["b"].second["c"], 2 * a)


def test_fetch_by_name_and_targets(xy):
    g, x, y = xy
    v = weft.Variable(np.zeros(4, np.float32), name="v")
    init = weft.global_variables_initializer()
    inc = v.assign_add(np.ones(4, np.float32))
    with weft.Session(g) as s:
        assert s.run(init) is None
        r = s.run("y:0", {"x:0": np.ones((1, 4), np.float32)})
        np.testing.assert_array_equal(r, [[2, 2, 2, 2]])
        out = s.run([v.read_value(), inc])
        assert out[1] is None
        s.run([], targets=[inc])
        np.testing.assert_array_equal(s.run(v.read_value()), [2, 2, 2, 2])


def test_feed_converts_lists_and_dtypes(xy):
    g, x, y = xy
    with weft.Session(g) as s:
        r = s.run(y, {x: [[1, 2, 3, 4]]})            # a list
        np.testing.assert_array_equal(r, [[2, 4, 6, 8]])
        r = s.run(y, {x: np.ones((1, 4), np.float64)})  # cast to float32
        assert r.dtype == np.float32


def test_zero_copy_feed_and_fetch(xy):
    g, x, y = xy
    ident = weft.identity(x)
    a = np.arange(8, dtype=np.float32).reshape(2, 4)
    with weft.Session(g) as s:
        r = s.run(ident, {x: a})
        assert np.shares_memory(r, a)         # fed buffer reaches the fetch
        r2 = s.run(y, {x: a})
        assert not np.shares_memory(r2, a)
        assert not r2.flags.writeable          # a view of the core's tensor
        b = r2.base
        while b is not None and not isinstance(b, weft._weft.Buffer):
            b = getattr(b, "obj", None) or getattr(b, "base", None)
        assert isinstance(b, weft._weft.Buffer)
        assert b.address == r2.__array_interface__["data"][0]
        # a strided array is copied (contiguously), not refused
        r3 = s.run(ident, {x: np.ones((4, 8), np.float32)[:, ::2]})
        np.testing.assert_array_equal(r3, np.ones((4, 4)))


def test_dlpack_both_ways(xy):
    g, x, y = xy

    class Foreign:
        """An array of another library: DLPack only."""
        def __init__(self, arr):
            self.arr = arr

        def __dlpack__(self, stream=None):
            return self.arr.__dlpack__()

        def __dlpack_device__(self):
            return self.arr.__dlpack_device__()

    ident = weft.identity(x)
    a = np.arange(8, dtype=np.float32).reshape(2, 4)
    with weft.Session(g) as s:
        r = s.run(ident, {x: Foreign(a)})
        assert np.shares_memory(r, a)
        buf = weft._weft.to_buffer(np.ones((2, 4), np.float32))
        back = np.from_dlpack(buf)
        assert back.__array_interface__["data"][0] == buf.address
        np.testing.assert_array_equal(back, np.ones((2, 4)))


def test_make_callable(xy):
    g, x, y = xy
    a = np.ones((3, 4), np.float32)
    with weft.Session(g) as s:
        f = s.make_callable(y, [x])
        np.testing.assert_array_equal(f(a), 2 * a)
        f2 = s.make_callable([y, weft.identity(x)], [x])
        r = f2(a)
        assert isinstance(r, list) and len(r) == 2
        f3 = s.make_callable({"y": y, "t": (y,)}, [x])
        r = f3(a)
        np.testing.assert_array_equal(r["t"][0], 2 * a)
        with pytest.raises(weft.InvalidArgumentError, match="1 feed"):
            f()
        md = weft.RunMetadata()
        f.run_with([a], trace_level=weft.FULL_TRACE, metadata=md)
        assert any(n["op"] == "Mul" for n in md.nodes())


def test_run_metadata_chrome_trace(xy, tmp_path):
    g, x, y = xy
    md = weft.RunMetadata()
    with weft.Session(g) as s:
        s.run(y, {x: np.ones((2, 4), np.float32)},
              options=weft.RunOptions(trace_level=weft.FULL_TRACE),
              run_metadata=md)
    assert md.step_ns > 0
    ops = {n["op"] for n in md.nodes()}
    assert "Mul" in ops
    trace = json.loads(md.chrome_trace())
    assert any(e.get("cat") == "Mul" for e in trace["traceEvents"])
    md.write_trace(str(tmp_path / "t.json"))
    assert json.loads((tmp_path / "t.json").read_text())["traceEvents"]


def test_close_and_context_manager(xy):
    g, x, y = xy
    with weft.Session(g) as s:
        f = s.make_callable(y, [x])
    assert s.closed
    with pytest.raises(weft.FailedPreconditionError):
        s.run(y, {x: np.ones((1, 4), np.float32)})
    with pytest.raises(weft.FailedPreconditionError):
        f(np.ones((1, 4), np.float32))
    s.close()   # idempotent


def test_threads_run_steps_at_once(graph):
    x = weft.placeholder(weft.float32, (256, 256), name="x")
    y = x
    for _ in range(40):
        y = weft.matmul(y, x) * np.float32(1.0 / 256)
    s = weft.Session(graph)
    f = s.make_callable(y, [x])
    a = np.full((256, 256), 1.0, np.float32)
    expect = f(a).copy()
    results, errors = [], []

    def work():
        try:
            for _ in range(3):
                results.append(f(a).copy())
        except Exception as e:   # reported below
            errors.append(e)

    ts = [threading.Thread(target=work) for _ in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors and len(results) == 12
    for r in results:
        np.testing.assert_array_equal(r, expect)

    # While one thread is inside a step, another keeps running Python.
    counter = [0]
    stop = threading.Event()

    def count():
        while not stop.is_set():
            counter[0] += 1

    t = threading.Thread(target=count)
    t.start()
    before = counter[0]
    for _ in range(5):
        f(a)
    during = counter[0] - before
    stop.set()
    t.join()
    s.close()
    assert during > 1000


def test_session_with_its_own_config(graph):
    x = weft.placeholder(weft.float32, (None,), name="x")
    y = weft.identity(x + 1.0, name="y")
    cfg = {"threads": {"inter_op": 1, "intra_op": 1},
           "passes": {"cse": False}}
    with weft.Session(graph, config=cfg) as s:
        np.testing.assert_array_equal(s.run(y, {x: [1.0, 2.0]}), [2.0, 3.0])
        z = weft.identity(y * 2.0, name="z")     # added after the session
        np.testing.assert_array_equal(s.run(z, {x: [1.0]}), [4.0])
    with pytest.raises(weft.InvalidArgumentError, match="no_such"):
        weft.Session(graph, config={"threads": {"no_such": 1}})


def test_scalar_and_strided_feeds(graph):
    x = weft.placeholder(weft.float32, (), name="s")
    y = x * 2.0
    v = weft.placeholder(weft.int64, (3,), name="v")
    with weft.Session(graph) as s:
        r = s.run(y, {x: 1.5})
        assert r.shape == () and r == 3.0
        assert s.run(y, {x: np.float64(2.0)}) == 4.0
        np.testing.assert_array_equal(
            s.run(weft.identity(v), {v: np.arange(6)[::2]}), [0, 2, 4])


def test_kernels_and_devices_by_config(graph):
    info = weft.runtime_info()
    assert any(d["type"] == "cpu" and d["available"] for d in info["devices"])
    assert any(p["name"] == "ops-math" and p["state"] == "loaded"
               for p in info["plugins"])
    a = weft.placeholder(weft.float32, (64, 64), name="a")
    p = weft.matmul(a, a, name="product")
    feed = {a: np.eye(64, dtype=np.float32)}

    def kernel(config):
        md = weft.RunMetadata()
        with weft.Session(graph, config=config) as s:
            r = s.run(p, feed, options=weft.RunOptions(weft.FULL_TRACE),
                      run_metadata=md)
        np.testing.assert_array_equal(r, np.eye(64))
        return {n["node"]: n["kernel"] for n in md.nodes()}["product"]

    assert kernel({"kernels": {"prefer": "reference"}}) == "reference"
    assert kernel({"kernels": {"deny": "reference"}}) != "reference"


def test_config_session_copies_list_inputs(graph):
    xs = [weft.placeholder(weft.float32, (2,), name="x%d" % i)
          for i in range(70)]
    total = weft.add_n(xs)
    feed = {x: np.full(2, i, np.float32) for i, x in enumerate(xs)}
    with weft.Session(graph, config={"passes": {"cse": False}}) as s:
        np.testing.assert_array_equal(s.run(total, feed),
                                      [sum(range(70))] * 2)


def test_string_tensors_cross_both_ways(graph):
    x = weft.placeholder(weft.string, (None,), name="s")
    y = weft.identity(x, name="t")
    assert x.dtype == weft.string and weft.as_dtype(np.str_) == weft.string
    with weft.Session(graph) as s:
        got = s.run(y, {x: ["monday", "\u00c9cole", b"\xff\x00z", ""]})
        assert got.dtype == object and got.shape == (4,)
        # UTF-8 comes back as str, other bytes as bytes
        assert list(got) == ["monday", "\u00c9cole", b"\xff\x00z", ""]
        got = s.run(y, {x: np.array(["ab", "c"])})
        assert list(got) == ["ab", "c"]
        with pytest.raises(weft.InvalidArgumentError, match="element 1 is"):
            s.run(y, {x: ["a", 2]})


def test_string_arrays_keep_their_shape(graph):
    x = weft.placeholder(weft.string, (2, None), name="s")
    y = weft.identity(x)
    with weft.Session(graph) as s:
        got = s.run(y, {x: np.array([[b"a", b"b", b"c"], [b"d", b"e", b"f"]])})
    assert got.shape == (2, 3) and got[1, 2] == "f"
