/* plugins/devices/cuda/cuda_common.cuh — device-side helpers shared by the
 * .cu files of the device-memory kernels: launch sizes, grid-stride loops
 * and block-wide sums and maxima in double. Included by nvcc only. */
#ifndef WF_PLUGINS_DEVICES_CUDA_CUDA_COMMON_CUH
#define WF_PLUGINS_DEVICES_CUDA_CUDA_COMMON_CUH

#include <stdint.h>

#include <cuda_runtime.h>

/* Threads per block, and a cap on blocks: kernels loop over the rest
 * (grid-stride), so any int64_t count fits one launch. */
#define CU_THREADS 256
#define CU_MAX_BLOCKS 65535

static inline unsigned cu_grid(int64_t n) {
  int64_t blocks = (n + CU_THREADS - 1) / CU_THREADS;
  return (unsigned)(blocks < 1 ? 1 : blocks < CU_MAX_BLOCKS ? blocks
                                                            : CU_MAX_BLOCKS);
}

/* Blocks for one block per item (rows, channels, groups). */
static inline unsigned cu_grid_items(int64_t items) {
  return (unsigned)(items < 1 ? 1 : items < CU_MAX_BLOCKS ? items
                                                          : CU_MAX_BLOCKS);
}

#define CU_FOR(i, n)                                                           \
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n);    \
       i += (int64_t)gridDim.x * blockDim.x)
#define CU_FOR_BLOCK(b, n)                                                     \
  for (int64_t b = blockIdx.x; b < (n); b += gridDim.x)
#define CU_FOR_THREAD(j, n)                                                    \
  for (int64_t j = threadIdx.x; j < (n); j += blockDim.x)

/* The sum of every thread's v, returned to all threads of the block
 * (blockDim.x a multiple of 32, at most 1024). Uses and reuses `shared`
 * (32 doubles): call it the same number of times in every thread. */
__device__ static inline double cu_block_sum(double v, double *shared) {
  int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  int warps = (blockDim.x + 31) >> 5;

  for (int o = 16; o > 0; o >>= 1)
    v += __shfl_down_sync(0xffffffffu, v, o);
  __syncthreads(); /* an earlier call's readers are done with shared */
  if (lane == 0)
    shared[warp] = v;
  __syncthreads();
  v = threadIdx.x < warps ? shared[threadIdx.x] : 0.0;
  if (warp == 0)
    for (int o = 16; o > 0; o >>= 1)
      v += __shfl_down_sync(0xffffffffu, v, o);
  if (threadIdx.x == 0)
    shared[0] = v;
  __syncthreads();
  return shared[0];
}

/* The larger of a and b where NaN is never larger (a NaN is skipped, as
 * the CPU's `if (x > m) m = x` scan does). */
__device__ static inline double cu_max_skip_nan(double a, double b) {
  return b > a ? b : a;
}

/* The block-wide maximum of v by cu_max_skip_nan (-inf when all NaN). */
__device__ static inline double cu_block_max(double v, double *shared) {
  int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  int warps = (blockDim.x + 31) >> 5;

  for (int o = 16; o > 0; o >>= 1)
    v = cu_max_skip_nan(v, __shfl_down_sync(0xffffffffu, v, o));
  __syncthreads();
  if (lane == 0)
    shared[warp] = v;
  __syncthreads();
  v = threadIdx.x < warps ? shared[threadIdx.x] : -INFINITY;
  if (warp == 0)
    for (int o = 16; o > 0; o >>= 1)
      v = cu_max_skip_nan(v, __shfl_down_sync(0xffffffffu, v, o));
  if (threadIdx.x == 0)
    shared[0] = v;
  __syncthreads();
  return shared[0];
}

#endif /* WF_PLUGINS_DEVICES_CUDA_CUDA_COMMON_CUH */
