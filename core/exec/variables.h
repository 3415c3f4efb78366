/* core/exec/variables.h — a session's variables: named, typed tensors that
 * outlive steps, reached by kernels through WF_RESOURCE handle tensors.
 *
 * Consistency: every read takes a reference to the current value under the
 * variable's lock, so it sees the value before or after any one update.
 * Updates run under the same lock, in place when nobody else holds the value
 * and on a private copy when a reader still does (copy on write). */
#ifndef WF_CORE_VARIABLES_H
#define WF_CORE_VARIABLES_H

#include <pthread.h>
#include <weft/tensor.h>

typedef struct wf__varstore wf__varstore;

typedef struct wf__variable {
  char *name;
  wf_dtype dtype;
  wf_shape shape;
  pthread_mutex_t mu; /* guards value; held through var_lock..var_unlock */
  wf_tensor *value;   /* NULL until first assigned */
  wf_tensor *handle;  /* the WF_RESOURCE scalar pointing here */
} wf__variable;

wf__varstore *wf__varstore_new(void);
void wf__varstore_free(wf__varstore *vs);
/* The variable called name, created uninitialised with dtype and shape if
 * it does not exist. INVALID_ARGUMENT naming it when it exists with another
 * dtype or shape, or when shape is not fully known. */
wf__variable *wf__varstore_get(wf__varstore *vs, const char *name,
                               wf_dtype dtype, const wf_shape *shape,
                               wf_status *st);
/* Variables in creation order (for checkpoints and tools). The store may
 * grow meanwhile; entries never move or go away before the store. */
int wf__varstore_count(wf__varstore *vs);
wf__variable *wf__varstore_at(wf__varstore *vs, int i);

/* The host table's var_* entries (see weft/plugin.h). */
wf_tensor *wf__var_read(const wf_tensor *handle, wf_status *st);
int wf__var_assign(const wf_tensor *handle, wf_tensor *value, wf_status *st);
wf_tensor *wf__var_lock(const wf_tensor *handle, wf_status *st);
/* var_lock for the device of ctx's node (host table, since ABI 1.4). */
wf_tensor *wf__kernel_var_lock(const wf_kernel_ctx *ctx,
                               const wf_tensor *handle, wf_status *st);
void wf__var_unlock(const wf_tensor *handle);
int wf__var_order(const wf_tensor *a, const wf_tensor *b);
const char *wf__var_name(const wf_tensor *handle);
struct wf_kernel_ctx;
int wf__kernel_variable(struct wf_kernel_ctx *ctx, wf_status *st);

#endif
