/* core/tensor.h — the tensor object behind weft/tensor.h. */
#ifndef WF_CORE_TENSOR_H
#define WF_CORE_TENSOR_H

#include <stdatomic.h>
#include <weft/status.h>
#include <weft/tensor.h>

struct wf_tensor {
  wf_dtype dtype;
  wf_shape shape; /* always fully known */
  atomic_long refs;
  void *data; /* 64-byte aligned for host tensors we allocate */
  size_t nbytes;
  /* Wrapped buffers: called once with (data, nbytes, dealloc_arg) when the
   * last reference goes; NULL for buffers allocated with the tensor. */
  wf_dealloc_fn *dealloc;
  void *dealloc_arg;
  int wrapped;          /* the buffer is not the core's (wf_tensor_wrap) */
};

/* wf_tensor_new taking a wf_shape (the host table's form); the shape must be
 * fully known. */
wf_tensor *wf__tensor_new_shape(wf_dtype dtype, const wf_shape *shape,
                                wf_status *st);

/* A tensor sharing t's buffer under another shape of the same element
 * count (the host table's tensor_reshape). */
wf_tensor *wf__tensor_reshape(wf_tensor *t, const wf_shape *shape,
                              wf_status *st);

/* The cache of freed large tensor blocks (core/tensor.c): empties it (and
 * reads $WEFT_TENSOR_CACHE_MB again), and how many bytes it holds. */
void wf__tensor_cache_clear(void);
size_t wf__tensor_cache_bytes(void);

/* Byte size of a tensor of dtype and shape, checking dtype, rank and every
 * dim; INVALID_ARGUMENT naming the problem otherwise. */
int wf__tensor_check(wf_dtype dtype, const int64_t *dims, int rank,
                     size_t *nbytes, wf_status *st);

/* IEEE half and bfloat16 to and from float (core/dtype.c): exact widening;
 * narrowing rounds to nearest even, overflow to infinity, NaN stays NaN. */
float wf__half_to_float(uint16_t h);
uint16_t wf__float_to_half(float f);
float wf__bf16_to_float(uint16_t h);
uint16_t wf__float_to_bf16(float f);

#endif
