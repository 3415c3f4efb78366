/* plugins/devices/cuda/cuda_launch.h — the C entry points of the plugin's
 * device code (cuda_eltwise.cu, cuda_random.cu), compiled by nvcc and
 * called from the plugin's C kernels (cuda_kernels.c).
 *
 * Each only enqueues work on the given stream and returns the launch's
 * status (cudaSuccess, or why the launch was refused); errors of the work
 * itself surface at the next synchronisation. Pointers are device memory.
 * Nothing here allocates, copies or synchronises. */
#ifndef WF_PLUGINS_DEVICES_CUDA_CUDA_LAUNCH_H
#define WF_PLUGINS_DEVICES_CUDA_CUDA_LAUNCH_H

#include <stdint.h>

#include <cuda_runtime_api.h>

#include "cuda_philox.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Element types of the device code. */
#define WF_CUDA_F32 0
#define WF_CUDA_F64 1

/* Binary and unary operations. */
#define WF_CUDA_ADD 0
#define WF_CUDA_SUB 1
#define WF_CUDA_MUL 2
#define WF_CUDA_RELU 0
#define WF_CUDA_SIGMOID 1
#define WF_CUDA_TANH 2

/* Most dimensions of a broadcast (weft's WF_MAX_RANK). */
#define WF_CUDA_MAX_RANK 8

/* How two operands broadcast to a row-major output of `rank` dims:
 * element (i0, .., i_{rank-1}) of the output reads x at sum i_k xstride[k]
 * and y at sum i_k ystride[k] (a stride of 0 repeats the operand along
 * that dim). */
typedef struct wf__cuda_bcast {
  int32_t rank; /* 1 .. WF_CUDA_MAX_RANK */
  int32_t reserved_;
  int64_t dims[WF_CUDA_MAX_RANK];
  int64_t xstride[WF_CUDA_MAX_RANK];
  int64_t ystride[WF_CUDA_MAX_RANK];
} wf__cuda_bcast;

/* z = x op y over count (> 0) output elements laid out by b; type is
 * WF_CUDA_F32 or WF_CUDA_F64. Equal shapes and a scalar operand take
 * faster paths than the general walk. */
cudaError_t wf__cuda_binary(int op, int type, const wf__cuda_bcast *b,
                            int64_t count, const void *x, const void *y,
                            void *z, cudaStream_t stream);

/* y = op(x) over n (> 0) elements. Relu passes NaN through; Sigmoid never
 * overflows (e^x / (1 + e^x) below 0). */
cudaError_t wf__cuda_unary(int op, int type, int64_t n, const void *x,
                           void *y, cudaStream_t stream);

/* out[0 .. n-1] (0 < n <= 2^48) uniform in [lo, hi) from stream s,
 * element for element the values of the CPU kernels (cuda_philox.h). */
cudaError_t wf__cuda_uniform(int type, void *out, int64_t n, wf__cuphilox s,
                             double lo, double hi, cudaStream_t stream);

#ifdef __cplusplus
}
#endif
#endif /* WF_PLUGINS_DEVICES_CUDA_CUDA_LAUNCH_H */
