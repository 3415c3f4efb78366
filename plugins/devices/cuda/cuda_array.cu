/* plugins/devices/cuda/cuda_array.cu — device code of cuda_array.c: Gather
 * (a row copy for any element size) and segment sums (the dense gradient
 * of Gather and sparse rows made dense), which read lists of rows the
 * host sorted, so that every sum runs in the CPU's order, in double,
 * without atomics. Indices are checked on the host, never here. */
#include <config.h>

#include "cuda_launch.h"
#include "cuda_common.cuh"

template <typename E>
__global__ void gather_k(int64_t outer, int64_t p, int64_t k, int64_t inner,
                         const E *params, const int64_t *idx, E *out) {
  int64_t total = outer * k * inner;
  CU_FOR(i, total) {
    int64_t e = i % inner, r = i / inner;
    int64_t j = r % k, o = r / k;
    out[i] = params[(o * p + idx[j]) * inner + e];
  }
}

template <typename T>
__global__ void segment_sum_k(int64_t outer, int64_t rows, int64_t k,
                              int64_t inner, const int64_t *start,
                              const int64_t *order, const T *in, T *out) {
  int64_t total = outer * rows * inner;
  CU_FOR(i, total) {
    int64_t e = i % inner, r = (i / inner) % rows, o = i / (inner * rows);
    double s = 0;
    for (int64_t j = start[r]; j < start[r + 1]; j++)
      s += in[(o * k + order[j]) * inner + e];
    out[i] = (T)s;
  }
}

extern "C" cudaError_t cuda_gather(int elem_size, int64_t outer,
                                       int64_t p, int64_t k, int64_t inner,
                                       const void *params, const int64_t *idx,
                                       void *out, cudaStream_t stream) {
  int64_t n = outer * k * inner;
  if (n == 0)
    return cudaSuccess;
  switch (elem_size) {
  case 1:
    gather_k<uint8_t><<<cu_grid(n), CU_THREADS, 0, stream>>>(
        outer, p, k, inner, (const uint8_t *)params, idx, (uint8_t *)out);
    break;
  case 4:
    gather_k<uint32_t><<<cu_grid(n), CU_THREADS, 0, stream>>>(
        outer, p, k, inner, (const uint32_t *)params, idx, (uint32_t *)out);
    break;
  case 8:
    gather_k<uint64_t><<<cu_grid(n), CU_THREADS, 0, stream>>>(
        outer, p, k, inner, (const uint64_t *)params, idx, (uint64_t *)out);
    break;
  default:
    return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

extern "C" cudaError_t cuda_segment_sum(int type, int64_t outer,
                                            int64_t rows, int64_t k,
                                            int64_t inner,
                                            const int64_t *start,
                                            const int64_t *order,
                                            const void *in, void *out,
                                            cudaStream_t stream) {
  int64_t n = outer * rows * inner;
  if (n == 0)
    return cudaSuccess;
  if (type == WF_CUDA_F32)
    segment_sum_k<float><<<cu_grid(n), CU_THREADS, 0, stream>>>(
        outer, rows, k, inner, start, order, (const float *)in,
        (float *)out);
  else if (type == WF_CUDA_F64)
    segment_sum_k<double><<<cu_grid(n), CU_THREADS, 0, stream>>>(
        outer, rows, k, inner, start, order, (const double *)in,
        (double *)out);
  else
    return cudaErrorInvalidValue;
  return cudaGetLastError();
}
