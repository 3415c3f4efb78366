/* plugins/devices/cuda/cuda_math.c — more of ops-math and ops-array on the
 * GPU: Neg, Square, Sqrt, Rsqrt, Exp, Log, Abs, Elu, Softplus, Gelu,
 * LeakyRelu; the activation gradients (ReluGrad, SigmoidGrad, TanhGrad,
 * SqrtGrad, RsqrtGrad, EluGrad, LeakyReluGrad, SoftplusGrad, AbsGrad,
 * GeluGrad); Div, Maximum, Minimum and Pow with broadcasting; AddN; Cast;
 * OnesLike and ZerosLike; and the ops that only change shapes (Reshape,
 * ExpandDims, Identity, StopGradient) or read them (Shape), so that a
 * training step's tensors stay on the device. Floats only where the CPU
 * computes (integers stay on the CPU), except Cast, AddN and the
 * shape-only ops. Add, Sub, Mul, Relu, Sigmoid and Tanh are
 * cuda_kernels.c's. */
#include <config.h>

#include "cuda_work.h"

#include <inttypes.h>
#include <string.h>

/* ---- elementwise --------------------------------------------------------- */

static int unary_compute(wf_kernel_ctx *ctx, int op, wf_status *st) {
  const wf_tensor *x;
  wf_tensor *y;
  wf_shape xs;
  double alpha = 0;
  int approximate = 0, type, rc;
  cuw w = {0};

  if (wfx_kernel_input(ctx, 0, &x, &xs, st) ||
      cuw_float_type(wfx_dtype(x), &type, st) ||
      (op == WF_CUDA_LEAKY_RELU &&
       wfx_kernel_attr_float(ctx, "alpha", &alpha, st)) ||
      (op == WF_CUDA_GELU &&
       wfx_kernel_attr_bool(ctx, "approximate", &approximate, st)))
    return wfx_code(st);
  if (!(y = wfx_host->kernel_output_new(ctx, 0, &xs, st)))
    return wfx_code(st);
  if (wfx_count(y) == 0)
    return 0;
  if ((rc = cuw_begin(&w, ctx, st)) == 0)
    rc =
        cuw_check(&w, "the elementwise kernel",
                  cuda_unary_ex(op, type, wfx_count(y), wfx_data(x),
                                wfx_data(y), alpha, approximate, w.dev->stream),
                  st);
  cuw_end(&w);
  return rc;
}

/* dx = f(dy, v): inputs dy and v of one shape. */
static int grad_compute(wf_kernel_ctx *ctx, int op, wf_status *st) {
  const wf_tensor *dy, *v;
  wf_tensor *dx;
  wf_shape dys, vs;
  double alpha = 0;
  int approximate = 0, type, rc;
  char a[WFX_SHAPE_STR_MAX], b[WFX_SHAPE_STR_MAX];
  cuw w = {0};

  if (wfx_kernel_input(ctx, 0, &dy, &dys, st) ||
      wfx_kernel_input(ctx, 1, &v, &vs, st) ||
      cuw_float_type(wfx_dtype(dy), &type, st) ||
      (op == WF_CUDA_LEAKY_RELU_GRAD &&
       wfx_kernel_attr_float(ctx, "alpha", &alpha, st)) ||
      (op == WF_CUDA_GELU_GRAD &&
       wfx_kernel_attr_bool(ctx, "approximate", &approximate, st)))
    return wfx_code(st);
  if (!wfx_shape_equal(&dys, &vs) || wfx_dtype(v) != wfx_dtype(dy))
    return wfx_fail(
        st, WF_INVALID_ARGUMENT,
        "dy %s %s and the forward tensor %s %s must have one "
        "dtype and shape",
        wfx_dtype_name(wfx_dtype(dy)), wfx_shape_str(&dys, a, sizeof a),
        wfx_dtype_name(wfx_dtype(v)), wfx_shape_str(&vs, b, sizeof b));
  if (!(dx = wfx_host->kernel_output_new(ctx, 0, &dys, st)))
    return wfx_code(st);
  if (wfx_count(dx) == 0)
    return 0;
  if ((rc = cuw_begin(&w, ctx, st)) == 0)
    rc = cuw_check(&w, "the gradient kernel",
                   cuda_act_grad(op, type, wfx_count(dx), wfx_data(dy),
                                 wfx_data(v), wfx_data(dx), alpha, approximate,
                                 w.dev->stream),
                   st);
  cuw_end(&w);
  return rc;
}

static int binary_compute(wf_kernel_ctx *ctx, int op, wf_status *st) {
  const wf_tensor *x, *y;
  wf_shape in[2], zs;
  cuda_bcast b;
  wf_tensor *z;
  int64_t count;
  int type, rc;
  cuw w = {0};

  if (wfx_kernel_input(ctx, 0, &x, &in[0], st) ||
      wfx_kernel_input(ctx, 1, &y, &in[1], st) ||
      cuw_float_type(wfx_dtype(x), &type, st) ||
      wfx_broadcast_shapes(&in[0], &in[1], &zs, NULL, st))
    return wfx_code(st);
  if (!(z = wfx_host->kernel_output_new(ctx, 0, &zs, st)))
    return wfx_code(st);
  if (wfx_count(z) == 0)
    return 0;
  cuw_bcast(&zs, in, &b, &count);
  if ((rc = cuw_begin(&w, ctx, st)) == 0)
    rc = cuw_check(&w, "the elementwise kernel",
                   cuda_binary_ex(op, type, &b, count, wfx_data(x), wfx_data(y),
                                  wfx_data(z), w.dev->stream),
                   st);
  cuw_end(&w);
  return rc;
}

#define UNARY(name, op)                                                        \
  static int name(wf_kernel_ctx *ctx, void *s, wf_status *st) {               \
    return unary_compute(ctx, (op), st);                                       \
  }
#define GRAD(name, op)                                                         \
  static int name(wf_kernel_ctx *ctx, void *s, wf_status *st) {               \
    return grad_compute(ctx, (op), st);                                        \
  }
#define BINARY(name, op)                                                       \
  static int name(wf_kernel_ctx *ctx, void *s, wf_status *st) {               \
    return binary_compute(ctx, (op), st);                                      \
  }
UNARY(neg_compute, WF_CUDA_NEG)
UNARY(square_compute, WF_CUDA_SQUARE)
UNARY(sqrt_compute, WF_CUDA_SQRT)
UNARY(rsqrt_compute, WF_CUDA_RSQRT)
UNARY(exp_compute, WF_CUDA_EXP)
UNARY(log_compute, WF_CUDA_LOG)
UNARY(abs_compute, WF_CUDA_ABS)
UNARY(elu_compute, WF_CUDA_ELU)
UNARY(softplus_compute, WF_CUDA_SOFTPLUS)
UNARY(gelu_compute, WF_CUDA_GELU)
UNARY(leaky_relu_compute, WF_CUDA_LEAKY_RELU)
GRAD(relu_grad_compute, WF_CUDA_RELU_GRAD)
GRAD(sigmoid_grad_compute, WF_CUDA_SIGMOID_GRAD)
GRAD(tanh_grad_compute, WF_CUDA_TANH_GRAD)
GRAD(sqrt_grad_compute, WF_CUDA_SQRT_GRAD)
GRAD(rsqrt_grad_compute, WF_CUDA_RSQRT_GRAD)
GRAD(elu_grad_compute, WF_CUDA_ELU_GRAD)
GRAD(leaky_relu_grad_compute, WF_CUDA_LEAKY_RELU_GRAD)
GRAD(softplus_grad_compute, WF_CUDA_SOFTPLUS_GRAD)
GRAD(abs_grad_compute, WF_CUDA_ABS_GRAD)
GRAD(gelu_grad_compute, WF_CUDA_GELU_GRAD)
BINARY(div_compute, WF_CUDA_DIV)
BINARY(maximum_compute, WF_CUDA_MAXIMUM)
BINARY(minimum_compute, WF_CUDA_MINIMUM)
BINARY(pow_compute, WF_CUDA_POW)

/* AddN: N inputs of one shape, summed in double (integers wrap). */
static int add_n_compute(wf_kernel_ctx *ctx, void *s, wf_status *st) {
  int32_t n = wfx_host->kernel_num_inputs(ctx);
  const wf_tensor *t;
  wf_shape s0;
  wf_tensor *y;
  const void **ptrs = NULL;
  void *dptrs;
  int type, rc;
  cuw w = {0};

  /* The op's shape function refuses inputs of different shapes (AddN does
   * not broadcast) and gives theirs. */
  if (wfx_kernel_input(ctx, 0, &t, NULL, st) ||
      wfx_host->kernel_output_shape(ctx, 0, &s0, st))
    return wfx_code(st);
  if ((type = cuw_type_of(wfx_dtype(t))) < 0 || type == WF_CUDA_BOOL)
    return wfx_fail(st, WF_UNIMPLEMENTED, "no CUDA AddN for %s",
                    wfx_dtype_name(wfx_dtype(t)));
  if (!(ptrs = wfx_host->alloc((size_t)n * sizeof *ptrs, 0)))
    return wfx_fail(st, WF_RESOURCE_EXHAUSTED,
                    "out of host memory for %d inputs", (int)n);
  for (int32_t i = 0; i < n; i++) {
    const wf_tensor *ti;
    if (wfx_kernel_input(ctx, i, &ti, NULL, st)) {
      rc = wfx_code(st);
      goto done;
    }
    ptrs[i] = wfx_data(ti);
  }
  if (!(y = wfx_host->kernel_output_new(ctx, 0, &s0, st))) {
    rc = wfx_code(st);
    goto done;
  }
  rc = 0;
  if (wfx_count(y) == 0)
    goto done;
  if ((rc = cuw_begin(&w, ctx, st)) ||
      (rc = cuw_upload(&w, ptrs, (size_t)n * sizeof *ptrs, &dptrs,
                           "the input pointers", st)))
    goto done;
  rc = cuw_check(&w, "the AddN kernel",
                 cuda_add_n(type, wfx_count(y), (int)n,
                            (const void *const *)dptrs, wfx_data(y),
                            w.dev->stream),
                 st);

done:
  cuw_end(&w);
  wfx_host->free(ptrs);
  return rc;
}

static int cast_compute(wf_kernel_ctx *ctx, void *s, wf_status *st) {
  const wf_tensor *x;
  wf_shape xs;
  wf_tensor *y;
  int from, to, rc;
  cuw w = {0};

  if (wfx_kernel_input(ctx, 0, &x, &xs, st))
    return wfx_code(st);
  from = cuw_type_of(wfx_dtype(x));
  to = cuw_type_of(wfx_host->kernel_output_dtype(ctx, 0));
  if (from < 0 || to < 0)
    return wfx_fail(st, WF_UNIMPLEMENTED, "no CUDA Cast from %s to %s",
                    wfx_dtype_name(wfx_dtype(x)),
                    wfx_dtype_name(wfx_host->kernel_output_dtype(ctx, 0)));
  if (!(y = wfx_host->kernel_output_new(ctx, 0, &xs, st)))
    return wfx_code(st);
  if (wfx_count(y) == 0)
    return 0;
  if ((rc = cuw_begin(&w, ctx, st)) == 0)
    rc = cuw_check(&w, "the cast kernel",
                   cuda_cast(from, to, wfx_count(y), wfx_data(x), wfx_data(y),
                             w.dev->stream),
                   st);
  cuw_end(&w);
  return rc;
}

/* OnesLike (value 1) and ZerosLike (0): only x's shape is read. */
static int fill_like(wf_kernel_ctx *ctx, double value, wf_status *st) {
  const wf_tensor *x;
  wf_shape xs;
  wf_tensor *y;
  int type, rc;
  cuw w = {0};

  if (wfx_kernel_input(ctx, 0, &x, &xs, st))
    return wfx_code(st);
  if ((type = cuw_type_of(wfx_dtype(x))) < 0)
    return wfx_fail(st, WF_UNIMPLEMENTED, "no CUDA fill for %s",
                    wfx_dtype_name(wfx_dtype(x)));
  if (!(y = wfx_host->kernel_output_new(ctx, 0, &xs, st)))
    return wfx_code(st);
  if (wfx_count(y) == 0)
    return 0;
  if ((rc = cuw_begin(&w, ctx, st)) == 0)
    rc = cuw_check(
        &w, "the fill kernel",
        cuda_fill(type, wfx_count(y), value, wfx_data(y), w.dev->stream), st);
  cuw_end(&w);
  return rc;
}

static int ones_like_compute(wf_kernel_ctx *ctx, void *s, wf_status *st) {
  return fill_like(ctx, 1.0, st);
}

static int zeros_like_compute(wf_kernel_ctx *ctx, void *s, wf_status *st) {
  return fill_like(ctx, 0.0, st);
}

/* ---- shapes -------------------------------------------------------------- */

/* Output 0 = a view of input 0 with shape s (no copy, no device work). */
static int forward_as(wf_kernel_ctx *ctx, const wf_tensor *x,
                      const wf_shape *s, wf_status *st) {
  wf_tensor *v = wfx_host->tensor_reshape((wf_tensor *)x, s, st);
  int rc;

  if (!v)
    return wfx_code(st);
  rc = wfx_host->kernel_output_set(ctx, 0, v, st);
  wfx_host->tensor_release(v);
  return rc;
}

static int identity_compute(wf_kernel_ctx *ctx, void *s, wf_status *st) {
  const wf_tensor *x;

  if (wfx_kernel_input(ctx, 0, &x, NULL, st))
    return wfx_code(st);
  return wfx_host->kernel_output_set(ctx, 0, (wf_tensor *)x, st);
}

/* Reshape (shape, a host input, with at most one -1) and ExpandDims: the
 * output's shape as the op's shape function gives it for this call (it
 * reads shape and refuses what the op refuses), x's bytes as they are. */
static int reshape_compute(wf_kernel_ctx *ctx, void *s, wf_status *st) {
  const wf_tensor *x;
  wf_shape out;

  if (wfx_kernel_input(ctx, 0, &x, NULL, st) ||
      wfx_host->kernel_output_shape(ctx, 0, &out, st))
    return wfx_code(st);
  return forward_as(ctx, x, &out, st);
}

static int expand_dims_compute(wf_kernel_ctx *ctx, void *s, wf_status *st) {
  return reshape_compute(ctx, s, st);
}

/* Shape: the output is host memory (host_outputs bit 0); x's data is
 * never read. */
static int shape_compute(wf_kernel_ctx *ctx, void *s, wf_status *st) {
  const wf_tensor *x;
  wf_shape xs, out;
  wf_tensor *y;
  int32_t dt = wfx_host->kernel_output_dtype(ctx, 0);
  char a[WFX_SHAPE_STR_MAX];

  if (wfx_kernel_input(ctx, 0, &x, &xs, st))
    return wfx_code(st);
  wfx_shape_make(&out, 1, (int64_t[]){xs.rank});
  if (!(y = wfx_host->kernel_output_new(ctx, 0, &out, st)))
    return wfx_code(st);
  for (int i = 0; i < xs.rank; i++) {
    if (dt == WF_INT32) {
      if (xs.dims[i] > INT32_MAX)
        return wfx_fail(st, WF_INVALID_ARGUMENT,
                        "dimension %d of %s does not fit int32", i,
                        wfx_shape_str(&xs, a, sizeof a));
      ((int32_t *)wfx_data(y))[i] = (int32_t)xs.dims[i];
    } else {
      ((int64_t *)wfx_data(y))[i] = xs.dims[i];
    }
  }
  return 0;
}

/* ---- the table ----------------------------------------------------------- */

#define FLT (WF_DTYPE_BIT(WF_FLOAT32) | WF_DTYPE_BIT(WF_FLOAT64))
#define NUM                                                                    \
  (FLT | WF_DTYPE_BIT(WF_INT8) | WF_DTYPE_BIT(WF_UINT8) |                      \
   WF_DTYPE_BIT(WF_INT32) | WF_DTYPE_BIT(WF_INT64))
#define ALL (NUM | WF_DTYPE_BIT(WF_BOOL))

static const wf_kernel_def k_neg = WFX_KERNEL_FOR(
    "cuda", "cuda", "Neg", "T", FLT, neg_compute, .flags = WF_KERNEL_CHEAP);
static const wf_kernel_def k_square =
    WFX_KERNEL_FOR("cuda", "cuda", "Square", "T", FLT, square_compute,
                   .flags = WF_KERNEL_CHEAP);
static const wf_kernel_def k_sqrt = WFX_KERNEL_FOR(
    "cuda", "cuda", "Sqrt", "T", FLT, sqrt_compute, .flags = WF_KERNEL_CHEAP);
static const wf_kernel_def k_rsqrt = WFX_KERNEL_FOR(
    "cuda", "cuda", "Rsqrt", "T", FLT, rsqrt_compute, .flags = WF_KERNEL_CHEAP);
static const wf_kernel_def k_exp = WFX_KERNEL_FOR(
    "cuda", "cuda", "Exp", "T", FLT, exp_compute, .flags = WF_KERNEL_CHEAP);
static const wf_kernel_def k_log = WFX_KERNEL_FOR(
    "cuda", "cuda", "Log", "T", FLT, log_compute, .flags = WF_KERNEL_CHEAP);
static const wf_kernel_def k_abs = WFX_KERNEL_FOR(
    "cuda", "cuda", "Abs", "T", FLT, abs_compute, .flags = WF_KERNEL_CHEAP);
static const wf_kernel_def k_elu = WFX_KERNEL_FOR(
    "cuda", "cuda", "Elu", "T", FLT, elu_compute, .flags = WF_KERNEL_CHEAP);
static const wf_kernel_def k_softplus =
    WFX_KERNEL_FOR("cuda", "cuda", "Softplus", "T", FLT, softplus_compute,
                   .flags = WF_KERNEL_CHEAP);
static const wf_kernel_def k_gelu = WFX_KERNEL_FOR(
    "cuda", "cuda", "Gelu", "T", FLT, gelu_compute, .flags = WF_KERNEL_CHEAP);
static const wf_kernel_def k_leaky_relu =
    WFX_KERNEL_FOR("cuda", "cuda", "LeakyRelu", "T", FLT, leaky_relu_compute,
                   .flags = WF_KERNEL_CHEAP);
static const wf_kernel_def k_relu_grad =
    WFX_KERNEL_FOR("cuda", "cuda", "ReluGrad", "T", FLT, relu_grad_compute,
                   .flags = WF_KERNEL_CHEAP);
static const wf_kernel_def k_sigmoid_grad =
    WFX_KERNEL_FOR("cuda", "cuda", "SigmoidGrad", "T", FLT,
                   sigmoid_grad_compute, .flags = WF_KERNEL_CHEAP);
static const wf_kernel_def k_tanh_grad =
    WFX_KERNEL_FOR("cuda", "cuda", "TanhGrad", "T", FLT, tanh_grad_compute,
                   .flags = WF_KERNEL_CHEAP);
static const wf_kernel_def k_sqrt_grad =
    WFX_KERNEL_FOR("cuda", "cuda", "SqrtGrad", "T", FLT, sqrt_grad_compute,
                   .flags = WF_KERNEL_CHEAP);
static const wf_kernel_def k_rsqrt_grad =
    WFX_KERNEL_FOR("cuda", "cuda", "RsqrtGrad", "T", FLT, rsqrt_grad_compute,
                   .flags = WF_KERNEL_CHEAP);
static const wf_kernel_def k_elu_grad =
    WFX_KERNEL_FOR("cuda", "cuda", "EluGrad", "T", FLT, elu_grad_compute,
                   .flags = WF_KERNEL_CHEAP);
static const wf_kernel_def k_leaky_relu_grad =
    WFX_KERNEL_FOR("cuda", "cuda", "LeakyReluGrad", "T", FLT,
                   leaky_relu_grad_compute, .flags = WF_KERNEL_CHEAP);
static const wf_kernel_def k_softplus_grad =
    WFX_KERNEL_FOR("cuda", "cuda", "SoftplusGrad", "T", FLT,
                   softplus_grad_compute, .flags = WF_KERNEL_CHEAP);
static const wf_kernel_def k_abs_grad =
    WFX_KERNEL_FOR("cuda", "cuda", "AbsGrad", "T", FLT, abs_grad_compute,
                   .flags = WF_KERNEL_CHEAP);
static const wf_kernel_def k_gelu_grad =
    WFX_KERNEL_FOR("cuda", "cuda", "GeluGrad", "T", FLT, gelu_grad_compute,
                   .flags = WF_KERNEL_CHEAP);
static const wf_kernel_def k_div = WFX_KERNEL_FOR(
    "cuda", "cuda", "Div", "T", FLT, div_compute, .flags = WF_KERNEL_CHEAP);
static const wf_kernel_def k_maximum =
    WFX_KERNEL_FOR("cuda", "cuda", "Maximum", "T", FLT, maximum_compute,
                   .flags = WF_KERNEL_CHEAP);
static const wf_kernel_def k_minimum =
    WFX_KERNEL_FOR("cuda", "cuda", "Minimum", "T", FLT, minimum_compute,
                   .flags = WF_KERNEL_CHEAP);
static const wf_kernel_def k_pow = WFX_KERNEL_FOR(
    "cuda", "cuda", "Pow", "T", FLT, pow_compute, .flags = WF_KERNEL_CHEAP);
static const wf_kernel_def k_add_n = WFX_KERNEL_FOR(
    "cuda", "cuda", "AddN", "T", NUM, add_n_compute, .flags = WF_KERNEL_CHEAP);
static const wf_kernel_def k_cast =
    WFX_KERNEL_FOR("cuda", "cuda", "Cast", "SrcT", ALL, cast_compute,
                   .flags = WF_KERNEL_CHEAP);
static const wf_kernel_def k_ones_like =
    WFX_KERNEL_FOR("cuda", "cuda", "OnesLike", "T", ALL, ones_like_compute,
                   .flags = WF_KERNEL_CHEAP);
static const wf_kernel_def k_zeros_like =
    WFX_KERNEL_FOR("cuda", "cuda", "ZerosLike", "T", ALL, zeros_like_compute,
                   .flags = WF_KERNEL_CHEAP);
static const wf_kernel_def k_identity =
    WFX_KERNEL_FOR("cuda", "cuda", "Identity", "T", ALL, identity_compute,
                   .flags = WF_KERNEL_CHEAP);
static const wf_kernel_def k_stop_gradient =
    WFX_KERNEL_FOR("cuda", "cuda", "StopGradient", "T", ALL, identity_compute,
                   .flags = WF_KERNEL_CHEAP);
static const wf_kernel_def k_expand_dims =
    WFX_KERNEL_FOR("cuda", "cuda", "ExpandDims", "T", ALL, expand_dims_compute,
                   .flags = WF_KERNEL_CHEAP);
static const wf_kernel_def k_reshape = {
    WF_STRUCT_INIT(wf_kernel_def), .op = "Reshape", .device_type = "cuda",
    .type_attr = "T", .dtypes = ALL, .flags = WF_KERNEL_CHEAP, .label = "cuda",
    .compute = reshape_compute, .host_inputs = WF_CUW_BIT(1)};
static const wf_kernel_def k_shape = {
    WF_STRUCT_INIT(wf_kernel_def), .op = "Shape", .device_type = "cuda",
    .type_attr = "T", .dtypes = ALL, .flags = WF_KERNEL_CHEAP, .label = "cuda",
    .compute = shape_compute, .host_outputs = WF_CUW_BIT(0)};

const wf_kernel_def *const cuda_math_kernels[] = {
    &k_neg,         &k_square,          &k_sqrt,          &k_rsqrt,
    &k_exp,         &k_log,             &k_abs,           &k_elu,
    &k_softplus,    &k_gelu,            &k_leaky_relu,    &k_relu_grad,
    &k_sigmoid_grad, &k_tanh_grad,      &k_sqrt_grad,     &k_rsqrt_grad,
    &k_elu_grad,    &k_leaky_relu_grad, &k_softplus_grad, &k_abs_grad,
    &k_gelu_grad,   &k_div,             &k_maximum,       &k_minimum,
    &k_pow,         &k_add_n,           &k_cast,          &k_ones_like,
    &k_zeros_like,  &k_identity,        &k_stop_gradient, &k_expand_dims,
    &k_reshape,     &k_shape,           NULL};
