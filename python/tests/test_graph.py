# python/tests/test_graph.py — building graphs from Python: default graphs,
# placeholders, constants, scopes, control dependencies, the generated op
# functions (signatures, docs, attributes), tensor properties, operators and
# indexing, graph files.
import inspect

import numpy as np
import pytest

import weft


def test_default_graph_and_as_default():
    g = weft.Graph()
    assert weft.get_default_graph() is not g
    with g.as_default() as gg:
        assert gg is g and weft.get_default_graph() is g
        c = weft.constant(1.0)
    assert c.graph is g
    assert weft.get_default_graph() is not g


def test_placeholder_properties(graph):
    x = weft.placeholder(weft.float32, (None, 3), name="x")
    assert x.name == "x:0" and x.op.name == "x" and x.op.type == "Placeholder"
    assert x.dtype == weft.float32 and x.dtype == np.float32
    assert x.shape == (None, 3)
    assert weft.placeholder("int64").shape is None
    assert x.op.get_attr("dtype") == weft.float32.code
    assert graph.get_tensor_by_name("x:0") is x
    assert graph.get_operation_by_name("x") is x.op


def test_constant_dtypes_and_shape(graph):
    assert weft.constant(1.5).dtype == weft.float32
    assert weft.constant(3).dtype == weft.int32
    assert weft.constant(np.arange(4, dtype=np.int64)).dtype == weft.int64
    c = weft.constant(2.0, shape=(2, 3))
    assert c.shape == (2, 3)
    with weft.Session(graph) as s:
        np.testing.assert_array_equal(s.run(c), np.full((2, 3), 2.0))


def test_name_scopes_and_unique_names(graph):
    with weft.name_scope("layer"):
        a = weft.constant(1.0, name="c")
        with weft.name_scope("inner"):
            b = weft.constant(2.0, name="c")
    c = weft.constant(3.0, name="c")
    d = weft.constant(4.0, name="c")
    assert a.op.name == "layer/c"
    assert b.op.name == "layer/inner/c"
    assert c.op.name == "c"
    assert d.op.name != c.op.name


def test_device_scope(graph):
    with weft.device("cpu:0"):
        a = weft.constant(1.0)
    b = weft.constant(2.0)
    assert a.op.device == "cpu:0" and b.op.device == ""


def test_control_dependencies(graph):
    a = weft.constant(1.0)
    with weft.control_dependencies([a]):
        b = weft.constant(2.0)
        with weft.control_dependencies(None):
            c = weft.constant(3.0)
    assert b.op.control_inputs == [a.op]
    assert c.op.control_inputs == []


def test_control_dependencies_order_variables(graph):
    v = weft.Variable(np.float32(1.0), name="v")
    init = weft.global_variables_initializer()
    add = v.assign_add(np.float32(5.0))
    with weft.control_dependencies([add]):
        r = v.read_value()
    with weft.Session(graph) as s:
        s.run(init)
        assert s.run(r) == 6.0
        assert s.run(r) == 11.0


def test_op_functions_from_registry():
    f = weft.ops.mat_mul
    assert f is weft.matmul and f is weft.raw_ops.MatMul
    sig = inspect.signature(f)
    assert list(sig.parameters)[:2] == ["a", "b"]
    assert sig.parameters["transpose_a"].default is False
    assert sig.parameters["name"].default is None
    assert "(M, K)" in f.__doc__ and "ops-math" in f.__doc__
    assert weft.ops.conv2d.op_name == "Conv2D"
    # every public op of the runtime has its function
    names = {o["name"] for o in weft.default_runtime().ops()
             if not o["name"].startswith("_")}
    for n in names:
        assert hasattr(weft.raw_ops, n.replace(".", "_")), n


def test_op_function_attrs_and_errors(graph):
    a = weft.constant(np.ones((2, 3), np.float32))
    b = weft.constant(np.ones((2, 3), np.float32))
    p = weft.matmul(a, b, transpose_b=True)
    assert p.shape == (2, 2)
    assert p.op.get_attr("transpose_b") is True
    with pytest.raises(TypeError, match="MatMul"):
        weft.matmul(a)
    with pytest.raises(TypeError):
        weft.matmul(a, b, no_such_attr=1)
    with pytest.raises(weft.InvalidArgumentError, match="MatMul"):
        weft.matmul(a, b)      # (2,3) x (2,3)


def test_tensor_operators(graph):
    x = weft.placeholder(weft.float32, (2, 2), name="x")
    y = ((x + 1) * 2 - x / 2) @ x
    z = -x
    w = 1 - x
    v = x[1, :]
    u = x[:, None, 0]
    with weft.Session(graph) as s:
        a = np.array([[1, 2], [3, 4]], np.float32)
        ry, rz, rw, rv, ru = s.run([y, z, w, v, u], {x: a})
    np.testing.assert_allclose(ry, ((a + 1) * 2 - a / 2) @ a)
    np.testing.assert_array_equal(rz, -a)
    np.testing.assert_array_equal(rw, 1 - a)
    np.testing.assert_array_equal(rv, a[1, :])
    np.testing.assert_array_equal(ru, a[:, None, 0])
    with pytest.raises(TypeError):
        bool(x)


def test_list_inputs_and_multiple_outputs(graph):
    a = weft.constant([1.0, 2.0])
    b = weft.constant([3.0, 4.0])
    s = weft.add_n([a, b, a])
    assert s.op.get_attr("N") == 3
    parts = weft.split(weft.constant(np.arange(6, dtype=np.float32)),
                       num_split=3)
    assert isinstance(parts, list) and len(parts) == 3
    with pytest.raises(TypeError, match="num_split"):
        weft.split(a)                     # a required attribute
    with weft.Session(graph) as sess:
        np.testing.assert_array_equal(sess.run(s), [5.0, 8.0])
        np.testing.assert_array_equal(sess.run(parts[2]), [4.0, 5.0])


def test_graph_file_round_trip(tmp_path, graph):
    x = weft.placeholder(weft.float32, (None,), name="x")
    y = weft.identity(x * 3.0, name="y")
    path = str(tmp_path / "g.wfg")
    graph.save(path)
    g2 = weft.load_graph(path)
    assert len(g2) == len(graph)
    with weft.Session(g2) as s:
        np.testing.assert_array_equal(
            s.run("y:0", {"x:0": np.array([1, 2], np.float32)}), [3, 6])
    g3 = weft.load_graph(data=graph.to_bytes())
    assert g3.get_operation_by_name("y").type == "Identity"
    graph.write_dot(str(tmp_path / "g.dot"))
    assert "Identity" in (tmp_path / "g.dot").read_text()


def test_gradients(graph):
    x = weft.placeholder(weft.float64, (3,), name="x")
    y = weft.reduce_sum(x * x * x)
    (dx,) = weft.gradients(y, [x])
    assert weft.gradients(y, [weft.constant(1.0, dtype=weft.float64)]) == [None]
    a = np.array([1.0, -2.0, 0.5])
    with weft.Session(graph) as s:
        g = s.run(dx, {x: a})
        # against central finite differences
        eps = 1e-6
        for i in range(3):
            e = np.zeros(3)
            e[i] = eps
            fd = (s.run(y, {x: a + e}) - s.run(y, {x: a - e})) / (2 * eps)
            assert abs(g[i] - fd) < 1e-5
    np.testing.assert_allclose(g, 3 * a * a)
