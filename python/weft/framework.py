"""Graphs in the manner of TensorFlow 1's graph mode: Graph, Operation,
Tensor, the default-graph stack, name and device scopes, control
dependencies, and the function of every registered op, made at import time
from the runtime's registry (a plugin's op needs no wrapper). Running
graphs is in session.py."""

import inspect
import re
import threading

import numpy as _np

from . import _weft
from ._dtypes import DType, as_dtype, float32, int32, int64, bool_

# ---- runtimes and configs --------------------------------------------------


def config_items(config):
    """(section, key, value) strings from a config: None, a path to an INI
    file (returned separately), or a dict {section: {key: value}} or
    {"section.key": value}. Lists join with ", ", bools are true/false."""
    if config is None:
        return None, ()
    if isinstance(config, str):
        return config, ()
    if not isinstance(config, dict):
        raise TypeError("weft: a config is a dict or the path of an INI file")
    items = []

    def text(v):
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, (list, tuple)):
            return ", ".join(text(x) for x in v)
        return str(v)

    for k, v in config.items():
        if isinstance(v, dict):
            for kk, vv in v.items():
                items.append((str(k), str(kk), text(vv)))
        elif isinstance(k, str) and "." in k:
            sec, key = k.split(".", 1)
            items.append((sec, key, text(v)))
        else:
            raise ValueError("weft: config entry %r is neither a section "
                             "dict nor 'section.key'" % (k,))
    return None, tuple(items)


class _RuntimeState:
    def __init__(self):
        self.lock = threading.Lock()
        self.plugin_paths = []
        self.default = None
        self.cache = {}

    def key(self, path, items):
        return (path, tuple(items))

    def get(self, config=None):
        path, items = config_items(config)
        if self.plugin_paths:
            items = (("plugins", "paths", ", ".join(self.plugin_paths)),) + \
                tuple(items)
        k = self.key(path, items)
        with self.lock:
            rt = self.cache.get(k)
            if rt is None:
                rt = _weft.Runtime(items, path)
                self.cache[k] = rt
            return rt, k


_runtimes = _RuntimeState()


def default_runtime():
    return _runtimes.get(None)[0]


# ---- graphs -----------------------------------------------------------------


class Graph:
    """A dataflow graph. `with g.as_default():` makes it the graph that op
    functions add to. config (a dict or INI path) chooses the runtime whose
    ops it uses; a Session may still run it under another config."""

    def __init__(self, config=None, seed=0):
        self._runtime, self._config_key = _runtimes.get(config)
        self._config = config
        self._g = _weft.Graph(self._runtime)
        self._init(seed)

    def _init(self, seed):
        self._ops = []
        self._control = []
        self._collections = {}
        self._model = None
        self._seed = seed
        self._lock = threading.RLock()

    @classmethod
    def _wrap(cls, cgraph, runtime, key):
        g = cls.__new__(cls)
        g._runtime = runtime
        g._config_key = key
        g._config = None
        g._g = cgraph
        g._init(0)
        return g

    # -- defaults
    def as_default(self):
        return _DefaultGraph(self)

    # -- nodes
    def _op(self, i):
        with self._lock:
            while len(self._ops) < self._g.num_nodes():
                self._ops.append(None)
            op = self._ops[i]
            if op is None:
                op = Operation(self, i)
                self._ops[i] = op
            return op

    def get_operations(self):
        return [self._op(i) for i in range(self._g.num_nodes())]

    def get_operation_by_name(self, name):
        i = self._g.find_node(name)
        if i < 0:
            raise KeyError("weft: the graph has no node '%s'" % name)
        return self._op(i)

    def get_tensor_by_name(self, name):
        node, idx = self._g.parse_output(name)
        return self._op(node).outputs[idx]

    def as_graph_element(self, x):
        """The Tensor or Operation that x names or is."""
        if isinstance(x, (Tensor, Operation)):
            if x.graph is not self:
                raise _weft.InvalidArgumentError(
                    "'%s' belongs to another graph" % x.name)
            return x
        if hasattr(x, "_as_graph_element"):
            return self.as_graph_element(x._as_graph_element())
        if isinstance(x, str):
            if ":" in x:
                return self.get_tensor_by_name(x)
            return self.get_operation_by_name(x)
        raise TypeError("weft: %r is not a tensor, operation or name" % (x,))

    def __len__(self):
        return self._g.num_nodes()

    @property
    def seed(self):
        return self._seed

    @seed.setter
    def seed(self, s):
        self._seed = int(s)

    # -- scopes
    def name_scope(self, name):
        return _Scope(self._g.push_scope, self._g.pop_scope, name)

    def device(self, device):
        return _Scope(self._g.push_device, self._g.pop_device, device or "")

    def control_dependencies(self, control_inputs):
        """Nodes made inside depend on control_inputs (operations or
        tensors); None clears the outer ones."""
        if control_inputs is None:
            return _ControlScope(self, None)
        ops = []
        for c in control_inputs:
            e = self.as_graph_element(c)
            ops.append(e.op if isinstance(e, Tensor) else e)
        return _ControlScope(self, ops)

    def unique_name(self, name):
        return self._g.unique_name(name)

    # -- collections
    def add_to_collection(self, name, value):
        self._collections.setdefault(name, []).append(value)

    def get_collection(self, name):
        return list(self._collections.get(name, []))

    # -- files
    def save(self, path, outputs=None, targets=None):
        """Writes a graph file (all nodes, or what outputs/targets need)."""
        if outputs is None and targets is None:
            self._g.save(path)
        else:
            self._g.save(path, [_out(self, t) for t in outputs or ()],
                         [_target(self, t) for t in targets or ()])

    def to_bytes(self):
        return self._g.to_bytes()

    def write_dot(self, path):
        self._g.write_dot(path)


def load_graph(path=None, data=None, config=None):
    """A Graph read from a graph file (path) or its bytes (data)."""
    rt, key = _runtimes.get(config)
    if data is not None:
        cg = _weft.load_graph(rt, None, bytes(data))
    else:
        cg = _weft.load_graph(rt, path)
    return Graph._wrap(cg, rt, key)


class _Scope:
    def __init__(self, push, pop, arg):
        self._push, self._pop, self._arg = push, pop, arg

    def __enter__(self):
        self._push(self._arg)
        return self._arg

    def __exit__(self, *exc):
        self._pop()
        return False


class _ControlScope:
    def __init__(self, g, ops):
        self._g, self._ops = g, ops

    def __enter__(self):
        self._saved = self._g._control
        if self._ops is None:
            self._g._control = []
        else:
            self._g._control = self._saved + [self._ops]
        return None

    def __exit__(self, *exc):
        self._g._control = self._saved
        return False


class _Defaults(threading.local):
    def __init__(self):
        self.stack = []


_defaults = _Defaults()
_global_graph = [None]


class _DefaultGraph:
    def __init__(self, g):
        self._g = g

    def __enter__(self):
        _defaults.stack.append(self._g)
        return self._g

    def __exit__(self, *exc):
        _defaults.stack.pop()
        return False


def get_default_graph():
    if _defaults.stack:
        return _defaults.stack[-1]
    if _global_graph[0] is None:
        _global_graph[0] = Graph()
    return _global_graph[0]


def reset_default_graph():
    """A new global default graph (outside any `with g.as_default()`)."""
    if _defaults.stack:
        raise RuntimeError("weft: reset_default_graph inside as_default()")
    _global_graph[0] = Graph()


def name_scope(name):
    return get_default_graph().name_scope(name)


def device(dev):
    return get_default_graph().device(dev)


def control_dependencies(control_inputs):
    return get_default_graph().control_dependencies(control_inputs)


# ---- operations and tensors ------------------------------------------------


class Operation:
    """A node of a graph."""

    __slots__ = ("graph", "_id", "_info", "_outputs", "__weakref__")

    def __init__(self, graph, node_id):
        self.graph = graph
        self._id = node_id
        self._info = graph._g.node(node_id)
        self._outputs = None

    @property
    def name(self):
        return self._info[0]

    @property
    def type(self):
        return self._info[1]

    @property
    def device(self):
        return self._info[2]

    @property
    def outputs(self):
        if self._outputs is None:
            self._outputs = [Tensor(self, i) for i in range(self._info[3])]
        return self._outputs

    @property
    def inputs(self):
        return [self.graph._op(n).outputs[i]
                for n, i in self.graph._g.node_inputs(self._id)]

    @property
    def control_inputs(self):
        return [self.graph._op(n) for n in self.graph._g.node_controls(self._id)]

    def get_attr(self, name):
        attrs = self.graph._g.node_attrs(self._id)
        if name not in attrs:
            raise _weft.NotFoundError("node '%s' has no attribute '%s'" %
                                      (self.name, name))
        return attrs[name]

    @property
    def attrs(self):
        return self.graph._g.node_attrs(self._id)

    def _add_control_input(self, op):
        self.graph._g.add_control_edge(op._id, self._id)

    def run(self, feed_dict=None, session=None):
        if session is None:
            raise ValueError("weft: Operation.run needs a session")
        session.run(self, feed_dict)

    def __repr__(self):
        return "<weft.Operation '%s' type=%s>" % (self.name, self.type)


class Tensor:
    """An output of an operation: .op, .value_index, .dtype, .shape, .name.
    Arithmetic (+ - * / @, unary -) and indexing add ops to its graph."""

    __slots__ = ("op", "value_index", "_dtype", "_shape", "__weakref__")

    def __init__(self, op, index):
        self.op = op
        self.value_index = index
        code, shape = op.graph._g.output(op._id, index)
        self._dtype = as_dtype(code)
        self._shape = shape

    @property
    def graph(self):
        return self.op.graph

    @property
    def dtype(self):
        return self._dtype

    @property
    def shape(self):
        """A tuple (None for an unknown dimension), or None when even the
        rank is unknown."""
        return self._shape

    def get_shape(self):
        return self._shape

    @property
    def name(self):
        return "%s:%d" % (self.op.name, self.value_index)

    @property
    def _ref(self):
        return (self.op._id, self.value_index)

    def __repr__(self):
        return "<weft.Tensor '%s' shape=%s dtype=%s>" % (
            self.name, self._shape, self._dtype.name)

    def __hash__(self):
        return id(self)

    def __eq__(self, other):
        return self is other

    def __bool__(self):
        raise TypeError("weft: a Tensor has no truth value while the graph "
                        "is being built")

    def eval(self, feed_dict=None, session=None):
        if session is None:
            raise ValueError("weft: Tensor.eval needs a session")
        return session.run(self, feed_dict)

    # arithmetic (needs the op functions, bound at import)
    def __add__(self, o): return _binary("Add", self, o)
    def __radd__(self, o): return _binary("Add", o, self)
    def __sub__(self, o): return _binary("Sub", self, o)
    def __rsub__(self, o): return _binary("Sub", o, self)
    def __mul__(self, o): return _binary("Mul", self, o)
    def __rmul__(self, o): return _binary("Mul", o, self)
    def __truediv__(self, o): return _binary("Div", self, o)
    def __rtruediv__(self, o): return _binary("Div", o, self)
    def __matmul__(self, o): return _binary("MatMul", self, o)
    def __rmatmul__(self, o): return _binary("MatMul", o, self)
    def __neg__(self): return apply_op("Neg", [self], {})
    def __pow__(self, o): return _binary("Pow", self, o)
    def __lt__(self, o): return _binary("Less", self, o)
    def __gt__(self, o): return _binary("Greater", self, o)

    def __getitem__(self, key):
        return strided_slice(self, key)


def _binary(op, a, b):
    g = _graph_of([a, b])
    hint = next((x.dtype for x in (a, b) if _is_tensorish(x)), None)
    ta = a if _is_tensorish(a) else convert_to_tensor(a, hint, graph=g)
    tb = b if _is_tensorish(b) else convert_to_tensor(b, hint, graph=g)
    return apply_op(op, [ta, tb], {}, graph=g)


def _is_tensorish(x):
    return isinstance(x, Tensor) or hasattr(x, "_as_graph_element")


def _graph_of(values):
    for v in values:
        if isinstance(v, Tensor):
            return v.graph
        if hasattr(v, "_as_graph_element"):
            return v._as_graph_element().graph
        if isinstance(v, (list, tuple)):
            g = _graph_of(v)
            if g is not None:
                return g
    return None


def _out(g, t):
    t = g.as_graph_element(t)
    if not isinstance(t, Tensor):
        raise TypeError("weft: %r is not a tensor" % (t,))
    return t._ref


def _target(g, t):
    e = g.as_graph_element(t)
    return (e.op if isinstance(e, Tensor) else e)._id


# ---- constants, placeholders and conversion --------------------------------


def _default_dtype(value):
    a = _np.asarray(value)
    if a.dtype == _np.float64 and not isinstance(value, _np.ndarray):
        return float32
    if a.dtype == _np.int64 and not isinstance(value, _np.ndarray):
        return int32
    return as_dtype(a.dtype)


def constant(value, dtype=None, shape=None, name=None):
    """A Const node holding value (copied into the graph). Python floats
    become float32 and ints int32 unless dtype says otherwise."""
    dt = as_dtype(dtype) if dtype is not None else _default_dtype(value)
    a = _np.array(value, dtype=dt.numpy, copy=True, order="C")
    if shape is not None:
        shape = tuple(shape)
        if a.size == 1 and _np.prod(shape, dtype=_np.int64) != 1:
            a = _np.full(shape, a.reshape(()), dtype=dt.numpy)
        else:
            a = a.reshape(shape)
    return apply_op("Const", [], {"value": a, "dtype": dt}, name=name)


def placeholder(dtype, shape=None, name=None):
    """A value fed at run time. shape: a tuple with None for any size, or
    None for any shape."""
    return apply_op("Placeholder", [], {"dtype": as_dtype(dtype),
                                        "shape": shape}, name=name)


def convert_to_tensor(value, dtype=None, name=None, graph=None):
    """value itself when it is a Tensor (of the wanted dtype), else a
    constant."""
    if hasattr(value, "_as_graph_element"):
        value = value._as_graph_element()
    if isinstance(value, Tensor):
        if dtype is not None and as_dtype(dtype) != value.dtype:
            raise _weft.InvalidArgumentError(
                "tensor '%s' is %s but %s is needed" %
                (value.name, value.dtype.name, as_dtype(dtype).name))
        return value
    if isinstance(value, Operation):
        raise TypeError("weft: operation '%s' has no value to use as a "
                        "tensor" % value.name)
    if graph is not None and graph is not get_default_graph():
        with graph.as_default():
            return constant(value, dtype=dtype, name=name)
    return constant(value, dtype=dtype, name=name)


# ---- applying ops -----------------------------------------------------------

_registry = {}        # op name -> op dict of the runtime it came from


def _check_scalar(base, v, what):
    ok = True
    if base == 1:
        ok = isinstance(v, (int, _np.integer)) and not isinstance(
            v, (bool, _np.bool_))
    elif base == 2:
        ok = isinstance(v, (int, float, _np.integer, _np.floating)) and \
            not isinstance(v, (bool, _np.bool_))
    elif base == 3:
        ok = isinstance(v, (bool, _np.bool_))
    elif base == 4:
        ok = isinstance(v, str)
    if not ok:
        raise TypeError("weft: %s must be %s, not %r" %
                        (what, _ATTR_TYPES.get(base, "?"), v))


def _attr_value(adef, v, what="attribute"):
    t = adef["type"]
    base = t & 0xff
    if t & 0x100:
        if not isinstance(v, (list, tuple)):
            raise TypeError("weft: %s must be a list of %s" %
                            (what, _ATTR_TYPES.get(base, "?")))
        for x in v:
            _check_scalar(base, x, what + " item")
    else:
        _check_scalar(base, v, what)
    if t & 0x100:
        if base == 5:
            return [as_dtype(x).code for x in v]
        if base == 6:
            return [None if s is None else tuple(s) for s in v]
        return list(v)
    if base == 5:
        return as_dtype(v).code
    if base == 6:
        return None if v is None else tuple(v)
    if base == 7:
        a = _np.asarray(v)
        return a if a.flags.c_contiguous else _np.ascontiguousarray(a)
    return v


def apply_op(op_type, inputs, attrs, name=None, graph=None, opdef=None):
    """Adds a node of op_type with inputs (tensors, values, or lists for
    list arguments) and attrs; returns its Tensor, a list of Tensors (several
    outputs) or the Operation (none)."""
    g = graph or _graph_of(inputs) or get_default_graph()
    if opdef is None:
        opdef = _registry.get(op_type)
        if opdef is None or g._runtime is not opdef["_runtime"]:
            opdef = _op_def(g._runtime, op_type)
    # dtype hints per type attribute: explicit attrs, then tensor inputs
    hints = {}
    for a in opdef["attrs"]:
        if a["type"] == 5 and attrs.get(a["name"]) is not None:
            hints[a["name"]] = as_dtype(attrs[a["name"]])
    defs = opdef["inputs"]
    if len(inputs) != len(defs):
        raise TypeError("weft: %s takes %d input%s, %d given" %
                        (op_type, len(defs), "" if len(defs) == 1 else "s",
                         len(inputs)))
    for d, v in zip(defs, inputs):
        ta = d["type_attr"]
        vals = v if d["number_attr"] and isinstance(v, (list, tuple)) else [v]
        for x in vals:
            if ta and ta not in hints and _is_tensorish(x):
                e = x._as_graph_element() if hasattr(x, "_as_graph_element") \
                    else x
                hints[ta] = e.dtype
    refs = []
    with g.as_default():
        for d, v in zip(defs, inputs):
            want = None
            if d["type_attr"]:
                want = hints.get(d["type_attr"])
                if want is None:
                    adef = next((a for a in opdef["attrs"]
                                 if a["name"] == d["type_attr"]), None)
                    if adef is not None and adef["default"] is not None:
                        want = as_dtype(adef["default"])
            elif d["dtype"]:
                want = as_dtype(d["dtype"])
            try:
                if d["number_attr"]:
                    if not isinstance(v, (list, tuple)):
                        raise TypeError("weft: %s input '%s' is a list" %
                                        (op_type, d["name"]))
                    refs.append([_check_graph(
                        g, convert_to_tensor(x, want))._ref for x in v])
                else:
                    refs.append(_check_graph(
                        g, convert_to_tensor(v, want))._ref)
            except _weft.InvalidArgumentError as e:
                raise type(e)("%s input '%s': %s" % (
                    op_type, d["name"], e.message)) from None
    alist = []
    adefs = {a["name"]: a for a in opdef["attrs"]}
    for k, v in attrs.items():
        if v is None:
            continue
        if k not in adefs:
            raise TypeError("weft: %s has no attribute '%s'" % (op_type, k))
        alist.append((k, adefs[k]["type"], _attr_value(
            adefs[k], v, "%s attribute '%s'" % (op_type, k))))
    controls = []
    for level in g._control:
        controls.extend(o._id for o in level)
    with g._lock:
        if name is not None:
            # Taken names get a suffix, as generated ones do.
            name = g._g.unique_name(name).rsplit("/", 1)[-1]
        nid = g._g.add_node(op_type, name, refs, alist, controls, None)
    op = g._op(nid)
    outs = op.outputs
    if not outs:
        return op
    if len(opdef["outputs"]) == 1 and _single_output(opdef["outputs"][0],
                                                      opdef):
        return outs[0]
    return outs


def _single_output(arg, opdef):
    if arg["number_attr"]:
        return False
    ta = arg["type_attr"]
    a = next((a for a in opdef["attrs"] if a["name"] == ta), None)
    return a is None or not (a["type"] & 0x100)


def _check_graph(g, t):
    if t.graph is not g:
        raise _weft.InvalidArgumentError(
            "tensor '%s' belongs to another graph" % t.name)
    return t


_defs_by_runtime = {}


def _op_def(runtime, name):
    key = id(runtime)
    entry = _defs_by_runtime.get(key)
    if entry is None or entry[0] is not runtime:
        defs = {}
        for o in runtime.ops():
            o["_runtime"] = runtime
            defs[o["name"]] = o
        entry = (runtime, defs)
        _defs_by_runtime[key] = entry
    if name in entry[1]:
        return entry[1][name]
    raise _weft.NotFoundError("no op '%s' is registered (is its plugin "
                              "loaded?)" % name)


# ---- indexing ---------------------------------------------------------------


def strided_slice(x, key):
    """x[key] through StridedSlice: ints, slices, Ellipsis and None."""
    if not isinstance(key, tuple):
        key = (key,)
    begin, end, strides = [], [], []
    bm = em = elm = nam = sam = 0
    for i, k in enumerate(key):
        bit = 1 << i
        if k is Ellipsis:
            elm |= bit
            begin.append(0), end.append(0), strides.append(1)
        elif k is None:
            nam |= bit
            begin.append(0), end.append(0), strides.append(1)
        elif isinstance(k, slice):
            if k.start is None:
                bm |= bit
            if k.stop is None:
                em |= bit
            begin.append(k.start or 0)
            end.append(k.stop or 0)
            strides.append(1 if k.step is None else k.step)
        elif isinstance(k, (int, _np.integer)):
            sam |= bit
            begin.append(int(k)), end.append(int(k) + 1), strides.append(1)
        else:
            raise TypeError("weft: index %r is not an int, slice, Ellipsis "
                            "or None" % (k,))
    g = x.graph
    with g.as_default():
        b = constant(begin, dtype=int32)
        e = constant(end, dtype=int32)
        s = constant(strides, dtype=int32)
    return apply_op("StridedSlice", [x, b, e, s],
                    {"begin_mask": bm, "end_mask": em, "ellipsis_mask": elm,
                     "new_axis_mask": nam, "shrink_axis_mask": sam}, graph=g)


# ---- one function per registered op ----------------------------------------

_ATTR_TYPES = {1: "int", 2: "float", 3: "bool", 4: "str", 5: "dtype",
               6: "shape", 7: "tensor"}


def _attr_type_name(t):
    base = _ATTR_TYPES.get(t & 0xff, "?")
    return "list(%s)" % base if t & 0x100 else base


def snake_name(op_name):
    """"MatMul" -> "mat_mul", "Conv2D" -> "conv2d", "acme.Gelu" ->
    "acme_gelu"."""
    s = op_name.replace(".", "_")
    s = re.sub(r"(?<=[a-z])(?=[A-Z])", "_", s)
    s = re.sub(r"(?<=[A-Z])(?=[A-Z][a-z])", "_", s)
    s = s.lower()
    return re.sub(r"_+", "_", s).lstrip("_")


def _make_doc(o):
    lines = [o["doc"] or "(no documentation)", ""]
    if o["inputs"]:
        lines.append("Args:")
        for a in o["inputs"]:
            kind = "list of tensors" if a["number_attr"] else "tensor"
            t = a["type_attr"] or (as_dtype(a["dtype"]).name if a["dtype"]
                                   else "?")
            lines.append("  %s: %s of type %s. %s" % (a["name"], kind, t,
                                                      a["doc"] or ""))
    inferred = _inferred_attrs(o)
    shown = [a for a in o["attrs"] if a["name"] not in inferred or
             a["type"] == 5]
    if shown:
        lines.append("Attributes (keyword):")
        for a in shown:
            d = ""
            if a["has_default"]:
                d = " = %r" % (a["default"],)
            elif a["name"] in inferred:
                d = " (inferred from the inputs)"
            lines.append("  %s: %s%s. %s" % (a["name"],
                                             _attr_type_name(a["type"]), d,
                                             a["doc"] or ""))
    lines.append("  name: the node's name (optional).")
    if o["outputs"]:
        lines.append("Returns:")
        for a in o["outputs"]:
            lines.append("  %s: %s" % (a["name"], a["doc"] or ""))
    lines.append("")
    lines.append("Op %s from plugin %s." % (o["name"], o["plugin"]))
    return "\n".join(lines)


def _inferred_attrs(o):
    s = set()
    for a in o["inputs"]:
        if a["type_attr"]:
            s.add(a["type_attr"])
        if a["number_attr"]:
            s.add(a["number_attr"])
    return s


def make_op_function(o):
    """A Python function adding a node of op o (an op dict of
    Runtime.ops()), with a signature and docstring from its definition."""
    o = dict(o)
    inferred = _inferred_attrs(o)
    params = []
    in_names = []
    for a in o["inputs"]:
        pname = a["name"] if a["name"].isidentifier() else "x%d" % len(params)
        if pname == "name":
            pname = "name_"
        in_names.append(pname)
        params.append(inspect.Parameter(pname,
                                        inspect.Parameter.POSITIONAL_OR_KEYWORD))
    attr_names = []
    for a in o["attrs"]:
        if not a["name"].isidentifier() or a["name"] in in_names or \
                a["name"] == "name":
            continue
        if a["has_default"] or a["name"] in inferred:
            default = a["default"] if a["has_default"] else None
        else:
            default = inspect.Parameter.empty
        attr_names.append(a["name"])
        params.append(inspect.Parameter(a["name"],
                                        inspect.Parameter.KEYWORD_ONLY,
                                        default=default))
    params.append(inspect.Parameter("name", inspect.Parameter.KEYWORD_ONLY,
                                    default=None))
    sig = inspect.Signature(params)
    op_name = o["name"]

    def op_function(*args, **kwargs):
        try:
            b = sig.bind(*args, **kwargs)
        except TypeError as e:
            raise TypeError("weft: %s: %s" % (op_name, e)) from None
        b.apply_defaults()
        ins = [b.arguments[n] for n in in_names]
        attrs = {}
        for n in attr_names:
            v = b.arguments[n]
            if v is not None and v is not inspect.Parameter.empty:
                adef = next(a for a in o["attrs"] if a["name"] == n)
                if adef["has_default"] and n in inferred and \
                        v == adef["default"] and adef["type"] == 5:
                    # A defaulted type attribute the inputs may decide.
                    if any(_is_tensorish(x) for x in ins):
                        continue
                attrs[n] = v
        return apply_op(op_name, ins, attrs, name=b.arguments["name"])

    op_function.__name__ = snake_name(op_name)
    op_function.__qualname__ = op_function.__name__
    op_function.__doc__ = _make_doc(o)
    op_function.__signature__ = sig
    op_function.op_name = op_name
    return op_function


def generate_ops(runtime):
    """{python name: function} for every public op of runtime (names that
    start with '_' are the core's own)."""
    fns = {}
    for o in runtime.ops():
        if o["name"].startswith("_"):
            continue
        o["_runtime"] = runtime
        _registry[o["name"]] = o
        fns[o["name"]] = make_op_function(o)
    return fns
