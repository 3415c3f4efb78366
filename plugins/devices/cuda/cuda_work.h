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
#include "opcommon.h"

#include <stddef.h>
#include <stdint.h>

/* Scratch blocks one kernel call may hold at once. */
#define WF_CUW_MAX_BLOCKS 8

/* One kernel call's device work: the device and its scratch blocks. The
 * blocks go back to the cache at wf__cuw_end, right after the work that
 * uses them was queued: the stream orders any later user after it. */
typedef struct wf__cuw {
  wf__cudev *dev;
  void *blocks[WF_CUW_MAX_BLOCKS];
  int num_blocks;
} wf__cuw;

/* Starts w on the device the kernel's node was placed on (ctx's; the
 * first usable GPU when ctx has none), made current for this thread. */
int wf__cuw_begin(wf__cuw *w, const wf_kernel_ctx *ctx, wf_status *st);
/* A scratch block of bytes (> 0) in *out, given back at wf__cuw_end. */
int wf__cuw_scratch(wf__cuw *w, size_t bytes, void **out, wf_status *st);
/* bytes (> 0) of host memory copied to a new scratch block *out, queued on
 * the stream; src may be reused once this returns (a copy from pageable
 * memory returns once CUDA staged it). what names the data for messages. */
int wf__cuw_upload(wf__cuw *w, const void *src, size_t bytes, void **out,
                   const char *what, wf_status *st);
/* Gives the scratch blocks back. w may have failed to begin. */
void wf__cuw_end(wf__cuw *w);

/* 0 when err is cudaSuccess; else INTERNAL naming the device and what
 * was launched ("the pooling kernel") with CUDA's error. */
int wf__cuw_check(const wf__cuw *w, const char *what, cudaError_t err,
                  wf_status *st);
/* WF_CUDA_F32/F64 for float32/float64; UNIMPLEMENTED naming the dtype
 * otherwise. */
int wf__cuw_float_type(int32_t dtype, int *type, wf_status *st);
/* The WF_CUDA_* code of any dtype the device code knows, or -1. */
int wf__cuw_type_of(int32_t dtype);

/* The broadcast of in[0] and in[1] to out (opcommon's merged walk) for
 * wf__cuda_binary and the other broadcasting launchers; *count gets the
 * output's element count. */
void wf__cuw_bcast(const wf_shape *out, const wf_shape *in, wf__cuda_bcast *b,
                   int64_t *count);

/* Whether the shapes are equal (rank and dims). */
int wf__cuw_same_shape(const wf_shape *a, const wf_shape *b);

/* Reads a host int32/int64 vector t of at most WF_MAX_RANK entries, each
 * >= 0, into a shape (the op's input called `input`). */
int wf__cuw_read_shape(const wf_tensor *t, const char *input, wf_shape *s,
                       wf_status *st);

/* The geometry of reducing x (shape xs) over the axes in mask (bit i =
 * axis i) for the reduction launchers (cuda_reduce.c). */
void wf__cuw_reduce_geom(const wf_shape *xs, uint32_t mask,
                         wf__cuda_reduce_geom *g);

/* Bit i of a kernel_def's host_inputs / host_outputs. */
#define WF_CUW_BIT(i) (UINT64_C(1) << (i))

#endif /* WF_PLUGINS_DEVICES_CUDA_CUDA_WORK_H */
