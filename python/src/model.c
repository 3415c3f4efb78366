/* python/src/model.c — the Model type over weft/layers.h: variables with
 * initializers, layers, losses, metrics and the optimizer step (with its
 * learning-rate schedule), each returning graph outputs as (node id,
 * index) pairs. Choosing defaults and names for Python users is the
 * package's business (weft/layers.py, weft/train.py). */
#include "weftpy.h"

#include <stdlib.h>

PyTypeObject *wp_model_type;

typedef struct {
  PyObject_HEAD
  wf_model *m;
  PyObject *graph;
} wp_model;

#define M(self) (((wp_model *)(self))->m)
#define MG(self) (((wp_graph *)((wp_model *)(self))->graph)->g)

static PyObject *model_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
  (void)kw;
  PyObject *graph;
  unsigned long long seed = 0;
  if (!PyArg_ParseTuple(args, "O!|K", wp_graph_type, &graph, &seed))
    return NULL;
  wf_status *st = wp_status();
  if (!st)
    return NULL;
  wf_model *m = wf_model_new(((wp_graph *)graph)->g, seed, st);
  if (!m) {
    wp_raise(st, NULL);
    wf_status_free(st);
    return NULL;
  }
  wf_status_free(st);
  wp_model *self = PyObject_New(wp_model, type);
  if (!self) {
    wf_model_free(m);
    return NULL;
  }
  self->m = m;
  self->graph = Py_NewRef(graph);
  return (PyObject *)self;
}

static void model_dealloc(PyObject *self) {
  PyTypeObject *tp = Py_TYPE(self);
  wf_model_free(M(self));
  Py_XDECREF(((wp_model *)self)->graph);
  PyObject_Free(self);
  Py_DECREF(tp);
}

/* The result of a builder: the output, or the exception of st. */
static PyObject *out_result(wf_output o, wf_status *st) {
  PyObject *r = o.node ? wp_output_tuple(o) : wp_raise(st, NULL);
  wf_status_free(st);
  return r;
}

static PyObject *model_begin(PyObject *self, PyObject *args) {
  int training;
  if (!PyArg_ParseTuple(args, "p", &training))
    return NULL;
  wf_model_begin(M(self), training);
  Py_RETURN_NONE;
}

/* variable(name, dtype, shape, init, init_value, trainable) -> output */
static PyObject *model_variable(PyObject *self, PyObject *args) {
  const char *name;
  int dtype, init, trainable;
  double value;
  PyObject *shape_o;
  wf_shape s;
  if (!PyArg_ParseTuple(args, "siOidp", &name, &dtype, &shape_o, &init,
                        &value, &trainable) ||
      wp_shape_arg(shape_o, &s))
    return NULL;
  if (s.rank < 0 || !wf_shape_is_known(&s))
    return wp_raise_code(WF_INVALID_ARGUMENT,
                         "variable '%s' needs a fully known shape", name);
  wf_status *st = wp_status();
  if (!st)
    return NULL;
  return out_result(wf_model_variable(M(self), name, (wf_dtype)dtype, s.dims,
                                      s.rank, (wf_init)init, value, trainable,
                                      st),
                    st);
}

static PyObject *model_init_op(PyObject *self, PyObject *args) {
  (void)args;
  wf_status *st = wp_status();
  if (!st)
    return NULL;
  wf_node *n = wf_model_init_op(M(self), st);
  PyObject *r = n ? PyLong_FromLong(wf_node_id(n)) : wp_raise(st, NULL);
  wf_status_free(st);
  return r;
}

static PyObject *model_broadcast_op(PyObject *self, PyObject *args) {
  (void)args;
  wf_status *st = wp_status();
  if (!st)
    return NULL;
  wf_node *n = wf_model_broadcast_op(M(self), st);
  PyObject *r = n ? PyLong_FromLong(wf_node_id(n)) : wp_raise(st, NULL);
  wf_status_free(st);
  return r;
}

static PyObject *model_variables(PyObject *self, PyObject *args) {
  (void)args;
  int n = wf_model_num_variables(M(self));
  PyObject *l = PyList_New(n);
  for (int i = 0; l && i < n; i++) {
    wf_output h;
    int tr = 0;
    const char *name = wf_model_variable_name(M(self), i, &h, &tr);
    PyObject *t = Py_BuildValue("(sNO)", name, wp_output_tuple(h),
                                tr ? Py_True : Py_False);
    if (!t) {
      Py_DECREF(l);
      return NULL;
    }
    PyList_SetItem(l, i, t);
  }
  return l;
}

/* layer(kind, x, ...): one entry for the layer builders. */
static PyObject *model_layer(PyObject *self, PyObject *args) {
  const char *kind;
  PyObject *x_o, *rest;
  wf_output x, y = {NULL, 0};
  Py_ssize_t n = PyTuple_Size(args);
  if (n < 2)
    return wp_raise_code(WF_INVALID_ARGUMENT, "layer(kind, x, ...)");
  PyObject *head = PyTuple_GetSlice(args, 0, 2);
  rest = PyTuple_GetSlice(args, 2, n);
  if (!head || !rest || !PyArg_ParseTuple(head, "sO", &kind, &x_o) ||
      wp_output_arg(MG(self), x_o, &x)) {
    Py_XDECREF(head);
    Py_XDECREF(rest);
    return NULL;
  }
  Py_DECREF(head);
  wf_status *st = wp_status();
  if (!st) {
    Py_DECREF(rest);
    return NULL;
  }
  int a, b, c, d, e;
  double f, g;
  const char *s;
  PyObject *o2;
  wf_output x2;
  int ok = 1;
  if (!strcmp(kind, "dense")) {
    e = -1;
    ok = PyArg_ParseTuple(rest, "ii|i", &a, &b, &e);
    if (ok)
      y = e < 0 ? wf_layer_dense(M(self), x, a, (wf_activation)b, st)
                : wf_layer_dense_init(M(self), x, a, (wf_activation)b,
                                      (wf_init)e, st);
  } else if (!strcmp(kind, "conv2d")) {
    ok = PyArg_ParseTuple(rest, "iiiisi", &a, &b, &c, &d, &s, &e);
    if (ok)
      y = wf_layer_conv2d(M(self), x, a, b, c, d, s, (wf_activation)e, st);
  } else if (!strcmp(kind, "max_pool") || !strcmp(kind, "avg_pool")) {
    ok = PyArg_ParseTuple(rest, "iis", &a, &b, &s);
    if (ok)
      y = kind[0] == 'm' ? wf_layer_max_pool(M(self), x, a, b, s, st)
                         : wf_layer_avg_pool(M(self), x, a, b, s, st);
  } else if (!strcmp(kind, "flatten")) {
    ok = PyArg_ParseTuple(rest, "");
    if (ok)
      y = wf_layer_flatten(M(self), x, st);
  } else if (!strcmp(kind, "dropout")) {
    ok = PyArg_ParseTuple(rest, "d", &f);
    if (ok)
      y = wf_layer_dropout(M(self), x, f, st);
  } else if (!strcmp(kind, "batch_norm")) {
    ok = PyArg_ParseTuple(rest, "dd", &f, &g);
    if (ok)
      y = wf_layer_batch_norm(M(self), x, f, g, st);
  } else if (!strcmp(kind, "activation")) {
    ok = PyArg_ParseTuple(rest, "i", &a);
    if (ok)
      y = wf_layer_activation(M(self), x, (wf_activation)a, st);
  } else if (!strcmp(kind, "gru") || !strcmp(kind, "lstm")) {
    ok = PyArg_ParseTuple(rest, "i", &a);
    if (ok)
      y = kind[0] == 'g' ? wf_layer_gru(M(self), x, a, NULL, st)
                         : wf_layer_lstm(M(self), x, a, NULL, st);
  } else if (!strcmp(kind, "sparse_softmax_cross_entropy") ||
             !strcmp(kind, "softmax_cross_entropy") ||
             !strcmp(kind, "mean_squared_error") ||
             !strcmp(kind, "accuracy")) {
    ok = PyArg_ParseTuple(rest, "O", &o2) &&
         !wp_output_arg(MG(self), o2, &x2);
    if (ok) {
      if (!strcmp(kind, "sparse_softmax_cross_entropy"))
        y = wf_loss_sparse_softmax_cross_entropy(M(self), x, x2, st);
      else if (!strcmp(kind, "softmax_cross_entropy"))
        y = wf_loss_softmax_cross_entropy(M(self), x, x2, st);
      else if (!strcmp(kind, "mean_squared_error"))
        y = wf_loss_mean_squared_error(M(self), x, x2, st);
      else
        y = wf_metric_accuracy(M(self), x, x2, st);
    }
  } else {
    Py_DECREF(rest);
    wf_status_free(st);
    return wp_raise_code(WF_INVALID_ARGUMENT, "unknown layer kind '%s'",
                         kind);
  }
  Py_DECREF(rest);
  if (!ok) {
    wf_status_free(st);
    return NULL;
  }
  return out_result(y, st);
}

static PyObject *model_l2(PyObject *self, PyObject *args) {
  double scale;
  if (!PyArg_ParseTuple(args, "d", &scale))
    return NULL;
  wf_status *st = wp_status();
  if (!st)
    return NULL;
  return out_result(wf_loss_l2(M(self), scale, st), st);
}

static PyObject *model_global_step(PyObject *self, PyObject *args) {
  (void)args;
  wf_status *st = wp_status();
  if (!st)
    return NULL;
  return out_result(wf_model_global_step(M(self), st), st);
}

static int dict_double(PyObject *d, const char *k, double *v) {
  PyObject *x = PyDict_GetItemString(d, k);
  if (!x)
    return 0;
  double f = PyFloat_AsDouble(x);
  if (f == -1.0 && PyErr_Occurred())
    return -1;
  *v = f;
  return 0;
}

static int dict_int(PyObject *d, const char *k, long long *v) {
  PyObject *x = PyDict_GetItemString(d, k);
  if (!x)
    return 0;
  long long f = PyLong_AsLongLong(x);
  if (f == -1 && PyErr_Occurred())
    return -1;
  *v = f;
  return 0;
}

/* minimize(loss, options dict) -> node id of the training step. The dict
 * holds wf_optimizer's member names; missing ones keep the kind's
 * defaults. */
static PyObject *model_minimize(PyObject *self, PyObject *args) {
  PyObject *loss_o, *d, *r = NULL;
  wf_output loss;
  int64_t *bounds = NULL;
  double *values = NULL;
  wf_status *st = NULL;
  if (!PyArg_ParseTuple(args, "OO!", &loss_o, &PyDict_Type, &d) ||
      wp_output_arg(MG(self), loss_o, &loss))
    return NULL;
  long long kind = 0, v = 0;
  if (dict_int(d, "kind", &kind))
    return NULL;
  if (kind < 0 || kind > WF_OPT_ADAGRAD)
    return wp_raise_code(WF_INVALID_ARGUMENT, "unknown optimizer kind %lld",
                         kind);
  wf_optimizer o = wf_optimizer_defaults((wf_optimizer_kind)kind);
  if (dict_double(d, "learning_rate", &o.learning_rate) ||
      dict_double(d, "momentum", &o.momentum) ||
      dict_double(d, "beta1", &o.beta1) || dict_double(d, "beta2", &o.beta2) ||
      dict_double(d, "epsilon", &o.epsilon) ||
      dict_double(d, "weight_decay", &o.weight_decay) ||
      dict_double(d, "rho", &o.rho) ||
      dict_double(d, "initial_accumulator", &o.initial_accumulator) ||
      dict_double(d, "clip_norm", &o.clip_norm) ||
      dict_double(d, "decay_rate", &o.decay_rate) ||
      dict_double(d, "alpha", &o.alpha))
    return NULL;
#define INT_FIELD(name, field)                                                 \
  do {                                                                         \
    v = (long long)o.field;                                                    \
    if (dict_int(d, name, &v))                                                 \
      return NULL;                                                             \
    o.field = (__typeof__(o.field))v;                                          \
  } while (0)
  INT_FIELD("nesterov", nesterov);
  INT_FIELD("amsgrad", amsgrad);
  INT_FIELD("centered", centered);
  INT_FIELD("schedule", schedule);
  INT_FIELD("decay_steps", decay_steps);
  INT_FIELD("staircase", staircase);
  INT_FIELD("warmup_steps", warmup_steps);
#undef INT_FIELD
  PyObject *b = PyDict_GetItemString(d, "boundaries");
  PyObject *vs = PyDict_GetItemString(d, "values");
  if (b && vs) {
    PyObject *bt = PySequence_Tuple(b), *vt = PySequence_Tuple(vs);
    if (!bt || !vt) {
      Py_XDECREF(bt);
      Py_XDECREF(vt);
      return NULL;
    }
    Py_ssize_t nb = PyTuple_Size(bt), nv = PyTuple_Size(vt);
    bounds = calloc((size_t)nb + 1, sizeof *bounds);
    values = calloc((size_t)nv + 1, sizeof *values);
    int bad = !bounds || !values;
    for (Py_ssize_t i = 0; !bad && i < nb; i++)
      bounds[i] = PyLong_AsLongLong(PyTuple_GetItem(bt, i));
    for (Py_ssize_t i = 0; !bad && i < nv; i++)
      values[i] = PyFloat_AsDouble(PyTuple_GetItem(vt, i));
    Py_DECREF(bt);
    Py_DECREF(vt);
    if (bad || PyErr_Occurred()) {
      if (bad)
        PyErr_NoMemory();
      goto done;
    }
    if (nv != nb + 1) {
      wp_raise_code(WF_INVALID_ARGUMENT,
                    "piecewise schedule: %zd boundaries need %zd values, "
                    "not %zd",
                    nb, nb + 1, nv);
      goto done;
    }
    o.boundaries = bounds;
    o.values = values;
    o.num_boundaries = (int)nb;
  }
  if (!(st = wp_status()))
    goto done;
  wf_node *n = wf_model_minimize(M(self), loss, &o, st);
  r = n ? PyLong_FromLong(wf_node_id(n)) : wp_raise(st, NULL);
done:
  free(bounds);
  free(values);
  wf_status_free(st);
  return r;
}

static PyObject *model_set_data_parallel(PyObject *self, PyObject *args) {
  long long bucket = 0;
  if (!PyArg_ParseTuple(args, "|L", &bucket))
    return NULL;
  wf_status *st = wp_status();
  if (!st)
    return NULL;
  PyObject *r = wf_model_set_data_parallel(M(self), bucket, st)
                    ? wp_raise(st, NULL)
                    : Py_NewRef(Py_None);
  wf_status_free(st);
  return r;
}

static PyMethodDef model_methods[] = {
    {"begin", model_begin, METH_VARARGS, "begin(training)"},
    {"variable", model_variable, METH_VARARGS,
     "variable(name, dtype, shape, init, init_value, trainable) -> output"},
    {"init_op", model_init_op, METH_NOARGS, NULL},
    {"broadcast_op", model_broadcast_op, METH_NOARGS, NULL},
    {"variables", model_variables, METH_NOARGS,
     "[(name, handle output, trainable)]"},
    {"layer", model_layer, METH_VARARGS, "layer(kind, x, ...) -> output"},
    {"l2", model_l2, METH_VARARGS, NULL},
    {"global_step", model_global_step, METH_NOARGS, NULL},
    {"minimize", model_minimize, METH_VARARGS, NULL},
    {"set_data_parallel", model_set_data_parallel, METH_VARARGS, NULL},
    {NULL, NULL, 0, NULL}};

static PyType_Slot model_slots[] = {
    {Py_tp_new, model_new},
    {Py_tp_dealloc, model_dealloc},
    {Py_tp_methods, model_methods},
    {Py_tp_doc, "Model(graph, seed=0): layers, losses and optimizers."},
    {0, NULL}};

static PyType_Spec model_spec = {"weft._weft.Model", sizeof(wp_model), 0,
                                 Py_TPFLAGS_DEFAULT, model_slots};

int wp_init_model(PyObject *m) {
  if (!(wp_model_type = (PyTypeObject *)PyType_FromSpec(&model_spec)) ||
      PyModule_AddObjectRef(m, "Model", (PyObject *)wp_model_type) < 0)
    return -1;
  return 0;
}
