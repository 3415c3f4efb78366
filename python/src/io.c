/* python/src/io.c — files from Python: checkpoints of a session's
 * variables (save, restore, numbered checkpoints in a directory, reading
 * one back as arrays) and saved models (export a session's signatures,
 * load one and run a signature). Graph files are Graph methods
 * (graph.c). */
#include "weftpy.h"

#include <stdlib.h>

PyTypeObject *wp_saved_model_type;

typedef struct {
  PyObject_HEAD
  wf_saved_model *m;
  PyObject *runtime;
} wp_saved_model;

/* A tuple of str -> array of borrowed UTF-8 pointers (valid while the
 * tuple lives); *n receives the count. */
static const char **names_arg(PyObject *seq, PyObject **keep, int *n) {
  *keep = PySequence_Tuple(seq);
  if (!*keep)
    return NULL;
  Py_ssize_t k = PyTuple_Size(*keep);
  const char **a = calloc((size_t)k + 1, sizeof *a);
  if (!a) {
    PyErr_NoMemory();
    return NULL;
  }
  for (Py_ssize_t i = 0; i < k; i++)
    if (!(a[i] = PyUnicode_AsUTF8AndSize(PyTuple_GetItem(*keep, i), NULL))) {
      free(a);
      return NULL;
    }
  *n = (int)k;
  return a;
}

static wf_session *session_arg(PyObject *o) {
  if (!PyObject_TypeCheck(o, wp_session_type)) {
    PyErr_SetString(PyExc_TypeError, "weft: a Session is needed");
    return NULL;
  }
  return ((wp_session *)o)->s;
}

/* save(session, path, names=None, global_step=-1, variables_only=False) */
static PyObject *m_save(PyObject *mod, PyObject *args) {
  (void)mod;
  PyObject *so, *names = Py_None, *keep = NULL, *r = NULL;
  const char *path;
  long long gstep = -1;
  int vonly = 0, n = 0;
  const char **a = NULL;
  if (!PyArg_ParseTuple(args, "Os|OLp", &so, &path, &names, &gstep, &vonly))
    return NULL;
  wf_session *s = session_arg(so);
  if (!s)
    return NULL;
  if (names != Py_None && !(a = names_arg(names, &keep, &n)))
    goto done;
  wf_save_options o = WF_SAVE_OPTIONS_INIT;
  o.names = a;
  o.nnames = n;
  o.global_step = gstep;
  o.variables_only = vonly;
  wf_status *st = wp_status();
  if (!st)
    goto done;
  int rc;
  Py_BEGIN_ALLOW_THREADS
  rc = wf_session_save(s, path, &o, st);
  Py_END_ALLOW_THREADS
  r = rc ? wp_raise(st, NULL) : Py_NewRef(Py_None);
  wf_status_free(st);
done:
  free(a);
  Py_XDECREF(keep);
  return r;
}

/* restore(session, path, partial=False, names=None) */
static PyObject *m_restore(PyObject *mod, PyObject *args) {
  (void)mod;
  PyObject *so, *names = Py_None, *keep = NULL, *r = NULL;
  const char *path;
  int partial = 0, n = 0;
  const char **a = NULL;
  if (!PyArg_ParseTuple(args, "Os|pO", &so, &path, &partial, &names))
    return NULL;
  wf_session *s = session_arg(so);
  if (!s)
    return NULL;
  if (names != Py_None && !(a = names_arg(names, &keep, &n)))
    goto done;
  wf_restore_options o = WF_RESTORE_OPTIONS_INIT;
  o.partial = partial;
  o.names = a;
  o.nnames = n;
  wf_status *st = wp_status();
  if (!st)
    goto done;
  int rc;
  Py_BEGIN_ALLOW_THREADS
  rc = wf_session_restore(s, path, &o, st);
  Py_END_ALLOW_THREADS
  r = rc ? wp_raise(st, NULL) : Py_NewRef(Py_None);
  wf_status_free(st);
done:
  free(a);
  Py_XDECREF(keep);
  return r;
}

/* save_dir(session, dir, step, keep) -> path of the new checkpoint */
static PyObject *m_save_dir(PyObject *mod, PyObject *args) {
  (void)mod;
  PyObject *so;
  const char *dir;
  long long step;
  int keep;
  if (!PyArg_ParseTuple(args, "OsLi", &so, &dir, &step, &keep))
    return NULL;
  wf_session *s = session_arg(so);
  if (!s)
    return NULL;
  wf_status *st = wp_status();
  if (!st)
    return NULL;
  int rc;
  char path[4096];
  Py_BEGIN_ALLOW_THREADS
  rc = wf_checkpoint_save_dir(s, dir, step, keep, st) ||
       wf_checkpoint_path(dir, step, path, sizeof path, st);
  Py_END_ALLOW_THREADS
  PyObject *r = rc ? wp_raise(st, NULL) : PyUnicode_FromString(path);
  wf_status_free(st);
  return r;
}

/* latest(dir) -> path or None when the directory holds no checkpoint */
static PyObject *m_latest(PyObject *mod, PyObject *arg) {
  (void)mod;
  const char *dir = PyUnicode_AsUTF8AndSize(arg, NULL);
  if (!dir)
    return NULL;
  wf_status *st = wp_status();
  if (!st)
    return NULL;
  char path[4096];
  PyObject *r;
  if (wf_checkpoint_latest(dir, path, sizeof path, st)) {
    if (wf_status_code(st) == WF_NOT_FOUND)
      r = Py_NewRef(Py_None);
    else
      r = wp_raise(st, NULL);
  } else {
    r = PyUnicode_FromString(path);
  }
  wf_status_free(st);
  return r;
}

static PyObject *m_list(PyObject *mod, PyObject *arg) {
  (void)mod;
  const char *dir = PyUnicode_AsUTF8AndSize(arg, NULL);
  if (!dir)
    return NULL;
  wf_status *st = wp_status();
  if (!st)
    return NULL;
  int64_t *steps = NULL;
  int n = 0;
  PyObject *r;
  if (wf_checkpoint_list(dir, &steps, &n, st)) {
    r = wp_raise(st, NULL);
  } else {
    r = PyList_New(n);
    for (int i = 0; r && i < n; i++)
      PyList_SetItem(r, i, PyLong_FromLongLong(steps[i]));
  }
  free(steps);
  wf_status_free(st);
  return r;
}

/* read(path) -> (dict name -> array, dict metadata) */
static PyObject *m_read(PyObject *mod, PyObject *arg) {
  (void)mod;
  const char *path = PyUnicode_AsUTF8AndSize(arg, NULL);
  if (!path)
    return NULL;
  wf_status *st = wp_status();
  if (!st)
    return NULL;
  wf_checkpoint *c = wf_checkpoint_open(path, st);
  PyObject *t = NULL, *meta = NULL, *r = NULL;
  if (!c) {
    wp_raise(st, NULL);
    goto done;
  }
  if (!(t = PyDict_New()) || !(meta = PyDict_New()))
    goto done;
  for (int i = 0; i < wf_checkpoint_num_tensors(c); i++) {
    wf_tensor *x = wf_checkpoint_read(c, i, st);
    if (!x) {
      wp_raise(st, NULL);
      goto done;
    }
    PyObject *a = wp_from_tensor(x);
    if (!a || PyDict_SetItemString(t, wf_checkpoint_tensor_name(c, i), a)) {
      Py_XDECREF(a);
      goto done;
    }
    Py_DECREF(a);
  }
  for (int i = 0; i < wf_checkpoint_num_metadata(c); i++) {
    PyObject *v = PyUnicode_FromString(wf_checkpoint_metadata_value(c, i));
    if (!v || PyDict_SetItemString(meta, wf_checkpoint_metadata_key(c, i), v)) {
      Py_XDECREF(v);
      goto done;
    }
    Py_DECREF(v);
  }
  r = Py_BuildValue("(OO)", t, meta);
done:
  Py_XDECREF(t);
  Py_XDECREF(meta);
  if (c)
    wf_checkpoint_close(c);
  wf_status_free(st);
  return r;
}

/* export(session, dir, [(name, input_keys, inputs, output_keys, outputs)]) */
static PyObject *m_export(PyObject *mod, PyObject *args) {
  (void)mod;
  PyObject *so, *sigs_o, *sigs = NULL, *r = NULL;
  const char *dir;
  if (!PyArg_ParseTuple(args, "OsO", &so, &dir, &sigs_o))
    return NULL;
  wf_session *s = session_arg(so);
  if (!s)
    return NULL;
  wf_graph *g = ((wp_graph *)((wp_session *)so)->graph)->g;
  if (!(sigs = PySequence_Tuple(sigs_o)))
    return NULL;
  int n = (int)PyTuple_Size(sigs);
  wf_signature_def *defs = calloc((size_t)n + 1, sizeof *defs);
  PyObject **keeps = calloc((size_t)(2 * n) + 1, sizeof *keeps);
  if (!defs || !keeps) {
    PyErr_NoMemory();
    goto done;
  }
  for (int i = 0; i < n; i++) {
    PyObject *ik, *in, *ok, *on;
    const char *name;
    int nik = 0, nin = 0, nok = 0, non = 0;
    if (!PyArg_ParseTuple(PyTuple_GetItem(sigs, i), "sOOOO", &name, &ik, &in,
                          &ok, &on))
      goto done;
    defs[i].name = name;
    if (!(defs[i].input_keys = names_arg(ik, &keeps[2 * i], &nik)) ||
        !(defs[i].output_keys = names_arg(ok, &keeps[2 * i + 1], &nok)) ||
        !(defs[i].inputs = wp_outputs_arg(g, in, &nin)) ||
        !(defs[i].outputs = wp_outputs_arg(g, on, &non)))
      goto done;
    if (nik != nin || nok != non) {
      wp_raise_code(WF_INVALID_ARGUMENT,
                    "signature '%s': keys and tensors differ in number",
                    name);
      goto done;
    }
    defs[i].ninputs = nin;
    defs[i].noutputs = non;
  }
  wf_status *st = wp_status();
  if (!st)
    goto done;
  int rc;
  Py_BEGIN_ALLOW_THREADS
  rc = wf_saved_model_export(s, dir, defs, n, st);
  Py_END_ALLOW_THREADS
  r = rc ? wp_raise(st, NULL) : Py_NewRef(Py_None);
  wf_status_free(st);
done:
  if (defs)
    for (int i = 0; i < n; i++) {
      free((void *)defs[i].input_keys);
      free((void *)defs[i].output_keys);
      free((void *)defs[i].inputs);
      free((void *)defs[i].outputs);
    }
  if (keeps)
    for (int i = 0; i < 2 * n; i++)
      Py_XDECREF(keeps[i]);
  free(keeps);
  free(defs);
  Py_XDECREF(sigs);
  return r;
}

/* ---- SavedModel ---------------------------------------------------------- */

static PyObject *sm_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
  (void)kw;
  PyObject *runtime;
  const char *dir;
  if (!PyArg_ParseTuple(args, "O!s", wp_runtime_type, &runtime, &dir))
    return NULL;
  wf_status *st = wp_status();
  if (!st)
    return NULL;
  wf_saved_model *m;
  wf_runtime *rt = ((wp_runtime *)runtime)->rt;
  Py_BEGIN_ALLOW_THREADS
  m = wf_saved_model_load(rt, dir, st);
  Py_END_ALLOW_THREADS
  if (!m) {
    wp_raise(st, NULL);
    wf_status_free(st);
    return NULL;
  }
  wf_status_free(st);
  wp_saved_model *self = PyObject_New(wp_saved_model, type);
  if (!self) {
    wf_saved_model_free(m);
    return NULL;
  }
  self->m = m;
  self->runtime = Py_NewRef(runtime);
  return (PyObject *)self;
}

static void sm_dealloc(PyObject *self) {
  PyTypeObject *tp = Py_TYPE(self);
  wf_saved_model *m = ((wp_saved_model *)self)->m;
  Py_BEGIN_ALLOW_THREADS
  wf_saved_model_free(m);
  Py_END_ALLOW_THREADS
  Py_XDECREF(((wp_saved_model *)self)->runtime);
  PyObject_Free(self);
  Py_DECREF(tp);
}

#define SM(self) (((wp_saved_model *)(self))->m)

static PyObject *arg_dict(const wf_signature_arg *a) {
  return Py_BuildValue("{s:s,s:s,s:i,s:N}", "key", a->key, "tensor",
                       a->tensor, "dtype", (int)a->dtype, "shape",
                       wp_shape_tuple(&a->shape));
}

/* signatures() -> {name: {"inputs": [...], "outputs": [...]}} */
static PyObject *sm_signatures(PyObject *self, PyObject *args) {
  (void)args;
  wf_saved_model *m = SM(self);
  PyObject *d = PyDict_New();
  for (int i = 0; d && i < wf_saved_model_num_signatures(m); i++) {
    PyObject *ins = PyList_New(0), *outs = PyList_New(0);
    for (int j = 0; ins && j < wf_saved_model_num_inputs(m, i); j++) {
      wf_signature_arg a;
      wf_saved_model_input(m, i, j, &a);
      PyObject *x = arg_dict(&a);
      if (!x || PyList_Append(ins, x))
        Py_CLEAR(ins);
      Py_XDECREF(x);
    }
    for (int j = 0; outs && j < wf_saved_model_num_outputs(m, i); j++) {
      wf_signature_arg a;
      wf_saved_model_output(m, i, j, &a);
      PyObject *x = arg_dict(&a);
      if (!x || PyList_Append(outs, x))
        Py_CLEAR(outs);
      Py_XDECREF(x);
    }
    PyObject *e = (ins && outs) ? Py_BuildValue("{s:O,s:O}", "inputs", ins,
                                                "outputs", outs)
                                : NULL;
    Py_XDECREF(ins);
    Py_XDECREF(outs);
    if (!e || PyDict_SetItemString(d, wf_saved_model_signature_name(m, i),
                                   e)) {
      Py_XDECREF(e);
      Py_DECREF(d);
      return NULL;
    }
    Py_DECREF(e);
  }
  return d;
}

/* run(signature or None, {key: value}) -> {key: array} */
static PyObject *sm_run(PyObject *self, PyObject *args) {
  const char *sig_name;
  PyObject *feeds, *r = NULL;
  if (!PyArg_ParseTuple(args, "zO!", &sig_name, &PyDict_Type, &feeds))
    return NULL;
  wf_saved_model *m = SM(self);
  int sig = wf_saved_model_find_signature(m, sig_name);
  if (sig < 0)
    return wp_raise_code(WF_NOT_FOUND,
                         sig_name ? "the saved model has no signature '%s'"
                                  : "the saved model has several signatures: "
                                    "name one%s",
                         sig_name ? sig_name : "");
  int n = (int)PyDict_Size(feeds);
  int nout = wf_saved_model_num_outputs(m, sig);
  const char **keys = calloc((size_t)n + 1, sizeof *keys);
  wf_tensor **in = calloc((size_t)n + 1, sizeof *in);
  wf_tensor **out = calloc((size_t)nout + 1, sizeof *out);
  wf_status *st = NULL;
  int made = 0;
  if (!keys || !in || !out) {
    PyErr_NoMemory();
    goto done;
  }
  PyObject *k, *v;
  Py_ssize_t pos = 0;
  while (PyDict_Next(feeds, &pos, &k, &v)) {
    if (!(keys[made] = PyUnicode_AsUTF8AndSize(k, NULL)))
      goto done;
    wf_dtype want = WF_DTYPE_INVALID;
    for (int j = 0; j < wf_saved_model_num_inputs(m, sig); j++) {
      wf_signature_arg a;
      wf_saved_model_input(m, sig, j, &a);
      if (!strcmp(a.key, keys[made]))
        want = a.dtype;
    }
    char what[256];
    snprintf(what, sizeof what, "input '%s'", keys[made]);
    if (!(in[made] = wp_to_tensor(v, want, what)))
      goto done;
    made++;
  }
  if (!(st = wp_status()))
    goto done;
  int rc;
  Py_BEGIN_ALLOW_THREADS
  rc = wf_saved_model_run(m, sig, keys, in, n, out, st);
  Py_END_ALLOW_THREADS
  if (rc) {
    wp_raise(st, NULL);
    goto done;
  }
  if (!(r = PyDict_New()))
    goto release;
  for (int j = 0; j < nout; j++) {
    wf_signature_arg a;
    wf_saved_model_output(m, sig, j, &a);
    PyObject *x = wp_from_tensor(out[j]);
    out[j] = NULL;
    if (!x || PyDict_SetItemString(r, a.key, x)) {
      Py_XDECREF(x);
      Py_CLEAR(r);
      break;
    }
    Py_DECREF(x);
  }
release:
  for (int j = 0; j < nout; j++)
    wf_tensor_release(out[j]);
done:
  for (int i = 0; i < made; i++)
    wf_tensor_release(in[i]);
  free(keys);
  free(in);
  free(out);
  wf_status_free(st);
  return r;
}

static PyMethodDef sm_methods[] = {
    {"signatures", sm_signatures, METH_NOARGS, NULL},
    {"run", sm_run, METH_VARARGS, "run(signature, {key: value})"},
    {NULL, NULL, 0, NULL}};

static PyType_Slot sm_slots[] = {
    {Py_tp_new, sm_new},
    {Py_tp_dealloc, sm_dealloc},
    {Py_tp_methods, sm_methods},
    {Py_tp_doc, "SavedModel(runtime, dir): a loaded saved model."},
    {0, NULL}};

static PyType_Spec sm_spec = {"weft._weft.SavedModel", sizeof(wp_saved_model),
                              0, Py_TPFLAGS_DEFAULT, sm_slots};

/* import_saved_model(runtime, path, format or None, dir): a model file of
 * another framework (ONNX, ...) through the runtime's importer plugins,
 * written into dir as a saved model. */
static PyObject *m_import_saved_model(PyObject *self, PyObject *args) {
  (void)self;
  PyObject *runtime;
  const char *path, *format, *dir;
  if (!PyArg_ParseTuple(args, "O!szs", wp_runtime_type, &runtime, &path,
                        &format, &dir))
    return NULL;
  wf_status *st = wp_status();
  if (!st)
    return NULL;
  wf_runtime *rt = ((wp_runtime *)runtime)->rt;
  int rc;
  Py_BEGIN_ALLOW_THREADS
  rc = wf_import_saved_model(rt, path, format, dir, st);
  Py_END_ALLOW_THREADS
  if (rc) {
    wp_raise(st, NULL);
    wf_status_free(st);
    return NULL;
  }
  wf_status_free(st);
  Py_RETURN_NONE;
}

static PyMethodDef io_functions[] = {
    {"import_saved_model", m_import_saved_model, METH_VARARGS, NULL},
    {"checkpoint_save", m_save, METH_VARARGS, NULL},
    {"checkpoint_restore", m_restore, METH_VARARGS, NULL},
    {"checkpoint_save_dir", m_save_dir, METH_VARARGS, NULL},
    {"checkpoint_latest", m_latest, METH_O, NULL},
    {"checkpoint_list", m_list, METH_O, NULL},
    {"checkpoint_read", m_read, METH_O, NULL},
    {"saved_model_export", m_export, METH_VARARGS, NULL},
    {NULL, NULL, 0, NULL}};

int wp_init_io(PyObject *m) {
  if (!(wp_saved_model_type = (PyTypeObject *)PyType_FromSpec(&sm_spec)) ||
      PyModule_AddObjectRef(m, "SavedModel", (PyObject *)wp_saved_model_type) <
          0)
    return -1;
  return PyModule_AddFunctions(m, io_functions);
}
