/* plugins/devices/cuda/cuda_eltwise.cu — device code of the elementwise
 * kernels: Add, Sub and Mul with broadcasting (equal shapes, a scalar
 * operand, or a general walk over up to 8 dims), Relu, Sigmoid and Tanh,
 * for float and double (launchers declared in cuda_launch.h).
 *
 * It does not work out shapes or strides (cuda_kernels.c does, with the op
 * plugins' broadcasting rules) and moves no memory. */
#include <config.h>

#include "cuda_launch.h"

#include <cuda_runtime.h>

/* Threads per block, and a cap on blocks: kernels loop over the rest. */
#define THREADS 256
#define MAX_BLOCKS 65535

static unsigned grid_for(int64_t n) {
  int64_t blocks = (n + THREADS - 1) / THREADS;
  return (unsigned)(blocks < MAX_BLOCKS ? blocks : MAX_BLOCKS);
}

/* ---- operations ---------------------------------------------------------- */

template <typename T> struct op_add {
  __device__ T operator()(T a, T b) const { return a + b; }
};
template <typename T> struct op_sub {
  __device__ T operator()(T a, T b) const { return a - b; }
};
template <typename T> struct op_mul {
  __device__ T operator()(T a, T b) const { return a * b; }
};

/* NaN is not below 0, so it passes through (as the CPU kernel's). */
template <typename T> struct op_relu {
  __device__ T operator()(T a) const { return a < (T)0 ? (T)0 : a; }
};

__device__ static float exp_of(float x) { return expf(x); }
__device__ static double exp_of(double x) { return exp(x); }
__device__ static float tanh_of(float x) { return tanhf(x); }
__device__ static double tanh_of(double x) { return tanh(x); }

/* 1 / (1 + e^-x) for x >= 0; e^x / (1 + e^x) below, where e^-x would
 * overflow and 1 - small would lose the tail's precision. */
template <typename T> struct op_sigmoid {
  __device__ T operator()(T a) const {
    if (a >= (T)0)
      return (T)1 / ((T)1 + exp_of(-a));
    T e = exp_of(a);
    return e / ((T)1 + e);
  }
};

template <typename T> struct op_tanh {
  __device__ T operator()(T a) const { return tanh_of(a); }
};

/* ---- kernels ------------------------------------------------------------- */

/* Equal shapes: z[i] = x[i] op y[i]; xs, ys are 1, or 0 for a scalar. */
template <typename T, typename Op>
__global__ void binary_flat(Op op, int64_t n, const T *x, int64_t xs,
                            const T *y, int64_t ys, T *z) {
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x)
    z[i] = op(x[i * xs], y[i * ys]);
}

/* The general walk: the output index is split into coordinates, last dim
 * fastest. */
template <typename T, typename Op>
__global__ void binary_strided(Op op, cuda_bcast b, int64_t n,
                               const T *x, const T *y, T *z) {
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x) {
    int64_t rest = i, xo = 0, yo = 0;
    for (int d = b.rank - 1; d >= 0; d--) {
      int64_t c = rest % b.dims[d];
      rest /= b.dims[d];
      xo += c * b.xstride[d];
      yo += c * b.ystride[d];
    }
    z[i] = op(x[xo], y[yo]);
  }
}

template <typename T, typename Op>
__global__ void unary_flat(Op op, int64_t n, const T *x, T *y) {
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x)
    y[i] = op(x[i]);
}

/* ---- launchers ----------------------------------------------------------- */

template <typename T, typename Op>
static cudaError_t launch_binary(Op op, const cuda_bcast *b, int64_t n,
                                 const void *xv, const void *yv, void *zv,
                                 cudaStream_t stream) {
  const T *x = (const T *)xv, *y = (const T *)yv;
  T *z = (T *)zv;

  if (b->rank == 1 && (b->xstride[0] == 1 || b->xstride[0] == 0) &&
      (b->ystride[0] == 1 || b->ystride[0] == 0))
    binary_flat<T><<<grid_for(n), THREADS, 0, stream>>>(
        op, n, x, b->xstride[0], y, b->ystride[0], z);
  else
    binary_strided<T><<<grid_for(n), THREADS, 0, stream>>>(op, *b, n, x, y,
                                                           z);
  return cudaGetLastError();
}

template <typename T>
static cudaError_t binary_typed(int op, const cuda_bcast *b, int64_t n,
                                const void *x, const void *y, void *z,
                                cudaStream_t stream) {
  switch (op) {
  case WF_CUDA_ADD:
    return launch_binary<T>(op_add<T>(), b, n, x, y, z, stream);
  case WF_CUDA_SUB:
    return launch_binary<T>(op_sub<T>(), b, n, x, y, z, stream);
  case WF_CUDA_MUL:
    return launch_binary<T>(op_mul<T>(), b, n, x, y, z, stream);
  }
  return cudaErrorInvalidValue;
}

template <typename T, typename Op>
static cudaError_t launch_unary(Op op, int64_t n, const void *x, void *y,
                                cudaStream_t stream) {
  unary_flat<T><<<grid_for(n), THREADS, 0, stream>>>(op, n, (const T *)x,
                                                      (T *)y);
  return cudaGetLastError();
}

template <typename T>
static cudaError_t unary_typed(int op, int64_t n, const void *x, void *y,
                               cudaStream_t stream) {
  switch (op) {
  case WF_CUDA_RELU:
    return launch_unary<T>(op_relu<T>(), n, x, y, stream);
  case WF_CUDA_SIGMOID:
    return launch_unary<T>(op_sigmoid<T>(), n, x, y, stream);
  case WF_CUDA_TANH:
    return launch_unary<T>(op_tanh<T>(), n, x, y, stream);
  }
  return cudaErrorInvalidValue;
}

extern "C" cudaError_t cuda_binary(int op, int type,
                                       const cuda_bcast *b, int64_t count,
                                       const void *x, const void *y, void *z,
                                       cudaStream_t stream) {
  if (count <= 0 || b->rank < 1 || b->rank > WF_CUDA_MAX_RANK)
    return cudaErrorInvalidValue;
  if (type == WF_CUDA_F32)
    return binary_typed<float>(op, b, count, x, y, z, stream);
  if (type == WF_CUDA_F64)
    return binary_typed<double>(op, b, count, x, y, z, stream);
  return cudaErrorInvalidValue;
}

extern "C" cudaError_t cuda_unary(int op, int type, int64_t n,
                                      const void *x, void *y,
                                      cudaStream_t stream) {
  if (n <= 0)
    return cudaErrorInvalidValue;
  if (type == WF_CUDA_F32)
    return unary_typed<float>(op, n, x, y, stream);
  if (type == WF_CUDA_F64)
    return unary_typed<double>(op, n, x, y, stream);
  return cudaErrorInvalidValue;
}
