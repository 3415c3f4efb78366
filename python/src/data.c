/* python/src/data.c — the Dataset and Iterator types over weft/data.h:
 * datasets from reader plugins and their stages (each stage returns a new
 * Dataset; the old one stays usable), iterators giving elements as NumPy
 * arrays, saving and restoring their position, and the glue to graphs
 * (IteratorGetNext nodes) and sessions (attached iterators). */
#include "weftpy.h"

#include <stdlib.h>

PyTypeObject *wp_dataset_type, *wp_iterator_type;

typedef struct {
  PyObject_HEAD
  wf_dataset *ds;
  PyObject *keep; /* tuple: runtime, graphs of map stages, inputs */
} wp_dataset;

typedef struct {
  PyObject_HEAD
  wf_iterator *it;
  PyObject *dataset;
  int attached; /* sessions it is attached to */
} wp_iterator;

#define DS(self) (((wp_dataset *)(self))->ds)

static PyObject *dataset_wrap(wf_dataset *ds, wf_status *st, PyObject *keep) {
  if (!ds) {
    wp_raise(st, NULL);
    wf_status_free(st);
    Py_XDECREF(keep);
    return NULL;
  }
  wf_status_free(st);
  wp_dataset *self = PyObject_New(wp_dataset, wp_dataset_type);
  if (!self) {
    wf_dataset_release(ds);
    Py_XDECREF(keep);
    return NULL;
  }
  self->ds = ds;
  self->keep = keep;
  return (PyObject *)self;
}

/* keep of a stage: the input's keep plus extra objects. */
static PyObject *keep_with(PyObject *self, PyObject *a, PyObject *b) {
  PyObject *k = ((wp_dataset *)self)->keep;
  return Py_BuildValue("(OOO)", k ? k : Py_None, a ? a : Py_None,
                       b ? b : Py_None);
}

static void dataset_dealloc(PyObject *self) {
  PyTypeObject *tp = Py_TYPE(self);
  wf_dataset_release(DS(self));
  Py_XDECREF(((wp_dataset *)self)->keep);
  PyObject_Free(self);
  Py_DECREF(tp);
}

/* dataset_from_files(runtime, pattern, format=None, options=()) where
 * options are (name, value) pairs of str, int, float or bool values. */
static PyObject *m_dataset_from_files(PyObject *mod, PyObject *args) {
  (void)mod;
  PyObject *runtime, *opts = NULL, *fast = NULL;
  const char *pattern, *format = NULL;
  wf_attr_item items[32];
  if (!PyArg_ParseTuple(args, "O!s|zO", wp_runtime_type, &runtime, &pattern,
                        &format, &opts))
    return NULL;
  int n = 0;
  if (opts && opts != Py_None) {
    if (!(fast = PySequence_Tuple(opts)))
      return NULL;
    if (PyTuple_Size(fast) > 32) {
      Py_DECREF(fast);
      return wp_raise_code(WF_INVALID_ARGUMENT, "too many reader options");
    }
    for (; n < PyTuple_Size(fast); n++) {
      PyObject *v;
      const char *name;
      if (!PyArg_ParseTuple(PyTuple_GetItem(fast, n), "sO", &name, &v)) {
        Py_DECREF(fast);
        return NULL;
      }
      memset(&items[n], 0, sizeof items[n]);
      items[n].name = name;
      items[n].value.count = 1;
      if (PyBool_Check(v)) {
        items[n].value.type = WF_ATTR_BOOL;
        items[n].value.u.b = v == Py_True;
      } else if (PyLong_Check(v)) {
        items[n].value.type = WF_ATTR_INT;
        items[n].value.u.i = PyLong_AsLongLong(v);
      } else if (PyFloat_Check(v)) {
        items[n].value.type = WF_ATTR_FLOAT;
        items[n].value.u.f = PyFloat_AsDouble(v);
      } else if (PyUnicode_Check(v)) {
        items[n].value.type = WF_ATTR_STRING;
        items[n].value.u.s = PyUnicode_AsUTF8AndSize(v, NULL);
      } else {
        Py_DECREF(fast);
        return wp_raise_code(WF_INVALID_ARGUMENT,
                             "reader option '%s': a str, int, float or bool "
                             "is needed",
                             name);
      }
      if (PyErr_Occurred()) {
        Py_DECREF(fast);
        return NULL;
      }
    }
  }
  wf_status *st = wp_status();
  if (!st) {
    Py_XDECREF(fast);
    return NULL;
  }
  wf_dataset *ds;
  wf_runtime *rt = ((wp_runtime *)runtime)->rt;
  Py_BEGIN_ALLOW_THREADS
  ds = wf_dataset_from_files(rt, pattern, format, items, n, st);
  Py_END_ALLOW_THREADS
  Py_XDECREF(fast);
  return dataset_wrap(ds, st, Py_BuildValue("(O)", runtime));
}

#define STAGE(call)                                                            \
  wf_status *st = wp_status();                                                 \
  if (!st)                                                                     \
    return NULL;                                                               \
  wf_dataset *in = wf_dataset_retain(DS(self));                                \
  return dataset_wrap(call, st, keep_with(self, NULL, NULL))

static PyObject *ds_shuffle(PyObject *self, PyObject *args) {
  long long buf;
  unsigned long long seed = 0;
  if (!PyArg_ParseTuple(args, "L|K", &buf, &seed))
    return NULL;
  STAGE(wf_dataset_shuffle(in, buf, seed, st));
}

static PyObject *ds_batch(PyObject *self, PyObject *args) {
  long long n;
  int drop = 0;
  if (!PyArg_ParseTuple(args, "L|p", &n, &drop))
    return NULL;
  STAGE(wf_dataset_batch(in, n, drop, st));
}

static PyObject *ds_prefetch(PyObject *self, PyObject *args) {
  int n;
  if (!PyArg_ParseTuple(args, "i", &n))
    return NULL;
  STAGE(wf_dataset_prefetch(in, n, st));
}

static PyObject *ds_cache(PyObject *self, PyObject *args) {
  (void)args;
  STAGE(wf_dataset_cache(in, st));
}

static PyObject *ds_repeat(PyObject *self, PyObject *args) {
  long long n = -1;
  if (!PyArg_ParseTuple(args, "|L", &n))
    return NULL;
  STAGE(wf_dataset_repeat(in, n, st));
}

static PyObject *ds_shard(PyObject *self, PyObject *args) {
  long long n, i;
  if (!PyArg_ParseTuple(args, "LL", &n, &i))
    return NULL;
  STAGE(wf_dataset_shard(in, n, i, st));
}

/* shard_by_task(runtime): this task's elements in a data-parallel job. */
static PyObject *ds_shard_by_task(PyObject *self, PyObject *args) {
  PyObject *runtime;
  if (!PyArg_ParseTuple(args, "O", &runtime))
    return NULL;
  wf_runtime *rt = wp_runtime_get(runtime);
  if (!rt)
    return NULL;
  wf_status *st = wp_status();
  if (!st)
    return NULL;
  wf_dataset *in = wf_dataset_retain(DS(self));
  return dataset_wrap(wf_dataset_shard_by_task(in, rt, st), st,
                      keep_with(self, runtime, NULL));
}

/* parallel_task_batch(runtime, global_batch) -> this task's batch. */
static PyObject *m_parallel_task_batch(PyObject *self, PyObject *args) {
  (void)self;
  PyObject *runtime;
  long long global;
  if (!PyArg_ParseTuple(args, "OL", &runtime, &global))
    return NULL;
  wf_runtime *rt = wp_runtime_get(runtime);
  if (!rt)
    return NULL;
  wf_status *st = wp_status();
  if (!st)
    return NULL;
  int64_t b = 0;
  int rc;
  Py_BEGIN_ALLOW_THREADS
  rc = wf_parallel_task_batch(rt, global, &b, st);
  Py_END_ALLOW_THREADS
  PyObject *r = rc ? wp_raise(st, NULL) : PyLong_FromLongLong(b);
  wf_status_free(st);
  return r;
}

static PyObject *ds_interleave(PyObject *self, PyObject *args) {
  int c, b = 1;
  if (!PyArg_ParseTuple(args, "i|i", &c, &b))
    return NULL;
  STAGE(wf_dataset_interleave(in, c, b, st));
}

static PyObject *ds_map_scale(PyObject *self, PyObject *args) {
  const char *f;
  double a, b = 0.0;
  if (!PyArg_ParseTuple(args, "sd|d", &f, &a, &b))
    return NULL;
  STAGE(wf_dataset_map_scale(in, f, a, b, st));
}

static PyObject *ds_map_cast(PyObject *self, PyObject *args) {
  const char *f;
  int dt;
  if (!PyArg_ParseTuple(args, "si", &f, &dt))
    return NULL;
  STAGE(wf_dataset_map_cast(in, f, (wf_dtype)dt, st));
}

static PyObject *ds_map_one_hot(PyObject *self, PyObject *args) {
  const char *f;
  long long depth;
  if (!PyArg_ParseTuple(args, "sL", &f, &depth))
    return NULL;
  STAGE(wf_dataset_map_one_hot(in, f, depth, st));
}

static PyObject *ds_zip(PyObject *self, PyObject *args) {
  PyObject *other;
  if (!PyArg_ParseTuple(args, "O!", wp_dataset_type, &other))
    return NULL;
  wf_status *st = wp_status();
  if (!st)
    return NULL;
  wf_dataset *a = wf_dataset_retain(DS(self));
  wf_dataset *b = wf_dataset_retain(DS(other));
  return dataset_wrap(wf_dataset_zip(a, b, st), st,
                      keep_with(self, ((wp_dataset *)other)->keep, NULL));
}

/* map_graph(graph, in_fields, inputs, out_fields, outputs) */
static PyObject *ds_map_graph(PyObject *self, PyObject *args) {
  PyObject *graph, *inf, *ins, *outf, *outs, *r = NULL;
  PyObject *inf_t = NULL, *outf_t = NULL;
  const char **in_names = NULL, **out_names = NULL;
  wf_output *in = NULL, *out = NULL;
  int nin = 0, nout = 0;
  if (!PyArg_ParseTuple(args, "O!OOOO", wp_graph_type, &graph, &inf, &ins,
                        &outf, &outs))
    return NULL;
  wf_graph *g = ((wp_graph *)graph)->g;
  if (!(in = wp_outputs_arg(g, ins, &nin)) ||
      !(out = wp_outputs_arg(g, outs, &nout)) ||
      !(inf_t = PySequence_Tuple(inf)) || !(outf_t = PySequence_Tuple(outf)))
    goto done;
  if (PyTuple_Size(inf_t) != nin || PyTuple_Size(outf_t) != nout) {
    wp_raise_code(WF_INVALID_ARGUMENT,
                  "map: field names and graph outputs differ in number");
    goto done;
  }
  in_names = calloc((size_t)nin + 1, sizeof *in_names);
  out_names = calloc((size_t)nout + 1, sizeof *out_names);
  if (!in_names || !out_names) {
    PyErr_NoMemory();
    goto done;
  }
  for (int i = 0; i < nin; i++)
    if (!(in_names[i] = PyUnicode_AsUTF8AndSize(PyTuple_GetItem(inf_t, i),
                                                NULL)))
      goto done;
  for (int i = 0; i < nout; i++)
    if (!(out_names[i] = PyUnicode_AsUTF8AndSize(PyTuple_GetItem(outf_t, i),
                                                 NULL)))
      goto done;
  wf_status *st = wp_status();
  if (!st)
    goto done;
  wf_dataset *ds = wf_dataset_retain(DS(self));
  r = dataset_wrap(wf_dataset_map_graph(ds, g, in_names, in, nin, out_names,
                                        out, nout, st),
                   st, keep_with(self, graph, NULL));
done:
  Py_XDECREF(inf_t);
  Py_XDECREF(outf_t);
  free(in_names);
  free(out_names);
  free(in);
  free(out);
  return r;
}

static PyObject *ds_fields(PyObject *self, PyObject *args) {
  (void)args;
  int n = wf_dataset_num_fields(DS(self));
  PyObject *l = PyList_New(n);
  for (int i = 0; l && i < n; i++) {
    wf_data_field f;
    wf_dataset_field(DS(self), i, &f);
    PyObject *t = Py_BuildValue("(siN)", f.name, (int)f.dtype,
                                wp_shape_tuple(&f.shape));
    if (!t) {
      Py_DECREF(l);
      return NULL;
    }
    PyList_SetItem(l, i, t);
  }
  return l;
}

static PyObject *ds_count(PyObject *self, PyObject *args) {
  (void)args;
  int64_t n = 0;
  int rc;
  wf_status *st = wp_status();
  if (!st)
    return NULL;
  wf_dataset *ds = DS(self);
  Py_BEGIN_ALLOW_THREADS
  rc = wf_dataset_count(ds, &n, st);
  Py_END_ALLOW_THREADS
  PyObject *r = rc ? wp_raise(st, NULL) : PyLong_FromLongLong(n);
  wf_status_free(st);
  return r;
}

static PyObject *ds_files(PyObject *self, PyObject *args) {
  (void)args;
  int n = wf_dataset_num_files(DS(self));
  PyObject *l = PyList_New(n);
  for (int i = 0; l && i < n; i++) {
    const char *reader = NULL;
    const char *f = wf_dataset_file(DS(self), i, &reader);
    PyList_SetItem(l, i, Py_BuildValue("(ss)", f, reader ? reader : ""));
  }
  return l;
}

static PyMethodDef dataset_methods[] = {
    {"shuffle", ds_shuffle, METH_VARARGS, "shuffle(buffer_size, seed=0)"},
    {"batch", ds_batch, METH_VARARGS, "batch(size, drop_remainder=False)"},
    {"prefetch", ds_prefetch, METH_VARARGS, "prefetch(buffer_size)"},
    {"cache", ds_cache, METH_NOARGS, NULL},
    {"repeat", ds_repeat, METH_VARARGS, "repeat(count=-1)"},
    {"shard", ds_shard, METH_VARARGS, "shard(num_shards, index)"},
    {"shard_by_task", ds_shard_by_task, METH_VARARGS,
     "shard_by_task(runtime)"},
    {"interleave", ds_interleave, METH_VARARGS, NULL},
    {"map_scale", ds_map_scale, METH_VARARGS, "map_scale(field, a, b=0)"},
    {"map_cast", ds_map_cast, METH_VARARGS, "map_cast(field, dtype)"},
    {"map_one_hot", ds_map_one_hot, METH_VARARGS, NULL},
    {"map_graph", ds_map_graph, METH_VARARGS, NULL},
    {"zip", ds_zip, METH_VARARGS, NULL},
    {"fields", ds_fields, METH_NOARGS, "[(name, dtype, shape)]"},
    {"count", ds_count, METH_NOARGS, NULL},
    {"files", ds_files, METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL}};

static PyType_Slot dataset_slots[] = {
    {Py_tp_dealloc, dataset_dealloc},
    {Py_tp_methods, dataset_methods},
    {Py_tp_doc, "An immutable description of a stream of elements."},
    {0, NULL}};

static PyType_Spec dataset_spec = {
    "weft._weft.Dataset", sizeof(wp_dataset), 0,
    Py_TPFLAGS_DEFAULT | Py_TPFLAGS_DISALLOW_INSTANTIATION, dataset_slots};

/* ---- Iterator ------------------------------------------------------------ */

static wf_iterator *iter_get(PyObject *self) {
  wf_iterator *it = ((wp_iterator *)self)->it;
  if (!it)
    wp_raise_code(WF_FAILED_PRECONDITION, "the iterator is closed");
  return it;
}

static PyObject *iterator_new(PyTypeObject *type, PyObject *args,
                              PyObject *kw) {
  static char *kwlist[] = {"dataset", "skip_bad_records", NULL};
  PyObject *ds;
  int skip = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O!|p", kwlist, wp_dataset_type,
                                   &ds, &skip))
    return NULL;
  wf_status *st = wp_status();
  if (!st)
    return NULL;
  wf_iterator_options o = WF_ITERATOR_OPTIONS_INIT;
  o.skip_bad_records = skip;
  wf_iterator *it = wf_iterator_new(DS(ds), &o, st);
  if (!it) {
    wp_raise(st, NULL);
    wf_status_free(st);
    return NULL;
  }
  wf_status_free(st);
  wp_iterator *self = PyObject_New(wp_iterator, type);
  if (!self) {
    wf_iterator_free(it);
    return NULL;
  }
  self->it = it;
  self->dataset = Py_NewRef(ds);
  self->attached = 0;
  return (PyObject *)self;
}

static void iter_free(wp_iterator *self) {
  wf_iterator *it = self->it;
  self->it = NULL;
  if (it) {
    Py_BEGIN_ALLOW_THREADS
    wf_iterator_free(it);
    Py_END_ALLOW_THREADS
  }
}

static void iterator_dealloc(PyObject *self) {
  PyTypeObject *tp = Py_TYPE(self);
  iter_free((wp_iterator *)self);
  Py_XDECREF(((wp_iterator *)self)->dataset);
  PyObject_Free(self);
  Py_DECREF(tp);
}

static PyObject *iterator_close(PyObject *self, PyObject *args) {
  (void)args;
  wp_iterator *it = (wp_iterator *)self;
  if (it->attached)
    return wp_raise_code(WF_FAILED_PRECONDITION,
                         "the iterator is attached to %d session%s: detach "
                         "it first",
                         it->attached, it->attached == 1 ? "" : "s");
  iter_free(it);
  Py_RETURN_NONE;
}

static PyObject *iterator_next(PyObject *self, PyObject *args) {
  (void)args;
  wf_iterator *it = iter_get(self);
  if (!it)
    return NULL;
  int n = wf_dataset_num_fields(wf_iterator_dataset(it));
  wf_tensor **f = calloc((size_t)n + 1, sizeof *f);
  wf_status *st = wp_status();
  if (!f || !st) {
    free(f);
    wf_status_free(st);
    return st ? PyErr_NoMemory() : NULL;
  }
  int rc;
  Py_BEGIN_ALLOW_THREADS
  rc = wf_iterator_next(it, f, st);
  Py_END_ALLOW_THREADS
  PyObject *r = NULL;
  if (rc) {
    wp_raise(st, NULL);
  } else if ((r = PyList_New(n))) {
    for (int i = 0; i < n; i++) {
      PyObject *a = wp_from_tensor(f[i]);
      f[i] = NULL;
      if (!a) {
        for (int j = i + 1; j < n; j++)
          wf_tensor_release(f[j]);
        Py_CLEAR(r);
        break;
      }
      PyList_SetItem(r, i, a);
    }
  } else {
    for (int i = 0; i < n; i++)
      wf_tensor_release(f[i]);
  }
  free(f);
  wf_status_free(st);
  return r;
}

static PyObject *iterator_reset(PyObject *self, PyObject *args) {
  (void)args;
  wf_iterator *it = iter_get(self);
  if (!it)
    return NULL;
  wf_status *st = wp_status();
  if (!st)
    return NULL;
  PyObject *r = wf_iterator_reset(it, st) ? wp_raise(st, NULL)
                                          : Py_NewRef(Py_None);
  wf_status_free(st);
  return r;
}

static PyObject *iterator_save(PyObject *self, PyObject *args) {
  (void)args;
  wf_iterator *it = iter_get(self);
  if (!it)
    return NULL;
  wf_status *st = wp_status();
  if (!st)
    return NULL;
  wf_tensor *t = wf_iterator_save(it, st);
  PyObject *r = NULL;
  if (!t)
    wp_raise(st, NULL);
  else
    r = PyBytes_FromStringAndSize(wf_tensor_data(t),
                                  (Py_ssize_t)wf_tensor_nbytes(t));
  wf_tensor_release(t);
  wf_status_free(st);
  return r;
}

static PyObject *iterator_restore(PyObject *self, PyObject *arg) {
  wf_iterator *it = iter_get(self);
  if (!it)
    return NULL;
  wf_tensor *t = wp_to_tensor(arg, WF_UINT8, "iterator position");
  if (!t)
    return NULL;
  wf_status *st = wp_status();
  PyObject *r = NULL;
  if (st)
    r = wf_iterator_restore(it, t, st) ? wp_raise(st, NULL)
                                       : Py_NewRef(Py_None);
  wf_tensor_release(t);
  wf_status_free(st);
  return r;
}

static PyObject *iterator_bad_records(PyObject *self, void *c) {
  (void)c;
  wf_iterator *it = iter_get(self);
  return it ? PyLong_FromLongLong(wf_iterator_bad_records(it)) : NULL;
}

static PyGetSetDef iterator_getset[] = {
    {"bad_records", iterator_bad_records, NULL, NULL, NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PyMethodDef iterator_methods[] = {
    {"next", iterator_next, METH_NOARGS,
     "The next element as a list of arrays; OutOfRangeError at the end."},
    {"reset", iterator_reset, METH_NOARGS, NULL},
    {"save", iterator_save, METH_NOARGS, "The position as bytes."},
    {"restore", iterator_restore, METH_O, NULL},
    {"close", iterator_close, METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL}};

static PyType_Slot iterator_slots[] = {
    {Py_tp_new, iterator_new},
    {Py_tp_dealloc, iterator_dealloc},
    {Py_tp_methods, iterator_methods},
    {Py_tp_getset, iterator_getset},
    {Py_tp_doc, "Iterator(dataset, skip_bad_records=False)"},
    {0, NULL}};

static PyType_Spec iterator_spec = {"weft._weft.Iterator", sizeof(wp_iterator),
                                    0, Py_TPFLAGS_DEFAULT, iterator_slots};

/* ---- graphs and sessions ------------------------------------------------ */

static PyObject *m_add_get_next(PyObject *mod, PyObject *args) {
  (void)mod;
  PyObject *graph, *ds;
  const char *iterator, *name = NULL;
  if (!PyArg_ParseTuple(args, "O!sO!|z", wp_graph_type, &graph, &iterator,
                        wp_dataset_type, &ds, &name))
    return NULL;
  wf_status *st = wp_status();
  if (!st)
    return NULL;
  wf_node *n = wf_graph_add_get_next(((wp_graph *)graph)->g, iterator,
                                     DS(ds), name, st);
  PyObject *r = n ? PyLong_FromLong(wf_node_id(n)) : wp_raise(st, NULL);
  wf_status_free(st);
  return r;
}

/* attach_iterator(session, name, iterator or None) */
static PyObject *m_attach_iterator(PyObject *mod, PyObject *args) {
  (void)mod;
  PyObject *sess, *it_o;
  const char *name;
  if (!PyArg_ParseTuple(args, "O!sO", wp_session_type, &sess, &name, &it_o))
    return NULL;
  wp_session *s = (wp_session *)sess;
  wf_iterator *it = NULL;
  if (it_o != Py_None) {
    if (!PyObject_TypeCheck(it_o, wp_iterator_type)) {
      PyErr_SetString(PyExc_TypeError, "weft: an Iterator or None is needed");
      return NULL;
    }
    if (!(it = iter_get(it_o)))
      return NULL;
  }
  wf_status *st = wp_status();
  if (!st)
    return NULL;
  if (wf_session_attach_iterator(s->s, name, it, st)) {
    wp_raise(st, NULL);
    wf_status_free(st);
    return NULL;
  }
  wf_status_free(st);
  PyObject *old = PyDict_GetItemString(s->iterators, name);
  if (old)
    ((wp_iterator *)old)->attached--;
  if (it) {
    ((wp_iterator *)it_o)->attached++;
    if (PyDict_SetItemString(s->iterators, name, it_o))
      return NULL;
  } else if (old && PyDict_DelItemString(s->iterators, name)) {
    return NULL;
  }
  Py_RETURN_NONE;
}

void wp_iterators_detach_all(PyObject *dict) {
  PyObject *k, *v;
  Py_ssize_t pos = 0;
  while (PyDict_Next(dict, &pos, &k, &v))
    if (PyObject_TypeCheck(v, wp_iterator_type))
      ((wp_iterator *)v)->attached--;
}

static PyMethodDef data_functions[] = {
    {"dataset_from_files", m_dataset_from_files, METH_VARARGS,
     "dataset_from_files(runtime, pattern, format=None, options=())"},
    {"add_get_next", m_add_get_next, METH_VARARGS,
     "add_get_next(graph, iterator_name, dataset, name=None) -> node id"},
    {"attach_iterator", m_attach_iterator, METH_VARARGS, NULL},
    {"parallel_task_batch", m_parallel_task_batch, METH_VARARGS,
     "parallel_task_batch(runtime, global_batch) -> task batch"},
    {NULL, NULL, 0, NULL}};

int wp_init_data(PyObject *m) {
  if (!(wp_dataset_type = (PyTypeObject *)PyType_FromSpec(&dataset_spec)) ||
      PyModule_AddObjectRef(m, "Dataset", (PyObject *)wp_dataset_type) < 0)
    return -1;
  if (!(wp_iterator_type = (PyTypeObject *)PyType_FromSpec(&iterator_spec)) ||
      PyModule_AddObjectRef(m, "Iterator", (PyObject *)wp_iterator_type) < 0)
    return -1;
  return PyModule_AddFunctions(m, data_functions);
}
