"""weft: build dataflow graphs in the manner of TensorFlow 1's graph mode
and run them on weft's runtime.

    import weft
    g = weft.Graph()
    with g.as_default():
        x = weft.placeholder(weft.float32, (None, 3), name="x")
        y = weft.reduce_sum(x * 2.0)
    with weft.Session(g) as s:
        print(s.run(y, {x: [[1, 2, 3]]}))

Every registered op has a function (weft.ops, and here when the name is
free), plugin ops included. Errors are weft.Error subclasses named after
the status codes (InvalidArgumentError, NotFoundError, ...)."""

import os as _os

from . import _weft
from ._weft import (Error, CancelledError, UnknownError,
                    InvalidArgumentError, DeadlineExceededError,
                    NotFoundError, AlreadyExistsError,
                    PermissionDeniedError, ResourceExhaustedError,
                    FailedPreconditionError, AbortedError, OutOfRangeError,
                    UnimplementedError, InternalError, UnavailableError,
                    DataLossError, UnauthenticatedError)
Error.message = property(lambda self: str(self.args[0]) if self.args
                         else "", doc="the core's message")

from ._dtypes import (DType, as_dtype, float32, float64, float16, bfloat16,
                      int8, uint8, int32, int64, bool_, resource, string)
from .framework import (Graph, Operation, Tensor, get_default_graph,
                        reset_default_graph, name_scope, device,
                        control_dependencies, constant, placeholder,
                        convert_to_tensor, load_graph, apply_op,
                        default_runtime, _runtimes)
from . import framework as _framework
from .session import (Session, RunOptions, RunMetadata,
                      FULL_TRACE, NO_TRACE)
from .variables import (Variable, global_variables, trainable_variables,
                        variables_initializer, global_variables_initializer)
from . import initializers, layers, train, data, saved_model
from . import ops, raw_ops
from .layers import Model, get_variable
from .data import Dataset, Iterator, parallel_task_batch

__version__ = "0.1.0"
bool = bool_  # weft.bool, as TensorFlow spells it


def version():
    """libweft's version."""
    return _weft.version()


def gradients(ys, xs, grad_ys=None, name=None):
    """Adds to the graph the gradients of sum(ys) with respect to each of
    xs: a Tensor per x, an (indices, values, dense_shape) triple of tensors
    for a sparse gradient, or None when x does not affect ys."""
    single_y = not isinstance(ys, (list, tuple))
    ys = [ys] if single_y else list(ys)
    single_x = not isinstance(xs, (list, tuple))
    xs = [xs] if single_x else list(xs)
    ys = [convert_to_tensor(y) for y in ys]
    g = ys[0].graph
    xs = [g.as_graph_element(x._as_graph_element()
                             if hasattr(x, "_as_graph_element") else x)
          for x in xs]
    dys = None
    if grad_ys is not None:
        dys = [convert_to_tensor(d)._ref for d in grad_ys]
    with g._lock:
        res = g._g.gradients([y._ref for y in ys], dys, [x._ref for x in xs])
    out = []
    for r in res:
        if r is None:
            out.append(None)
        elif r[0] == "dense":
            out.append(g._op(r[1][0]).outputs[r[1][1]])
        else:
            out.append(tuple(g._op(t[0]).outputs[t[1]] for t in r[1:]))
    return out


def runtime_info(config=None):
    """{"plugins": [...], "devices": [...]} of the runtime of config."""
    rt, _ = _runtimes.get(config)
    return {"plugins": rt.plugins(), "devices": rt.devices()}


_ALIASES = {"matmul": "MatMul", "reduce_sum": "Sum", "reduce_mean": "Mean",
            "reduce_max": "Max", "reduce_min": "Min", "reduce_prod": "Prod",
            "argmax": "ArgMax", "add_n": "AddN", "multiply": "Mul",
            "subtract": "Sub", "divide": "Div", "negative": "Neg"}
_own = set(globals())
_generated = set()


def _install_ops(runtime):
    fns = _framework.generate_ops(runtime)
    g = globals()
    for op_name, f in fns.items():
        py = f.__name__
        setattr(ops, py, f)
        setattr(raw_ops, op_name.replace(".", "_"), f)
        if py not in _own or py in _generated:
            g[py] = f
            _generated.add(py)
    for alias, op_name in _ALIASES.items():
        if op_name in fns and (alias not in _own or alias in _generated):
            g[alias] = fns[op_name]
            setattr(ops, alias, fns[op_name])
            _generated.add(alias)


def load_plugin(path):
    """Loads the plugin file (or the plugins of a directory) at path: its
    ops get their functions here and in weft.ops. Graphs made afterwards
    (and the default graph, while it is empty) use it; graphs made before
    keep the runtime they were made with. Raises NotFoundError when path
    holds no plugin, or the loader's reason when it refuses one."""
    real = _os.path.realpath(path)
    if not _os.path.exists(real):
        raise NotFoundError("plugin '%s' does not exist" % path)
    with _runtimes.lock:
        _runtimes.plugin_paths.append(real)
    try:
        rt, _ = _runtimes.get(None)
        found = [p for p in rt.plugins()
                 if p["path"] and (_os.path.realpath(p["path"]) == real or
                                   _os.path.dirname(_os.path.realpath(
                                       p["path"])) == real)]
        if not found:
            raise NotFoundError("no plugin found at '%s'" % path)
        bad = [p for p in found if p["state"] != "loaded"]
        if bad:
            raise FailedPreconditionError(
                "plugin '%s' was %s: %s" % (bad[0]["path"], bad[0]["state"],
                                            bad[0]["reason"]))
    except BaseException:
        with _runtimes.lock:
            _runtimes.plugin_paths.remove(real)
        raise
    _install_ops(rt)
    gg = _framework._global_graph
    if gg[0] is not None and len(gg[0]) == 0:
        gg[0] = None
    return [p["name"] for p in found]


_install_ops(default_runtime())
