/* plugins/devices/cuda/cuda_kernels.c — the CUDA kernels: MatMul with cuBLAS,
 * Add/Sub/Mul with broadcasting, Relu/Sigmoid/Tanh, and the uniform Philox
 * initializers (RandomUniform, GlorotUniform, HeUniform), for float32 and
 * float64, and their table.
 *
 * Inputs and outputs are device memory (the core moves tensors at the
 * borders of the device's partitions): each kernel queues its work on the
 * device's stream and returns without waiting (cuda_work.h), on the GPU
 * its node was placed on. Normal-distributed initializers are not here: see
 * cuda_philox.h. */
#include <config.h>

#include "cuda_device.h"
#include "cuda_launch.h"
#include "cuda_work.h"
#include "philox.h"
#include <weft/plugin_aux.h>

#include <limits.h>
#include <math.h>
#include <string.h>

/* Messages do not name the node: the core prefixes them with it. */

static int launch_fail(wf_status *st, const cuw *w, const char *what,
                       cudaError_t err) {
  return cuw_check(w, what, err, st);
}

/* ---- MatMul -------------------------------------------------------------- */

/* z (M, N) = op(a) op(b) with a (M, K) or (K, M) under transpose_a, b (K,
 * N) or (N, K) under transpose_b. cuBLAS is column-major: a row-major
 * (R, C) matrix is its (C, R) transpose there, so it computes z^T = op(b)^T
 * op(a)^T, which is z in row-major order. */
static int matmul_compute(wf_kernel_ctx *ctx, void *kstate, wf_status *st) {
  const wf_tensor *a, *b;
  wf_shape as, bs, zs;
  wf_tensor *z;
  int ta = 0, tb = 0, type = -1;
  int64_t m, k, n;
  const void *da, *db;
  void *dz;
  cuw w = {0};
  int rc;

  if (wfx_kernel_input(ctx, 0, &a, &as, st) ||
      wfx_kernel_input(ctx, 1, &b, &bs, st) ||
      wfx_kernel_attr_bool(ctx, "transpose_a", &ta, st) ||
      wfx_kernel_attr_bool(ctx, "transpose_b", &tb, st) ||
      cuw_float_type(wfx_dtype(a), &type, st))
    return wfx_code(st);
  /* Matrices whose inner dimensions agree: the op's shape function
   * checked, and gives (M, N). */
  if (wfx_host->kernel_output_shape(ctx, 0, &zs, st))
    return wfx_code(st);
  m = zs.dims[0], n = zs.dims[1];
  k = ta ? as.dims[0] : as.dims[1];
  if (m > INT_MAX || n > INT_MAX || k > INT_MAX)
    return wfx_fail(st, WF_UNIMPLEMENTED,
                    "(%lld, %lld) x (%lld, %lld): cuBLAS takes dimensions "
                    "below 2^31",
                    (long long)m, (long long)k, (long long)k, (long long)n);
  z = wfx_host->kernel_output_new(ctx, 0, &zs, st);
  if (!z)
    return wfx_code(st);
  if (m == 0 || n == 0)
    return 0;
  if ((rc = cuw_begin(&w, ctx, st)) != 0)
    goto out;
  da = wfx_data(a);
  db = wfx_data(b);
  dz = wfx_data(z);
  if (k == 0) {
    /* An empty sum: zeros (cuBLAS is not asked about k = 0). */
    cudaError_t err =
        cudaMemsetAsync(dz, 0, wfx_host->tensor_nbytes(z), w.dev->stream);
    if ((rc = cuw_check(&w, "cudaMemsetAsync", err, st)) != 0)
      goto out;
  } else {
    cublasOperation_t opa = ta ? CUBLAS_OP_T : CUBLAS_OP_N;
    cublasOperation_t opb = tb ? CUBLAS_OP_T : CUBLAS_OP_N;
    int lda = (int)(ta ? m : k), ldb = (int)(tb ? k : n);
    cublasHandle_t blas = cudev_blas(w.dev, st);
    cublasStatus_t bst;

    if (!blas) {
      rc = wfx_code(st);
      goto out;
    }
    if (type == WF_CUDA_F32) {
      const float one = 1, zero = 0;
      bst = cublasSgemm(blas, opb, opa, (int)n, (int)m, (int)k, &one,
                        db, ldb, da, lda, &zero, dz, (int)n);
    } else {
      const double one = 1, zero = 0;
      bst = cublasDgemm(blas, opb, opa, (int)n, (int)m, (int)k, &one,
                        db, ldb, da, lda, &zero, dz, (int)n);
    }
    if (bst != CUBLAS_STATUS_SUCCESS) {
      rc = wfx_fail(st, WF_INTERNAL, "%s: cublas%cgemm failed (%s: %s)",
                    w.dev->label, type == WF_CUDA_F32 ? 'S' : 'D',
                    cublasGetStatusName(bst), cublasGetStatusString(bst));
      goto out;
    }
  }
  rc = 0;

out:
  cuw_end(&w);
  return rc;
}

/* ---- elementwise --------------------------------------------------------- */

/* z = x op y with NumPy broadcasting (opcommon's rules and walk). */
static int binary_compute(wf_kernel_ctx *ctx, int op, wf_status *st) {
  const wf_tensor *x, *y;
  wf_shape in[2], zs;
  cuda_bcast cb;
  wfx_bcast walk;
  wf_tensor *z;
  cuw w = {0};
  int type = -1, rc;
  cudaError_t err;

  if (wfx_kernel_input(ctx, 0, &x, &in[0], st) ||
      wfx_kernel_input(ctx, 1, &y, &in[1], st) ||
      cuw_float_type(wfx_dtype(x), &type, st) ||
      wfx_broadcast_shapes(&in[0], &in[1], &zs, NULL, st))
    return wfx_code(st);
  z = wfx_host->kernel_output_new(ctx, 0, &zs, st);
  if (!z)
    return wfx_code(st);
  if (wfx_count(z) == 0)
    return 0;
  wfx_bcast_init(&walk, &zs, 2, in);
  memset(&cb, 0, sizeof cb);
  cb.rank = walk.rank;
  for (int d = 0; d < walk.rank; d++) {
    cb.dims[d] = walk.dims[d];
    cb.xstride[d] = walk.strides[0][d];
    cb.ystride[d] = walk.strides[1][d];
  }
  if ((rc = cuw_begin(&w, ctx, st)) != 0)
    goto out;
  err = cuda_binary(op, type, &cb, walk.count, wfx_data(x), wfx_data(y),
                    wfx_data(z), w.dev->stream);
  rc = launch_fail(st, &w, "the elementwise kernel", err);

out:
  cuw_end(&w);
  return rc;
}

static int unary_compute(wf_kernel_ctx *ctx, int op, wf_status *st) {
  const wf_tensor *x;
  wf_shape xs;
  wf_tensor *y;
  cuw w = {0};
  int type = -1, rc;
  cudaError_t err;

  if (wfx_kernel_input(ctx, 0, &x, &xs, st) ||
      cuw_float_type(wfx_dtype(x), &type, st))
    return wfx_code(st);
  y = wfx_host->kernel_output_new(ctx, 0, &xs, st);
  if (!y)
    return wfx_code(st);
  if (wfx_count(y) == 0)
    return 0;
  if ((rc = cuw_begin(&w, ctx, st)) != 0)
    goto out;
  err = cuda_unary(op, type, wfx_count(y), wfx_data(x), wfx_data(y),
                   w.dev->stream);
  rc = launch_fail(st, &w, "the elementwise kernel", err);

out:
  cuw_end(&w);
  return rc;
}

#define BINARY(name, op)                                                       \
  static int name(wf_kernel_ctx *ctx, void *kstate, wf_status *st) {           \
    return binary_compute(ctx, (op), st);                                      \
  }
#define UNARY(name, op)                                                        \
  static int name(wf_kernel_ctx *ctx, void *kstate, wf_status *st) {           \
    return unary_compute(ctx, (op), st);                                       \
  }
BINARY(add_compute, WF_CUDA_ADD)
BINARY(sub_compute, WF_CUDA_SUB)
BINARY(mul_compute, WF_CUDA_MUL)
UNARY(relu_compute, WF_CUDA_RELU)
UNARY(sigmoid_compute, WF_CUDA_SIGMOID)
UNARY(tanh_compute, WF_CUDA_TANH)

/* ---- uniform initializers ------------------------------------------------ */

/* The ops-random plugin's ops, with its keys, streams, bounds and fans
 * (plugins/numerics/philox.h), so that values match its CPU kernels. */
typedef enum uniform_kind {
  UNIFORM_RANDOM, /* RandomUniform: [minval, maxval) */
  UNIFORM_GLOROT, /* GlorotUniform: limit sqrt(6 / (fan_in + fan_out)) */
  UNIFORM_HE      /* HeUniform: limit sqrt(6 / fan_in) */
} uniform_kind;

static int uniform_bounds(wf_kernel_ctx *ctx, uniform_kind kind,
                          const wf_shape *s, double *lo, double *hi,
                          wf_status *st) {
  double fin, fout, x;

  switch (kind) {
  case UNIFORM_RANDOM:
    /* Finite with minval <= maxval: the op's shape function checked. */
    if (wfx_kernel_attr_float(ctx, "minval", lo, st) ||
        wfx_kernel_attr_float(ctx, "maxval", hi, st))
      return wfx_code(st);
    return 0;
  case UNIFORM_GLOROT:
    rnd_fans(s, &fin, &fout);
    x = sqrt(6.0 / (fin + fout));
    break;
  case UNIFORM_HE:
    rnd_fans(s, &fin, &fout);
    x = sqrt(6.0 / fin);
    break;
  default:
    return wfx_fail(st, WF_INTERNAL, "unknown uniform kind %d", (int)kind);
  }
  *lo = -x;
  *hi = x;
  return 0;
}

static int uniform_compute(wf_kernel_ctx *ctx, uniform_kind kind,
                           wf_status *st) {
  wf_shape shape;
  int64_t seed = 0, seed2 = 0, n;
  double lo, hi;
  cuphilox stream;
  wf_tensor *out;
  cuw w = {0};
  int type = -1, rc;
  cudaError_t err;

  if (!WF_HOST_HAS(wfx_host, kernel_step))
    return wfx_fail(st, WF_FAILED_PRECONDITION,
                    "this core has no kernel_step to key random streams by");
  /* The shape attribute as the op's shape function accepted it (fully
   * known, at most 2^48 elements). */
  if (wfx_host->kernel_output_shape(ctx, 0, &shape, st) ||
      cuw_float_type(wfx_host->kernel_output_dtype(ctx, 0), &type, st) ||
      uniform_bounds(ctx, kind, &shape, &lo, &hi, st) ||
      wfx_kernel_attr_int(ctx, "seed", &seed, st) ||
      wfx_kernel_attr_int(ctx, "seed2", &seed2, st))
    return wfx_code(st);
  cuphilox_init(&stream,
                seed || seed2
                    ? cuphilox_key_from_seeds(seed, seed2)
                    : cuphilox_key_from_name(wfx_host->kernel_node_name(ctx)),
                wfx_host->kernel_step(ctx));
  out = wfx_host->kernel_output_new(ctx, 0, &shape, st);
  if (!out)
    return wfx_code(st);
  n = wfx_count(out);
  if (n == 0)
    return 0;
  if ((rc = cuw_begin(&w, ctx, st)) != 0)
    goto out;
  err = cuda_uniform(type, wfx_data(out), n, stream, lo, hi, w.dev->stream);
  rc = launch_fail(st, &w, "the uniform random kernel", err);

out:
  cuw_end(&w);
  return rc;
}

#define UNIFORM(name, kind)                                                    \
  static int name(wf_kernel_ctx *ctx, void *kstate, wf_status *st) {           \
    return uniform_compute(ctx, (kind), st);                                   \
  }
UNIFORM(random_uniform_compute, UNIFORM_RANDOM)
UNIFORM(glorot_uniform_compute, UNIFORM_GLOROT)
UNIFORM(he_uniform_compute, UNIFORM_HE)

/* ---- the table ----------------------------------------------------------- */

/* Each kernel only queues device work: cheap for the executor (run inline,
 * not handed to another thread). */
#define FLT (WF_DTYPE_BIT(WF_FLOAT32) | WF_DTYPE_BIT(WF_FLOAT64))

static const wf_kernel_def k_matmul =
    WFX_KERNEL_FOR("cuda", "cublas", "MatMul", "T", FLT, matmul_compute,
                   .flags = WF_KERNEL_CHEAP);
static const wf_kernel_def k_add = WFX_KERNEL_FOR(
    "cuda", "cuda", "Add", "T", FLT, add_compute, .flags = WF_KERNEL_CHEAP);
static const wf_kernel_def k_sub = WFX_KERNEL_FOR(
    "cuda", "cuda", "Sub", "T", FLT, sub_compute, .flags = WF_KERNEL_CHEAP);
static const wf_kernel_def k_mul = WFX_KERNEL_FOR(
    "cuda", "cuda", "Mul", "T", FLT, mul_compute, .flags = WF_KERNEL_CHEAP);
static const wf_kernel_def k_relu = WFX_KERNEL_FOR(
    "cuda", "cuda", "Relu", "T", FLT, relu_compute, .flags = WF_KERNEL_CHEAP);
static const wf_kernel_def k_sigmoid =
    WFX_KERNEL_FOR("cuda", "cuda", "Sigmoid", "T", FLT, sigmoid_compute,
                   .flags = WF_KERNEL_CHEAP);
static const wf_kernel_def k_tanh = WFX_KERNEL_FOR(
    "cuda", "cuda", "Tanh", "T", FLT, tanh_compute, .flags = WF_KERNEL_CHEAP);
static const wf_kernel_def k_uniform =
    WFX_KERNEL_FOR("cuda", "philox", "RandomUniform", "dtype", FLT,
                   random_uniform_compute, .flags = WF_KERNEL_CHEAP);
static const wf_kernel_def k_glorot_uniform =
    WFX_KERNEL_FOR("cuda", "philox", "GlorotUniform", "dtype", FLT,
                   glorot_uniform_compute, .flags = WF_KERNEL_CHEAP);
static const wf_kernel_def k_he_uniform =
    WFX_KERNEL_FOR("cuda", "philox", "HeUniform", "dtype", FLT,
                   he_uniform_compute, .flags = WF_KERNEL_CHEAP);

const wf_kernel_def *const cuda_kernels[] = {
    &k_matmul, &k_add,     &k_sub,           &k_mul,         &k_relu,
    &k_sigmoid, &k_tanh,   &k_uniform,       &k_glorot_uniform,
    &k_he_uniform, NULL};
