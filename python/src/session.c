/* python/src/session.c — the Session, Callable and RunMetadata types:
 * runs with feeds converted to tensors without copying where the layout
 * allows, fetches returned as NumPy arrays over the fetched tensors, the
 * GIL released while a step runs. Nested fetch structures and name lookup
 * are the package's business; here everything is flat lists of ids. */
#include "weftpy.h"

#include <stdlib.h>
#include <time.h>

PyTypeObject *wp_session_type, *wp_callable_type, *wp_metadata_type;

typedef struct {
  PyObject_HEAD
  wf_callable *c;
  PyObject *session;
  int nfeeds, nfetches;
  int single; /* return the only fetch itself, not a list */
  wf_dtype *feed_dtypes;
  char **feed_names;
} wp_callable;

typedef struct {
  PyObject_HEAD
  wf_run_metadata *md;
} wp_metadata;

/* ---- Session ------------------------------------------------------------ */

static PyObject *session_new(PyTypeObject *type, PyObject *args,
                             PyObject *kw) {
  (void)kw;
  PyObject *graph;
  if (!PyArg_ParseTuple(args, "O!", wp_graph_type, &graph))
    return NULL;
  wf_status *st = wp_status();
  if (!st)
    return NULL;
  wf_session *s;
  wf_graph *g = ((wp_graph *)graph)->g;
  Py_BEGIN_ALLOW_THREADS
  s = wf_session_new(g, st);
  Py_END_ALLOW_THREADS
  if (!s) {
    wp_raise(st, NULL);
    wf_status_free(st);
    return NULL;
  }
  wf_status_free(st);
  wp_session *self = PyObject_New(wp_session, type);
  if (!self) {
    wf_session_free(s);
    return NULL;
  }
  self->s = s;
  self->graph = Py_NewRef(graph);
  self->iterators = PyDict_New();
  self->closed = 0;
  if (!self->iterators) {
    Py_DECREF(self);
    return NULL;
  }
  return (PyObject *)self;
}

static void session_dealloc(PyObject *self) {
  PyTypeObject *tp = Py_TYPE(self);
  wp_session *s = (wp_session *)self;
  if (s->s) {
    wf_session *ss = s->s;
    Py_BEGIN_ALLOW_THREADS
    wf_session_free(ss);
    Py_END_ALLOW_THREADS
  }
  if (s->iterators)
    wp_iterators_detach_all(s->iterators);
  Py_XDECREF(s->iterators);
  Py_XDECREF(s->graph);
  PyObject_Free(self);
  Py_DECREF(tp);
}

static PyObject *session_close(PyObject *self, PyObject *args) {
  (void)args;
  wp_session *s = (wp_session *)self;
  wf_session *ss = s->s;
  Py_BEGIN_ALLOW_THREADS
  wf_session_close(ss);
  Py_END_ALLOW_THREADS
  s->closed = 1;
  Py_RETURN_NONE;
}

static PyObject *session_closed(PyObject *self, void *c) {
  (void)c;
  return PyBool_FromLong(((wp_session *)self)->closed);
}

static wf_run_metadata *metadata_arg(PyObject *o) {
  if (!o || o == Py_None)
    return NULL;
  if (!PyObject_TypeCheck(o, wp_metadata_type)) {
    /* weft.RunMetadata holds the C object as _md. */
    PyObject *inner = PyObject_GetAttrString(o, "_md");
    if (inner && PyObject_TypeCheck(inner, wp_metadata_type)) {
      wf_run_metadata *md = ((wp_metadata *)inner)->md;
      Py_DECREF(inner); /* o keeps it alive */
      return md;
    }
    Py_XDECREF(inner);
    PyErr_Clear();
    PyErr_SetString(PyExc_TypeError, "weft: run_metadata must be a "
                                     "weft.RunMetadata");
    return (wf_run_metadata *)-1;
  }
  return ((wp_metadata *)o)->md;
}

/* Converts values (a sequence matching dtypes) into tensors; -1 with the
 * tensors made so far released. */
static int feed_tensors(PyObject *values, int n, const wf_dtype *dtypes,
                        char *const *names, wf_graph *g,
                        const wf_output *feeds, wf_tensor **out) {
  for (int i = 0; i < n; i++) {
    char what[300];
    if (names)
      snprintf(what, sizeof what, "feed '%s'", names[i]);
    else
      snprintf(what, sizeof what, "feed '%s:%d'",
               wf_node_name(feeds[i].node), (int)feeds[i].index);
    (void)g;
    PyObject *v = PyTuple_GetItem(values, i);
    if (!v || !(out[i] = wp_to_tensor(v, dtypes[i], what))) {
      for (int j = 0; j < i; j++)
        wf_tensor_release(out[j]);
      return -1;
    }
  }
  return 0;
}

static PyObject *fetch_list(wf_tensor **t, int n) {
  PyObject *l = PyList_New(n);
  if (!l) {
    for (int i = 0; i < n; i++)
      wf_tensor_release(t[i]);
    return NULL;
  }
  for (int i = 0; i < n; i++) {
    PyObject *a = wp_from_tensor(t[i]);
    if (!a) {
      for (int j = i + 1; j < n; j++)
        wf_tensor_release(t[j]);
      Py_DECREF(l);
      return NULL;
    }
    PyList_SetItem(l, i, a);
  }
  return l;
}

/* run(feeds, values, fetches, targets, trace_level=0, timeout_ms=0,
 *     metadata=None) -> list of fetched values */
static PyObject *session_run(PyObject *self, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"feeds",       "values",     "fetches",
                           "targets",     "trace_level", "timeout_ms",
                           "metadata",    NULL};
  PyObject *feeds_o, *values_o, *fetches_o, *targets_o, *md_o = Py_None;
  PyObject *values = NULL, *r = NULL;
  int trace = 0, nfeeds = 0, nfetches = 0, ntargets = 0;
  long long timeout = 0;
  wf_output *feeds = NULL, *fetches = NULL;
  wf_node **targets = NULL;
  wf_tensor **fv = NULL, **out = NULL;
  wf_status *st = NULL;
  wp_session *s = (wp_session *)self;
  wf_graph *g = ((wp_graph *)s->graph)->g;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "OOOO|iLO", kwlist, &feeds_o,
                                   &values_o, &fetches_o, &targets_o, &trace,
                                   &timeout, &md_o))
    return NULL;
  wf_run_metadata *md = metadata_arg(md_o);
  if (md == (wf_run_metadata *)-1)
    return NULL;
  if (!(feeds = wp_outputs_arg(g, feeds_o, &nfeeds)) ||
      !(fetches = wp_outputs_arg(g, fetches_o, &nfetches)) ||
      !(targets = wp_nodes_arg(g, targets_o, &ntargets)) ||
      !(values = PySequence_Tuple(values_o)))
    goto done;
  if (PyTuple_Size(values) != nfeeds) {
    wp_raise_code(WF_INVALID_ARGUMENT, "%d feeds but %zd values", nfeeds,
                  PyTuple_Size(values));
    goto done;
  }
  fv = calloc((size_t)nfeeds + 1, sizeof *fv);
  out = calloc((size_t)nfetches + 1, sizeof *out);
  wf_dtype *dts = calloc((size_t)nfeeds + 1, sizeof *dts);
  if (!fv || !out || !dts) {
    free(dts);
    PyErr_NoMemory();
    goto done;
  }
  for (int i = 0; i < nfeeds; i++)
    dts[i] = wf_node_output_dtype(feeds[i].node, feeds[i].index);
  int frc = feed_tensors(values, nfeeds, dts, NULL, g, feeds, fv);
  free(dts);
  if (frc)
    goto done;
  if (!(st = wp_status()))
    goto release;
  wf_run_options opt = WF_RUN_OPTIONS_INIT;
  opt.trace_level = trace;
  opt.timeout_ms = timeout;
  int rc;
  wf_session *ss = s->s;
  Py_BEGIN_ALLOW_THREADS
  rc = wf_session_run(ss, &opt, feeds, fv, nfeeds, fetches, out, nfetches,
                      targets, ntargets, md, st);
  Py_END_ALLOW_THREADS
  if (rc)
    wp_raise(st, NULL);
  else
    r = fetch_list(out, nfetches);
release:
  for (int i = 0; i < nfeeds; i++)
    wf_tensor_release(fv[i]);
done:
  Py_XDECREF(values);
  free(feeds);
  free(fetches);
  free(targets);
  free(fv);
  free(out);
  wf_status_free(st);
  return r;
}

/* prepare(feeds, fetches, targets, single=False) -> Callable */
static PyObject *session_prepare(PyObject *self, PyObject *args) {
  PyObject *feeds_o, *fetches_o, *targets_o;
  int single = 0, nfeeds = 0, nfetches = 0, ntargets = 0;
  wf_output *feeds = NULL, *fetches = NULL;
  wf_node **targets = NULL;
  wf_status *st = NULL;
  wp_callable *c = NULL;
  wp_session *s = (wp_session *)self;
  wf_graph *g = ((wp_graph *)s->graph)->g;
  if (!PyArg_ParseTuple(args, "OOO|p", &feeds_o, &fetches_o, &targets_o,
                        &single))
    return NULL;
  if (!(feeds = wp_outputs_arg(g, feeds_o, &nfeeds)) ||
      !(fetches = wp_outputs_arg(g, fetches_o, &nfetches)) ||
      !(targets = wp_nodes_arg(g, targets_o, &ntargets)) ||
      !(st = wp_status()))
    goto done;
  if (single && nfetches != 1) {
    wp_raise_code(WF_INVALID_ARGUMENT, "a single fetch needs one fetch");
    goto done;
  }
  wf_callable *wc;
  wf_session *ss = s->s;
  Py_BEGIN_ALLOW_THREADS
  wc = wf_session_prepare(ss, feeds, nfeeds, fetches, nfetches, targets,
                          ntargets, st);
  Py_END_ALLOW_THREADS
  if (!wc) {
    wp_raise(st, NULL);
    goto done;
  }
  c = PyObject_New(wp_callable, wp_callable_type);
  if (!c) {
    wf_callable_free(wc);
    goto done;
  }
  c->c = wc;
  c->session = Py_NewRef(self);
  c->nfeeds = nfeeds;
  c->nfetches = nfetches;
  c->single = single;
  c->feed_dtypes = calloc((size_t)nfeeds + 1, sizeof *c->feed_dtypes);
  c->feed_names = calloc((size_t)nfeeds + 1, sizeof *c->feed_names);
  if (!c->feed_dtypes || !c->feed_names) {
    Py_CLEAR(c);
    PyErr_NoMemory();
    goto done;
  }
  for (int i = 0; i < nfeeds; i++) {
    c->feed_dtypes[i] = wf_node_output_dtype(feeds[i].node, feeds[i].index);
    const char *nm = wf_node_name(feeds[i].node);
    size_t n = strlen(nm) + 16;
    if (!(c->feed_names[i] = malloc(n))) {
      Py_CLEAR(c);
      PyErr_NoMemory();
      goto done;
    }
    snprintf(c->feed_names[i], n, "%s:%d", nm, (int)feeds[i].index);
  }
done:
  free(feeds);
  free(fetches);
  free(targets);
  wf_status_free(st);
  return (PyObject *)c;
}

static PyGetSetDef session_getset[] = {
    {"closed", session_closed, NULL, "whether close() was called", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PyMethodDef session_methods[] = {
    {"run", (PyCFunction)(void (*)(void))session_run,
     METH_VARARGS | METH_KEYWORDS,
     "run(feeds, values, fetches, targets, trace_level=0, timeout_ms=0, "
     "metadata=None) -> list"},
    {"prepare", session_prepare, METH_VARARGS,
     "prepare(feeds, fetches, targets, single=False) -> Callable"},
    {"close", session_close, METH_NOARGS,
     "Cancels running steps; later runs fail with FailedPreconditionError."},
    {NULL, NULL, 0, NULL}};

static PyType_Slot session_slots[] = {
    {Py_tp_new, session_new},
    {Py_tp_dealloc, session_dealloc},
    {Py_tp_methods, session_methods},
    {Py_tp_getset, session_getset},
    {Py_tp_doc, "Session(graph): runs steps of a graph."},
    {0, NULL}};

static PyType_Spec session_spec = {"weft._weft.Session", sizeof(wp_session),
                                   0, Py_TPFLAGS_DEFAULT, session_slots};

/* ---- Callable ------------------------------------------------------------ */

static void callable_dealloc(PyObject *self) {
  PyTypeObject *tp = Py_TYPE(self);
  wp_callable *c = (wp_callable *)self;
  if (c->c)
    wf_callable_free(c->c);
  if (c->feed_names)
    for (int i = 0; i < c->nfeeds; i++)
      free(c->feed_names[i]);
  free(c->feed_names);
  free(c->feed_dtypes);
  Py_XDECREF(c->session);
  PyObject_Free(self);
  Py_DECREF(tp);
}

#define SMALL 8

static PyObject *callable_run(wp_callable *c, PyObject *values, int trace,
                              long long timeout, wf_run_metadata *md) {
  wf_tensor *fv_small[SMALL], *out_small[SMALL];
  wf_tensor **fv = fv_small, **out = out_small;
  PyObject *r = NULL;
  if (PyTuple_Size(values) != c->nfeeds)
    return wp_raise_code(WF_INVALID_ARGUMENT,
                         "the callable takes %d feed%s, %zd given",
                         c->nfeeds, c->nfeeds == 1 ? "" : "s",
                         PyTuple_Size(values));
  if (c->nfeeds > SMALL && !(fv = calloc((size_t)c->nfeeds, sizeof *fv)))
    return PyErr_NoMemory();
  if (c->nfetches > SMALL &&
      !(out = calloc((size_t)c->nfetches, sizeof *out))) {
    if (fv != fv_small)
      free(fv);
    return PyErr_NoMemory();
  }
  wf_status *st = NULL;
  if (feed_tensors(values, c->nfeeds, c->feed_dtypes, c->feed_names, NULL,
                   NULL, fv))
    goto done;
  if (!(st = wp_status()))
    goto release;
  wf_run_options opt = WF_RUN_OPTIONS_INIT;
  opt.trace_level = trace;
  opt.timeout_ms = timeout;
  int rc;
  wf_callable *wc = c->c;
  Py_BEGIN_ALLOW_THREADS
  rc = wf_callable_run(wc, (trace || timeout) ? &opt : NULL, fv, out, md, st);
  Py_END_ALLOW_THREADS
  if (rc)
    wp_raise(st, NULL);
  else if (c->single)
    r = wp_from_tensor(out[0]);
  else
    r = fetch_list(out, c->nfetches);
release:
  for (int i = 0; i < c->nfeeds; i++)
    wf_tensor_release(fv[i]);
done:
  wf_status_free(st);
  if (fv != fv_small)
    free(fv);
  if (out != out_small)
    free(out);
  return r;
}

static PyObject *callable_call(PyObject *self, PyObject *args, PyObject *kw) {
  if (kw && PyDict_Size(kw) > 0) {
    PyErr_SetString(PyExc_TypeError,
                    "weft: a callable takes its feeds by position (use "
                    "run_with for options)");
    return NULL;
  }
  return callable_run((wp_callable *)self, args, 0, 0, NULL);
}

/* run_with(values, trace_level=0, timeout_ms=0, metadata=None) */
static PyObject *callable_run_with(PyObject *self, PyObject *args,
                                   PyObject *kw) {
  static char *kwlist[] = {"values", "trace_level", "timeout_ms", "metadata",
                           NULL};
  PyObject *vals, *md_o = Py_None;
  int trace = 0;
  long long timeout = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O|iLO", kwlist, &vals, &trace,
                                   &timeout, &md_o))
    return NULL;
  wf_run_metadata *md = metadata_arg(md_o);
  if (md == (wf_run_metadata *)-1)
    return NULL;
  PyObject *t = PySequence_Tuple(vals);
  if (!t)
    return NULL;
  PyObject *r = callable_run((wp_callable *)self, t, trace, timeout, md);
  Py_DECREF(t);
  return r;
}

/* time_c(n, *feeds) -> seconds that n runs take when made from C: the
 * feeds are converted once and the loop runs without the GIL, as a C
 * program would call wf_callable_run (for bench/python_callable.py). */
static PyObject *callable_time_c(PyObject *self, PyObject *args) {
  wp_callable *c = (wp_callable *)self;
  Py_ssize_t n = PyTuple_Size(args);
  if (n < 1)
    return wp_raise_code(WF_INVALID_ARGUMENT, "time_c(n, *feeds)");
  long long iters = PyLong_AsLongLong(PyTuple_GetItem(args, 0));
  if (iters == -1 && PyErr_Occurred())
    return NULL;
  PyObject *vals = PyTuple_GetSlice(args, 1, n);
  if (!vals)
    return NULL;
  if (PyTuple_Size(vals) != c->nfeeds) {
    Py_DECREF(vals);
    return wp_raise_code(WF_INVALID_ARGUMENT, "the callable takes %d feeds",
                         c->nfeeds);
  }
  wf_tensor **fv = calloc((size_t)c->nfeeds + 1, sizeof *fv);
  wf_tensor **out = calloc((size_t)c->nfetches + 1, sizeof *out);
  wf_status *st = wp_status();
  PyObject *r = NULL;
  if (!fv || !out || !st) {
    if (st)
      PyErr_NoMemory();
    goto done;
  }
  if (feed_tensors(vals, c->nfeeds, c->feed_dtypes, c->feed_names, NULL,
                   NULL, fv))
    goto done;
  struct timespec t0, t1;
  int rc = 0;
  wf_callable *wc = c->c;
  int nf = c->nfetches;
  Py_BEGIN_ALLOW_THREADS
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (long long i = 0; i < iters && !rc; i++) {
    rc = wf_callable_run(wc, NULL, fv, out, NULL, st);
    for (int j = 0; !rc && j < nf; j++)
      wf_tensor_release(out[j]);
  }
  clock_gettime(CLOCK_MONOTONIC, &t1);
  Py_END_ALLOW_THREADS
  for (int i = 0; i < c->nfeeds; i++)
    wf_tensor_release(fv[i]);
  if (rc)
    wp_raise(st, NULL);
  else
    r = PyFloat_FromDouble((double)(t1.tv_sec - t0.tv_sec) +
                           (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9);
done:
  Py_DECREF(vals);
  free(fv);
  free(out);
  wf_status_free(st);
  return r;
}

static PyMethodDef callable_methods[] = {
    {"time_c", callable_time_c, METH_VARARGS,
     "time_c(n, *feeds) -> seconds for n runs made from C (benchmarks)"},
    {"run_with", (PyCFunction)(void (*)(void))callable_run_with,
     METH_VARARGS | METH_KEYWORDS,
     "run_with(values, trace_level=0, timeout_ms=0, metadata=None)"},
    {NULL, NULL, 0, NULL}};

static PyType_Slot callable_slots[] = {
    {Py_tp_dealloc, callable_dealloc},
    {Py_tp_call, callable_call},
    {Py_tp_methods, callable_methods},
    {Py_tp_doc, "A prepared signature: call it with the feeds in order."},
    {0, NULL}};

static PyType_Spec callable_spec = {
    "weft._weft.Callable", sizeof(wp_callable), 0,
    Py_TPFLAGS_DEFAULT | Py_TPFLAGS_DISALLOW_INSTANTIATION, callable_slots};

/* ---- RunMetadata --------------------------------------------------------- */

static PyObject *metadata_new(PyTypeObject *type, PyObject *args,
                              PyObject *kw) {
  (void)args;
  (void)kw;
  wf_run_metadata *md = wf_run_metadata_new();
  if (!md)
    return PyErr_NoMemory();
  wp_metadata *self = PyObject_New(wp_metadata, type);
  if (!self) {
    wf_run_metadata_free(md);
    return NULL;
  }
  self->md = md;
  return (PyObject *)self;
}

static void metadata_dealloc(PyObject *self) {
  PyTypeObject *tp = Py_TYPE(self);
  wf_run_metadata_free(((wp_metadata *)self)->md);
  PyObject_Free(self);
  Py_DECREF(tp);
}

#define MD(self) (((wp_metadata *)(self))->md)

static PyObject *metadata_nodes(PyObject *self, PyObject *args) {
  (void)args;
  int n = wf_run_metadata_num_nodes(MD(self));
  PyObject *l = PyList_New(n);
  for (int i = 0; l && i < n; i++) {
    wf_node_stats s;
    wf_run_metadata_node(MD(self), i, &s);
    const char *k = wf_run_metadata_node_kernel(MD(self), i);
    PyObject *d = Py_BuildValue(
        "{s:s,s:s,s:s,s:L,s:L,s:i,s:L,s:s}", "node", s.node ? s.node : "",
        "op", s.op ? s.op : "", "device", s.device ? s.device : "",
        "start_ns", (long long)s.start_ns, "end_ns", (long long)s.end_ns,
        "thread", (int)s.thread, "output_bytes", (long long)s.output_bytes,
        "kernel", k ? k : "");
    if (!d) {
      Py_DECREF(l);
      return NULL;
    }
    PyList_SetItem(l, i, d);
  }
  return l;
}

static PyObject *metadata_step_ns(PyObject *self, void *c) {
  (void)c;
  return PyLong_FromLongLong(wf_run_metadata_step_ns(MD(self)));
}

static PyObject *metadata_peak_bytes(PyObject *self, PyObject *args) {
  const char *dev = NULL;
  if (!PyArg_ParseTuple(args, "|z", &dev))
    return NULL;
  return PyLong_FromLongLong(wf_run_metadata_peak_bytes(MD(self), dev));
}

static PyObject *metadata_placements(PyObject *self, PyObject *args) {
  (void)args;
  int n = wf_run_metadata_num_placements(MD(self));
  PyObject *l = PyList_New(n);
  for (int i = 0; l && i < n; i++) {
    wf_placement_info p;
    wf_run_metadata_placement(MD(self), i, &p);
    PyObject *d = Py_BuildValue("{s:s,s:s,s:s,s:s}", "node", p.node,
                                "requested", p.requested, "device", p.device,
                                "reason", p.reason ? p.reason : "");
    if (!d) {
      Py_DECREF(l);
      return NULL;
    }
    PyList_SetItem(l, i, d);
  }
  return l;
}

static PyObject *metadata_notes(PyObject *self, PyObject *args) {
  (void)args;
  int n = wf_run_metadata_num_notes(MD(self));
  PyObject *l = PyList_New(n);
  for (int i = 0; l && i < n; i++)
    PyList_SetItem(l, i,
                   PyUnicode_FromString(wf_run_metadata_note(MD(self), i)));
  return l;
}

static PyObject *metadata_write_trace(PyObject *self, PyObject *arg) {
  const char *path = PyUnicode_AsUTF8AndSize(arg, NULL);
  if (!path)
    return NULL;
  wf_status *st = wp_status();
  if (!st)
    return NULL;
  PyObject *r = wf_run_metadata_write_trace(MD(self), path, st)
                    ? wp_raise(st, NULL)
                    : Py_NewRef(Py_None);
  wf_status_free(st);
  return r;
}

static PyGetSetDef metadata_getset[] = {
    {"step_ns", metadata_step_ns, NULL, "wall time of the step", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PyMethodDef metadata_methods[] = {
    {"nodes", metadata_nodes, METH_NOARGS, "per-node statistics (traced)"},
    {"peak_bytes", metadata_peak_bytes, METH_VARARGS, NULL},
    {"placements", metadata_placements, METH_NOARGS, NULL},
    {"notes", metadata_notes, METH_NOARGS, NULL},
    {"write_trace", metadata_write_trace, METH_O,
     "Writes the node timings as Chrome trace-event JSON."},
    {NULL, NULL, 0, NULL}};

static PyType_Slot metadata_slots[] = {
    {Py_tp_new, metadata_new},
    {Py_tp_dealloc, metadata_dealloc},
    {Py_tp_methods, metadata_methods},
    {Py_tp_getset, metadata_getset},
    {Py_tp_doc, "RunMetadata(): filled by a run that receives it."},
    {0, NULL}};

static PyType_Spec metadata_spec = {"weft._weft.RunMetadata",
                                    sizeof(wp_metadata), 0, Py_TPFLAGS_DEFAULT,
                                    metadata_slots};

int wp_init_session(PyObject *m) {
  if (!(wp_session_type = (PyTypeObject *)PyType_FromSpec(&session_spec)) ||
      PyModule_AddObjectRef(m, "Session", (PyObject *)wp_session_type) < 0)
    return -1;
  if (!(wp_callable_type = (PyTypeObject *)PyType_FromSpec(&callable_spec)) ||
      PyModule_AddObjectRef(m, "Callable", (PyObject *)wp_callable_type) < 0)
    return -1;
  if (!(wp_metadata_type = (PyTypeObject *)PyType_FromSpec(&metadata_spec)) ||
      PyModule_AddObjectRef(m, "RunMetadata", (PyObject *)wp_metadata_type) <
          0)
    return -1;
  return 0;
}
