/* plugins/devices/cuda/cuda_train.cu — device code of cuda_train.c: the
 * optimizer update rules (plugins/numerics/optim.c) for dense and
 * sparse gradients, and AssignAdd/AssignSub's accumulation.
 *
 * The rules compute in the variable's type T with explicitly rounded
 * operations (__fmul_rn, __dadd_rn, ...), which the compiler never fuses
 * into multiply-adds, in the CPU's order, so every stored value has the
 * CPU kernel's bits. The hyperparameters and Adam's step size come from
 * the host in double; the constants derived from them are computed in
 * double and rounded to T once, as the CPU does. */
#include <config.h>

#include "cuda_launch.h"
#include "cuda_common.cuh"

#include <math.h>

/* A slot value below the smallest normal number is stored as a zero of its
 * sign, as optim.c's rules store it (FLT_MIN and DBL_MIN). */
__device__ static inline float flush(float x) {
  return fabsf(x) < 1.17549435e-38f ? copysignf(0.0f, x) : x;
}
__device__ static inline double flush(double x) {
  return fabs(x) < 2.2250738585072014e-308 ? copysign(0.0, x) : x;
}

/* One IEEE operation of each type, rounded to nearest, with subnormal
 * operands and results read as zeros of their sign: the CPU runs its rules
 * with the unit flushing them (optim.c: x86's DAZ and FTZ). */
__device__ static inline float mul_rn(float a, float b) {
  return flush(__fmul_rn(flush(a), flush(b)));
}
__device__ static inline double mul_rn(double a, double b) {
  return flush(__dmul_rn(flush(a), flush(b)));
}
__device__ static inline float add_rn(float a, float b) {
  return flush(__fadd_rn(flush(a), flush(b)));
}
__device__ static inline double add_rn(double a, double b) {
  return flush(__dadd_rn(flush(a), flush(b)));
}
__device__ static inline float sub_rn(float a, float b) {
  return flush(__fsub_rn(flush(a), flush(b)));
}
__device__ static inline double sub_rn(double a, double b) {
  return flush(__dsub_rn(flush(a), flush(b)));
}
__device__ static inline float div_rn(float a, float b) {
  return flush(__fdiv_rn(flush(a), flush(b)));
}
__device__ static inline double div_rn(double a, double b) {
  return flush(__ddiv_rn(flush(a), flush(b)));
}
__device__ static inline float sqrt_rn(float a) { return __fsqrt_rn(flush(a)); }
__device__ static inline double sqrt_rn(double a) {
  return __dsqrt_rn(flush(a));
}
__device__ static inline float max_of(float a, float b) {
  return fmaxf(flush(a), flush(b));
}
__device__ static inline double max_of(double a, double b) {
  return fmax(flush(a), flush(b));
}

#define MUL mul_rn
#define ADD add_rn
#define SUB sub_rn
#define DIV div_rn

/* Updates element i of the variable s0 and its slots with gradient g. */
template <typename T>
__device__ static void rule_at(int rule, int64_t i, T *s0, T *s1, T *s2,
                               T *s3, T g, const cuda_apply_params &p) {
  const T lr = (T)p.lr, mu = (T)p.momentum, rho = (T)p.rho;
  const T eps = (T)p.epsilon;

  switch (rule) {
  case WF_CUDA_SGD:
    s0[i] = SUB(s0[i], MUL(lr, g));
    break;
  case WF_CUDA_MOMENTUM: {
    T a = flush(ADD(MUL(mu, s1[i]), g));
    s1[i] = a;
    if (p.nesterov)
      s0[i] = SUB(s0[i], ADD(MUL(lr, g), MUL((T)(p.lr * p.momentum), a)));
    else
      s0[i] = SUB(s0[i], MUL(lr, a));
    break;
  }
  case WF_CUDA_ADAM: {
    const T b1 = (T)p.beta1, b2 = (T)p.beta2;
    const T c1 = (T)(1 - p.beta1), c2 = (T)(1 - p.beta2);
    const T decay = (T)(p.lr * p.weight_decay);
    T mi = flush(ADD(MUL(b1, s1[i]), MUL(c1, g)));
    T vi = flush(ADD(MUL(b2, s2[i]), MUL(MUL(c2, g), g)));
    T x = s0[i], d = vi;
    s1[i] = mi;
    s2[i] = vi;
    if (p.amsgrad) {
      d = max_of(s3[i], vi);
      s3[i] = d;
    }
    x = SUB(x, MUL(decay, x));
    s0[i] = SUB(x, DIV(MUL((T)p.alpha, mi), ADD(sqrt_rn(d), eps)));
    break;
  }
  case WF_CUDA_RMSPROP: {
    const T c = (T)(1 - p.rho);
    T msi = flush(ADD(MUL(rho, s1[i]), MUL(MUL(c, g), g)));
    T mo = flush(ADD(MUL(mu, s2[i]), DIV(MUL(lr, g), sqrt_rn(ADD(msi, eps)))));
    s1[i] = msi;
    s2[i] = mo;
    s0[i] = SUB(s0[i], mo);
    break;
  }
  case WF_CUDA_CENTERED_RMSPROP: {
    const T c = (T)(1 - p.rho);
    T mgi = flush(ADD(MUL(rho, s1[i]), MUL(c, g)));
    T msi = flush(ADD(MUL(rho, s2[i]), MUL(MUL(c, g), g)));
    T mo = flush(ADD(MUL(mu, s3[i]), DIV(MUL(lr, g), sqrt_rn(ADD(
                                     SUB(msi, MUL(mgi, mgi)), eps)))));
    s1[i] = mgi;
    s2[i] = msi;
    s3[i] = mo;
    s0[i] = SUB(s0[i], mo);
    break;
  }
  case WF_CUDA_ADAGRAD: {
    T a = flush(ADD(s1[i], MUL(g, g)));
    s1[i] = a;
    s0[i] = SUB(s0[i], DIV(MUL(lr, g), ADD(sqrt_rn(a), eps)));
    break;
  }
  }
}

template <typename T>
__global__ void apply_k(int rule, int64_t n, T *s0, T *s1, T *s2, T *s3,
                        const T *grad, cuda_apply_params p) {
  CU_FOR(i, n) rule_at<T>(rule, i, s0, s1, s2, s3, grad[i], p);
}

/* One thread per element of the touched rows: the row's gradient is
 * summed in double in list order (the CPU's: by position within the row)
 * and rounded to T. */
template <typename T>
__global__ void apply_sparse_k(int rule, int64_t urows, int64_t width,
                               const int64_t *row, const int64_t *start,
                               const int64_t *order, T *s0, T *s1, T *s2,
                               T *s3, const T *values,
                               cuda_apply_params p) {
  int64_t total = urows * width;
  CU_FOR(i, total) {
    int64_t u = i / width, e = i % width;
    double g = 0;
    for (int64_t j = start[u]; j < start[u + 1]; j++)
      g = __dadd_rn(g, (double)values[order[j] * width + e]); /* unflushed, as the CPU sums */
    rule_at<T>(rule, row[u] * width + e, s0, s1, s2, s3, (T)g, p);
  }
}

template <typename T, typename U>
__global__ void accumulate_k(int64_t n, T *dst, const T *src, int subtract) {
  CU_FOR(i, n) {
    if (subtract)
      dst[i] = (T)((U)dst[i] - (U)src[i]);
    else
      dst[i] = (T)((U)dst[i] + (U)src[i]);
  }
}

static int rule_ok(int rule) {
  return rule >= WF_CUDA_SGD && rule <= WF_CUDA_ADAGRAD;
}

extern "C" cudaError_t cuda_apply(int rule, int type, int64_t n,
                                      void *const s[4], const void *grad,
                                      const cuda_apply_params *p,
                                      cudaStream_t stream) {
  if (!rule_ok(rule) || n < 0)
    return cudaErrorInvalidValue;
  if (n == 0)
    return cudaSuccess;
  if (type == WF_CUDA_F32)
    apply_k<float><<<cu_grid(n), CU_THREADS, 0, stream>>>(
        rule, n, (float *)s[0], (float *)s[1], (float *)s[2], (float *)s[3],
        (const float *)grad, *p);
  else if (type == WF_CUDA_F64)
    apply_k<double><<<cu_grid(n), CU_THREADS, 0, stream>>>(
        rule, n, (double *)s[0], (double *)s[1], (double *)s[2],
        (double *)s[3], (const double *)grad, *p);
  else
    return cudaErrorInvalidValue;
  return cudaGetLastError();
}

extern "C" cudaError_t cuda_apply_sparse(
    int rule, int type, int64_t urows, int64_t width, const int64_t *row,
    const int64_t *start, const int64_t *order, void *const s[4],
    const void *values, const cuda_apply_params *p,
    cudaStream_t stream) {
  int64_t n = urows * width;
  if (!rule_ok(rule) || n < 0)
    return cudaErrorInvalidValue;
  if (n == 0)
    return cudaSuccess;
  if (type == WF_CUDA_F32)
    apply_sparse_k<float><<<cu_grid(n), CU_THREADS, 0, stream>>>(
        rule, urows, width, row, start, order, (float *)s[0], (float *)s[1],
        (float *)s[2], (float *)s[3], (const float *)values, *p);
  else if (type == WF_CUDA_F64)
    apply_sparse_k<double><<<cu_grid(n), CU_THREADS, 0, stream>>>(
        rule, urows, width, row, start, order, (double *)s[0],
        (double *)s[1], (double *)s[2], (double *)s[3],
        (const double *)values, *p);
  else
    return cudaErrorInvalidValue;
  return cudaGetLastError();
}

extern "C" cudaError_t cuda_accumulate(int type, int64_t n, void *dst,
                                           const void *src, int subtract,
                                           cudaStream_t stream) {
  unsigned g = cu_grid(n);
  if (n <= 0)
    return n == 0 ? cudaSuccess : cudaErrorInvalidValue;
  switch (type) {
  case WF_CUDA_F32:
    accumulate_k<float, float><<<g, CU_THREADS, 0, stream>>>(
        n, (float *)dst, (const float *)src, subtract);
    break;
  case WF_CUDA_F64:
    accumulate_k<double, double><<<g, CU_THREADS, 0, stream>>>(
        n, (double *)dst, (const double *)src, subtract);
    break;
  case WF_CUDA_I32:
    accumulate_k<int32_t, uint32_t><<<g, CU_THREADS, 0, stream>>>(
        n, (int32_t *)dst, (const int32_t *)src, subtract);
    break;
  case WF_CUDA_I64:
    accumulate_k<int64_t, uint64_t><<<g, CU_THREADS, 0, stream>>>(
        n, (int64_t *)dst, (const int64_t *)src, subtract);
    break;
  case WF_CUDA_I8:
    accumulate_k<int8_t, uint8_t><<<g, CU_THREADS, 0, stream>>>(
        n, (int8_t *)dst, (const int8_t *)src, subtract);
    break;
  case WF_CUDA_U8:
    accumulate_k<uint8_t, uint8_t><<<g, CU_THREADS, 0, stream>>>(
        n, (uint8_t *)dst, (const uint8_t *)src, subtract);
    break;
  default:
    return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}
