"""Layers, losses and metrics over weft/layers.h. A Model collects the
variables its layers create; training and inference passes are built
with `with model.training():` / `with model.inference():` and share
weights by layer order. The functions of this module use the default
graph's default model."""

import contextlib

from . import _weft
from . import initializers as _init
from .framework import get_default_graph, convert_to_tensor
from ._dtypes import as_dtype, float32

_ACTIVATIONS = {None: 0, "linear": 0, "none": 0, "relu": 1, "sigmoid": 2,
                "tanh": 3, "gelu": 4, "elu": 5, "softmax": 6}


def _act(a):
    try:
        return _ACTIVATIONS[a.lower() if isinstance(a, str) else a]
    except KeyError:
        raise ValueError("weft: unknown activation %r (one of %s)" %
                         (a, ", ".join(k for k in _ACTIVATIONS if k))) \
            from None


class Model:
    """Variables, layers, losses and an optimizer step in one graph."""

    def __init__(self, graph=None, seed=None):
        self.graph = graph or get_default_graph()
        self._m = _weft.Model(self.graph._g,
                              self.graph.seed if seed is None else seed)
        self.graph.add_to_collection("_models", self)
        self._training = True

    def _t(self, ref):
        return self.graph._op(ref[0]).outputs[ref[1]]

    def _x(self, x):
        with self.graph.as_default():
            t = convert_to_tensor(x)
        if t.graph is not self.graph:
            raise _weft.InvalidArgumentError(
                "tensor '%s' belongs to another graph" % t.name)
        return t._ref

    @contextlib.contextmanager
    def training(self):
        """Builds a training pass (dropout on, batch statistics)."""
        self._m.begin(True)
        yield self

    @contextlib.contextmanager
    def inference(self):
        """Builds an inference pass with the training pass's variables."""
        self._m.begin(False)
        yield self

    def begin(self, training):
        self._m.begin(bool(training))

    # variables
    def variable(self, name, shape, dtype=float32, initializer=None,
                 trainable=True):
        ini = _init.get(initializer or _init.glorot_uniform())
        return self._t(self._m.variable(name, as_dtype(dtype).code,
                                        tuple(shape), ini.kind, ini.value,
                                        trainable))

    def variables(self):
        """[(name, handle tensor, trainable)]"""
        return [(n, self._t(h), tr) for n, h, tr in self._m.variables()]

    def _num_variables(self):
        return len(self._m.variables())

    def init_op(self):
        """The operation assigning every variable its initial value (made
        again when variables were added since the last call)."""
        n = self._num_variables()
        cached = getattr(self, "_init", None)
        if cached is not None and cached[0] == n:
            return cached[1]
        # The core names it "init": a scope keeps several models apart.
        with self.graph.name_scope("model"):
            op = self.graph._op(self._m.init_op())
        self._init = (n, op)
        return op

    # layers
    def dense(self, x, units, activation=None, kernel_initializer=None):
        if kernel_initializer is None:
            return self._t(self._m.layer("dense", self._x(x), int(units),
                                         _act(activation)))
        ini = _init.get(kernel_initializer)
        return self._t(self._m.layer("dense", self._x(x), int(units),
                                     _act(activation), ini.kind))

    def conv2d(self, x, filters, kernel_size, strides=1, padding="SAME",
               activation=None):
        kh, kw = (kernel_size, kernel_size) if isinstance(kernel_size, int) \
            else kernel_size
        return self._t(self._m.layer("conv2d", self._x(x), int(filters),
                                     int(kh), int(kw), int(strides),
                                     padding.upper(), _act(activation)))

    def max_pool(self, x, pool_size=2, strides=None, padding="VALID"):
        return self._t(self._m.layer("max_pool", self._x(x), int(pool_size),
                                     int(strides or pool_size),
                                     padding.upper()))

    def avg_pool(self, x, pool_size=2, strides=None, padding="VALID"):
        return self._t(self._m.layer("avg_pool", self._x(x), int(pool_size),
                                     int(strides or pool_size),
                                     padding.upper()))

    def flatten(self, x):
        return self._t(self._m.layer("flatten", self._x(x)))

    def dropout(self, x, rate):
        return self._t(self._m.layer("dropout", self._x(x), float(rate)))

    def batch_norm(self, x, momentum=0.99, epsilon=1e-3):
        return self._t(self._m.layer("batch_norm", self._x(x),
                                     float(momentum), float(epsilon)))

    def activation(self, x, activation):
        return self._t(self._m.layer("activation", self._x(x),
                                     _act(activation)))

    def gru(self, x, units):
        return self._t(self._m.layer("gru", self._x(x), int(units)))

    def lstm(self, x, units):
        return self._t(self._m.layer("lstm", self._x(x), int(units)))

    # losses and metrics
    def sparse_softmax_cross_entropy(self, logits, labels):
        return self._t(self._m.layer("sparse_softmax_cross_entropy",
                                     self._x(logits), self._x(labels)))

    def softmax_cross_entropy(self, logits, labels):
        return self._t(self._m.layer("softmax_cross_entropy",
                                     self._x(logits), self._x(labels)))

    def mean_squared_error(self, predictions, targets):
        return self._t(self._m.layer("mean_squared_error",
                                     self._x(predictions), self._x(targets)))

    def l2_loss(self, scale):
        return self._t(self._m.l2(float(scale)))

    def accuracy(self, logits, labels):
        return self._t(self._m.layer("accuracy", self._x(logits),
                                     self._x(labels)))

    # training
    def global_step(self):
        return self._t(self._m.global_step())

    def minimize(self, loss, optimizer):
        """The training step: gradients of loss for the model's trainable
        variables, applied by optimizer (weft.train.*Optimizer)."""
        return self.graph._op(self._m.minimize(self._x(loss),
                                               optimizer._options()))

    def set_data_parallel(self, bucket_bytes=0):
        """Makes the next minimize data-parallel (weft/parallel.h): every
        gradient averaged across the job in AllReduce buckets of about
        bucket_bytes (0: the default) before the update, and init_op ending
        with a broadcast of task 0's variables."""
        self._m.set_data_parallel(int(bucket_bytes))

    def broadcast_op(self):
        """The broadcast of every variable of the model from task 0 (after
        a restore, say)."""
        with self.graph.name_scope("model"):
            return self.graph._op(self._m.broadcast_op())


def default_model(graph=None):
    g = graph or get_default_graph()
    if g._model is None:
        g._model = Model(g)
    return g._model


def get_variable(name, shape, dtype=float32, initializer=None,
                 trainable=True):
    return default_model().variable(name, shape, dtype, initializer,
                                    trainable)


def dense(x, units, activation=None, kernel_initializer=None):
    return default_model().dense(x, units, activation, kernel_initializer)


def conv2d(x, filters, kernel_size, strides=1, padding="SAME",
           activation=None):
    return default_model().conv2d(x, filters, kernel_size, strides, padding,
                                  activation)


def max_pool(x, pool_size=2, strides=None, padding="VALID"):
    return default_model().max_pool(x, pool_size, strides, padding)


def avg_pool(x, pool_size=2, strides=None, padding="VALID"):
    return default_model().avg_pool(x, pool_size, strides, padding)


def flatten(x):
    return default_model().flatten(x)


def dropout(x, rate):
    return default_model().dropout(x, rate)


def batch_norm(x, momentum=0.99, epsilon=1e-3):
    return default_model().batch_norm(x, momentum, epsilon)
