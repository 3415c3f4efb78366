/* core/exec/variables.c — the variable store of a session and the host functions
 * that read, assign and update variables through handle tensors.
 *
 * It holds values only: initialising, saving and restoring them are the
 * graph's and the checkpoint code's business. */
#include <config.h>

#include <string.h>

#include "base/alloc.h"
#include "exec/kernel.h"
#include "graph/graph_internal.h"
#include "base/status_internal.h"
#include "base/strmap.h"
#include "graph/tensor_internal.h"
#include "plugin/device_memory.h"
#include "exec/variables.h"

struct wf__varstore {
  pthread_mutex_t mu; /* guards map and the array */
  wf__strmap map;     /* name -> wf__variable */
  wf__variable **vars;
  int n, cap;
};

wf__varstore *wf__varstore_new(void) {
  wf__varstore *vs = wf__calloc(1, sizeof *vs);
  if (!vs)
    return NULL;
  pthread_mutex_init(&vs->mu, NULL);
  wf__strmap_init(&vs->map);
  return vs;
}

static void variable_free(wf__variable *v) {
  if (v->value)
    wf__tensor_unstamp(v->value);
  wf_tensor_release(v->value);
  wf_tensor_release(v->handle);
  pthread_mutex_destroy(&v->mu);
  wf__free(v->name);
  wf__free(v);
}

void wf__varstore_free(wf__varstore *vs) {
  if (!vs)
    return;
  for (int i = 0; i < vs->n; i++)
    variable_free(vs->vars[i]);
  wf__free(vs->vars);
  wf__strmap_deinit(&vs->map);
  pthread_mutex_destroy(&vs->mu);
  wf__free(vs);
}

int wf__varstore_count(wf__varstore *vs) {
  pthread_mutex_lock(&vs->mu);
  int n = vs->n;
  pthread_mutex_unlock(&vs->mu);
  return n;
}

wf__variable *wf__varstore_at(wf__varstore *vs, int i) {
  pthread_mutex_lock(&vs->mu);
  wf__variable *v = i >= 0 && i < vs->n ? vs->vars[i] : NULL;
  pthread_mutex_unlock(&vs->mu);
  return v;
}

static wf__variable *variable_new(const char *name, wf_dtype dtype,
                                  const wf_shape *shape, wf_status *st) {
  wf__variable *v = wf__calloc(1, sizeof *v);
  if (!v)
    goto oom;
  v->name = wf__strdup(name);
  if (!v->name)
    goto oom;
  v->dtype = dtype;
  v->shape = *shape;
  pthread_mutex_init(&v->mu, NULL);
  v->handle = wf_tensor_new(WF_RESOURCE, NULL, 0, st);
  if (!v->handle) {
    pthread_mutex_destroy(&v->mu);
    wf__free(v->name);
    wf__free(v);
    return NULL;
  }
  *(wf__variable **)wf_tensor_data(v->handle) = v;
  return v;
oom:
  if (v)
    wf__free(v);
  wf_status_set(st, WF_RESOURCE_EXHAUSTED, "variable '%s': out of memory",
                name);
  return NULL;
}

wf__variable *wf__varstore_get(wf__varstore *vs, const char *name,
                               wf_dtype dtype, const wf_shape *shape,
                               wf_status *st) {
  char want[128], have[128];
  if (!wf_shape_is_known(shape)) {
    wf_status_set(st, WF_INVALID_ARGUMENT,
                  "variable '%s': shape %s is not fully known", name,
                  wf_shape_str(shape, want, sizeof want));
    return NULL;
  }
  if (!wf_dtype_size(dtype) || dtype == WF_RESOURCE) {
    wf_status_set(st, WF_INVALID_ARGUMENT, "variable '%s': bad dtype %d",
                  name, (int)dtype);
    return NULL;
  }
  pthread_mutex_lock(&vs->mu);
  wf__variable *v = wf__strmap_get(&vs->map, name);
  if (v) {
    if (v->dtype != dtype || !wf_shape_equal(&v->shape, shape)) {
      wf_status_set(st, WF_INVALID_ARGUMENT,
                    "variable '%s' exists as %s %s; a node asks for it as "
                    "%s %s",
                    name, wf_dtype_name(v->dtype),
                    wf_shape_str(&v->shape, have, sizeof have),
                    wf_dtype_name(dtype), wf_shape_str(shape, want, sizeof want));
      v = NULL;
    }
    pthread_mutex_unlock(&vs->mu);
    return v;
  }
  v = variable_new(name, dtype, shape, st);
  if (v && vs->n == vs->cap) {
    int cap = vs->cap ? vs->cap * 2 : 16;
    wf__variable **grown = wf__realloc(vs->vars, (size_t)cap * sizeof *grown);
    if (!grown) {
      variable_free(v);
      v = NULL;
      wf_status_set(st, WF_RESOURCE_EXHAUSTED, "variable '%s': out of memory",
                    name);
    } else {
      vs->vars = grown;
      vs->cap = cap;
    }
  }
  if (v && wf__strmap_put(&vs->map, v->name, v)) {
    variable_free(v);
    v = NULL;
    wf_status_set(st, WF_RESOURCE_EXHAUSTED, "variable '%s': out of memory",
                  name);
  }
  if (v)
    vs->vars[vs->n++] = v;
  pthread_mutex_unlock(&vs->mu);
  return v;
}

/* The variable behind a handle; NULL (with st set) for anything else. */
static wf__variable *var_of(const wf_tensor *h, wf_status *st) {
  if (!h || h->dtype != WF_RESOURCE || h->nbytes != sizeof(void *)) {
    wf_status_set(st, WF_INVALID_ARGUMENT,
                  "expected a variable handle (a resource scalar), got %s",
                  h ? wf_dtype_name(h->dtype) : "nothing");
    return NULL;
  }
  return *(wf__variable *const *)h->data;
}

static int uninitialised(const wf__variable *v, wf_status *st) {
  return wf_status_set(st, WF_FAILED_PRECONDITION,
                       "variable '%s' is read before it was initialised "
                       "(run its initializer first)",
                       v->name);
}

wf_tensor *wf__var_read(const wf_tensor *handle, wf_status *st) {
  wf__variable *v = var_of(handle, st);
  if (!v)
    return NULL;
  pthread_mutex_lock(&v->mu);
  wf_tensor *t = v->value ? wf_tensor_retain(v->value) : NULL;
  pthread_mutex_unlock(&v->mu);
  if (!t)
    uninitialised(v, st);
  return t;
}

int wf__var_assign(const wf_tensor *handle, wf_tensor *value, wf_status *st) {
  wf__variable *v = var_of(handle, st);
  char want[128], got[128];
  if (!v)
    return WF_INVALID_ARGUMENT;
  if (value->dtype != v->dtype || !wf_shape_equal(&value->shape, &v->shape))
    return wf_status_set(st, WF_INVALID_ARGUMENT,
                         "variable '%s' is %s %s; cannot assign a %s %s value",
                         v->name, wf_dtype_name(v->dtype),
                         wf_shape_str(&v->shape, want, sizeof want),
                         wf_dtype_name(value->dtype),
                         wf_shape_str(&value->shape, got, sizeof got));
  /* A buffer the caller wrapped stays the caller's: the variable keeps a
   * copy, so reusing that buffer later cannot change the variable (and
   * in-place updates cannot write into it). */
  if (!wf__tensor_owns_buffer(value)) {
    wf_tensor *copy = wf__tensor_clone(value, st);
    if (!copy) {
      wf_status_prefix(st, "variable '%s'", v->name);
      return wf_status_code(st);
    }
    value = copy;
  } else {
    wf_tensor_retain(value);
  }
  pthread_mutex_lock(&v->mu);
  wf_tensor *old = v->value;
  if (old)
    wf__tensor_unstamp(old);
  v->value = value;
  wf__tensor_stamp(value);
  pthread_mutex_unlock(&v->mu);
  wf_tensor_release(old);
  return 0;
}

/* Locks the variable and moves its value to place (NULL: host memory). */
static wf_tensor *var_lock_at(const wf_tensor *handle,
                              const struct wf__device *place, wf_status *st) {
  wf__variable *v = var_of(handle, st);
  if (!v)
    return NULL;
  pthread_mutex_lock(&v->mu);
  if (!v->value) {
    pthread_mutex_unlock(&v->mu);
    uninitialised(v, st);
    return NULL;
  }
  /* The value moves to the memory of the device whose kernel updates it
   * (it stays there for the next update). Readers take references under
   * this lock, so none can appear now: a count of one means the store's
   * reference is the only one; otherwise the update writes into a copy. */
  wf_tensor *copy = NULL;
  if (v->value->mem != place)
    copy = wf__tensor_to(place, v->value, st);
  else if (atomic_load(&v->value->refs) > 1)
    copy = wf__tensor_clone(v->value, st);
  else {
    /* Written in place from now: a new version, so that what was kept
     * of the value under the old one (a kernel's reordered weights) is
     * known to be stale. */
    wf__tensor_stamp(v->value);
    return v->value;
  }
  if (!copy) {
    pthread_mutex_unlock(&v->mu);
    wf_status_prefix(st, "variable '%s'", v->name);
    return NULL;
  }
  wf__tensor_unstamp(v->value);
  wf_tensor_release(v->value);
  v->value = copy;
  wf__tensor_stamp(copy);
  return v->value;
}

wf_tensor *wf__kernel_var_lock(const wf_kernel_ctx *ctx,
                               const wf_tensor *handle, wf_status *st) {
  return var_lock_at(handle, ctx && ctx->device_memory ? ctx->device : NULL,
                     st);
}

/* Plugins built before ABI 1.4 lock without their kernel's context: the
 * executor notes the running kernel's memory for them. */
wf_tensor *wf__var_lock(const wf_tensor *handle, wf_status *st) {
  return var_lock_at(handle, wf__kernel_current_memory(), st);
}

void wf__var_unlock(const wf_tensor *handle) {
  wf__variable *v = *(wf__variable *const *)handle->data;
  /* The update is done: another version, so that no version seen while
   * it was under way stands for the bytes it left. */
  if (v->value)
    wf__tensor_stamp(v->value);
  pthread_mutex_unlock(&v->mu);
}

int wf__var_order(const wf_tensor *a, const wf_tensor *b) {
  const void *va = *(void *const *)a->data, *vb = *(void *const *)b->data;
  return va < vb ? -1 : va > vb;
}

const char *wf__var_name(const wf_tensor *handle) {
  wf__variable *v = var_of(handle, NULL);
  return v ? v->name : "(not a variable)";
}

/* The kernel_variable host entry: output 0 of a VarHandle-like node is the
 * handle of the session variable it names. */
int wf__kernel_variable(wf_kernel_ctx *ctx, wf_status *st) {
  const wf_node *n = ctx->node;
  if (!ctx->step_ctx || !ctx->step_ctx->vars)
    return wf_status_set(st, WF_FAILED_PRECONDITION,
                         "variables exist only in a session");
  const wf_attr_value *name = wf__node_attr(n, "shared_name");
  const wf_attr_value *dtype = wf__node_attr(n, "dtype");
  const wf_attr_value *shape = wf__node_attr(n, "shape");
  if (!dtype || dtype->type != WF_ATTR_DTYPE || !shape ||
      shape->type != WF_ATTR_SHAPE)
    return wf_status_set(st, WF_INVALID_ARGUMENT,
                         "a variable node needs 'dtype' and 'shape' attrs");
  const char *vname = name && name->type == WF_ATTR_STRING && name->u.s &&
                              name->u.s[0]
                          ? name->u.s
                          : n->name;
  wf__variable *v = wf__varstore_get(ctx->step_ctx->vars, vname,
                                     (wf_dtype)dtype->u.dtype, &shape->u.shape,
                                     st);
  if (!v)
    return wf_status_code(st);
  return wf__kernel_output_set(ctx, 0, v->handle, st);
}
