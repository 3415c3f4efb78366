/* python/src/module.c — the weft._weft module: its exception classes (one
 * per status code, all under weft.Error), the mapping from a wf_status to
 * them, and the registration of every type. The Python-facing API is built
 * over this module in the package's .py files. */
#include "weftpy.h"

#include <stdarg.h>
#include <stdio.h>

PyObject *wp_error;
PyObject *wp_errors[17];

/* TensorFlow's class names for the status codes. */
static const char *const error_names[17] = {
    NULL,                      "CancelledError",
    "UnknownError",            "InvalidArgumentError",
    "DeadlineExceededError",   "NotFoundError",
    "AlreadyExistsError",      "PermissionDeniedError",
    "ResourceExhaustedError",  "FailedPreconditionError",
    "AbortedError",            "OutOfRangeError",
    "UnimplementedError",      "InternalError",
    "UnavailableError",        "DataLossError",
    "UnauthenticatedError"};

static PyObject *error_class(wf_code code) {
  if ((int)code <= 0 || (int)code >= 17)
    return wp_errors[WF_UNKNOWN];
  return wp_errors[code];
}

/* Raises cls(message); the class carries .code. */
static void raise_with_code(wf_code code, const char *msg) {
  PyObject *m = PyUnicode_DecodeUTF8(msg, (Py_ssize_t)strlen(msg), "replace");
  if (!m)
    return;
  PyErr_SetObject(error_class(code), m);
  Py_DECREF(m);
}

PyObject *wp_raise(const wf_status *st, const char *what) {
  wf_code code = wf_status_code(st);
  const char *msg = wf_status_message(st);
  if (code == WF_OK) {
    code = WF_UNKNOWN;
    msg = "failed without a status message";
  }
  if (what && *what) {
    size_t n = strlen(what) + strlen(msg) + 3;
    char *buf = PyMem_Malloc(n);
    if (!buf)
      return PyErr_NoMemory();
    snprintf(buf, n, "%s: %s", what, msg);
    raise_with_code(code, buf);
    PyMem_Free(buf);
  } else {
    raise_with_code(code, msg);
  }
  return NULL;
}

int wp_fail(const wf_status *st, const char *what) {
  wp_raise(st, what);
  return -1;
}

PyObject *wp_raise_code(wf_code code, const char *fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  raise_with_code(code, buf);
  return NULL;
}

wf_status *wp_status(void) {
  wf_status *st = wf_status_new();
  if (!st)
    PyErr_NoMemory();
  return st;
}

/* ---- module functions ---------------------------------------------------- */

static PyObject *m_version(PyObject *self, PyObject *args) {
  (void)self;
  (void)args;
  return PyUnicode_FromString(wf_version());
}

static PyObject *m_code_name(PyObject *self, PyObject *arg) {
  (void)self;
  long c = PyLong_AsLong(arg);
  if (c == -1 && PyErr_Occurred())
    return NULL;
  return PyUnicode_FromString(wf_code_name((wf_code)c));
}

static PyObject *m_dtype_info(PyObject *self, PyObject *arg) {
  (void)self;
  long d = PyLong_AsLong(arg);
  if (d == -1 && PyErr_Occurred())
    return NULL;
  const char *name = wf_dtype_name((wf_dtype)d);
  if (!name)
    return wp_raise_code(WF_INVALID_ARGUMENT, "%ld is not a weft dtype", d);
  return Py_BuildValue("(sn)", name, (Py_ssize_t)wf_dtype_size((wf_dtype)d));
}

static PyObject *m_dtype_from_name(PyObject *self, PyObject *arg) {
  (void)self;
  const char *s = PyUnicode_AsUTF8AndSize(arg, NULL);
  if (!s)
    return NULL;
  return PyLong_FromLong((long)wf_dtype_from_name(s));
}

static PyObject *m_default_config_path(PyObject *self, PyObject *args) {
  (void)self;
  (void)args;
  const char *p = wf_config_default_path();
  if (!p)
    Py_RETURN_NONE;
  return PyUnicode_FromString(p);
}

static PyMethodDef module_methods[] = {
    {"version", m_version, METH_NOARGS, "libweft's version string."},
    {"code_name", m_code_name, METH_O, "Name of a status code."},
    {"dtype_info", m_dtype_info, METH_O, "(name, itemsize) of a dtype code."},
    {"dtype_from_name", m_dtype_from_name, METH_O,
     "dtype code of a name; 0 when unknown."},
    {"default_config_path", m_default_config_path, METH_NOARGS,
     "$WEFT_CONFIG or the installed config, or None."},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "weft._weft",
    "The C part of the weft package (limited API): runtimes, graphs, "
    "sessions, tensors as buffers, models, datasets and files.",
    -1, module_methods, NULL, NULL, NULL, NULL};

static int add_errors(PyObject *m) {
  PyObject *dict = Py_BuildValue("{s:i}", "code", (int)WF_UNKNOWN);
  if (!dict)
    return -1;
  wp_error = PyErr_NewExceptionWithDoc(
      "weft.Error",
      "A weft status other than OK. .code is the status code and .message "
      "the core's message (node, op, device, file and line when known).",
      NULL, dict);
  Py_DECREF(dict);
  if (!wp_error || PyModule_AddObjectRef(m, "Error", wp_error) < 0)
    return -1;
  for (int c = 1; c < 17; c++) {
    char qual[64];
    snprintf(qual, sizeof qual, "weft.%s", error_names[c]);
    PyObject *dict = Py_BuildValue("{s:i}", "code", c);
    if (!dict)
      return -1;
    wp_errors[c] = PyErr_NewException(qual, wp_error, dict);
    Py_DECREF(dict);
    if (!wp_errors[c] ||
        PyModule_AddObjectRef(m, error_names[c], wp_errors[c]) < 0)
      return -1;
  }
  return 0;
}

PyMODINIT_FUNC PyInit__weft(void) {
  PyObject *m = PyModule_Create(&module_def);
  if (!m)
    return NULL;
  if (add_errors(m) || wp_init_tensor(m) || wp_init_graph(m) ||
      wp_init_session(m) || wp_init_model(m) || wp_init_data(m) ||
      wp_init_io(m)) {
    Py_DECREF(m);
    return NULL;
  }
  return m;
}
