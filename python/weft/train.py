"""Optimizers with learning-rate schedules (weft/layers.h), the training
step of a model, and checkpoints (weft/checkpoint.h): Saver, numbered
checkpoints in a directory, the latest one, reading one back."""

import os

import numpy as _np

from . import _weft
from .layers import default_model

# ---- learning-rate schedules ------------------------------------------------


class ExponentialDecay:
    """lr * decay_rate ** (step / decay_steps) (floored with staircase)."""

    def __init__(self, decay_steps, decay_rate, staircase=False):
        self.fields = {"schedule": 1, "decay_steps": int(decay_steps),
                       "decay_rate": float(decay_rate),
                       "staircase": int(bool(staircase))}


class PiecewiseConstant:
    """values[i] while step < boundaries[i]; len(values) = len(boundaries)
    + 1. The optimizer's learning_rate is not used."""

    def __init__(self, boundaries, values):
        self.fields = {"schedule": 2,
                       "boundaries": [int(b) for b in boundaries],
                       "values": [float(v) for v in values]}


class CosineDecay:
    """From lr down to lr * alpha over decay_steps along a cosine."""

    def __init__(self, decay_steps, alpha=0.0):
        self.fields = {"schedule": 3, "decay_steps": int(decay_steps),
                       "alpha": float(alpha)}


# ---- optimizers ---------------------------------------------------------------


class Optimizer:
    _kind = 0

    def __init__(self, learning_rate, schedule=None, warmup_steps=0,
                 clip_norm=0.0, **fields):
        self.options = {"kind": self._kind,
                        "learning_rate": float(learning_rate),
                        "warmup_steps": int(warmup_steps),
                        "clip_norm": float(clip_norm)}
        self.options.update(fields)
        if schedule is not None:
            self.options.update(schedule.fields)

    def _options(self):
        return dict(self.options)

    def minimize(self, loss, model=None, var_list=None):
        """The training-step operation. With var_list (weft.Variable
        objects) it updates those, from the gradients of loss with respect
        to their values (Variable.value()); otherwise it trains model's (by
        default the graph's default model's) trainable variables."""
        if var_list is not None:
            return _minimize_variables(self, loss, list(var_list))
        if model is None:
            model = default_model(getattr(loss, "graph", None))
        return model.minimize(loss, self)


class GradientDescentOptimizer(Optimizer):
    _kind = 0


class MomentumOptimizer(Optimizer):
    _kind = 1

    def __init__(self, learning_rate, momentum=0.9, use_nesterov=False,
                 **kw):
        super().__init__(learning_rate, momentum=float(momentum),
                         nesterov=int(bool(use_nesterov)), **kw)


class AdamOptimizer(Optimizer):
    _kind = 2

    def __init__(self, learning_rate=1e-3, beta1=0.9, beta2=0.999,
                 epsilon=1e-8, amsgrad=False, **kw):
        super().__init__(learning_rate, beta1=float(beta1),
                         beta2=float(beta2), epsilon=float(epsilon),
                         amsgrad=int(bool(amsgrad)), **kw)


class AdamWOptimizer(Optimizer):
    _kind = 3

    def __init__(self, learning_rate=1e-3, weight_decay=0.01, beta1=0.9,
                 beta2=0.999, epsilon=1e-8, amsgrad=False, **kw):
        super().__init__(learning_rate, weight_decay=float(weight_decay),
                         beta1=float(beta1), beta2=float(beta2),
                         epsilon=float(epsilon), amsgrad=int(bool(amsgrad)),
                         **kw)


class RMSPropOptimizer(Optimizer):
    _kind = 4

    def __init__(self, learning_rate, decay=0.9, momentum=0.0, epsilon=1e-7,
                 centered=False, **kw):
        super().__init__(learning_rate, rho=float(decay),
                         momentum=float(momentum), epsilon=float(epsilon),
                         centered=int(bool(centered)), **kw)


class AdagradOptimizer(Optimizer):
    _kind = 5

    def __init__(self, learning_rate, initial_accumulator_value=0.1,
                 epsilon=1e-7, **kw):
        super().__init__(learning_rate,
                         initial_accumulator=float(initial_accumulator_value),
                         epsilon=float(epsilon), **kw)


def _minimize_variables(opt, loss, var_list):
    """Apply ops for weft.Variable objects: gradient descent, momentum and
    Adam at a constant learning rate, their slots made as variables."""
    from . import gradients, constant, control_dependencies, raw_ops
    from .variables import Variable
    o = opt.options
    if "schedule" in o or o.get("clip_norm") or o.get("warmup_steps"):
        raise _weft.UnimplementedError(
            "minimize(var_list=...): schedules, warm-up and clipping need a "
            "weft.Model")
    if o["kind"] not in (0, 1, 2) or o.get("amsgrad"):
        raise _weft.UnimplementedError(
            "minimize(var_list=...) supports gradient descent, momentum and "
            "Adam; other optimizers need a weft.Model")
    if not var_list or not all(isinstance(v, Variable) for v in var_list):
        raise TypeError("weft: var_list holds weft.Variable objects")
    g = var_list[0].graph
    with g.as_default():
        grads = gradients(loss, [v.value() for v in var_list])
        updates = []
        step = None
        with g.name_scope("train"):
            if o["kind"] == 2:
                step = Variable(_np.int64(0), name="step", trainable=False)
                inc = step.assign_add(_np.int64(1))
                with control_dependencies([inc]):
                    t = step.read_value()
            for v, d in zip(var_list, grads):
                if d is None:
                    continue
                if isinstance(d, tuple):
                    raise _weft.UnimplementedError(
                        "minimize(var_list=...): sparse gradient of '%s'" %
                        v.name)
                lr = constant(o["learning_rate"], dtype=v.dtype)
                zeros = _np.zeros(v.shape, v.dtype.numpy)
                if o["kind"] == 0:
                    updates.append(raw_ops.ApplyGradientDescent(
                        v.handle, lr, d))
                elif o["kind"] == 1:
                    acc = Variable(zeros, name="momentum", trainable=False)
                    updates.append(raw_ops.ApplyMomentum(
                        v.handle, acc.handle, lr, d,
                        constant(o["momentum"], dtype=v.dtype),
                        use_nesterov=bool(o.get("nesterov"))))
                else:
                    m = Variable(zeros, name="m", trainable=False)
                    vv = Variable(zeros, name="v", trainable=False)
                    updates.append(raw_ops.ApplyAdam(
                        v.handle, m.handle, vv.handle, vv.handle, lr,
                        constant(o["beta1"], dtype=v.dtype),
                        constant(o["beta2"], dtype=v.dtype),
                        constant(o["epsilon"], dtype=v.dtype), d, t))
            with control_dependencies(updates):
                return raw_ops.NoOp(name="step")


def get_global_step(model=None):
    return (model or default_model()).global_step()


# ---- checkpoints -------------------------------------------------------------


class Saver:
    """Saves and restores a session's variables. save(sess, path) writes
    one file; with global_step it writes the numbered checkpoint of that
    step into the directory `path` and keeps the newest max_to_keep."""

    def __init__(self, var_list=None, max_to_keep=5):
        self._names = None
        if var_list is not None:
            self._names = [getattr(v, "name", v) for v in var_list]
        self.max_to_keep = max_to_keep

    def save(self, sess, path, global_step=None):
        s = sess._csession
        if global_step is not None:
            if self._names is not None:
                raise _weft.UnimplementedError(
                    "numbered checkpoints hold every variable")
            return _weft.checkpoint_save_dir(s, path, int(global_step),
                                             int(self.max_to_keep))
        _weft.checkpoint_save(s, path, self._names)
        return path

    def restore(self, sess, path, partial=False):
        if os.path.isdir(path):
            found = latest_checkpoint(path)
            if found is None:
                raise _weft.NotFoundError("no checkpoint in '%s'" % path)
            path = found
        _weft.checkpoint_restore(sess._csession, path, bool(partial),
                                 self._names)
        return path


def latest_checkpoint(directory):
    """The newest numbered checkpoint in directory, or None."""
    return _weft.checkpoint_latest(directory)


def list_checkpoints(directory):
    return _weft.checkpoint_list(directory)


def load_checkpoint(path):
    """(tensors {name: array}, metadata {key: value}) of a checkpoint."""
    return _weft.checkpoint_read(path)
