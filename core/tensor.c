/* core/tensor.c — reference-counted host tensors: allocated ones (struct and
 * 64-byte-aligned data in one block) and wrapped caller buffers.
 *
 * Device memory, layouts and copies between devices are not handled here. */
#include <config.h>

#include "tensor.h"

#include <assert.h>
#include <string.h>

#include "alloc.h"

/* Offset of the data in a block that holds struct and data together. */
#define DATA_OFFSET                                                            \
  ((sizeof(wf_tensor) + WF_TENSOR_ALIGN - 1) / WF_TENSOR_ALIGN *               \
   WF_TENSOR_ALIGN)

int wf__tensor_check(wf_dtype dtype, const int64_t *dims, int rank,
                     size_t *nbytes, wf_status *st) {
  size_t esize = wf_dtype_size(dtype);
  size_t n;

  if (esize == 0)
    return wf_status_set(st, WF_INVALID_ARGUMENT,
                         "tensor: %d is not a valid dtype", (int)dtype);
  if (rank < 0 || rank > WF_MAX_RANK)
    return wf_status_set(st, WF_INVALID_ARGUMENT,
                         "tensor: rank %d is outside 0..%d", rank, WF_MAX_RANK);
  if (rank > 0 && !dims)
    return wf_status_set(st, WF_INVALID_ARGUMENT,
                         "tensor: rank %d but no dims given", rank);
  n = esize;
  for (int i = 0; i < rank; i++) {
    if (dims[i] < 0)
      return wf_status_set(st, WF_INVALID_ARGUMENT,
                           "tensor: dim %d is %lld; dims must be >= 0", i,
                           (long long)dims[i]);
    if (dims[i] != 0 && n > (SIZE_MAX - DATA_OFFSET) / (uint64_t)dims[i])
      return wf_status_set(st, WF_INVALID_ARGUMENT,
                           "tensor: %s tensor of %d dims is too large",
                           wf_dtype_name(dtype), rank);
    n *= (size_t)dims[i];
  }
  *nbytes = n;
  return WF_OK;
}

static void tensor_fill(wf_tensor *t, wf_dtype dtype, const int64_t *dims,
                        int rank, void *data, size_t nbytes) {
  t->dtype = dtype;
  wf_shape_init(&t->shape, dims, rank);
  atomic_init(&t->refs, 1);
  t->data = data;
  t->nbytes = nbytes;
  t->dealloc = NULL;
  t->dealloc_arg = NULL;
  t->wrapped = 0;
}

wf_tensor *wf_tensor_new(wf_dtype dtype, const int64_t *dims, int rank,
                         wf_status *st) {
  size_t nbytes;
  unsigned char *block;

  if (wf__tensor_check(dtype, dims, rank, &nbytes, st))
    return NULL;
  block = wf__alloc(DATA_OFFSET + nbytes, WF_TENSOR_ALIGN);
  if (!block) {
    wf_status_set(st, WF_RESOURCE_EXHAUSTED,
                  "tensor: out of memory allocating %zu bytes of %s", nbytes,
                  wf_dtype_name(dtype));
    return NULL;
  }
  tensor_fill((wf_tensor *)block, dtype, dims, rank, block + DATA_OFFSET,
              nbytes);
  return (wf_tensor *)block;
}

wf_tensor *wf__tensor_new_shape(wf_dtype dtype, const wf_shape *shape,
                                wf_status *st) {
  char buf[128];
  if (!wf_shape_is_known(shape)) {
    wf_status_set(st, WF_INVALID_ARGUMENT,
                  "tensor: shape %s is not fully known",
                  wf_shape_str(shape, buf, sizeof buf));
    return NULL;
  }
  return wf_tensor_new(dtype, shape->dims, shape->rank, st);
}

wf_tensor *wf_tensor_wrap(wf_dtype dtype, const int64_t *dims, int rank,
                          void *data, size_t len, wf_dealloc_fn *dealloc,
                          void *arg, wf_status *st) {
  size_t nbytes;
  wf_tensor *t;

  if (wf__tensor_check(dtype, dims, rank, &nbytes, st))
    goto fail;
  if (len != nbytes) {
    wf_status_set(st, WF_INVALID_ARGUMENT,
                  "tensor: wrapped buffer has %zu bytes, its %s shape needs "
                  "%zu",
                  len, wf_dtype_name(dtype), nbytes);
    goto fail;
  }
  if (!data && nbytes > 0) {
    wf_status_set(st, WF_INVALID_ARGUMENT,
                  "tensor: wrapped buffer is NULL for %zu bytes", nbytes);
    goto fail;
  }
  t = wf__alloc(sizeof *t, 0);
  if (!t) {
    wf_status_set(st, WF_RESOURCE_EXHAUSTED,
                  "tensor: out of memory wrapping a buffer");
    goto fail;
  }
  tensor_fill(t, dtype, dims, rank, data, nbytes);
  t->dealloc = dealloc;
  t->dealloc_arg = arg;
  t->wrapped = 1;
  return t;

fail:
  if (dealloc)
    dealloc(data, len, arg);
  return NULL;
}

wf_tensor *wf_tensor_retain(wf_tensor *t) {
  assert(t);
  atomic_fetch_add_explicit(&t->refs, 1, memory_order_relaxed);
  return t;
}

void wf_tensor_release(wf_tensor *t) {
  if (!t)
    return;
  /* Release ordering on the decrement and an acquire fence before freeing:
   * every write made through other references happens before the free. */
  long before = atomic_fetch_sub_explicit(&t->refs, 1, memory_order_release);
  assert(before > 0);
  if (before != 1)
    return;
  atomic_thread_fence(memory_order_acquire);
  if (t->dealloc)
    t->dealloc(t->data, t->nbytes, t->dealloc_arg);
  wf__free(t);
}

wf_dtype wf_tensor_dtype(const wf_tensor *t) { return t->dtype; }
int wf_tensor_rank(const wf_tensor *t) { return t->shape.rank; }

int64_t wf_tensor_dim(const wf_tensor *t, int i) {
  assert(i >= 0 && i < t->shape.rank);
  return t->shape.dims[i];
}

void wf_tensor_shape(const wf_tensor *t, wf_shape *out) { *out = t->shape; }
int64_t wf_tensor_count(const wf_tensor *t) {
  return wf_shape_count(&t->shape);
}
size_t wf_tensor_nbytes(const wf_tensor *t) { return t->nbytes; }
void *wf_tensor_data(const wf_tensor *t) { return t->data; }

/* Views keep their parent alive through the wrapped buffer's deallocator. */
static void release_parent(void *data, size_t len, void *arg) {
  (void)data;
  (void)len;
  wf_tensor_release(arg);
}

wf_tensor *wf__tensor_reshape(wf_tensor *t, const wf_shape *shape,
                              wf_status *st) {
  char a[128], b[128];
  if (!wf_shape_is_known(shape) || wf_shape_count(shape) != wf_tensor_count(t)) {
    wf_status_set(st, WF_INVALID_ARGUMENT,
                  "cannot view a tensor of shape %s as %s",
                  wf_shape_str(&t->shape, a, sizeof a),
                  wf_shape_str(shape, b, sizeof b));
    return NULL;
  }
  wf_tensor_retain(t);
  return wf_tensor_wrap(t->dtype, shape->dims, shape->rank, t->data, t->nbytes,
                        release_parent, t, st);
}
