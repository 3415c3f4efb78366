"""Variables from Python values (weft.Variable) and the initializer ops.
Variables made by layers and get_variable belong to a Model (layers.py);
global_variables_initializer covers both."""

from . import _weft
from .framework import (apply_op, convert_to_tensor, get_default_graph,
                        _graph_of, Tensor)
from ._dtypes import as_dtype


class Variable:
    """A session-owned variable with an initial value: .handle (resource),
    .initializer (the assignment to run once), .value() (its value read
    when the variable is created). It converts to that tensor wherever a
    tensor is expected."""

    def __init__(self, initial_value, name=None, trainable=True, dtype=None,
                 graph=None):
        g = graph or _graph_of([initial_value]) or get_default_graph()
        if callable(initial_value):
            initial_value = initial_value()
        base = name or "Variable"
        with g.as_default():
            init = convert_to_tensor(initial_value, dtype=dtype)
            shape = init.shape
            if shape is None or any(d is None for d in shape):
                raise _weft.InvalidArgumentError(
                    "variable '%s': the initial value's shape %s is not "
                    "fully known" % (base, shape))
            full = g.unique_name(base)
            self.handle = apply_op("VarHandle", [],
                                   {"dtype": init.dtype, "shape": shape,
                                    "shared_name": full}, name=base)
            with g.name_scope(self.handle.op.name.rsplit("/", 1)[-1]):
                self.initializer = apply_op("AssignVariable",
                                            [self.handle, init], {},
                                            name="Assign")
                self._read = apply_op("ReadVariable", [self.handle],
                                      {"dtype": init.dtype, "shape": shape},
                                      name="Read")
        self.graph = g
        self.trainable = trainable
        self._shape = shape
        self._dtype = init.dtype
        g.add_to_collection("variables", self)
        if trainable:
            g.add_to_collection("trainable_variables", self)

    @property
    def name(self):
        return self.handle.op.name

    @property
    def dtype(self):
        return self._dtype

    @property
    def shape(self):
        return self._shape

    @property
    def op(self):
        return self.handle.op

    def value(self):
        return self._read

    def read_value(self):
        """A new read of the variable (after whatever it depends on)."""
        with self.graph.as_default():
            return apply_op("ReadVariable", [self.handle],
                            {"dtype": self._dtype, "shape": self._shape})

    def _as_graph_element(self):
        return self._read

    def assign(self, value, name=None):
        with self.graph.as_default():
            return apply_op("AssignVariable", [self.handle, convert_to_tensor(
                value, dtype=self._dtype)], {}, name=name)

    def assign_add(self, value, name=None):
        with self.graph.as_default():
            return apply_op("AssignAddVariable", [self.handle,
                            convert_to_tensor(value, dtype=self._dtype)], {},
                            name=name)

    def assign_sub(self, value, name=None):
        with self.graph.as_default():
            return apply_op("AssignSubVariable", [self.handle,
                            convert_to_tensor(value, dtype=self._dtype)], {},
                            name=name)

    def __repr__(self):
        return "<weft.Variable '%s' shape=%s dtype=%s>" % (
            self.name, self._shape, self._dtype.name)

    # arithmetic through the value
    def __add__(self, o): return self._read + o
    def __radd__(self, o): return o + self._read
    def __sub__(self, o): return self._read - o
    def __rsub__(self, o): return Tensor.__rsub__(self._read, o)
    def __mul__(self, o): return self._read * o
    def __rmul__(self, o): return Tensor.__rmul__(self._read, o)
    def __truediv__(self, o): return self._read / o
    def __matmul__(self, o): return self._read @ o
    def __rmatmul__(self, o): return Tensor.__rmatmul__(self._read, o)
    def __neg__(self): return -self._read
    def __getitem__(self, k): return self._read[k]


def global_variables(graph=None):
    return (graph or get_default_graph()).get_collection("variables")


def trainable_variables(graph=None):
    return (graph or get_default_graph()).get_collection(
        "trainable_variables")


def variables_initializer(var_list, name="init"):
    g = get_default_graph() if not var_list else var_list[0].graph
    with g.as_default(), g.control_dependencies(
            [v.initializer for v in var_list]):
        return apply_op("NoOp", [], {}, name=name)


def global_variables_initializer(graph=None, name="init"):
    """One operation that initialises every variable of the graph: those
    of weft.Variable and those of its models' layers."""
    g = graph or get_default_graph()
    deps = [v.initializer for v in g.get_collection("variables")]
    for m in g.get_collection("_models"):
        if m._num_variables():
            deps.append(m.init_op())
    with g.as_default(), g.control_dependencies(deps):
        return apply_op("NoOp", [], {}, name=g.unique_name(name).rsplit(
            "/", 1)[-1])
