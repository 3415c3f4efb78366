/* python/src/weftpy.h — what the parts of the weft._weft extension share:
 * the object layouts, the exception classes, status-to-exception mapping
 * and the conversions between Python objects and wf_tensor.
 *
 * The extension is written against CPython's limited API (3.11, abi3): it
 * touches no interpreter internals and no NumPy headers; arrays cross as
 * buffers (PEP 3118) and DLPack capsules. It does not hold graph-building
 * policy: that lives in the Python modules of the package. */
#ifndef WEFTPY_H
#define WEFTPY_H

#define PY_SSIZE_T_CLEAN
#ifndef Py_LIMITED_API
#define Py_LIMITED_API 0x030B0000
#endif
#include <Python.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <weft/weft.h>

/* ---- exceptions (module.c) --------------------------------------------- */

/* weft.Error and one subclass per status code (index = wf_code). */
extern PyObject *wp_error;
extern PyObject *wp_errors[17];

/* Raises the exception of st's code with st's message (prefixed with what,
 * when what is not NULL). Returns NULL so callers can `return wp_raise(..)`. */
PyObject *wp_raise(const wf_status *st, const char *what);
/* As wp_raise with a code and a formatted message. */
PyObject *wp_raise_code(wf_code code, const char *fmt, ...);
/* -1 variants for functions returning int. */
int wp_fail(const wf_status *st, const char *what);

/* A status for one call; raises MemoryError and returns NULL when out of
 * memory. */
wf_status *wp_status(void);

/* ---- objects ------------------------------------------------------------ */

typedef struct {
  PyObject_HEAD
  wf_runtime *rt;
} wp_runtime;

typedef struct {
  PyObject_HEAD
  wf_graph *g;
  PyObject *runtime; /* wp_runtime, kept alive */
} wp_graph;

typedef struct {
  PyObject_HEAD
  wf_session *s;
  PyObject *graph; /* wp_graph */
  PyObject *iterators; /* dict: attached name -> wp_iterator */
  int closed;
} wp_session;

typedef struct {
  PyObject_HEAD
  wf_tensor *t;
  Py_ssize_t shape[WF_MAX_RANK];
  Py_ssize_t strides[WF_MAX_RANK];
  int exports; /* buffer views handed out */
} wp_buffer;

extern PyTypeObject *wp_runtime_type, *wp_graph_type, *wp_session_type,
    *wp_callable_type, *wp_buffer_type, *wp_metadata_type, *wp_model_type,
    *wp_dataset_type, *wp_iterator_type, *wp_saved_model_type;

/* Type registration of each part; 0 or -1 with an exception set. */
int wp_init_tensor(PyObject *m);
int wp_init_graph(PyObject *m);
int wp_init_session(PyObject *m);
int wp_init_model(PyObject *m);
int wp_init_data(PyObject *m);
int wp_init_io(PyObject *m);

/* A session's attached iterators (name -> Iterator) are let go. */
void wp_iterators_detach_all(PyObject *dict);

/* Checked accessors: raise (and return NULL) for a wrong type or a freed
 * object. */
wf_graph *wp_graph_get(PyObject *o);
wf_runtime *wp_runtime_get(PyObject *o);

/* ---- tensors (tensor.c) -------------------------------------------------- */

/* A new reference to a tensor holding obj's value. A buffer of dtype
 * `want` (or of any supported dtype when want is WF_DTYPE_INVALID) that is
 * C-contiguous is wrapped without copying; a DLPack-capable object on the
 * CPU likewise; anything else goes through numpy.ascontiguousarray with
 * the wanted dtype. NULL with an exception set. `what` names the value in
 * messages ("feed 'x:0'"). */
wf_tensor *wp_to_tensor(PyObject *obj, wf_dtype want, const char *what);
/* The Python value of a fetched tensor: a NumPy array sharing t's memory
 * (a weft Buffer for dtypes NumPy lacks). Takes over the reference. */
PyObject *wp_from_tensor(wf_tensor *t);
/* A Buffer object over t (takes over the reference). */
PyObject *wp_buffer_new(wf_tensor *t);

/* Node and output arguments. */
wf_node *wp_node_arg(wf_graph *g, PyObject *id);
int wp_output_arg(wf_graph *g, PyObject *item, wf_output *out);
/* A Python list of (node id, index) pairs or ints -> C arrays (malloc'd;
 * *n receives the count). */
wf_output *wp_outputs_arg(wf_graph *g, PyObject *seq, int *n);
wf_node **wp_nodes_arg(wf_graph *g, PyObject *seq, int *n);
PyObject *wp_output_tuple(wf_output o);

/* Sets attribute `name` of d from a (type code, value) pair. -1 with an
 * exception set. */
int wp_set_attr(wf_node_desc *d, const char *name, int type, PyObject *v);
/* A Python value for an attribute value. */
PyObject *wp_attr_value(const wf_attr_value *v);
PyObject *wp_shape_tuple(const wf_shape *s);
int wp_shape_arg(PyObject *o, wf_shape *s);

#endif /* WEFTPY_H */
