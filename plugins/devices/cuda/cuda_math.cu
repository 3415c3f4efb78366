/* plugins/devices/cuda/cuda_math.cu — device code of cuda_math.c: the
 * unary ops and activation gradients of ops-math beyond Relu, Sigmoid and
 * Tanh (same formulas, in the element type), Div/Maximum/Minimum/Pow with
 * broadcasting, Cast between every pair of types, fills and AddN.
 *
 * It works out no shapes (cuda_math.c does) and moves no memory. */
#include <config.h>

#include "cuda_launch.h"
#include "cuda_common.cuh"

#include <math.h>

/* ---- formulas ------------------------------------------------------------ */

/* ops-math's sigmoid without overflow in either tail. */
template <typename T> __device__ static T sigmoid_of(T a) {
  if (a >= (T)0)
    return (T)1 / ((T)1 + exp(-a));
  T e = exp(a);
  return e / ((T)1 + e);
}

template <typename T> __device__ static T gelu_of(T a, int approximate) {
  if (isinf(a))
    return a < (T)0 ? (T)0 : a;
  if (approximate) {
    T v = (T)0.7978845608028654 * (a + (T)0.044715 * a * a * a);
    return a * sigmoid_of<T>((T)2 * v);
  }
  return (T)0.5 * a * erfc(-a * (T)0.7071067811865476);
}

template <typename T> __device__ static T gelu_d(T a, int approximate) {
  const T c = (T)0.7978845608028654, k = (T)0.044715;
  if (isinf(a))
    return a > (T)0 ? (T)1 : (T)0;
  if (approximate) {
    T s = sigmoid_of<T>((T)2 * c * (a + k * a * a * a));
    return s + (T)2 * a * s * ((T)1 - s) * c * ((T)1 + (T)3 * k * a * a);
  }
  return (T)0.5 * erfc(-a * (T)0.7071067811865476) +
         a * (T)0.3989422804014327 * exp((T)-0.5 * a * a);
}

template <typename T>
__device__ static T unary_of(int op, T a, T alpha, int approximate) {
  switch (op) {
  case WF_CUDA_NEG: return -a;
  case WF_CUDA_SQUARE: return a * a;
  case WF_CUDA_SQRT: return sqrt(a);
  case WF_CUDA_RSQRT: return (T)1 / sqrt(a);
  case WF_CUDA_EXP: return exp(a);
  case WF_CUDA_LOG: return log(a);
  case WF_CUDA_ABS: return fabs(a);
  case WF_CUDA_ELU: return a < (T)0 ? expm1(a) : a;
  case WF_CUDA_SOFTPLUS:
    return (a > (T)0 ? a : (T)0) + log1p(exp(-fabs(a)));
  case WF_CUDA_GELU: return gelu_of<T>(a, approximate);
  case WF_CUDA_LEAKY_RELU: return a < (T)0 ? alpha * a : a;
  }
  return a;
}

template <typename T>
__device__ static T grad_of(int op, T g, T a, T alpha, int approximate) {
  switch (op) {
  case WF_CUDA_RELU_GRAD: return a > (T)0 ? g : (T)0;
  case WF_CUDA_SIGMOID_GRAD: return g * a * ((T)1 - a);
  case WF_CUDA_TANH_GRAD: return g * ((T)1 - a * a);
  case WF_CUDA_SQRT_GRAD: return (T)0.5 * g / a;
  case WF_CUDA_RSQRT_GRAD: return (T)-0.5 * g * a * a * a;
  case WF_CUDA_ELU_GRAD: return a > (T)0 ? g : g * (a + (T)1);
  case WF_CUDA_LEAKY_RELU_GRAD: return a > (T)0 ? g : alpha * g;
  case WF_CUDA_SOFTPLUS_GRAD: return g * sigmoid_of<T>(a);
  case WF_CUDA_ABS_GRAD:
    return a > (T)0 ? g : a < (T)0 ? -g : isnan(a) ? a : (T)0;
  case WF_CUDA_GELU_GRAD: return g * gelu_d<T>(a, approximate);
  }
  return g;
}

/* Maximum and Minimum: NaN in either gives NaN. */
template <typename T> __device__ static T binary_of(int op, T a, T b) {
  switch (op) {
  case WF_CUDA_DIV: return a / b;
  case WF_CUDA_MAXIMUM:
    return isnan(a) || isnan(b) ? a + b : a > b ? a : b;
  case WF_CUDA_MINIMUM:
    return isnan(a) || isnan(b) ? a + b : a < b ? a : b;
  case WF_CUDA_POW: return pow(a, b);
  }
  return a;
}

/* ---- kernels ------------------------------------------------------------- */

template <typename T>
__global__ void unary_k(int op, int64_t n, const T *x, T *y, T alpha,
                        int approximate) {
  CU_FOR(i, n) y[i] = unary_of<T>(op, x[i], alpha, approximate);
}

template <typename T>
__global__ void grad_k(int op, int64_t n, const T *dy, const T *v, T *dx,
                       T alpha, int approximate) {
  CU_FOR(i, n) dx[i] = grad_of<T>(op, dy[i], v[i], alpha, approximate);
}

template <typename T>
__global__ void binary_k(int op, cuda_bcast b, int64_t n, const T *x,
                         const T *y, T *z) {
  CU_FOR(i, n) {
    int64_t rest = i, xo = 0, yo = 0;
    for (int d = b.rank - 1; d >= 0; d--) {
      int64_t c = rest % b.dims[d];
      rest /= b.dims[d];
      xo += c * b.xstride[d];
      yo += c * b.ystride[d];
    }
    z[i] = binary_of<T>(op, x[xo], y[yo]);
  }
}

/* ---- Cast ---------------------------------------------------------------- */

template <typename T> struct limits;
template <> struct limits<int8_t> {
  static __device__ double lo() { return -128.0; }
  static __device__ double hi() { return 127.0; }
};
template <> struct limits<uint8_t> {
  static __device__ double lo() { return 0.0; }
  static __device__ double hi() { return 255.0; }
};
template <> struct limits<int32_t> {
  static __device__ double lo() { return -2147483648.0; }
  static __device__ double hi() { return 2147483647.0; }
};
template <> struct limits<int64_t> {
  static __device__ double lo() { return -9223372036854775808.0; }
  /* 2^63: the first double beyond INT64_MAX. */
  static __device__ double hi() { return 9223372036854775808.0; }
};

/* A float to integer D: truncated, saturated, NaN to 0. */
template <typename D> __device__ static D from_float(double v) {
  if (v != v)
    return (D)0;
  if (v <= limits<D>::lo())
    return (D)limits<D>::lo();
  if (v >= limits<D>::hi()) {
    if (sizeof(D) == 8)
      return (D)INT64_MAX;
    return (D)limits<D>::hi();
  }
  return (D)v;
}

/* Type tags: float, double, integers by their C types, bool as uint8_t
 * holding 0/1 (read as != 0). */
struct tag_bool {};

template <typename S, typename D> struct caster {
  /* integer to integer: two's-complement wrap through uint64_t */
  static __device__ D go(S v) { return (D)(uint64_t)(int64_t)v; }
};
template <typename D> struct caster<float, D> {
  static __device__ D go(float v) { return from_float<D>((double)v); }
};
template <typename D> struct caster<double, D> {
  static __device__ D go(double v) { return from_float<D>(v); }
};
template <typename S> struct caster<S, float> {
  static __device__ float go(S v) { return (float)v; }
};
template <typename S> struct caster<S, double> {
  static __device__ double go(S v) { return (double)v; }
};
template <> struct caster<float, float> {
  static __device__ float go(float v) { return v; }
};
template <> struct caster<double, double> {
  static __device__ double go(double v) { return v; }
};
template <> struct caster<float, double> {
  static __device__ double go(float v) { return (double)v; }
};
template <> struct caster<double, float> {
  static __device__ float go(double v) { return (float)v; }
};
template <> struct caster<uint8_t, uint8_t> {
  static __device__ uint8_t go(uint8_t v) { return v; }
};

template <typename S, typename D>
__global__ void cast_k(int64_t n, const S *x, D *y) {
  CU_FOR(i, n) y[i] = caster<S, D>::go(x[i]);
}
/* to bool: x != 0 (NaN is true, as NaN != 0) */
template <typename S>
__global__ void cast_to_bool_k(int64_t n, const S *x, uint8_t *y) {
  CU_FOR(i, n) y[i] = x[i] != (S)0;
}
/* from bool: 0 or 1 */
template <typename D>
__global__ void cast_from_bool_k(int64_t n, const uint8_t *x, D *y) {
  CU_FOR(i, n) y[i] = x[i] ? (D)1 : (D)0;
}

template <typename S, typename D>
static cudaError_t cast_to(int64_t n, const void *x, void *y,
                           cudaStream_t stream) {
  cast_k<S, D><<<cu_grid(n), CU_THREADS, 0, stream>>>(n, (const S *)x,
                                                        (D *)y);
  return cudaGetLastError();
}

template <typename S>
static cudaError_t cast_from(int to, int64_t n, const void *x, void *y,
                             cudaStream_t stream) {
  switch (to) {
  case WF_CUDA_F32: return cast_to<S, float>(n, x, y, stream);
  case WF_CUDA_F64: return cast_to<S, double>(n, x, y, stream);
  case WF_CUDA_I32: return cast_to<S, int32_t>(n, x, y, stream);
  case WF_CUDA_I64: return cast_to<S, int64_t>(n, x, y, stream);
  case WF_CUDA_I8: return cast_to<S, int8_t>(n, x, y, stream);
  case WF_CUDA_U8: return cast_to<S, uint8_t>(n, x, y, stream);
  case WF_CUDA_BOOL:
    cast_to_bool_k<S><<<cu_grid(n), CU_THREADS, 0, stream>>>(
        n, (const S *)x, (uint8_t *)y);
    return cudaGetLastError();
  }
  return cudaErrorInvalidValue;
}

template <typename D>
static cudaError_t cast_bool_to(int64_t n, const void *x, void *y,
                                cudaStream_t stream) {
  cast_from_bool_k<D><<<cu_grid(n), CU_THREADS, 0, stream>>>(
      n, (const uint8_t *)x, (D *)y);
  return cudaGetLastError();
}

/* ---- fills and AddN ------------------------------------------------------ */

template <typename T> __global__ void fill_k(int64_t n, T v, T *y) {
  CU_FOR(i, n) y[i] = v;
}

template <typename T, typename A>
__global__ void add_n_k(int64_t n, int k, const void *const *xs, T *y) {
  CU_FOR(i, n) {
    A s = 0;
    for (int j = 0; j < k; j++)
      s = (A)(s + (A)((const T *)xs[j])[i]);
    y[i] = (T)s;
  }
}

/* ---- launchers ----------------------------------------------------------- */

extern "C" cudaError_t cuda_unary_ex(int op, int type, int64_t n,
                                         const void *x, void *y, double alpha,
                                         int approximate,
                                         cudaStream_t stream) {
  if (n <= 0)
    return n == 0 ? cudaSuccess : cudaErrorInvalidValue;
  if (type == WF_CUDA_F32)
    unary_k<float><<<cu_grid(n), CU_THREADS, 0, stream>>>(
        op, n, (const float *)x, (float *)y, (float)alpha, approximate);
  else if (type == WF_CUDA_F64)
    unary_k<double><<<cu_grid(n), CU_THREADS, 0, stream>>>(
        op, n, (const double *)x, (double *)y, alpha, approximate);
  else
    return cudaErrorInvalidValue;
  return cudaGetLastError();
}

extern "C" cudaError_t cuda_act_grad(int op, int type, int64_t n,
                                         const void *dy, const void *v,
                                         void *dx, double alpha,
                                         int approximate,
                                         cudaStream_t stream) {
  if (n <= 0)
    return n == 0 ? cudaSuccess : cudaErrorInvalidValue;
  if (type == WF_CUDA_F32)
    grad_k<float><<<cu_grid(n), CU_THREADS, 0, stream>>>(
        op, n, (const float *)dy, (const float *)v, (float *)dx,
        (float)alpha, approximate);
  else if (type == WF_CUDA_F64)
    grad_k<double><<<cu_grid(n), CU_THREADS, 0, stream>>>(
        op, n, (const double *)dy, (const double *)v, (double *)dx, alpha,
        approximate);
  else
    return cudaErrorInvalidValue;
  return cudaGetLastError();
}

extern "C" cudaError_t cuda_binary_ex(int op, int type,
                                          const cuda_bcast *b,
                                          int64_t count, const void *x,
                                          const void *y, void *z,
                                          cudaStream_t stream) {
  if (count <= 0)
    return count == 0 ? cudaSuccess : cudaErrorInvalidValue;
  if (b->rank < 1 || b->rank > WF_CUDA_MAX_RANK)
    return cudaErrorInvalidValue;
  if (type == WF_CUDA_F32)
    binary_k<float><<<cu_grid(count), CU_THREADS, 0, stream>>>(
        op, *b, count, (const float *)x, (const float *)y, (float *)z);
  else if (type == WF_CUDA_F64)
    binary_k<double><<<cu_grid(count), CU_THREADS, 0, stream>>>(
        op, *b, count, (const double *)x, (const double *)y, (double *)z);
  else
    return cudaErrorInvalidValue;
  return cudaGetLastError();
}

extern "C" cudaError_t cuda_cast(int from, int to, int64_t n,
                                     const void *x, void *y,
                                     cudaStream_t stream) {
  if (n <= 0)
    return n == 0 ? cudaSuccess : cudaErrorInvalidValue;
  switch (from) {
  case WF_CUDA_F32: return cast_from<float>(to, n, x, y, stream);
  case WF_CUDA_F64: return cast_from<double>(to, n, x, y, stream);
  case WF_CUDA_I32: return cast_from<int32_t>(to, n, x, y, stream);
  case WF_CUDA_I64: return cast_from<int64_t>(to, n, x, y, stream);
  case WF_CUDA_I8: return cast_from<int8_t>(to, n, x, y, stream);
  case WF_CUDA_U8: return cast_from<uint8_t>(to, n, x, y, stream);
  case WF_CUDA_BOOL:
    switch (to) {
    case WF_CUDA_F32: return cast_bool_to<float>(n, x, y, stream);
    case WF_CUDA_F64: return cast_bool_to<double>(n, x, y, stream);
    case WF_CUDA_I32: return cast_bool_to<int32_t>(n, x, y, stream);
    case WF_CUDA_I64: return cast_bool_to<int64_t>(n, x, y, stream);
    case WF_CUDA_I8: return cast_bool_to<int8_t>(n, x, y, stream);
    case WF_CUDA_U8:
    case WF_CUDA_BOOL: return cast_bool_to<uint8_t>(n, x, y, stream);
    }
  }
  return cudaErrorInvalidValue;
}

extern "C" cudaError_t cuda_fill(int type, int64_t n, double value,
                                     void *y, cudaStream_t stream) {
  if (n <= 0)
    return n == 0 ? cudaSuccess : cudaErrorInvalidValue;
  switch (type) {
  case WF_CUDA_F32:
    fill_k<float><<<cu_grid(n), CU_THREADS, 0, stream>>>(n, (float)value,
                                                           (float *)y);
    break;
  case WF_CUDA_F64:
    fill_k<double><<<cu_grid(n), CU_THREADS, 0, stream>>>(n, value,
                                                            (double *)y);
    break;
  case WF_CUDA_I32:
    fill_k<int32_t><<<cu_grid(n), CU_THREADS, 0, stream>>>(
        n, (int32_t)value, (int32_t *)y);
    break;
  case WF_CUDA_I64:
    fill_k<int64_t><<<cu_grid(n), CU_THREADS, 0, stream>>>(
        n, (int64_t)value, (int64_t *)y);
    break;
  case WF_CUDA_I8:
    fill_k<int8_t><<<cu_grid(n), CU_THREADS, 0, stream>>>(
        n, (int8_t)value, (int8_t *)y);
    break;
  case WF_CUDA_U8:
  case WF_CUDA_BOOL:
    fill_k<uint8_t><<<cu_grid(n), CU_THREADS, 0, stream>>>(
        n, (uint8_t)value, (uint8_t *)y);
    break;
  default:
    return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

extern "C" cudaError_t cuda_add_n(int type, int64_t n, int k,
                                      const void *const *xs, void *y,
                                      cudaStream_t stream) {
  if (n <= 0 || k < 1)
    return n == 0 ? cudaSuccess : cudaErrorInvalidValue;
  switch (type) {
  case WF_CUDA_F32:
    add_n_k<float, double><<<cu_grid(n), CU_THREADS, 0, stream>>>(
        n, k, xs, (float *)y);
    break;
  case WF_CUDA_F64:
    add_n_k<double, double><<<cu_grid(n), CU_THREADS, 0, stream>>>(
        n, k, xs, (double *)y);
    break;
  case WF_CUDA_I32:
    add_n_k<int32_t, uint32_t><<<cu_grid(n), CU_THREADS, 0, stream>>>(
        n, k, xs, (int32_t *)y);
    break;
  case WF_CUDA_I64:
    add_n_k<int64_t, uint64_t><<<cu_grid(n), CU_THREADS, 0, stream>>>(
        n, k, xs, (int64_t *)y);
    break;
  case WF_CUDA_I8:
    add_n_k<int8_t, uint8_t><<<cu_grid(n), CU_THREADS, 0, stream>>>(
        n, k, xs, (int8_t *)y);
    break;
  case WF_CUDA_U8:
    add_n_k<uint8_t, uint8_t><<<cu_grid(n), CU_THREADS, 0, stream>>>(
        n, k, xs, (uint8_t *)y);
    break;
  default:
    return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}
