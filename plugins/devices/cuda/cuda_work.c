/* plugins/devices/cuda/cuda_work.c — the helpers of cuda_work.h: scratch
 * device memory, uploads of small host arrays, messages, dtype codes and
 * broadcasts. No kernel is defined here. */
#include <config.h>

#include "cuda_work.h"

#include <inttypes.h>
#include <string.h>

int cuw_begin(cuw *w, const wf_kernel_ctx *ctx, wf_status *st) {
  char text[192];
  cudaError_t err;

  memset(w, 0, sizeof *w);
  /* The GPU the node was placed on; outside an executor (no device), the
   * first usable one. */
  w->dev = ctx ? wfx_host->kernel_device_state(ctx) : NULL;
  if (!w->dev || !w->dev->usable)
    w->dev = cuda_kernel_device();
  if (!w->dev)
    return wfx_fail(st, WF_FAILED_PRECONDITION,
                    "the CUDA plugin has no usable GPU (its state was "
                    "released)");
  if ((err = cudaSetDevice(w->dev->ordinal)) != cudaSuccess)
    return wfx_fail(st, WF_INTERNAL, "%s: cudaSetDevice failed (%s)",
                    w->dev->label, cuda_error_text(err, text, sizeof text));
  return 0;
}

int cuw_scratch(cuw *w, size_t bytes, void **out, wf_status *st) {
  char why[512];
  int rc;

  *out = NULL;
  if (w->num_blocks == WF_CUW_MAX_BLOCKS)
    return wfx_fail(st, WF_INTERNAL,
                    "%s: more than %d scratch blocks in one kernel call",
                    w->dev->label, WF_CUW_MAX_BLOCKS);
  rc = cucache_block_alloc(w->dev->cache, bytes, out, why, sizeof why);
  if (rc)
    return wfx_fail(st, rc, "%s: scratch memory: %s", w->dev->label, why);
  w->blocks[w->num_blocks++] = *out;
  return 0;
}

int cuw_upload(cuw *w, const void *src, size_t bytes, void **out,
                   const char *what, wf_status *st) {
  char text[192];
  cudaError_t err;
  int rc;

  if ((rc = cuw_scratch(w, bytes, out, st)) != 0)
    return rc;
  err = cudaMemcpyAsync(*out, src, bytes, cudaMemcpyHostToDevice,
                        w->dev->stream);
  if (err != cudaSuccess)
    return wfx_fail(
        st, WF_INTERNAL, "%s: copying %s (%zu bytes) to the device failed (%s)",
        w->dev->label, what, bytes, cuda_error_text(err, text, sizeof text));
  return 0;
}

void cuw_end(cuw *w) {
  if (!w->dev)
    return;
  for (int i = 0; i < w->num_blocks; i++)
    cucache_block_free(w->dev->cache, w->blocks[i]);
  w->num_blocks = 0;
}

int cuw_check(const cuw *w, const char *what, cudaError_t err,
                  wf_status *st) {
  char text[192];

  if (err == cudaSuccess)
    return 0;
  return wfx_fail(st, WF_INTERNAL, "%s: launching %s failed (%s)",
                  w->dev->label, what, cuda_error_text(err, text, sizeof text));
}

int cuw_type_of(int32_t dtype) {
  switch (dtype) {
  case WF_FLOAT32: return WF_CUDA_F32;
  case WF_FLOAT64: return WF_CUDA_F64;
  case WF_INT32: return WF_CUDA_I32;
  case WF_INT64: return WF_CUDA_I64;
  case WF_INT8: return WF_CUDA_I8;
  case WF_UINT8: return WF_CUDA_U8;
  case WF_BOOL: return WF_CUDA_BOOL;
  default: return -1;
  }
}

int cuw_float_type(int32_t dtype, int *type, wf_status *st) {
  if (dtype == WF_FLOAT32)
    *type = WF_CUDA_F32;
  else if (dtype == WF_FLOAT64)
    *type = WF_CUDA_F64;
  else
    return wfx_fail(st, WF_UNIMPLEMENTED, "no CUDA kernel for %s",
                    wfx_dtype_name(dtype));
  return 0;
}

void cuw_bcast(const wf_shape *out, const wf_shape *in, cuda_bcast *b,
                   int64_t *count) {
  wfx_bcast walk;

  wfx_bcast_init(&walk, out, 2, in);
  memset(b, 0, sizeof *b);
  b->rank = walk.rank;
  for (int d = 0; d < walk.rank; d++) {
    b->dims[d] = walk.dims[d];
    b->xstride[d] = walk.strides[0][d];
    b->ystride[d] = walk.strides[1][d];
  }
  *count = walk.count;
}
