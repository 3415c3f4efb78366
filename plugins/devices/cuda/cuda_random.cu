/* plugins/devices/cuda/cuda_random.cu — device code of the uniform random
 * kernels: one thread per Philox block, writing that block's four float or
 * two double elements with cuda_philox.h's functions (the ones the host
 * test checks against the CPU kernels).
 *
 * It derives no keys and reads no attributes (cuda_kernels.c does). */
#include <config.h>

#include "cuda_launch.h"

#include <cuda_runtime.h>

#define THREADS 256
#define MAX_BLOCKS 65535

template <typename T> struct per_block;
template <> struct per_block<float> {
  static const int n = 4;
  __device__ static void fill(const cuphilox *s, uint64_t b, double lo,
                              double hi, float *out) {
    cuphilox_uniform_block_f32(s, b, lo, hi, out);
  }
};
template <> struct per_block<double> {
  static const int n = 2;
  __device__ static void fill(const cuphilox *s, uint64_t b, double lo,
                              double hi, double *out) {
    cuphilox_uniform_block_f64(s, b, lo, hi, out);
  }
};

template <typename T>
__global__ void uniform_kernel(T *out, int64_t n, int64_t nblocks,
                               cuphilox s, double lo, double hi) {
  const int per = per_block<T>::n;

  for (int64_t b = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
       b < nblocks; b += (int64_t)gridDim.x * blockDim.x) {
    T v[per_block<T>::n];
    int64_t first = b * per;

    per_block<T>::fill(&s, (uint64_t)b, lo, hi, v);
    for (int k = 0; k < per && first + k < n; k++)
      out[first + k] = v[k];
  }
}

template <typename T>
static cudaError_t launch_uniform(void *out, int64_t n, cuphilox s,
                                  double lo, double hi, cudaStream_t stream) {
  const int per = per_block<T>::n;
  int64_t nblocks = (n + per - 1) / per;
  int64_t grid = (nblocks + THREADS - 1) / THREADS;

  uniform_kernel<T><<<(unsigned)(grid < MAX_BLOCKS ? grid : MAX_BLOCKS),
                      THREADS, 0, stream>>>((T *)out, n, nblocks, s, lo, hi);
  return cudaGetLastError();
}

extern "C" cudaError_t cuda_uniform(int type, void *out, int64_t n,
                                        cuphilox s, double lo, double hi,
                                        cudaStream_t stream) {
  if (n <= 0 || n > ((int64_t)1 << 48))
    return cudaErrorInvalidValue;
  if (type == WF_CUDA_F32)
    return launch_uniform<float>(out, n, s, lo, hi, stream);
  if (type == WF_CUDA_F64)
    return launch_uniform<double>(out, n, s, lo, hi, stream);
  return cudaErrorInvalidValue;
}
