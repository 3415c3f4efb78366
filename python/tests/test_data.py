# python/tests/test_data.py — the input pipeline from Python: datasets from
# a reader plugin, stages, a Python map traced into a graph, iterators
# (elements, end of data, saved positions) and get_next tensors in
# sessions.
import numpy as np
import pytest

import weft


@pytest.fixture
def csv_file(tmp_path):
    p = tmp_path / "d.csv"
    rows = ["a,b,label"] + ["%d,%d,%d" % (i, 2 * i, i % 3) for i in range(10)]
    p.write_text("\n".join(rows) + "\n")
    return str(p)


def _ds(path):
    return weft.Dataset.from_files(
        path, options={"header": True,
                       "columns": "a:float32,b:float32,label:int32"})


def test_fields_count_iteration(csv_file):
    ds = _ds(csv_file)
    assert [(n, d) for n, d, _ in ds.fields] == [
        ("a", weft.float32), ("b", weft.float32), ("label", weft.int32)]
    assert ds.count() == 10
    rows = list(ds)
    assert len(rows) == 10 and rows[3]["b"] == 6.0


def test_stages(csv_file):
    ds = _ds(csv_file).shuffle(100, seed=7).batch(4).prefetch(2)
    batches = list(ds)
    assert [len(b["a"]) for b in batches] == [4, 4, 2]
    seen = np.sort(np.concatenate([b["a"] for b in batches]))
    np.testing.assert_array_equal(seen, np.arange(10))
    ds2 = _ds(csv_file).batch(4, drop_remainder=True).repeat(2)
    assert len(list(ds2)) == 4
    ds3 = _ds(csv_file).map_scale("a", 0.5).map_cast("label", weft.int64) \
        .map_one_hot("label", 3).shard(2, 1).cache()
    r = list(ds3)
    assert len(r) == 5 and r[0]["a"] == 0.5 and r[0]["label"].shape == (3,)


def test_python_map(csv_file):
    ds = _ds(csv_file).batch(5).map(
        lambda e: {"sum": e["a"] + e["b"], "a": e["a"] * 10.0})
    assert [n for n, _, _ in ds.fields] == ["a", "b", "label", "sum"]
    b = next(iter(ds))
    np.testing.assert_array_equal(b["sum"], 3 * np.arange(5))
    np.testing.assert_array_equal(b["a"], 10 * np.arange(5))


def test_iterator_end_and_position(csv_file):
    it = _ds(csv_file).shuffle(10, seed=1).make_iterator()
    first = [it.next()["a"] for _ in range(4)]
    pos = it.save()
    rest = [e["a"] for e in it]
    with pytest.raises(weft.OutOfRangeError):
        it.next()
    it2 = _ds(csv_file).shuffle(10, seed=1).make_iterator()
    it2.restore(pos)
    np.testing.assert_array_equal([e["a"] for e in it2], rest)
    it.reset()
    assert len(list(it)) == 10
    assert sorted(float(x) for x in first + rest) == list(range(10))


def test_get_next_in_session(csv_file):
    g = weft.Graph()
    with g.as_default():
        it = _ds(csv_file).batch(5).make_iterator()
        el = it.get_next()
        total = weft.reduce_sum(el["a"] + el["b"])
    with weft.Session(g) as s:
        assert s.run(total) == 3 * sum(range(5))
        assert s.run(total) == 3 * sum(range(5, 10))
        with pytest.raises(weft.OutOfRangeError):
            s.run(total)
    with pytest.raises(weft.FailedPreconditionError, match="attached"):
        it2 = _ds(csv_file).make_iterator()
        with g.as_default():
            it2.get_next()
        s2 = weft.Session(g)
        s2.run([])      # attaches it2
        it2.close()
