/* plugins/devices/cuda/cuda_reduce.cu — device code of cuda_reduce.c: Sum,
 * Mean, Max, Min and Prod over any axes (one block per output element, or
 * one thread per output for small groups), the spreading of SumGrad and
 * MeanGrad and MaxMinGrad's routing to the ties.
 *
 * Floats accumulate in double. It works out no axes (cuda_reduce.c turns
 * them into the strides of cuda_reduce_geom) and moves no memory. */
#include <config.h>

#include "cuda_launch.h"
#include "cuda_common.cuh"

#include <math.h>

/* Groups up to this size get one thread each, larger ones a block. */
#define SMALL_GROUP 64

__device__ static inline int64_t keep_offset(const cuda_reduce_geom &g,
                                             int64_t o) {
  int64_t off = 0;
  for (int d = g.nkeep - 1; d >= 0; d--) {
    off += (o % g.keep_dims[d]) * g.keep_strides[d];
    o /= g.keep_dims[d];
  }
  return off;
}

__device__ static inline int64_t red_offset(const cuda_reduce_geom &g,
                                            int64_t r) {
  int64_t off = 0;
  for (int d = g.nred - 1; d >= 0; d--) {
    off += (r % g.red_dims[d]) * g.red_strides[d];
    r /= g.red_dims[d];
  }
  return off;
}

/* Accumulators: sum and mean add, prod multiplies, max/min track the
 * extreme and whether a NaN was seen. */
struct acc {
  double v;
  int nan;
};

__device__ static inline acc acc_init(int op) {
  acc a;
  a.nan = 0;
  a.v = op == WF_CUDA_MAX ? -INFINITY
        : op == WF_CUDA_MIN ? INFINITY
        : op == WF_CUDA_PROD ? 1.0
                             : 0.0;
  return a;
}

__device__ static inline void acc_add(int op, acc &a, double x) {
  switch (op) {
  case WF_CUDA_MAX:
    if (x != x)
      a.nan = 1;
    else if (x > a.v)
      a.v = x;
    break;
  case WF_CUDA_MIN:
    if (x != x)
      a.nan = 1;
    else if (x < a.v)
      a.v = x;
    break;
  case WF_CUDA_PROD: a.v *= x; break;
  default: a.v += x; break;
  }
}

__device__ static inline void acc_merge(int op, acc &a, const acc &b) {
  a.nan |= b.nan;
  switch (op) {
  case WF_CUDA_MAX: a.v = b.v > a.v ? b.v : a.v; break;
  case WF_CUDA_MIN: a.v = b.v < a.v ? b.v : a.v; break;
  case WF_CUDA_PROD: a.v *= b.v; break;
  default: a.v += b.v; break;
  }
}

__device__ static inline double acc_result(int op, const acc &a,
                                           int64_t group) {
  if (a.nan)
    return NAN;
  if (op == WF_CUDA_MEAN)
    return a.v / (double)group; /* 0 / 0: NaN for an empty group */
  return a.v;
}

template <typename T>
__global__ void reduce_thread_k(int op, cuda_reduce_geom g, const T *x,
                                T *y) {
  CU_FOR(o, g.outputs) {
    int64_t base = keep_offset(g, o);
    acc a = acc_init(op);
    for (int64_t r = 0; r < g.group; r++)
      acc_add(op, a, (double)x[base + red_offset(g, r)]);
    y[o] = (T)acc_result(op, a, g.group);
  }
}

template <typename T>
__global__ void reduce_block_k(int op, cuda_reduce_geom g, const T *x,
                               T *y) {
  __shared__ double sv[CU_THREADS];
  __shared__ int sn[CU_THREADS];

  CU_FOR_BLOCK(o, g.outputs) {
    int64_t base = keep_offset(g, o);
    acc a = acc_init(op);
    CU_FOR_THREAD(r, g.group)
    acc_add(op, a, (double)x[base + red_offset(g, r)]);
    sv[threadIdx.x] = a.v;
    sn[threadIdx.x] = a.nan;
    __syncthreads();
    for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
      if (threadIdx.x < s) {
        acc b = {sv[threadIdx.x + s], sn[threadIdx.x + s]};
        acc m = {sv[threadIdx.x], sn[threadIdx.x]};
        acc_merge(op, m, b);
        sv[threadIdx.x] = m.v;
        sn[threadIdx.x] = m.nan;
      }
      __syncthreads();
    }
    if (threadIdx.x == 0) {
      acc m = {sv[0], sn[0]};
      y[o] = (T)acc_result(op, m, g.group);
    }
    __syncthreads();
  }
}

/* One thread per element of x: the group of element i is found from its
 * coordinates, so this walks x in the kept-major order of the geometry. */
template <typename T>
__global__ void spread_k(cuda_reduce_geom g, const T *dy, double scale,
                         T *dx) {
  int64_t n = g.outputs * g.group;
  CU_FOR(i, n) {
    int64_t o = i / g.group, r = i % g.group;
    dx[keep_offset(g, o) + red_offset(g, r)] =
        (T)((double)dy[o] * scale);
  }
}

template <typename T>
__global__ void max_min_grad_k(cuda_reduce_geom g, const T *dy,
                               const T *x, const T *y, T *dx) {
  __shared__ double shared[32];

  CU_FOR_BLOCK(o, g.outputs) {
    int64_t base = keep_offset(g, o);
    T m = y[o];
    double ties = 0, share;
    CU_FOR_THREAD(r, g.group)
    ties += x[base + red_offset(g, r)] == m ? 1.0 : 0.0;
    ties = cu_block_sum(ties, shared);
    share = m != m || ties == 0 ? 0.0 : (double)dy[o] / ties;
    CU_FOR_THREAD(r, g.group) {
      int64_t at = base + red_offset(g, r);
      dx[at] = x[at] == m ? (T)share : (T)0;
    }
  }
}

template <typename T>
static cudaError_t reduce_typed(int op, const cuda_reduce_geom *g,
                                const void *x, void *y, cudaStream_t stream) {
  if (g->group <= SMALL_GROUP)
    reduce_thread_k<T><<<cu_grid(g->outputs), CU_THREADS, 0, stream>>>(
        op, *g, (const T *)x, (T *)y);
  else
    reduce_block_k<T><<<cu_grid_items(g->outputs), CU_THREADS, 0, stream>>>(
        op, *g, (const T *)x, (T *)y);
  return cudaGetLastError();
}

static int geom_ok(const cuda_reduce_geom *g) {
  return g->outputs >= 1 && g->group >= 0 && g->nkeep >= 0 &&
         g->nkeep <= WF_CUDA_MAX_RANK && g->nred >= 0 &&
         g->nred <= WF_CUDA_MAX_RANK;
}

extern "C" cudaError_t cuda_reduce(int op, int type,
                                       const cuda_reduce_geom *g,
                                       const void *x, void *y,
                                       cudaStream_t stream) {
  if (!geom_ok(g) || op < WF_CUDA_SUM || op > WF_CUDA_PROD)
    return cudaErrorInvalidValue;
  if (type == WF_CUDA_F32)
    return reduce_typed<float>(op, g, x, y, stream);
  if (type == WF_CUDA_F64)
    return reduce_typed<double>(op, g, x, y, stream);
  return cudaErrorInvalidValue;
}

extern "C" cudaError_t cuda_reduce_spread(int type,
                                              const cuda_reduce_geom *g,
                                              const void *dy, double scale,
                                              void *dx, cudaStream_t stream) {
  int64_t n;

  if (!geom_ok(g))
    return cudaErrorInvalidValue;
  if ((n = g->outputs * g->group) == 0)
    return cudaSuccess;
  if (type == WF_CUDA_F32)
    spread_k<float><<<cu_grid(n), CU_THREADS, 0, stream>>>(
        *g, (const float *)dy, scale, (float *)dx);
  else if (type == WF_CUDA_F64)
    spread_k<double><<<cu_grid(n), CU_THREADS, 0, stream>>>(
        *g, (const double *)dy, scale, (double *)dx);
  else
    return cudaErrorInvalidValue;
  return cudaGetLastError();
}

extern "C" cudaError_t cuda_max_min_grad(int type,
                                             const cuda_reduce_geom *g,
                                             const void *dy, const void *x,
                                             const void *y, void *dx,
                                             cudaStream_t stream) {
  if (!geom_ok(g))
    return cudaErrorInvalidValue;
  if (g->group == 0)
    return cudaSuccess;
  if (type == WF_CUDA_F32)
    max_min_grad_k<float>
        <<<cu_grid_items(g->outputs), CU_THREADS, 0, stream>>>(
            *g, (const float *)dy, (const float *)x, (const float *)y,
            (float *)dx);
  else if (type == WF_CUDA_F64)
    max_min_grad_k<double>
        <<<cu_grid_items(g->outputs), CU_THREADS, 0, stream>>>(
            *g, (const double *)dy, (const double *)x, (const double *)y,
            (double *)dx);
  else
    return cudaErrorInvalidValue;
  return cudaGetLastError();
}
