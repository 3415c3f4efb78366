# python/tests/test_errors.py — errors as weft.Error subclasses with the
# core's message, and no crash on bad arguments, freed or closed objects or
# tensors of another graph.
import numpy as np
import pytest

import weft


def test_hierarchy_and_codes():
    for name, code in [("InvalidArgumentError", 3), ("NotFoundError", 5),
                       ("FailedPreconditionError", 9),
                       ("OutOfRangeError", 11), ("DataLossError", 15)]:
        cls = getattr(weft, name)
        assert issubclass(cls, weft.Error)
        camel = "".join(w.capitalize() for w in
                        weft._weft.code_name(code).split("_"))
        assert camel + "Error" == name
    with pytest.raises(weft.Error) as e:
        weft.constant(1.0) + weft.constant(np.int32(1))
    assert e.value.code == 3 and isinstance(e.value, weft.InvalidArgumentError)
    assert "Add" in e.value.message


def test_messages_name_node_and_op(graph):
    x = weft.placeholder(weft.float32, (2,), name="input_x")
    y = weft.identity(x, name="out")
    with weft.Session(graph) as s:
        with pytest.raises(weft.InvalidArgumentError, match="input_x"):
            s.run(y)                                # unfed placeholder
        with pytest.raises(weft.InvalidArgumentError, match="input_x"):
            s.run(y, {x: np.ones(3, np.float32)})   # wrong shape
        with pytest.raises(weft.InvalidArgumentError):
            s.run(y, {x: "not a number"})


def test_unknown_op_and_names(graph):
    with pytest.raises(weft.NotFoundError, match="NoSuchOp"):
        weft.apply_op("NoSuchOp", [], {})
    with pytest.raises(KeyError):
        graph.get_operation_by_name("nothing")
    with pytest.raises(weft.InvalidArgumentError):
        graph.get_tensor_by_name("nothing:0")
    weft.constant(1.0, name="c")
    with pytest.raises(weft.InvalidArgumentError):
        graph.get_tensor_by_name("c:7")


def test_wrong_types_do_not_crash(graph):
    x = weft.placeholder(weft.float32, (2,), name="x")
    with pytest.raises(ValueError, match="no_such_dtype"):
        weft.placeholder("no_such_dtype")
    with pytest.raises((TypeError, ValueError)):
        weft.matmul(x, x, transpose_a="yes please")
    with weft.Session(graph) as s:
        with pytest.raises(TypeError):
            s.run(x, feed_dict=[1, 2])
        with pytest.raises(TypeError):
            s.run(42)
        with pytest.raises(TypeError):
            s.run(x, {x: np.ones(2, np.float32)}, run_metadata="md")
    with pytest.raises(TypeError):
        weft.Session(graph="not a graph")
    c = weft._weft.Graph(weft.default_runtime())
    with pytest.raises(weft.InvalidArgumentError):
        c.node(5)
    with pytest.raises(weft.InvalidArgumentError):
        c.add_node("Identity", None, [(99, 0)], [], [], None)
    with pytest.raises(TypeError):
        weft._weft.Buffer()
    with pytest.raises(weft.InvalidArgumentError, match="object"):
        c.add_node("Const", None, [], [("value", 7, object())], [], None)


def test_other_graph_is_refused():
    g1, g2 = weft.Graph(), weft.Graph()
    with g1.as_default():
        a = weft.placeholder(weft.float32, (), name="a")
    with g2.as_default():
        b = weft.constant(1.0)
        with pytest.raises(weft.InvalidArgumentError, match="another graph"):
            weft.add(a, b)
    with weft.Session(g2) as s:
        with pytest.raises(weft.InvalidArgumentError, match="another graph"):
            s.run(a, {a: 1.0})
        with pytest.raises(weft.InvalidArgumentError, match="another graph"):
            s.run(b, {a: 1.0})
        with pytest.raises(weft.InvalidArgumentError, match="another graph"):
            s.make_callable(a)


def test_closed_iterator_and_session(tmp_path):
    p = tmp_path / "d.csv"
    p.write_text("a,b\n1,2\n3,4\n")
    ds = weft.Dataset.from_files(str(p), options={"header": True})
    it = ds.make_iterator()
    it.close()
    with pytest.raises(weft.FailedPreconditionError, match="closed"):
        it.next()
    it.close()
    s = weft.Session(weft.Graph())
    s.close()
    with pytest.raises(weft.FailedPreconditionError):
        s.run([])


def test_missing_files():
    with pytest.raises(weft.NotFoundError):
        weft.Dataset.from_files("/nonexistent/*.csv")
    with pytest.raises(weft.NotFoundError):
        weft.load_graph("/nonexistent/g.wfg")
    with pytest.raises(weft.Error):
        weft.saved_model.load("/nonexistent/model")
    assert weft.train.latest_checkpoint("/nonexistent/dir") is None
