/* plugins/devices/cuda/cuda_work.h — what the device-memory kernels of the
 * plugin (cuda_math.c, cuda_reduce.c, cuda_nn.c, cuda_array.c,
 * cuda_train.c) share: the device they run on, scratch blocks from its
 * cache, small host arrays copied to it, and error messages that name the
 * device and the CUDA call.
 *
 * These kernels get device pointers from tensor_data (except inputs their
 * kernel_def marks host), queue work on the device's stream and return
 * without waiting; nothing here synchronises. */
#ifndef WF_PLUGINS_DEVICES_CUDA_CUDA_WORK_H
#define WF_PLUGINS_DEVICES_CUDA_CUDA_WORK_H

#include "cuda_device.h"
#include "cuda_launch.h"
#include <weft/plugin_aux.h>

#include <stddef.h>
#include <stdint.h>

/* Scratch blocks one kernel call may hold at once. */
#define WF_CUW_MAX_BLOCKS 8

/* One kernel call's device work: the device and its scratch blocks. The
 * blocks go back to the cache at cuw_end, right after the work that
 * uses them was queued: the stream orders any later user after it. */
typedef struct cuw {
  cudev *dev;
  void *blocks[WF_CUW_MAX_BLOCKS];
  int num_blocks;
} cuw;

/* Starts w on the device the kernel's node was placed on (ctx's; the
 * first usable GPU when ctx has none), made current for this thread. */
int cuw_begin(cuw *w, const wf_kernel_ctx *ctx, wf_status *st);
/* A scratch block of bytes (> 0) in *out, given back at cuw_end. */
int cuw_scratch(cuw *w, size_t bytes, void **out, wf_status *st);
/* bytes (> 0) of host memory copied to a new scratch block *out, queued on
 * the stream; src may be reused once this returns (a copy from pageable
 * memory returns once CUDA staged it). what names the data for messages. */
int cuw_upload(cuw *w, const void *src, size_t bytes, void **out,
                   const char *what, wf_status *st);
/* Gives the scratch blocks back. w may have failed to begin. */
void cuw_end(cuw *w);

/* 0 when err is cudaSuccess; else INTERNAL naming the device and what
 * was launched ("the pooling kernel") with CUDA's error. */
int cuw_check(const cuw *w, const char *what, cudaError_t err,
                  wf_status *st);
/* WF_CUDA_F32/F64 for float32/float64; UNIMPLEMENTED naming the dtype
 * otherwise. */
int cuw_float_type(int32_t dtype, int *type, wf_status *st);
/* The WF_CUDA_* code of any dtype the device code knows, or -1. */
int cuw_type_of(int32_t dtype);

/* The broadcast of in[0] and in[1] to out (opcommon's merged walk) for
 * cuda_binary and the other broadcasting launchers; *count gets the
 * output's element count. */
void cuw_bcast(const wf_shape *out, const wf_shape *in, cuda_bcast *b,
                   int64_t *count);

/* The geometry of reducing x (shape xs) over the axes in mask (bit i =
 * axis i) for the reduction launchers (cuda_reduce.c). */
void cuw_reduce_geom(const wf_shape *xs, uint32_t mask,
                         cuda_reduce_geom *g);

/* Bit i of a kernel_def's host_inputs / host_outputs. */
#define WF_CUW_BIT(i) (UINT64_C(1) << (i))

#endif /* WF_PLUGINS_DEVICES_CUDA_CUDA_WORK_H */
