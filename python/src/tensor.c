/* python/src/tensor.c — tensors across the Python boundary: the Buffer type
 * (a wf_tensor exported through the buffer protocol and DLPack, so NumPy
 * reads fetched tensors in place), the conversion of Python values into
 * tensors (buffers and DLPack capsules wrapped without copying), and the
 * argument helpers for nodes, outputs, shapes and attributes. It does not
 * decide dtypes for Python scalars: callers pass the dtype they want. */
#include "weftpy.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

PyTypeObject *wp_buffer_type;

/* ---- NumPy, found at run time ---------------------------------------- */

static PyObject *np_asarray, *np_ascontiguousarray;

static int numpy_load(void) {
  if (np_asarray)
    return 0;
  PyObject *np = PyImport_ImportModule("numpy");
  if (!np)
    return -1;
  np_asarray = PyObject_GetAttrString(np, "asarray");
  np_ascontiguousarray = PyObject_GetAttrString(np, "ascontiguousarray");
  Py_DECREF(np);
  if (!np_asarray || !np_ascontiguousarray) {
    Py_CLEAR(np_asarray);
    Py_CLEAR(np_ascontiguousarray);
    return -1;
  }
  return 0;
}

/* ---- dtypes and buffer formats --------------------------------------- */

/* The struct-module format of a dtype, or NULL where there is none. */
static const char *dtype_format(wf_dtype d) {
  switch (d) {
  case WF_FLOAT32: return "f";
  case WF_FLOAT64: return "d";
  case WF_FLOAT16: return "e";
  case WF_INT8: return "b";
  case WF_UINT8: return "B";
  case WF_INT32: return "i";
  case WF_INT64: return "q";
  case WF_BOOL: return "?";
  default: return NULL;
  }
}

/* The dtype of a buffer format and item size; WF_DTYPE_INVALID if none. */
static wf_dtype format_dtype(const char *f, Py_ssize_t itemsize) {
  if (!f)
    return itemsize == 1 ? WF_UINT8 : WF_DTYPE_INVALID;
  if (*f == '@' || *f == '=' || *f == '<')
    f++;
  else if (*f == '>' || *f == '!')
    return WF_DTYPE_INVALID; /* not this machine's byte order */
  if (!f[0] || f[1])
    return WF_DTYPE_INVALID;
  switch (f[0]) {
  case 'f': return itemsize == 4 ? WF_FLOAT32 : WF_DTYPE_INVALID;
  case 'd': return itemsize == 8 ? WF_FLOAT64 : WF_DTYPE_INVALID;
  case 'e': return itemsize == 2 ? WF_FLOAT16 : WF_DTYPE_INVALID;
  case 'b': return WF_INT8;
  case 'B': return WF_UINT8;
  case '?': return itemsize == 1 ? WF_BOOL : WF_DTYPE_INVALID;
  case 'h': case 'H': return WF_DTYPE_INVALID;
  case 'i': case 'l': case 'q':
    return itemsize == 4 ? WF_INT32 : itemsize == 8 ? WF_INT64
                                                     : WF_DTYPE_INVALID;
  default: return WF_DTYPE_INVALID;
  }
}

/* ---- Buffer ------------------------------------------------------------ */

PyObject *wp_buffer_new(wf_tensor *t) {
  wp_buffer *b = PyObject_New(wp_buffer, wp_buffer_type);
  if (!b) {
    wf_tensor_release(t);
    return NULL;
  }
  b->t = t;
  b->exports = 0;
  int rank = wf_tensor_rank(t);
  Py_ssize_t stride = (Py_ssize_t)wf_dtype_size(wf_tensor_dtype(t));
  for (int i = rank - 1; i >= 0; i--) {
    b->shape[i] = (Py_ssize_t)wf_tensor_dim(t, i);
    b->strides[i] = stride;
    stride *= b->shape[i];
  }
  return (PyObject *)b;
}

static void buffer_dealloc(PyObject *self) {
  wp_buffer *b = (wp_buffer *)self;
  PyTypeObject *tp = Py_TYPE(self);
  wf_tensor_release(b->t);
  b->t = NULL;
  PyObject_Free(self);
  Py_DECREF(tp);
}

static int buffer_get(PyObject *self, Py_buffer *view, int flags) {
  wp_buffer *b = (wp_buffer *)self;
  wf_dtype dt = wf_tensor_dtype(b->t);
  const char *fmt = dtype_format(dt);
  if (!fmt) {
    PyErr_Format(PyExc_BufferError,
                 "weft: a %s tensor has no buffer format (use DLPack or "
                 "cast it in the graph)",
                 wf_dtype_name(dt));
    view->obj = NULL;
    return -1;
  }
  if (flags & PyBUF_WRITABLE) {
    PyErr_SetString(PyExc_BufferError,
                    "weft: fetched tensors are read-only (the session may "
                    "share them); copy the array to write to it");
    view->obj = NULL;
    return -1;
  }
  view->buf = wf_tensor_data(b->t);
  view->len = (Py_ssize_t)wf_tensor_nbytes(b->t);
  view->itemsize = (Py_ssize_t)wf_dtype_size(dt);
  view->readonly = 1;
  view->format = (flags & PyBUF_FORMAT) ? (char *)fmt : NULL;
  view->ndim = wf_tensor_rank(b->t);
  view->shape = (flags & PyBUF_ND) ? b->shape : NULL;
  view->strides = ((flags & PyBUF_STRIDES) == PyBUF_STRIDES) ? b->strides
                                                             : NULL;
  view->suboffsets = NULL;
  view->internal = NULL;
  view->obj = Py_NewRef(self);
  b->exports++;
  return 0;
}

static void buffer_release(PyObject *self, Py_buffer *view) {
  (void)view;
  ((wp_buffer *)self)->exports--;
}

static PyObject *buffer_dtype(PyObject *self, void *c) {
  (void)c;
  return PyLong_FromLong((long)wf_tensor_dtype(((wp_buffer *)self)->t));
}

static PyObject *buffer_shape(PyObject *self, void *c) {
  (void)c;
  wf_shape s;
  wf_tensor_shape(((wp_buffer *)self)->t, &s);
  return wp_shape_tuple(&s);
}

static PyObject *buffer_nbytes(PyObject *self, void *c) {
  (void)c;
  return PyLong_FromSize_t(wf_tensor_nbytes(((wp_buffer *)self)->t));
}

static PyObject *buffer_address(PyObject *self, void *c) {
  (void)c;
  return PyLong_FromVoidPtr(wf_tensor_data(((wp_buffer *)self)->t));
}

static PyObject *buffer_repr(PyObject *self) {
  char buf[256];
  wf_tensor_str(((wp_buffer *)self)->t, 6, buf, sizeof buf);
  return PyUnicode_FromFormat("<weft.Buffer %s>", buf);
}

/* ---- DLPack (the structs of the DLPack ABI, version 0.x) ---------------- */

typedef struct {
  int32_t device_type; /* 1: CPU, 3: CUDA host memory */
  int32_t device_id;
} dl_device;

typedef struct {
  uint8_t code; /* 0 int, 1 uint, 2 float, 4 bfloat, 6 bool */
  uint8_t bits;
  uint16_t lanes;
} dl_dtype;

typedef struct {
  void *data;
  dl_device device;
  int32_t ndim;
  dl_dtype dtype;
  int64_t *shape;
  int64_t *strides;
  uint64_t byte_offset;
} dl_tensor;

typedef struct dl_managed {
  dl_tensor dl_tensor;
  void *manager_ctx;
  void (*deleter)(struct dl_managed *self);
} dl_managed;

static int dtype_to_dl(wf_dtype d, dl_dtype *out) {
  out->lanes = 1;
  out->bits = (uint8_t)(wf_dtype_size(d) * 8);
  switch (d) {
  case WF_FLOAT32: case WF_FLOAT64: case WF_FLOAT16: out->code = 2; break;
  case WF_BFLOAT16: out->code = 4; break;
  case WF_INT8: case WF_INT32: case WF_INT64: out->code = 0; break;
  case WF_UINT8: out->code = 1; break;
  case WF_BOOL: out->code = 6; break;
  default: return -1;
  }
  return 0;
}

static wf_dtype dl_to_dtype(dl_dtype t) {
  if (t.lanes != 1)
    return WF_DTYPE_INVALID;
  switch (t.code) {
  case 0:
    return t.bits == 8 ? WF_INT8 : t.bits == 32 ? WF_INT32
           : t.bits == 64 ? WF_INT64 : WF_DTYPE_INVALID;
  case 1: return t.bits == 8 ? WF_UINT8 : WF_DTYPE_INVALID;
  case 2:
    return t.bits == 32 ? WF_FLOAT32 : t.bits == 64 ? WF_FLOAT64
           : t.bits == 16 ? WF_FLOAT16 : WF_DTYPE_INVALID;
  case 4: return t.bits == 16 ? WF_BFLOAT16 : WF_DTYPE_INVALID;
  case 6: return t.bits == 8 ? WF_BOOL : WF_DTYPE_INVALID;
  default: return WF_DTYPE_INVALID;
  }
}

/* Deleter of the tensors we export: drops the Buffer they keep alive. */
static void dl_export_deleter(dl_managed *m) {
  PyGILState_STATE g = PyGILState_Ensure();
  Py_XDECREF((PyObject *)m->manager_ctx);
  PyGILState_Release(g);
  free(m->dl_tensor.shape);
  free(m);
}

static void dl_capsule_destructor(PyObject *cap) {
  /* Only a capsule nobody consumed still owns its tensor. */
  if (!PyCapsule_IsValid(cap, "dltensor"))
    return;
  dl_managed *m = PyCapsule_GetPointer(cap, "dltensor");
  if (m && m->deleter)
    m->deleter(m);
}

static PyObject *buffer_dlpack(PyObject *self, PyObject *args,
                               PyObject *kw) {
  static char *kwlist[] = {"stream", NULL};
  PyObject *stream = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "|O", kwlist, &stream))
    return NULL;
  if (stream != Py_None) {
    PyErr_SetString(PyExc_BufferError,
                    "weft: host tensors take no DLPack stream");
    return NULL;
  }
  wp_buffer *b = (wp_buffer *)self;
  dl_managed *m = calloc(1, sizeof *m);
  int rank = wf_tensor_rank(b->t);
  int64_t *shape = calloc((size_t)rank + 1, sizeof *shape);
  if (!m || !shape) {
    free(m);
    free(shape);
    return PyErr_NoMemory();
  }
  if (dtype_to_dl(wf_tensor_dtype(b->t), &m->dl_tensor.dtype)) {
    free(m);
    free(shape);
    PyErr_Format(PyExc_BufferError, "weft: a %s tensor has no DLPack type",
                 wf_dtype_name(wf_tensor_dtype(b->t)));
    return NULL;
  }
  for (int i = 0; i < rank; i++)
    shape[i] = wf_tensor_dim(b->t, i);
  m->dl_tensor.data = wf_tensor_data(b->t);
  m->dl_tensor.device.device_type = 1;
  m->dl_tensor.ndim = rank;
  m->dl_tensor.shape = shape;
  m->dl_tensor.strides = NULL; /* compact row-major */
  m->manager_ctx = Py_NewRef(self);
  m->deleter = dl_export_deleter;
  PyObject *cap = PyCapsule_New(m, "dltensor", dl_capsule_destructor);
  if (!cap)
    dl_export_deleter(m);
  return cap;
}

static PyObject *buffer_dlpack_device(PyObject *self, PyObject *args) {
  (void)self;
  (void)args;
  return Py_BuildValue("(ii)", 1, 0);
}

static PyObject *buffer_numpy(PyObject *self, PyObject *args) {
  (void)args;
  if (numpy_load())
    return NULL;
  return PyObject_CallFunctionObjArgs(np_asarray, self, NULL);
}

static PyGetSetDef buffer_getset[] = {
    {"dtype", buffer_dtype, NULL, "weft dtype code", NULL},
    {"shape", buffer_shape, NULL, "dimensions", NULL},
    {"nbytes", buffer_nbytes, NULL, "size in bytes", NULL},
    {"address", buffer_address, NULL, "address of the first element", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PyMethodDef buffer_methods[] = {
    {"__dlpack__", (PyCFunction)(void (*)(void))buffer_dlpack,
     METH_VARARGS | METH_KEYWORDS, "DLPack capsule over the tensor's memory."},
    {"__dlpack_device__", buffer_dlpack_device, METH_NOARGS,
     "(device type, id): the CPU."},
    {"numpy", buffer_numpy, METH_NOARGS,
     "A read-only NumPy array over the tensor's memory."},
    {NULL, NULL, 0, NULL}};

static PyType_Slot buffer_slots[] = {
    {Py_tp_dealloc, buffer_dealloc},
    {Py_tp_repr, buffer_repr},
    {Py_tp_getset, buffer_getset},
    {Py_tp_methods, buffer_methods},
    {Py_bf_getbuffer, buffer_get},
    {Py_bf_releasebuffer, buffer_release},
    {Py_tp_doc, "A weft tensor held by Python: read through the buffer "
                "protocol (numpy.asarray) or DLPack without a copy."},
    {0, NULL}};

static PyType_Spec buffer_spec = {
    "weft._weft.Buffer", sizeof(wp_buffer), 0,
    Py_TPFLAGS_DEFAULT | Py_TPFLAGS_DISALLOW_INSTANTIATION, buffer_slots};

/* ---- string tensors ------------------------------------------------------ */

/* A string tensor as a NumPy array of objects: str where an element is
 * UTF-8, else bytes. Takes t over. */
static PyObject *strings_to_array(wf_tensor *t) {
  int64_t n = wf_tensor_count(t);
  PyObject *list = NULL, *shape = NULL, *flat = NULL, *out = NULL;
  if (numpy_load())
    goto done;
  if (!(list = PyList_New((Py_ssize_t)n)))
    goto done;
  for (int64_t i = 0; i < n; i++) {
    size_t len;
    const char *s = wf_tensor_string(t, i, &len);
    PyObject *item = PyUnicode_DecodeUTF8(s, (Py_ssize_t)len, "strict");
    if (!item) {
      PyErr_Clear();
      item = PyBytes_FromStringAndSize(s, (Py_ssize_t)len);
    }
    if (!item || PyList_SetItem(list, (Py_ssize_t)i, item))
      goto done;
  }
  if (!(shape = PyTuple_New(wf_tensor_rank(t))))
    goto done;
  for (int i = 0; i < wf_tensor_rank(t); i++) {
    PyObject *d = PyLong_FromLongLong((long long)wf_tensor_dim(t, i));
    if (!d || PyTuple_SetItem(shape, i, d))
      goto done;
  }
  flat = PyObject_CallFunction(np_asarray, "Os", list, "object");
  if (flat)
    out = PyObject_CallMethod(flat, "reshape", "O", shape);
done:
  Py_XDECREF(flat);
  Py_XDECREF(shape);
  Py_XDECREF(list);
  wf_tensor_release(t);
  return out;
}

/* A string tensor from an array of str or bytes (NumPy kinds U, S, O). */
static wf_tensor *strings_from_array(PyObject *arr, const char *what) {
  wf_tensor *t = NULL;
  const char **strs = NULL;
  size_t *lens = NULL;
  int64_t dims[WF_MAX_RANK];
  PyObject *flat = NULL, *list = NULL;
  PyObject *shape = PyObject_GetAttrString(arr, "shape");
  if (!shape)
    return NULL;
  Py_ssize_t rank = PyTuple_Size(shape);
  if (rank < 0 || rank > WF_MAX_RANK) {
    wp_raise_code(WF_INVALID_ARGUMENT, "%s: rank %zd is above weft's %d",
                  what, rank, WF_MAX_RANK);
    goto done;
  }
  for (Py_ssize_t i = 0; i < rank; i++)
    dims[i] = PyLong_AsLongLong(PyTuple_GetItem(shape, i));
  if (PyErr_Occurred())
    goto done;
  if (!(flat = PyObject_CallMethod(arr, "ravel", NULL)) ||
      !(list = PyObject_CallMethod(flat, "tolist", NULL)))
    goto done;
  Py_ssize_t n = PyList_Size(list);
  strs = calloc((size_t)n + 1, sizeof *strs);
  lens = calloc((size_t)n + 1, sizeof *lens);
  if (!strs || !lens) {
    PyErr_NoMemory();
    goto done;
  }
  for (Py_ssize_t i = 0; i < n; i++) {
    PyObject *item = PyList_GetItem(list, i);
    Py_ssize_t len = 0;
    if (PyUnicode_Check(item)) {
      strs[i] = PyUnicode_AsUTF8AndSize(item, &len);
      if (!strs[i])
        goto done;
    } else if (PyBytes_Check(item)) {
      char *p;
      if (PyBytes_AsStringAndSize(item, &p, &len))
        goto done;
      strs[i] = p;
    } else {
      wp_raise_code(WF_INVALID_ARGUMENT,
                    "%s: element %zd is neither str nor bytes (an object "
                    "array or a list becomes a string tensor only when it "
                    "holds str or bytes)",
                    what, i);
      goto done;
    }
    lens[i] = (size_t)len;
  }
  wf_status *st = wf_status_new();
  t = wf_tensor_new_strings(dims, (int)rank, strs, lens, st);
  if (!t)
    wp_raise_code(wf_status_code(st), "%s: %s", what, wf_status_message(st));
  wf_status_free(st);
done:
  free(strs);
  free(lens);
  Py_XDECREF(list);
  Py_XDECREF(flat);
  Py_DECREF(shape);
  return t;
}

/* 1 when arr is a NumPy array of str, bytes or objects. */
static int is_string_array(PyObject *arr) {
  PyObject *dt = PyObject_GetAttrString(arr, "dtype");
  PyObject *kind = dt ? PyObject_GetAttrString(dt, "kind") : NULL;
  const char *k = kind ? PyUnicode_AsUTF8AndSize(kind, NULL) : NULL;
  int yes = k && (k[0] == 'U' || k[0] == 'S' || k[0] == 'O');
  PyErr_Clear();
  Py_XDECREF(kind);
  Py_XDECREF(dt);
  return yes;
}

PyObject *wp_from_tensor(wf_tensor *t) {
  if (t && wf_tensor_dtype(t) == WF_STRING)
    return strings_to_array(t);
  PyObject *b = wp_buffer_new(t);
  if (!b || !dtype_format(wf_tensor_dtype(t)))
    return b;
  if (numpy_load()) {
    Py_DECREF(b);
    return NULL;
  }
  PyObject *a = PyObject_CallFunctionObjArgs(np_asarray, b, NULL);
  Py_DECREF(b);
  return a;
}

/* ---- Python values into tensors ---------------------------------------- */

/* Keeps an exported buffer until the tensor wrapping it dies. */
static void release_view(void *data, size_t len, void *arg) {
  (void)data;
  (void)len;
  PyGILState_STATE g = PyGILState_Ensure();
  PyBuffer_Release((Py_buffer *)arg);
  PyGILState_Release(g);
  free(arg);
}

static void release_dlpack(void *data, size_t len, void *arg) {
  (void)data;
  (void)len;
  dl_managed *m = arg;
  PyGILState_STATE g = PyGILState_Ensure();
  if (m->deleter)
    m->deleter(m);
  PyGILState_Release(g);
}

/* Wraps a buffer already obtained (takes it over, also on failure). */
static wf_tensor *wrap_view(Py_buffer *view, wf_dtype dt, const char *what) {
  int64_t dims[WF_MAX_RANK];
  if (view->ndim > WF_MAX_RANK) {
    int ndim = view->ndim;
    PyBuffer_Release(view);
    free(view);
    wp_raise_code(WF_INVALID_ARGUMENT, "%s: rank %d is above weft's %d",
                  what, ndim, WF_MAX_RANK);
    return NULL;
  }
  for (int i = 0; i < view->ndim; i++)
    dims[i] = view->shape ? (int64_t)view->shape[i] : view->len;
  wf_status *st = wp_status();
  if (!st) {
    PyBuffer_Release(view);
    free(view);
    return NULL;
  }
  wf_tensor *t = wf_tensor_wrap(dt, dims, view->ndim, view->buf,
                                (size_t)view->len, release_view, view, st);
  if (!t)
    wp_raise(st, what);
  wf_status_free(st);
  return t;
}

static wf_tensor *from_dlpack(PyObject *obj, wf_dtype want,
                              const char *what) {
  PyObject *cap = PyObject_CallMethod(obj, "__dlpack__", NULL);
  if (!cap)
    return NULL;
  dl_managed *m = PyCapsule_GetPointer(cap, "dltensor");
  if (!m) {
    Py_DECREF(cap);
    return NULL;
  }
  dl_tensor *d = &m->dl_tensor;
  wf_dtype dt = dl_to_dtype(d->dtype);
  const char *why = NULL;
  if (d->device.device_type != 1 && d->device.device_type != 3)
    why = "it is not in host memory";
  else if (dt == WF_DTYPE_INVALID)
    why = "its element type has no weft dtype";
  else if (want != WF_DTYPE_INVALID && dt != want)
    why = "its dtype differs";
  else if (d->ndim > WF_MAX_RANK || d->ndim < 0)
    why = "its rank is above weft's";
  if (!why && d->strides) {
    int64_t expect = 1;
    for (int i = d->ndim - 1; i >= 0; i--) {
      if (d->shape[i] != 1 && d->strides[i] != expect)
        why = "it is not compact row-major";
      expect *= d->shape[i];
    }
  }
  if (why) {
    /* Not consumed: the capsule's destructor gives it back. */
    Py_DECREF(cap);
    return (wf_tensor *)wp_raise_code(WF_INVALID_ARGUMENT,
                                      "%s: cannot take a DLPack tensor: %s",
                                      what, why);
  }
  if (PyCapsule_SetName(cap, "used_dltensor")) {
    Py_DECREF(cap);
    return NULL;
  }
  Py_DECREF(cap);
  size_t n = wf_dtype_size(dt);
  for (int i = 0; i < d->ndim; i++)
    n *= (size_t)d->shape[i];
  wf_status *st = wp_status();
  if (!st) {
    release_dlpack(NULL, 0, m);
    return NULL;
  }
  wf_tensor *t = wf_tensor_wrap(dt, d->shape, d->ndim,
                                (char *)d->data + d->byte_offset, n,
                                release_dlpack, m, st);
  if (!t)
    wp_raise(st, what);
  wf_status_free(st);
  return t;
}

/* Tries obj as a C-contiguous buffer of dtype want: 1 wrapped into *out,
 * 0 not usable as it is (no exception), -1 error. */
static int try_buffer(PyObject *obj, wf_dtype want, const char *what,
                      wf_tensor **out) {
  if (!PyObject_CheckBuffer(obj))
    return 0;
  Py_buffer *view = malloc(sizeof *view);
  if (!view) {
    PyErr_NoMemory();
    return -1;
  }
  if (PyObject_GetBuffer(obj, view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT)) {
    PyErr_Clear();
    free(view);
    return 0;
  }
  wf_dtype dt = format_dtype(view->format, view->itemsize);
  if (dt == WF_DTYPE_INVALID || (want != WF_DTYPE_INVALID && dt != want)) {
    PyBuffer_Release(view);
    free(view);
    return 0;
  }
  *out = wrap_view(view, dt, what);
  return *out ? 1 : -1;
}

wf_tensor *wp_to_tensor(PyObject *obj, wf_dtype want, const char *what) {
  wf_tensor *t = NULL;
  if (Py_TYPE(obj) == wp_buffer_type) {
    wp_buffer *b = (wp_buffer *)obj;
    if (want == WF_DTYPE_INVALID || wf_tensor_dtype(b->t) == want)
      return wf_tensor_retain(b->t);
  }
  int r = try_buffer(obj, want, what, &t);
  if (r)
    return r > 0 ? t : NULL;
  if (!PyObject_CheckBuffer(obj) && PyObject_HasAttrString(obj, "__dlpack__"))
    return from_dlpack(obj, want, what);
  if (numpy_load())
    return NULL;
  PyObject *arr;
  if (want == WF_STRING) {
    arr = PyObject_CallFunction(np_asarray, "Os", obj, "object");
    t = arr ? strings_from_array(arr, what) : NULL;
    Py_XDECREF(arr);
    return t;
  }
  if (want != WF_DTYPE_INVALID) {
    if (want == WF_RESOURCE || want == WF_BFLOAT16)
      return (wf_tensor *)wp_raise_code(
          WF_INVALID_ARGUMENT, "%s: a %s value cannot be made from Python",
          what, wf_dtype_name(want));
    arr = PyObject_CallFunction(np_asarray, "Os", obj, wf_dtype_name(want));
  } else {
    arr = PyObject_CallFunctionObjArgs(np_asarray, obj, NULL);
  }
  if (arr && PyObject_CheckBuffer(arr)) {
    /* numpy.ascontiguousarray makes 0-d arrays 1-d: only for the others,
     * which may be strided. */
    Py_buffer probe;
    if (PyObject_GetBuffer(arr, &probe, PyBUF_C_CONTIGUOUS) == 0) {
      PyBuffer_Release(&probe);
    } else {
      PyErr_Clear();
      PyObject *c = PyObject_CallFunctionObjArgs(np_ascontiguousarray, arr,
                                                 NULL);
      Py_DECREF(arr);
      arr = c;
    }
  }
  if (!arr) {
    /* Keep the cause, say where it happened. */
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyObject *s = value ? PyObject_Str(value) : NULL;
    const char *msg = s ? PyUnicode_AsUTF8AndSize(s, NULL) : NULL;
    PyErr_Clear();
    wp_raise_code(WF_INVALID_ARGUMENT, "%s: cannot convert %s: %s", what,
                  want ? wf_dtype_name(want) : "the value",
                  msg ? msg : "unknown reason");
    Py_XDECREF(s);
    Py_XDECREF(type);
    Py_XDECREF(value);
    Py_XDECREF(tb);
    return NULL;
  }
  if (want == WF_DTYPE_INVALID && is_string_array(arr)) {
    t = strings_from_array(arr, what);
    Py_DECREF(arr);
    return t;
  }
  r = try_buffer(arr, want, what, &t);
  if (r == 0) {
    PyObject *tn = PyObject_GetAttrString(arr, "dtype");
    PyObject *ts = tn ? PyObject_Str(tn) : NULL;
    wp_raise_code(WF_INVALID_ARGUMENT,
                  "%s: NumPy dtype %s has no weft dtype", what,
                  ts ? PyUnicode_AsUTF8AndSize(ts, NULL) : "?");
    Py_XDECREF(tn);
    Py_XDECREF(ts);
  }
  Py_DECREF(arr);
  return r > 0 ? t : NULL;
}

/* ---- nodes, outputs, shapes, attributes ------------------------------- */

wf_node *wp_node_arg(wf_graph *g, PyObject *id) {
  long i = PyLong_AsLong(id);
  if (i == -1 && PyErr_Occurred())
    return NULL;
  if (i < 0 || i >= wf_graph_num_nodes(g)) {
    wp_raise_code(WF_INVALID_ARGUMENT, "node %ld is not in this graph", i);
    return NULL;
  }
  return wf_graph_node(g, (int)i);
}

int wp_output_arg(wf_graph *g, PyObject *item, wf_output *out) {
  PyObject *n = NULL, *k = NULL;
  if (PyTuple_Check(item) && PyTuple_Size(item) == 2) {
    n = PyTuple_GetItem(item, 0);
    k = PyTuple_GetItem(item, 1);
  } else {
    PyErr_SetString(PyExc_TypeError,
                    "weft: an output is a (node id, index) pair");
    return -1;
  }
  wf_node *node = wp_node_arg(g, n);
  if (!node)
    return -1;
  long idx = PyLong_AsLong(k);
  if (idx == -1 && PyErr_Occurred())
    return -1;
  if (idx < 0 || idx >= wf_node_num_outputs(node)) {
    wp_raise_code(WF_INVALID_ARGUMENT, "node '%s' has no output %ld",
                  wf_node_name(node), idx);
    return -1;
  }
  out->node = node;
  out->index = (int32_t)idx;
  return 0;
}

wf_output *wp_outputs_arg(wf_graph *g, PyObject *seq, int *n) {
  PyObject *fast = PySequence_Tuple(seq);
  if (!fast)
    return NULL;
  Py_ssize_t len = PyTuple_Size(fast);
  wf_output *outs = malloc(sizeof *outs * (size_t)(len + 1));
  if (!outs) {
    Py_DECREF(fast);
    return (wf_output *)PyErr_NoMemory();
  }
  for (Py_ssize_t i = 0; i < len; i++)
    if (wp_output_arg(g, PyTuple_GetItem(fast, i), &outs[i])) {
      free(outs);
      Py_DECREF(fast);
      return NULL;
    }
  Py_DECREF(fast);
  *n = (int)len;
  return outs;
}

wf_node **wp_nodes_arg(wf_graph *g, PyObject *seq, int *n) {
  PyObject *fast = PySequence_Tuple(seq);
  if (!fast)
    return NULL;
  Py_ssize_t len = PyTuple_Size(fast);
  wf_node **nodes = malloc(sizeof *nodes * (size_t)(len + 1));
  if (!nodes) {
    Py_DECREF(fast);
    return (wf_node **)PyErr_NoMemory();
  }
  for (Py_ssize_t i = 0; i < len; i++)
    if (!(nodes[i] = wp_node_arg(g, PyTuple_GetItem(fast, i)))) {
      free(nodes);
      Py_DECREF(fast);
      return NULL;
    }
  Py_DECREF(fast);
  *n = (int)len;
  return nodes;
}

PyObject *wp_output_tuple(wf_output o) {
  if (!o.node)
    Py_RETURN_NONE;
  return Py_BuildValue("(ii)", wf_node_id(o.node), (int)o.index);
}

PyObject *wp_shape_tuple(const wf_shape *s) {
  if (s->rank < 0)
    Py_RETURN_NONE;
  PyObject *t = PyTuple_New(s->rank);
  if (!t)
    return NULL;
  for (int i = 0; i < s->rank; i++) {
    PyObject *d = s->dims[i] < 0 ? Py_NewRef(Py_None)
                                 : PyLong_FromLongLong(s->dims[i]);
    if (!d) {
      Py_DECREF(t);
      return NULL;
    }
    PyTuple_SetItem(t, i, d);
  }
  return t;
}

int wp_shape_arg(PyObject *o, wf_shape *s) {
  if (o == Py_None) {
    wf_shape_unknown(s);
    return 0;
  }
  PyObject *fast = PySequence_Tuple(o);
  if (!fast)
    return -1;
  Py_ssize_t n = PyTuple_Size(fast);
  if (n > WF_MAX_RANK) {
    Py_DECREF(fast);
    wp_raise_code(WF_INVALID_ARGUMENT, "shape of rank %zd is above weft's %d",
                  n, WF_MAX_RANK);
    return -1;
  }
  memset(s, 0, sizeof *s);
  s->rank = (int32_t)n;
  for (Py_ssize_t i = 0; i < n; i++) {
    PyObject *d = PyTuple_GetItem(fast, i);
    if (d == Py_None) {
      s->dims[i] = -1;
      continue;
    }
    long long v = PyLong_AsLongLong(d);
    if (v == -1 && PyErr_Occurred()) {
      Py_DECREF(fast);
      return -1;
    }
    if (v < -1) {
      Py_DECREF(fast);
      wp_raise_code(WF_INVALID_ARGUMENT, "shape dimension %lld is negative",
                    v);
      return -1;
    }
    s->dims[i] = v;
  }
  Py_DECREF(fast);
  return 0;
}

/* A list attribute from a sequence: fills v with arrays that live in *mem
 * (freed by the caller). */
static int list_attr(int base, PyObject *seq, wf_attr_value *v,
                     void **mem, wf_tensor ***tensors, int *ntensors,
                     PyObject **strs) {
  PyObject *fast = PySequence_Tuple(seq);
  if (!fast)
    return -1;
  Py_ssize_t n = PyTuple_Size(fast);
  size_t esz = base == WF_ATTR_INT ? sizeof(int64_t)
               : base == WF_ATTR_FLOAT ? sizeof(double)
               : base == WF_ATTR_SHAPE ? sizeof(wf_shape)
               : base == WF_ATTR_STRING || base == WF_ATTR_TENSOR
                   ? sizeof(void *)
                   : sizeof(int32_t);
  void *a = calloc((size_t)n + 1, esz);
  if (!a) {
    Py_DECREF(fast);
    PyErr_NoMemory();
    return -1;
  }
  *mem = a;
  v->type = WF_ATTR_LIST | base;
  v->count = n;
  if (base == WF_ATTR_TENSOR) {
    *tensors = (wf_tensor **)a;
    *ntensors = 0;
  }
  *strs = fast; /* keeps the strings alive */
  for (Py_ssize_t i = 0; i < n; i++) {
    PyObject *it = PyTuple_GetItem(fast, i);
    switch (base) {
    case WF_ATTR_INT: {
      long long x = PyLong_AsLongLong(it);
      if (x == -1 && PyErr_Occurred())
        return -1;
      ((int64_t *)a)[i] = x;
      break;
    }
    case WF_ATTR_FLOAT: {
      double x = PyFloat_AsDouble(it);
      if (x == -1.0 && PyErr_Occurred())
        return -1;
      ((double *)a)[i] = x;
      break;
    }
    case WF_ATTR_BOOL: {
      int x = PyObject_IsTrue(it);
      if (x < 0)
        return -1;
      ((int32_t *)a)[i] = x;
      break;
    }
    case WF_ATTR_DTYPE: {
      long x = PyLong_AsLong(it);
      if (x == -1 && PyErr_Occurred())
        return -1;
      ((int32_t *)a)[i] = (int32_t)x;
      break;
    }
    case WF_ATTR_STRING: {
      const char *s = PyUnicode_AsUTF8AndSize(it, NULL);
      if (!s)
        return -1;
      ((const char **)a)[i] = s;
      break;
    }
    case WF_ATTR_SHAPE:
      if (wp_shape_arg(it, &((wf_shape *)a)[i]))
        return -1;
      break;
    case WF_ATTR_TENSOR: {
      wf_tensor *t = wp_to_tensor(it, WF_DTYPE_INVALID, "attribute tensor");
      if (!t)
        return -1;
      ((wf_tensor **)a)[i] = t;
      (*ntensors)++;
      break;
    }
    default:
      wp_raise_code(WF_INVALID_ARGUMENT, "unknown attribute type %d", base);
      return -1;
    }
  }
  switch (base) {
  case WF_ATTR_INT: v->u.ints = a; break;
  case WF_ATTR_FLOAT: v->u.floats = a; break;
  case WF_ATTR_BOOL: v->u.bools = a; break;
  case WF_ATTR_DTYPE: v->u.dtypes = a; break;
  case WF_ATTR_STRING: v->u.strings = a; break;
  case WF_ATTR_SHAPE: v->u.shapes = a; break;
  case WF_ATTR_TENSOR: v->u.tensors = (const wf_tensor *const *)a; break;
  }
  return 0;
}

int wp_set_attr(wf_node_desc *d, const char *name, int type, PyObject *o) {
  if (WF_ATTR_IS_LIST(type)) {
    wf_attr_value v;
    void *mem = NULL;
    wf_tensor **tensors = NULL;
    int ntensors = 0, rc = 0;
    PyObject *keep = NULL;
    memset(&v, 0, sizeof v);
    if (list_attr(WF_ATTR_BASE(type), o, &v, &mem, &tensors, &ntensors,
                  &keep))
      rc = -1;
    else
      wf_node_desc_set_attr(d, name, &v);
    for (int i = 0; i < ntensors; i++)
      wf_tensor_release(tensors[i]);
    free(mem);
    Py_XDECREF(keep);
    return rc;
  }
  switch (type) {
  case WF_ATTR_INT: {
    long long x = PyLong_AsLongLong(o);
    if (x == -1 && PyErr_Occurred())
      return -1;
    wf_node_desc_set_attr_int(d, name, x);
    return 0;
  }
  case WF_ATTR_FLOAT: {
    double x = PyFloat_AsDouble(o);
    if (x == -1.0 && PyErr_Occurred())
      return -1;
    wf_node_desc_set_attr_float(d, name, x);
    return 0;
  }
  case WF_ATTR_BOOL: {
    int x = PyObject_IsTrue(o);
    if (x < 0)
      return -1;
    wf_node_desc_set_attr_bool(d, name, x);
    return 0;
  }
  case WF_ATTR_STRING: {
    const char *s = PyUnicode_AsUTF8AndSize(o, NULL);
    if (!s)
      return -1;
    wf_node_desc_set_attr_string(d, name, s);
    return 0;
  }
  case WF_ATTR_DTYPE: {
    long x = PyLong_AsLong(o);
    if (x == -1 && PyErr_Occurred())
      return -1;
    wf_node_desc_set_attr_dtype(d, name, (wf_dtype)x);
    return 0;
  }
  case WF_ATTR_SHAPE: {
    wf_shape s;
    if (wp_shape_arg(o, &s))
      return -1;
    wf_node_desc_set_attr_shape(d, name, s.dims, s.rank);
    return 0;
  }
  case WF_ATTR_TENSOR: {
    wf_tensor *t = wp_to_tensor(o, WF_DTYPE_INVALID, "attribute tensor");
    if (!t)
      return -1;
    wf_node_desc_set_attr_tensor(d, name, t);
    wf_tensor_release(t);
    return 0;
  }
  default:
    wp_raise_code(WF_INVALID_ARGUMENT, "attribute '%s': unknown type %d",
                  name, type);
    return -1;
  }
}

static PyObject *tensor_copy_value(const wf_tensor *t) {
  /* Attribute tensors belong to the graph: hand out a reference of our
   * own so the array stays valid. */
  return wp_from_tensor(wf_tensor_retain((wf_tensor *)t));
}

PyObject *wp_attr_value(const wf_attr_value *v) {
  int base = WF_ATTR_BASE(v->type);
  if (!WF_ATTR_IS_LIST(v->type)) {
    switch (base) {
    case WF_ATTR_INT: return PyLong_FromLongLong(v->u.i);
    case WF_ATTR_FLOAT: return PyFloat_FromDouble(v->u.f);
    case WF_ATTR_BOOL: return PyBool_FromLong(v->u.b);
    case WF_ATTR_STRING: return PyUnicode_FromString(v->u.s ? v->u.s : "");
    case WF_ATTR_DTYPE: return PyLong_FromLong(v->u.dtype);
    case WF_ATTR_SHAPE: return wp_shape_tuple(&v->u.shape);
    case WF_ATTR_TENSOR:
      if (!v->u.tensor)
        Py_RETURN_NONE;
      return tensor_copy_value(v->u.tensor);
    default: Py_RETURN_NONE;
    }
  }
  PyObject *l = PyList_New(v->count);
  if (!l)
    return NULL;
  for (int64_t i = 0; i < v->count; i++) {
    PyObject *x;
    switch (base) {
    case WF_ATTR_INT: x = PyLong_FromLongLong(v->u.ints[i]); break;
    case WF_ATTR_FLOAT: x = PyFloat_FromDouble(v->u.floats[i]); break;
    case WF_ATTR_BOOL: x = PyBool_FromLong(v->u.bools[i]); break;
    case WF_ATTR_STRING: x = PyUnicode_FromString(v->u.strings[i]); break;
    case WF_ATTR_DTYPE: x = PyLong_FromLong(v->u.dtypes[i]); break;
    case WF_ATTR_SHAPE: x = wp_shape_tuple(&v->u.shapes[i]); break;
    case WF_ATTR_TENSOR: x = tensor_copy_value(v->u.tensors[i]); break;
    default: x = Py_NewRef(Py_None); break;
    }
    if (!x) {
      Py_DECREF(l);
      return NULL;
    }
    PyList_SetItem(l, (Py_ssize_t)i, x);
  }
  return l;
}

static PyObject *m_to_buffer(PyObject *self, PyObject *args) {
  (void)self;
  PyObject *obj;
  int dtype = 0;
  if (!PyArg_ParseTuple(args, "O|i", &obj, &dtype))
    return NULL;
  wf_tensor *t = wp_to_tensor(obj, (wf_dtype)dtype, "value");
  if (!t)
    return NULL;
  return wp_buffer_new(t);
}

static PyMethodDef tensor_functions[] = {
    {"to_buffer", m_to_buffer, METH_VARARGS,
     "to_buffer(value, dtype=0): a Buffer holding value (wrapping its memory "
     "when its layout allows)."},
    {NULL, NULL, 0, NULL}};

int wp_init_tensor(PyObject *m) {
  wp_buffer_type = (PyTypeObject *)PyType_FromSpec(&buffer_spec);
  if (!wp_buffer_type ||
      PyModule_AddObjectRef(m, "Buffer", (PyObject *)wp_buffer_type) < 0)
    return -1;
  return PyModule_AddFunctions(m, tensor_functions);
}
