/* plugins/devices/cuda/cuda_train.cu — device code of cuda_train.c: the
 * optimizer update rules (plugins/numerics/optim.c) for dense and
 * sparse gradients, and AssignAdd/AssignSub's accumulation.
 *
 * The rules compute in double with explicitly rounded operations
 * (__dmul_rn, __dadd_rn, ...), which the compiler never fuses into
 * multiply-adds, so every stored value has the CPU kernel's bits. The
 * hyperparameters and Adam's step size come from the host. */
#include <config.h>

#include "cuda_launch.h"
#include "cuda_common.cuh"

#include <math.h>

#define MUL __dmul_rn
#define ADD __dadd_rn
#define SUB __dsub_rn
#define DIV __ddiv_rn

/* Updates element i of the variable s0 and its slots with gradient g. */
template <typename T>
__device__ static void rule_at(int rule, int64_t i, T *s0, T *s1, T *s2,
                               T *s3, double g,
                               const cuda_apply_params &p) {
  switch (rule) {
  case WF_CUDA_SGD:
    s0[i] = (T)SUB((double)s0[i], MUL(p.lr, g));
    break;
  case WF_CUDA_MOMENTUM: {
    double a = ADD(MUL(p.momentum, (double)s1[i]), g);
    s1[i] = (T)a;
    if (p.nesterov)
      s0[i] = (T)SUB((double)s0[i],
                     ADD(MUL(p.lr, g), MUL(MUL(p.lr, p.momentum), a)));
    else
      s0[i] = (T)SUB((double)s0[i], MUL(p.lr, a));
    break;
  }
  case WF_CUDA_ADAM: {
    double c1 = 1 - p.beta1, c2 = 1 - p.beta2;
    double decay = MUL(p.lr, p.weight_decay);
    double mi = ADD(MUL(p.beta1, (double)s1[i]), MUL(c1, g));
    double vi = ADD(MUL(p.beta2, (double)s2[i]), MUL(MUL(c2, g), g));
    double x = s0[i], d = vi;
    s1[i] = (T)mi;
    s2[i] = (T)vi;
    if (p.amsgrad) {
      d = fmax((double)s3[i], vi);
      s3[i] = (T)d;
    }
    x = SUB(x, MUL(decay, x));
    s0[i] = (T)SUB(x, DIV(MUL(p.alpha, mi), ADD(__dsqrt_rn(d), p.epsilon)));
    break;
  }
  case WF_CUDA_RMSPROP: {
    double msi = ADD(MUL(p.rho, (double)s1[i]), MUL(MUL(1 - p.rho, g), g));
    double mo = ADD(MUL(p.momentum, (double)s2[i]),
                    DIV(MUL(p.lr, g), __dsqrt_rn(ADD(msi, p.epsilon))));
    s1[i] = (T)msi;
    s2[i] = (T)mo;
    s0[i] = (T)SUB((double)s0[i], mo);
    break;
  }
  case WF_CUDA_CENTERED_RMSPROP: {
    double mgi = ADD(MUL(p.rho, (double)s1[i]), MUL(1 - p.rho, g));
    double msi = ADD(MUL(p.rho, (double)s2[i]), MUL(MUL(1 - p.rho, g), g));
    double mo = ADD(
        MUL(p.momentum, (double)s3[i]),
        DIV(MUL(p.lr, g),
            __dsqrt_rn(ADD(SUB(msi, MUL(mgi, mgi)), p.epsilon))));
    s1[i] = (T)mgi;
    s2[i] = (T)msi;
    s3[i] = (T)mo;
    s0[i] = (T)SUB((double)s0[i], mo);
    break;
  }
  case WF_CUDA_ADAGRAD: {
    double a = ADD((double)s1[i], MUL(g, g));
    s1[i] = (T)a;
    s0[i] = (T)SUB((double)s0[i],
                   DIV(MUL(p.lr, g), ADD(__dsqrt_rn(a), p.epsilon)));
    break;
  }
  }
}

template <typename T>
__global__ void apply_k(int rule, int64_t n, T *s0, T *s1, T *s2, T *s3,
                        const T *grad, cuda_apply_params p) {
  CU_FOR(i, n) rule_at<T>(rule, i, s0, s1, s2, s3, (double)grad[i], p);
}

/* One thread per element of the touched rows: the row's gradient is
 * summed in list order (the CPU's: by position within the row). */
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
      g = ADD(g, (double)values[order[j] * width + e]);
    rule_at<T>(rule, row[u] * width + e, s0, s1, s2, s3, g, p);
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
