/* python/src/graph.c — the Runtime and Graph types: a runtime made from
 * config items (its registries read back as plain Python data, which the
 * package turns into one function per op), and a graph addressed by node
 * ids (a node's index), with node descriptions, scopes, gradients, graph
 * files and Graphviz output. Name resolution of Python tensors and
 * operations lives in the package, not here. */
#include "weftpy.h"

#include <stdlib.h>

PyTypeObject *wp_runtime_type, *wp_graph_type;

/* ---- Runtime ------------------------------------------------------------ */

wf_runtime *wp_runtime_get(PyObject *o) {
  if (!PyObject_TypeCheck(o, wp_runtime_type)) {
    PyErr_SetString(PyExc_TypeError, "weft: a Runtime is needed");
    return NULL;
  }
  return ((wp_runtime *)o)->rt;
}

/* Runtime(items, path=None): items is a sequence of (section, key, value)
 * strings applied after the file at path (if any). */
static PyObject *runtime_new(PyTypeObject *type, PyObject *args,
                             PyObject *kw) {
  static char *kwlist[] = {"items", "path", NULL};
  PyObject *items = NULL, *fast = NULL;
  const char *path = NULL;
  wf_config *cfg = NULL;
  wf_status *st = NULL;
  wf_runtime *rt = NULL;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "|Oz", kwlist, &items, &path))
    return NULL;
  if (!(st = wp_status()))
    return NULL;
  if (!(cfg = wf_config_new())) {
    PyErr_NoMemory();
    goto fail;
  }
  if (path && wf_config_load(cfg, path, st)) {
    wp_raise(st, NULL);
    goto fail;
  }
  if (items && items != Py_None) {
    if (!(fast = PySequence_Tuple(items)))
      goto fail;
    for (Py_ssize_t i = 0; i < PyTuple_Size(fast); i++) {
      const char *sec, *key, *val;
      if (!PyArg_ParseTuple(PyTuple_GetItem(fast, i), "sss", &sec, &key, &val))
        goto fail;
      if (wf_config_set(cfg, sec, key, val, st)) {
        wp_raise(st, NULL);
        goto fail;
      }
    }
  }
  Py_BEGIN_ALLOW_THREADS
  rt = wf_runtime_new(cfg, st);
  Py_END_ALLOW_THREADS
  if (!rt) {
    wp_raise(st, NULL);
    goto fail;
  }
  wp_runtime *self = PyObject_New(wp_runtime, type);
  if (!self) {
    wf_runtime_free(rt);
    goto fail;
  }
  self->rt = rt;
  Py_XDECREF(fast);
  wf_config_free(cfg);
  wf_status_free(st);
  return (PyObject *)self;
fail:
  Py_XDECREF(fast);
  wf_config_free(cfg);
  wf_status_free(st);
  return NULL;
}

static void runtime_dealloc(PyObject *self) {
  PyTypeObject *tp = Py_TYPE(self);
  wf_runtime *rt = ((wp_runtime *)self)->rt;
  if (rt) {
    Py_BEGIN_ALLOW_THREADS
    wf_runtime_free(rt);
    Py_END_ALLOW_THREADS
  }
  PyObject_Free(self);
  Py_DECREF(tp);
}

static PyObject *str_or_none(const char *s) {
  if (!s)
    Py_RETURN_NONE;
  return PyUnicode_FromString(s);
}

static PyObject *args_list(const wf_arg_def *a) {
  PyObject *l = PyList_New(0);
  if (!l || !a)
    return l;
  for (; a->struct_size; a = (const wf_arg_def *)((const char *)a +
                                                  a->struct_size)) {
    PyObject *d = Py_BuildValue(
        "{s:s,s:i,s:N,s:N,s:N}", "name", a->name, "dtype", (int)a->dtype,
        "type_attr", str_or_none(a->type_attr), "number_attr",
        str_or_none(a->number_attr), "doc", str_or_none(a->doc));
    if (!d || PyList_Append(l, d)) {
      Py_XDECREF(d);
      Py_DECREF(l);
      return NULL;
    }
    Py_DECREF(d);
  }
  return l;
}

static PyObject *attrs_list(const wf_attr_def *a) {
  PyObject *l = PyList_New(0);
  if (!l || !a)
    return l;
  for (; a->struct_size; a = (const wf_attr_def *)((const char *)a +
                                                   a->struct_size)) {
    PyObject *def = a->has_default ? wp_attr_value(&a->default_value)
                                   : Py_NewRef(Py_None);
    if (!def) {
      Py_DECREF(l);
      return NULL;
    }
    PyObject *d = Py_BuildValue(
        "{s:s,s:i,s:O,s:N,s:k,s:N,s:N}", "name", a->name, "type",
        (int)a->type, "has_default", a->has_default ? Py_True : Py_False,
        "default", def, "allowed_dtypes", (unsigned long)a->allowed_dtypes,
        "minimum",
        a->has_minimum ? PyLong_FromLongLong(a->minimum) : Py_NewRef(Py_None),
        "doc", str_or_none(a->doc));
    if (!d || PyList_Append(l, d)) {
      Py_XDECREF(d);
      Py_DECREF(l);
      return NULL;
    }
    Py_DECREF(d);
  }
  return l;
}

static PyObject *op_dict(const wf_op_def *op, const char *plugin,
                         int gradient) {
  return Py_BuildValue("{s:s,s:N,s:N,s:N,s:k,s:N,s:N,s:i}", "name", op->name,
                       "inputs", args_list(op->inputs), "outputs",
                       args_list(op->outputs), "attrs", attrs_list(op->attrs),
                       "flags", (unsigned long)op->flags, "doc",
                       str_or_none(op->doc), "plugin", str_or_none(plugin),
                       "gradient", gradient);
}

static PyObject *runtime_ops(PyObject *self, PyObject *args) {
  (void)args;
  wf_runtime *rt = ((wp_runtime *)self)->rt;
  int n = wf_runtime_op_count(rt);
  PyObject *l = PyList_New(n);
  if (!l)
    return NULL;
  for (int i = 0; i < n; i++) {
    const wf_op_def *op = wf_runtime_op_get(rt, i);
    PyObject *d = op_dict(op, wf_runtime_op_plugin(rt, i),
                          wf_runtime_op_gradient(rt, op->name));
    if (!d) {
      Py_DECREF(l);
      return NULL;
    }
    PyList_SetItem(l, i, d);
  }
  return l;
}

static PyObject *runtime_plugins(PyObject *self, PyObject *args) {
  (void)args;
  wf_runtime *rt = ((wp_runtime *)self)->rt;
  int n = wf_runtime_plugin_count(rt);
  PyObject *l = PyList_New(n);
  if (!l)
    return NULL;
  for (int i = 0; i < n; i++) {
    wf_plugin_info p;
    wf_runtime_plugin_get(rt, i, &p);
    static const char *const states[] = {"loaded", "refused", "denied"};
    PyObject *d = Py_BuildValue(
        "{s:N,s:N,s:N,s:s,s:N,s:i,s:i,s:i}", "name", str_or_none(p.name),
        "path", str_or_none(p.path), "version", str_or_none(p.version),
        "state", states[(int)p.state % 3], "reason", str_or_none(p.reason),
        "num_ops", p.num_ops, "num_kernels", p.num_kernels, "num_readers",
        p.num_readers);
    if (!d) {
      Py_DECREF(l);
      return NULL;
    }
    PyList_SetItem(l, i, d);
  }
  return l;
}

static PyObject *runtime_devices(PyObject *self, PyObject *args) {
  (void)args;
  wf_runtime *rt = ((wp_runtime *)self)->rt;
  int n = wf_runtime_device_count(rt);
  PyObject *l = PyList_New(n);
  if (!l)
    return NULL;
  for (int i = 0; i < n; i++) {
    wf_device_info d;
    wf_runtime_device_get(rt, i, &d);
    PyObject *o = Py_BuildValue(
        "{s:N,s:N,s:N,s:N,s:O,s:N}", "name", str_or_none(d.name), "type",
        str_or_none(d.type), "plugin", str_or_none(d.plugin), "description",
        str_or_none(d.description), "available",
        d.available ? Py_True : Py_False, "reason", str_or_none(d.reason));
    if (!o) {
      Py_DECREF(l);
      return NULL;
    }
    PyList_SetItem(l, i, o);
  }
  return l;
}

static PyMethodDef runtime_methods[] = {
    {"ops", runtime_ops, METH_NOARGS,
     "Every registered op as a dict (inputs, outputs, attrs, doc)."},
    {"plugins", runtime_plugins, METH_NOARGS, "Plugins found, as dicts."},
    {"devices", runtime_devices, METH_NOARGS, "Device instances, as dicts."},
    {NULL, NULL, 0, NULL}};

static PyType_Slot runtime_slots[] = {
    {Py_tp_new, runtime_new},
    {Py_tp_dealloc, runtime_dealloc},
    {Py_tp_methods, runtime_methods},
    {Py_tp_doc, "Runtime(items=(), path=None): loaded plugins and their "
                "registries under one config."},
    {0, NULL}};

static PyType_Spec runtime_spec = {"weft._weft.Runtime", sizeof(wp_runtime), 0,
                                   Py_TPFLAGS_DEFAULT, runtime_slots};

/* ---- Graph -------------------------------------------------------------- */

wf_graph *wp_graph_get(PyObject *o) {
  if (!PyObject_TypeCheck(o, wp_graph_type)) {
    PyErr_SetString(PyExc_TypeError, "weft: a Graph is needed");
    return NULL;
  }
  return ((wp_graph *)o)->g;
}

static PyObject *graph_wrap(PyTypeObject *type, wf_graph *g,
                            PyObject *runtime) {
  wp_graph *self = PyObject_New(wp_graph, type);
  if (!self) {
    wf_graph_free(g);
    return NULL;
  }
  self->g = g;
  self->runtime = Py_NewRef(runtime);
  return (PyObject *)self;
}

static PyObject *graph_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
  (void)kw;
  PyObject *runtime;
  if (!PyArg_ParseTuple(args, "O!", wp_runtime_type, &runtime))
    return NULL;
  wf_graph *g = wf_graph_new(((wp_runtime *)runtime)->rt);
  if (!g)
    return PyErr_NoMemory();
  return graph_wrap(type, g, runtime);
}

static void graph_dealloc(PyObject *self) {
  PyTypeObject *tp = Py_TYPE(self);
  wp_graph *g = (wp_graph *)self;
  wf_graph_free(g->g);
  Py_XDECREF(g->runtime);
  PyObject_Free(self);
  Py_DECREF(tp);
}

#define G(self) (((wp_graph *)(self))->g)

/* add_node(op, name, inputs, attrs, controls, device) -> node id.
 * inputs: items that are (id, index) pairs or lists of them (list
 * arguments); attrs: (name, type, value) triples. */
static PyObject *graph_add_node(PyObject *self, PyObject *args) {
  const char *op, *name, *device;
  PyObject *inputs, *attrs, *controls;
  wf_graph *g = G(self);
  wf_output *list = NULL;
  if (!PyArg_ParseTuple(args, "szOOOz", &op, &name, &inputs, &attrs,
                        &controls, &device))
    return NULL;
  wf_node_desc *d = wf_node_desc_new(g, op, name);
  if (!d)
    return PyErr_NoMemory();
  PyObject *fi = PySequence_Tuple(inputs);
  if (!fi)
    goto fail;
  for (Py_ssize_t i = 0; i < PyTuple_Size(fi); i++) {
    PyObject *it = PyTuple_GetItem(fi, i);
    if (PyList_Check(it)) {
      int n = 0;
      if (!(list = wp_outputs_arg(g, it, &n)))
        goto fail;
      wf_node_desc_add_input_list(d, list, n);
      free(list);
      list = NULL;
    } else {
      wf_output o;
      if (wp_output_arg(g, it, &o))
        goto fail;
      wf_node_desc_add_input(d, o);
    }
  }
  Py_CLEAR(fi);
  if (!(fi = PySequence_Tuple(attrs)))
    goto fail;
  for (Py_ssize_t i = 0; i < PyTuple_Size(fi); i++) {
    const char *an;
    int at;
    PyObject *av;
    if (!PyArg_ParseTuple(PyTuple_GetItem(fi, i), "siO", &an, &at, &av) ||
        wp_set_attr(d, an, at, av))
      goto fail;
  }
  Py_CLEAR(fi);
  if (!(fi = PySequence_Tuple(controls)))
    goto fail;
  for (Py_ssize_t i = 0; i < PyTuple_Size(fi); i++) {
    wf_node *c = wp_node_arg(g, PyTuple_GetItem(fi, i));
    if (!c)
      goto fail;
    wf_node_desc_add_control_input(d, c);
  }
  Py_CLEAR(fi);
  if (device)
    wf_node_desc_set_device(d, device);
  wf_status *st = wp_status();
  if (!st) {
    wf_node_desc_free(d);
    return NULL;
  }
  wf_node *n = wf_node_desc_finish(d, st);
  if (!n) {
    wp_raise(st, NULL);
    wf_status_free(st);
    return NULL;
  }
  wf_status_free(st);
  return PyLong_FromLong(wf_node_id(n));
fail:
  Py_XDECREF(fi);
  wf_node_desc_free(d);
  return NULL;
}

static PyObject *graph_push_scope(PyObject *self, PyObject *arg) {
  const char *s = PyUnicode_AsUTF8AndSize(arg, NULL);
  if (!s)
    return NULL;
  wf_status *st = wp_status();
  if (!st)
    return NULL;
  int rc = wf_graph_push_scope(G(self), s, st);
  PyObject *r = rc ? wp_raise(st, NULL) : Py_NewRef(Py_None);
  wf_status_free(st);
  return r;
}

static PyObject *graph_pop_scope(PyObject *self, PyObject *args) {
  (void)args;
  wf_graph_pop_scope(G(self));
  Py_RETURN_NONE;
}

static PyObject *graph_push_device(PyObject *self, PyObject *arg) {
  const char *s = PyUnicode_AsUTF8AndSize(arg, NULL);
  if (!s)
    return NULL;
  wf_status *st = wp_status();
  if (!st)
    return NULL;
  int rc = wf_graph_push_device(G(self), s, st);
  PyObject *r = rc ? wp_raise(st, NULL) : Py_NewRef(Py_None);
  wf_status_free(st);
  return r;
}

static PyObject *graph_pop_device(PyObject *self, PyObject *args) {
  (void)args;
  wf_graph_pop_device(G(self));
  Py_RETURN_NONE;
}

static PyObject *graph_unique_name(PyObject *self, PyObject *arg) {
  const char *s = PyUnicode_AsUTF8AndSize(arg, NULL);
  char buf[512];
  if (!s)
    return NULL;
  return PyUnicode_FromString(wf_graph_unique_name(G(self), s, buf,
                                                   sizeof buf));
}

static PyObject *graph_num_nodes(PyObject *self, PyObject *args) {
  (void)args;
  return PyLong_FromLong(wf_graph_num_nodes(G(self)));
}

/* node(id) -> (name, op, device, num_outputs, flags) */
static PyObject *graph_node(PyObject *self, PyObject *arg) {
  wf_node *n = wp_node_arg(G(self), arg);
  if (!n)
    return NULL;
  return Py_BuildValue("(sssik)", wf_node_name(n), wf_node_op(n),
                       wf_node_device(n), wf_node_num_outputs(n),
                       (unsigned long)wf_node_op_flags(n));
}

static PyObject *graph_node_inputs(PyObject *self, PyObject *arg) {
  wf_node *n = wp_node_arg(G(self), arg);
  if (!n)
    return NULL;
  int k = wf_node_num_inputs(n);
  PyObject *l = PyList_New(k);
  for (int i = 0; l && i < k; i++) {
    PyObject *t = wp_output_tuple(wf_node_input(n, i));
    if (!t) {
      Py_DECREF(l);
      return NULL;
    }
    PyList_SetItem(l, i, t);
  }
  return l;
}

static PyObject *graph_node_controls(PyObject *self, PyObject *arg) {
  wf_node *n = wp_node_arg(G(self), arg);
  if (!n)
    return NULL;
  int k = wf_node_num_control_inputs(n);
  PyObject *l = PyList_New(k);
  for (int i = 0; l && i < k; i++)
    PyList_SetItem(l, i,
                   PyLong_FromLong(wf_node_id(wf_node_control_input(n, i))));
  return l;
}

/* output(id, index) -> (dtype, shape) */
static PyObject *graph_output(PyObject *self, PyObject *args) {
  PyObject *id;
  int idx;
  if (!PyArg_ParseTuple(args, "Oi", &id, &idx))
    return NULL;
  wf_node *n = wp_node_arg(G(self), id);
  if (!n)
    return NULL;
  if (idx < 0 || idx >= wf_node_num_outputs(n))
    return wp_raise_code(WF_INVALID_ARGUMENT, "node '%s' has no output %d",
                         wf_node_name(n), idx);
  wf_shape s;
  wf_node_output_shape(n, idx, &s);
  return Py_BuildValue("(iN)", (int)wf_node_output_dtype(n, idx),
                       wp_shape_tuple(&s));
}

static PyObject *graph_node_attrs(PyObject *self, PyObject *arg) {
  wf_node *n = wp_node_arg(G(self), arg);
  if (!n)
    return NULL;
  PyObject *d = PyDict_New();
  for (int i = 0; d && i < wf_node_num_attrs(n); i++) {
    wf_attr_value v;
    const char *name = wf_node_attr_name(n, i, &v);
    PyObject *x = wp_attr_value(&v);
    if (!x || PyDict_SetItemString(d, name, x)) {
      Py_XDECREF(x);
      Py_DECREF(d);
      return NULL;
    }
    Py_DECREF(x);
  }
  return d;
}

static PyObject *graph_find_node(PyObject *self, PyObject *arg) {
  const char *s = PyUnicode_AsUTF8AndSize(arg, NULL);
  if (!s)
    return NULL;
  wf_node *n = wf_graph_find_node(G(self), s);
  return PyLong_FromLong(n ? wf_node_id(n) : -1);
}

static PyObject *graph_parse_output(PyObject *self, PyObject *arg) {
  const char *s = PyUnicode_AsUTF8AndSize(arg, NULL);
  if (!s)
    return NULL;
  wf_status *st = wp_status();
  if (!st)
    return NULL;
  wf_output o;
  PyObject *r = wf_graph_parse_output(G(self), s, &o, st)
                    ? wp_raise(st, NULL)
                    : wp_output_tuple(o);
  wf_status_free(st);
  return r;
}

static PyObject *graph_add_control_edge(PyObject *self, PyObject *args) {
  PyObject *a, *b;
  if (!PyArg_ParseTuple(args, "OO", &a, &b))
    return NULL;
  wf_node *from = wp_node_arg(G(self), a), *to;
  if (!from || !(to = wp_node_arg(G(self), b)))
    return NULL;
  wf_status *st = wp_status();
  if (!st)
    return NULL;
  PyObject *r = wf_graph_add_control_edge(G(self), from, to, st)
                    ? wp_raise(st, NULL)
                    : Py_NewRef(Py_None);
  wf_status_free(st);
  return r;
}

/* gradients(ys, dys or None, xs) -> one item per x: None, ("dense", out)
 * or ("sparse", indices, values, dense_shape). */
static PyObject *graph_gradients(PyObject *self, PyObject *args) {
  PyObject *ys_o, *dys_o, *xs_o, *r = NULL;
  wf_output *ys = NULL, *dys = NULL, *xs = NULL;
  wf_gradient *gs = NULL;
  wf_status *st = NULL;
  int nys = 0, ndys = 0, nxs = 0;
  wf_graph *g = G(self);
  if (!PyArg_ParseTuple(args, "OOO", &ys_o, &dys_o, &xs_o))
    return NULL;
  if (!(ys = wp_outputs_arg(g, ys_o, &nys)) ||
      !(xs = wp_outputs_arg(g, xs_o, &nxs)))
    goto done;
  if (dys_o != Py_None) {
    if (!(dys = wp_outputs_arg(g, dys_o, &ndys)))
      goto done;
    if (ndys != nys) {
      wp_raise_code(WF_INVALID_ARGUMENT,
                    "gradients: %d ys but %d grad_ys", nys, ndys);
      goto done;
    }
  }
  if (!(gs = calloc((size_t)nxs + 1, sizeof *gs))) {
    PyErr_NoMemory();
    goto done;
  }
  if (!(st = wp_status()))
    goto done;
  if (wf_graph_add_gradients(g, ys, nys, dys, xs, nxs, gs, st)) {
    wp_raise(st, NULL);
    goto done;
  }
  if (!(r = PyList_New(nxs)))
    goto done;
  for (int i = 0; i < nxs; i++) {
    PyObject *it;
    if (gs[i].dense.node)
      it = Py_BuildValue("(sN)", "dense", wp_output_tuple(gs[i].dense));
    else if (gs[i].indices.node)
      it = Py_BuildValue("(sNNN)", "sparse", wp_output_tuple(gs[i].indices),
                         wp_output_tuple(gs[i].values),
                         wp_output_tuple(gs[i].dense_shape));
    else
      it = Py_NewRef(Py_None);
    if (!it) {
      Py_CLEAR(r);
      goto done;
    }
    PyList_SetItem(r, i, it);
  }
done:
  free(ys);
  free(dys);
  free(xs);
  free(gs);
  wf_status_free(st);
  return r;
}

static PyObject *graph_save(PyObject *self, PyObject *args) {
  const char *path;
  PyObject *outs = Py_None, *tgts = Py_None, *r = NULL;
  wf_output *o = NULL;
  wf_node **t = NULL;
  int no = 0, nt = 0, rc;
  if (!PyArg_ParseTuple(args, "s|OO", &path, &outs, &tgts))
    return NULL;
  wf_status *st = wp_status();
  if (!st)
    return NULL;
  if (outs == Py_None && tgts == Py_None) {
    rc = wf_graph_save(G(self), path, st);
  } else {
    if ((outs != Py_None && !(o = wp_outputs_arg(G(self), outs, &no))) ||
        (tgts != Py_None && !(t = wp_nodes_arg(G(self), tgts, &nt))))
      goto done;
    rc = wf_graph_save_pruned(G(self), o, no, t, nt, path, st);
  }
  r = rc ? wp_raise(st, NULL) : Py_NewRef(Py_None);
done:
  free(o);
  free(t);
  wf_status_free(st);
  return r;
}

static PyObject *graph_to_bytes(PyObject *self, PyObject *args) {
  (void)args;
  void *buf = NULL;
  size_t len = 0;
  wf_status *st = wp_status();
  if (!st)
    return NULL;
  PyObject *r = wf_graph_to_buffer(G(self), &buf, &len, st)
                    ? wp_raise(st, NULL)
                    : PyBytes_FromStringAndSize(buf, (Py_ssize_t)len);
  free(buf);
  wf_status_free(st);
  return r;
}

static PyObject *graph_write_dot(PyObject *self, PyObject *arg) {
  const char *path = PyUnicode_AsUTF8AndSize(arg, NULL);
  if (!path)
    return NULL;
  wf_status *st = wp_status();
  if (!st)
    return NULL;
  PyObject *r = wf_graph_write_dot(G(self), path, st) ? wp_raise(st, NULL)
                                                      : Py_NewRef(Py_None);
  wf_status_free(st);
  return r;
}

/* copy_to(other, start): copies nodes start.. of this graph into other (a
 * graph of another runtime), same names, attributes, inputs, control
 * inputs and devices, so node i here is node i there. */
static PyObject *graph_copy_to(PyObject *self, PyObject *args) {
  PyObject *other;
  int start;
  if (!PyArg_ParseTuple(args, "O!i", wp_graph_type, &other, &start))
    return NULL;
  wf_graph *src = G(self), *dst = G(other);
  wf_status *st = wp_status();
  if (!st)
    return NULL;
  int n = wf_graph_num_nodes(src);
  if (start != wf_graph_num_nodes(dst)) {
    wf_status_free(st);
    return wp_raise_code(WF_INTERNAL,
                         "copying nodes from %d into a graph of %d", start,
                         wf_graph_num_nodes(dst));
  }
  for (int i = start; i < n; i++) {
    wf_node *s = wf_graph_node(src, i);
    wf_node_desc *d = wf_node_desc_new(dst, wf_node_op(s), wf_node_name(s));
    if (!d) {
      wf_status_free(st);
      return PyErr_NoMemory();
    }
    /* Inputs in order; list arguments are flat in the node, so the op's
     * argument groups are rebuilt from its definition. */
    const wf_op_def *op =
        wf_runtime_op_find(wf_graph_runtime(dst), wf_node_op(s));
    int k = 0, nin = wf_node_num_inputs(s);
    if (op && op->inputs) {
      for (const wf_arg_def *a = op->inputs; a->struct_size;
           a = (const wf_arg_def *)((const char *)a + a->struct_size)) {
        if (a->number_attr) {
          wf_attr_value v;
          int64_t cnt = 0;
          if (!wf_node_get_attr(s, a->number_attr, &v, st))
            cnt = v.u.i;
          wf_status_reset(st);
          wf_output *tmp = malloc(sizeof *tmp * (size_t)(cnt + 1));
          if (!tmp) {
            wf_node_desc_free(d);
            wf_status_free(st);
            return PyErr_NoMemory();
          }
          int m = 0;
          for (int64_t j = 0; j < cnt && k < nin; j++, k++) {
            wf_output in = wf_node_input(s, k);
            tmp[m++] = (wf_output){wf_graph_node(dst, wf_node_id(in.node)),
                                   in.index};
          }
          wf_node_desc_add_input_list(d, tmp, m);
          free(tmp);
        } else if (k < nin) {
          wf_output in = wf_node_input(s, k++);
          wf_node_desc_add_input(
              d, (wf_output){wf_graph_node(dst, wf_node_id(in.node)),
                             in.index});
        }
      }
    }
    for (int j = 0; j < wf_node_num_control_inputs(s); j++)
      wf_node_desc_add_control_input(
          d, wf_graph_node(dst, wf_node_id(wf_node_control_input(s, j))));
    for (int j = 0; j < wf_node_num_attrs(s); j++) {
      wf_attr_value v;
      const char *an = wf_node_attr_name(s, j, &v);
      wf_node_desc_set_attr(d, an, &v);
    }
    if (*wf_node_device(s))
      wf_node_desc_set_device(d, wf_node_device(s));
    if (!wf_node_desc_finish(d, st)) {
      PyObject *r = wp_raise(st, "copying the graph into the session's "
                                 "runtime");
      wf_status_free(st);
      return r;
    }
  }
  wf_status_free(st);
  Py_RETURN_NONE;
}

static PyObject *graph_runtime(PyObject *self, PyObject *args) {
  (void)args;
  return Py_NewRef(((wp_graph *)self)->runtime);
}

static PyMethodDef graph_methods[] = {
    {"add_node", graph_add_node, METH_VARARGS,
     "add_node(op, name, inputs, attrs, controls, device) -> node id"},
    {"push_scope", graph_push_scope, METH_O, NULL},
    {"pop_scope", graph_pop_scope, METH_NOARGS, NULL},
    {"push_device", graph_push_device, METH_O, NULL},
    {"pop_device", graph_pop_device, METH_NOARGS, NULL},
    {"unique_name", graph_unique_name, METH_O, NULL},
    {"num_nodes", graph_num_nodes, METH_NOARGS, NULL},
    {"node", graph_node, METH_O, "(name, op, device, num_outputs, flags)"},
    {"node_inputs", graph_node_inputs, METH_O, NULL},
    {"node_controls", graph_node_controls, METH_O, NULL},
    {"node_attrs", graph_node_attrs, METH_O, NULL},
    {"output", graph_output, METH_VARARGS, "(dtype, shape) of an output"},
    {"find_node", graph_find_node, METH_O, "node id of a name, or -1"},
    {"parse_output", graph_parse_output, METH_O, NULL},
    {"add_control_edge", graph_add_control_edge, METH_VARARGS, NULL},
    {"gradients", graph_gradients, METH_VARARGS, NULL},
    {"save", graph_save, METH_VARARGS,
     "save(path, outputs=None, targets=None): a graph file"},
    {"to_bytes", graph_to_bytes, METH_NOARGS, NULL},
    {"write_dot", graph_write_dot, METH_O, NULL},
    {"copy_to", graph_copy_to, METH_VARARGS, NULL},
    {"runtime", graph_runtime, METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL}};

static PyType_Slot graph_slots[] = {
    {Py_tp_new, graph_new},
    {Py_tp_dealloc, graph_dealloc},
    {Py_tp_methods, graph_methods},
    {Py_tp_doc, "Graph(runtime): a weft graph; nodes are addressed by id."},
    {0, NULL}};

static PyType_Spec graph_spec = {"weft._weft.Graph", sizeof(wp_graph), 0,
                                 Py_TPFLAGS_DEFAULT, graph_slots};

/* load_graph(runtime, path=None, data=None) -> Graph */
static PyObject *m_load_graph(PyObject *mod, PyObject *args) {
  (void)mod;
  PyObject *runtime;
  const char *path = NULL;
  Py_buffer data = {0};
  int have = 0;
  if (!PyArg_ParseTuple(args, "O!z|y*", wp_runtime_type, &runtime, &path,
                        &data))
    return NULL;
  have = data.obj != NULL;
  wf_status *st = wp_status();
  if (!st) {
    if (have)
      PyBuffer_Release(&data);
    return NULL;
  }
  wf_runtime *rt = ((wp_runtime *)runtime)->rt;
  wf_graph *g = have ? wf_graph_from_buffer(rt, data.buf, (size_t)data.len,
                                            "bytes", st)
                     : wf_graph_load(rt, path ? path : "", st);
  if (have)
    PyBuffer_Release(&data);
  PyObject *r = g ? graph_wrap(wp_graph_type, g, runtime) : wp_raise(st, NULL);
  wf_status_free(st);
  return r;
}

static PyMethodDef graph_functions[] = {
    {"load_graph", m_load_graph, METH_VARARGS,
     "load_graph(runtime, path, data=None): a Graph from a graph file or "
     "its bytes."},
    {NULL, NULL, 0, NULL}};

int wp_init_graph(PyObject *m) {
  wp_runtime_type = (PyTypeObject *)PyType_FromSpec(&runtime_spec);
  if (!wp_runtime_type ||
      PyModule_AddObjectRef(m, "Runtime", (PyObject *)wp_runtime_type) < 0)
    return -1;
  wp_graph_type = (PyTypeObject *)PyType_FromSpec(&graph_spec);
  if (!wp_graph_type ||
      PyModule_AddObjectRef(m, "Graph", (PyObject *)wp_graph_type) < 0)
    return -1;
  return PyModule_AddFunctions(m, graph_functions);
}
