/* plugins/ops/random/random.c — the random op plugin (module ops_random):
 * RandomUniform, RandomNormal, TruncatedNormal, the variance-scaling
 * initializers (GlorotUniform, GlorotNormal, HeUniform, HeNormal,
 * LeCunNormal) and the constant initializers Zeros, Ones and Constant, with
 * CPU kernels.
 *
 * Values come from philox.c's streams, keyed by (seed, seed2) or the node
 * name and by the session's step counter (see philox.h for the exact
 * layout): a node gives the same values for the same key and step whatever
 * the threads or the order of execution, and new values at each step. Every
 * op here is registered as not differentiable. */
#include <config.h>

#include <inttypes.h>
#include <math.h>
#include <string.h>

#include <weft/plugin.h>

#include "opcommon.h"
#include "philox.h"

/* Messages do not name the node: the core prefixes them with it. */

/* The standard deviation of a standard normal truncated to [-2, 2]: the
 * truncated initializers divide by it so the result has the intended
 * variance (Keras's VarianceScaling does the same). */
#define TRUNC_STDDEV 0.87962566103423978

/* ---- what each op draws ------------------------------------------------ */

typedef enum dist {
  DIST_UNIFORM,   /* a, b: [lo, hi) */
  DIST_NORMAL,    /* a, b: mean, stddev */
  DIST_TRUNCATED, /* a, b: mean, stddev; |z| <= 2 */
  DIST_CONSTANT   /* a: the value */
} dist;

typedef enum kind {
  KIND_UNIFORM,
  KIND_NORMAL,
  KIND_TRUNCATED,
  KIND_GLOROT_UNIFORM,
  KIND_GLOROT_NORMAL,
  KIND_HE_UNIFORM,
  KIND_HE_NORMAL,
  KIND_LECUN_NORMAL,
  KIND_ZEROS,
  KIND_ONES,
  KIND_CONSTANT
} kind;

typedef struct draw {
  dist d;
  double a, b;
} draw;

/* Reads a float attribute through the shape or kernel context. */
typedef int attr_float_fn(const void *ctx, const char *name, double *out,
                          wf_status *st);

static int shape_float(const void *ctx, const char *name, double *out,
                       wf_status *st) {
  return wfx_shape_attr_float(ctx, name, out, st);
}

static int kernel_float(const void *ctx, const char *name, double *out,
                        wf_status *st) {
  return wfx_kernel_attr_float(ctx, name, out, st);
}

/* What op `k` with output shape s draws, from its attributes (read with
 * get on ctx); INVALID_ARGUMENT for bad parameters. Shared by the shape
 * functions (refusing a bad node when it is added) and the kernels. */
static int make_draw(kind k, const wf_shape *s, attr_float_fn *get,
                     const void *ctx, draw *out, wf_status *st) {
  double fin, fout, x, y;

  rnd_fans(s, &fin, &fout);
  switch (k) {
  case KIND_UNIFORM:
    if (get(ctx, "minval", &x, st) || get(ctx, "maxval", &y, st))
      return wfx_code(st);
    if (!isfinite(x) || !isfinite(y) || x > y)
      return wfx_fail(st, WF_INVALID_ARGUMENT,
                      "minval %g and maxval %g must be finite with minval "
                      "<= maxval",
                      x, y);
    *out = (draw){DIST_UNIFORM, x, y};
    return 0;
  case KIND_NORMAL:
  case KIND_TRUNCATED:
    if (get(ctx, "mean", &x, st) || get(ctx, "stddev", &y, st))
      return wfx_code(st);
    if (!isfinite(x) || !isfinite(y) || y < 0)
      return wfx_fail(st, WF_INVALID_ARGUMENT,
                      "mean %g and stddev %g must be finite with stddev >= "
                      "0",
                      x, y);
    *out = (draw){k == KIND_NORMAL ? DIST_NORMAL : DIST_TRUNCATED, x, y};
    return 0;
  case KIND_GLOROT_UNIFORM:
    x = sqrt(6.0 / (fin + fout));
    *out = (draw){DIST_UNIFORM, -x, x};
    return 0;
  case KIND_GLOROT_NORMAL:
    *out = (draw){DIST_TRUNCATED, 0, sqrt(2.0 / (fin + fout)) / TRUNC_STDDEV};
    return 0;
  case KIND_HE_UNIFORM:
    x = sqrt(6.0 / fin);
    *out = (draw){DIST_UNIFORM, -x, x};
    return 0;
  case KIND_HE_NORMAL:
    *out = (draw){DIST_TRUNCATED, 0, sqrt(2.0 / fin) / TRUNC_STDDEV};
    return 0;
  case KIND_LECUN_NORMAL:
    *out = (draw){DIST_TRUNCATED, 0, sqrt(1.0 / fin) / TRUNC_STDDEV};
    return 0;
  case KIND_ZEROS:
    *out = (draw){DIST_CONSTANT, 0, 0};
    return 0;
  case KIND_ONES:
    *out = (draw){DIST_CONSTANT, 1, 0};
    return 0;
  case KIND_CONSTANT:
    if (get(ctx, "value", &x, st))
      return wfx_code(st);
    *out = (draw){DIST_CONSTANT, x, 0};
    return 0;
  }
  return wfx_fail(st, WF_INTERNAL, "unknown random op kind %d", (int)k);
}

/* A constant of an integer dtype must be a whole number in its range. */
static int check_constant(int32_t dtype, double v, wf_status *st) {
  double lo, hi;

  switch (dtype) {
  case WF_FLOAT32:
  case WF_FLOAT64:
    return 0;
  case WF_INT8: lo = INT8_MIN; hi = INT8_MAX; break;
  case WF_UINT8: lo = 0; hi = UINT8_MAX; break;
  case WF_INT32: lo = INT32_MIN; hi = INT32_MAX; break;
  /* 2^63 is the first double above INT64_MAX. */
  case WF_INT64: lo = -0x1p63; hi = 0x1p63 - 1024; break;
  default:
    return wfx_fail(st, WF_INVALID_ARGUMENT, "dtype %s is not supported",
                    wfx_dtype_name(dtype));
  }
  if (!(v == floor(v) && v >= lo && v <= hi))
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "value %.17g is not a whole number in the range of %s", v,
                    wfx_dtype_name(dtype));
  return 0;
}

/* ---- shape functions --------------------------------------------------- */

/* The "shape" attribute, which must be fully known. */
static int known_shape_attr(wf_attr_value *v, int rc, wf_shape *out,
                            wf_status *st) {
  char buf[WFX_SHAPE_STR_MAX];

  if (rc != 0 || v->type != WF_ATTR_SHAPE)
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "attribute 'shape' (shape) is missing");
  if (!wfx_shape_is_known(&v->u.shape))
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "attribute 'shape' is %s; it must be fully known",
                    wfx_shape_str(&v->u.shape, buf, sizeof buf));
  if (wfx_shape_count(&v->u.shape) > (int64_t)RND_MAX_BLOCKS)
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "attribute 'shape' is %s: more than 2^48 elements",
                    wfx_shape_str(&v->u.shape, buf, sizeof buf));
  *out = v->u.shape;
  return 0;
}

static int shape_for(wf_shape_ctx *ctx, kind k, wf_status *st) {
  wf_attr_value v;
  wf_shape s;
  draw dr;
  int32_t dtype;

  if (known_shape_attr(&v, wfx_host->shape_attr(ctx, "shape", &v), &s, st) ||
      make_draw(k, &s, shape_float, ctx, &dr, st) ||
      wfx_shape_attr_dtype(ctx, "dtype", &dtype, st))
    return wfx_code(st);
  if (dr.d == DIST_CONSTANT && check_constant(dtype, dr.a, st))
    return wfx_code(st);
  wfx_host->shape_set_output(ctx, 0, &s);
  return 0;
}

#define SHAPE_FN(name, k)                                                      \
  static int name(wf_shape_ctx *ctx, wf_status *st) {                          \
    return shape_for(ctx, (k), st);                                            \
  }
SHAPE_FN(shape_uniform, KIND_UNIFORM)
SHAPE_FN(shape_normal, KIND_NORMAL)
SHAPE_FN(shape_truncated, KIND_TRUNCATED)
SHAPE_FN(shape_glorot_uniform, KIND_GLOROT_UNIFORM)
SHAPE_FN(shape_glorot_normal, KIND_GLOROT_NORMAL)
SHAPE_FN(shape_he_uniform, KIND_HE_UNIFORM)
SHAPE_FN(shape_he_normal, KIND_HE_NORMAL)
SHAPE_FN(shape_lecun_normal, KIND_LECUN_NORMAL)
SHAPE_FN(shape_zeros, KIND_ZEROS)
SHAPE_FN(shape_ones, KIND_ONES)
SHAPE_FN(shape_constant, KIND_CONSTANT)

/* ---- kernels ----------------------------------------------------------- */

/* Fills n elements of dtype at p with the constant v (checked already). */
static void fill_constant(void *p, int32_t dtype, int64_t n, double v) {
#define FILL(T)                                                                \
  for (int64_t i = 0; i < n; i++)                                              \
    ((T *)p)[i] = (T)v;                                                        \
  break
  switch (dtype) {
  case WF_FLOAT32: FILL(float);
  case WF_FLOAT64: FILL(double);
  case WF_INT8: FILL(int8_t);
  case WF_UINT8: FILL(uint8_t);
  case WF_INT32: FILL(int32_t);
  case WF_INT64: FILL(int64_t);
  default: break;
  }
#undef FILL
}

static int compute_for(wf_kernel_ctx *ctx, kind k, wf_status *st) {
  wf_attr_value v;
  wf_shape s;
  draw dr;
  int32_t dtype = wfx_host->kernel_output_dtype(ctx, 0);
  int64_t seed = 0, seed2 = 0, n;
  wf_tensor *out;
  rnd_stream stream;
  void *p;

  if (known_shape_attr(&v, wfx_host->kernel_attr(ctx, "shape", &v), &s, st) ||
      make_draw(k, &s, kernel_float, ctx, &dr, st))
    return wfx_code(st);
  if (dr.d == DIST_CONSTANT && check_constant(dtype, dr.a, st))
    return wfx_code(st);
  if (dr.d != DIST_CONSTANT) {
    uint64_t key;

    if (dtype != WF_FLOAT32 && dtype != WF_FLOAT64)
      return wfx_fail(st, WF_UNIMPLEMENTED, "no random kernel for %s",
                      wfx_dtype_name(dtype));
    if (wfx_kernel_attr_int(ctx, "seed", &seed, st) ||
        wfx_kernel_attr_int(ctx, "seed2", &seed2, st))
      return wfx_code(st);
    key = seed || seed2 ? rnd_key_from_seeds(seed, seed2)
                        : rnd_key_from_name(wfx_host->kernel_node_name(ctx));
    rnd_stream_init(&stream, key, wfx_host->kernel_step(ctx));
  }
  out = wfx_host->kernel_output_new(ctx, 0, &s, st);
  if (!out)
    return wfx_code(st);
  p = wfx_data(out);
  n = wfx_count(out);
  switch (dr.d) {
  case DIST_UNIFORM:
    if (dtype == WF_FLOAT32)
      rnd_uniform_f32(p, n, &stream, dr.a, dr.b);
    else
      rnd_uniform_f64(p, n, &stream, dr.a, dr.b);
    break;
  case DIST_NORMAL:
    if (dtype == WF_FLOAT32)
      rnd_normal_f32(p, n, &stream, dr.a, dr.b);
    else
      rnd_normal_f64(p, n, &stream, dr.a, dr.b);
    break;
  case DIST_TRUNCATED:
    if (dtype == WF_FLOAT32)
      rnd_truncated_f32(p, n, &stream, dr.a, dr.b);
    else
      rnd_truncated_f64(p, n, &stream, dr.a, dr.b);
    break;
  case DIST_CONSTANT:
    fill_constant(p, dtype, n, dr.a);
    break;
  }
  return 0;
}

#define COMPUTE_FN(name, k)                                                    \
  static int name(wf_kernel_ctx *ctx, void *state, wf_status *st) {            \
    return compute_for(ctx, (k), st);                                          \
  }
COMPUTE_FN(compute_uniform, KIND_UNIFORM)
COMPUTE_FN(compute_normal, KIND_NORMAL)
COMPUTE_FN(compute_truncated, KIND_TRUNCATED)
COMPUTE_FN(compute_glorot_uniform, KIND_GLOROT_UNIFORM)
COMPUTE_FN(compute_glorot_normal, KIND_GLOROT_NORMAL)
COMPUTE_FN(compute_he_uniform, KIND_HE_UNIFORM)
COMPUTE_FN(compute_he_normal, KIND_HE_NORMAL)
COMPUTE_FN(compute_lecun_normal, KIND_LECUN_NORMAL)
COMPUTE_FN(compute_zeros, KIND_ZEROS)
COMPUTE_FN(compute_ones, KIND_ONES)
COMPUTE_FN(compute_constant, KIND_CONSTANT)

/* ---- attribute and argument definitions -------------------------------- */

#define ATTR_DTYPE(mask)                                                       \
  {WF_STRUCT_INIT(wf_attr_def), .name = "dtype", .type = WF_ATTR_DTYPE,        \
   .has_default = 1,                                                           \
   .default_value = {.type = WF_ATTR_DTYPE, .count = 1,                        \
                     .u = {.dtype = WF_FLOAT32}},                              \
   .allowed_dtypes = (mask), .doc = "element type of the output"}
#define ATTR_SHAPE                                                             \
  {WF_STRUCT_INIT(wf_attr_def), .name = "shape", .type = WF_ATTR_SHAPE,        \
   .doc = "shape of the output; must be fully known"}
#define ATTR_INT0(nm, dc)                                                      \
  {WF_STRUCT_INIT(wf_attr_def), .name = (nm), .type = WF_ATTR_INT,             \
   .has_default = 1,                                                           \
   .default_value = {.type = WF_ATTR_INT, .count = 1, .u = {.i = 0}},          \
   .doc = (dc)}
#define ATTR_SEEDS                                                             \
  ATTR_INT0("seed", "graph-level seed; with seed2 it keys the stream (both "   \
                    "0: the node name does)"),                                 \
      ATTR_INT0("seed2", "op-level seed")
#define ATTR_FLOAT(nm, def, dc)                                                \
  {WF_STRUCT_INIT(wf_attr_def), .name = (nm), .type = WF_ATTR_FLOAT,           \
   .has_default = 1,                                                           \
   .default_value = {.type = WF_ATTR_FLOAT, .count = 1, .u = {.f = (def)}},    \
   .doc = (dc)}

static const wf_attr_def attrs_uniform[] = {
    ATTR_DTYPE(WFX_DTYPES_FLOAT),
    ATTR_SHAPE,
    ATTR_SEEDS,
    ATTR_FLOAT("minval", 0.0, "lower bound (included)"),
    ATTR_FLOAT("maxval", 1.0, "upper bound (excluded)"),
    WF_ATTR_END};
static const wf_attr_def attrs_normal[] = {
    ATTR_DTYPE(WFX_DTYPES_FLOAT),
    ATTR_SHAPE,
    ATTR_SEEDS,
    ATTR_FLOAT("mean", 0.0, "mean of the distribution"),
    ATTR_FLOAT("stddev", 1.0,
               "standard deviation (of the normal before truncation)"),
    WF_ATTR_END};
static const wf_attr_def attrs_initializer[] = {
    ATTR_DTYPE(WFX_DTYPES_FLOAT), ATTR_SHAPE, ATTR_SEEDS, WF_ATTR_END};
static const wf_attr_def attrs_fill[] = {ATTR_DTYPE(WFX_DTYPES_NUMBER),
                                         ATTR_SHAPE, WF_ATTR_END};
static const wf_attr_def attrs_constant[] = {
    ATTR_DTYPE(WFX_DTYPES_NUMBER),
    ATTR_SHAPE,
    {WF_STRUCT_INIT(wf_attr_def), .name = "value", .type = WF_ATTR_FLOAT,
     .doc = "the value of every element; for an integer dtype a whole "
            "number in its range"},
    WF_ATTR_END};

static const wf_arg_def out_output[] = {
    WF_ARG_T("output", "dtype", "(...) attribute 'shape'"), WF_ARG_END};

/* ---- op definitions ---------------------------------------------------- */

#define STREAM_DOC                                                             \
  " Values are a function of (seed, seed2) (or of the node name when both "    \
  "are 0), of the session's step counter and of the element index only "       \
  "(Philox-4x32-10; layout in plugins/numerics/philox.h): the same for "     \
  "any number of threads and any execution order, new at every step."
#define FAN_DOC                                                                \
  " Fans of shape (...): rank 2 (in, out): fan_in = in, fan_out = out; "       \
  "rank 4 conv filter (KH, KW, C_in, C_out) and any rank >= 3: receptive = "   \
  "the product of the leading dims, fan_in = C_in * receptive, fan_out = "     \
  "C_out * receptive; rank 1 (D,): both D; rank 0: both 1; fans below 1 "      \
  "count as 1."
#define TRUNC_DOC                                                              \
  " Drawn from a normal truncated at 2 standard deviations (redrawn beyond, "  \
  "deterministically per element) whose stddev is divided by 0.87962566103 "   \
  "(the stddev of a standard normal truncated to [-2, 2]) so that the "        \
  "result has the stated variance, as in Keras."

#define OP(var, nm, at, fl, shape, dc)                                         \
  static const wf_op_def var = {WF_STRUCT_INIT(wf_op_def),                     \
                                .name = (nm),                                  \
                                .outputs = out_output,                         \
                                .attrs = (at),                                 \
                                .flags = (fl),                                 \
                                .shape_fn = (shape),                           \
                                .doc = (dc)}

OP(op_uniform, "RandomUniform", attrs_uniform, WF_OP_RANDOM, shape_uniform,
   "output (...) uniform in [minval, maxval) (minval == maxval gives "
   "minval): float32 elements use 24 random bits, float64 53." STREAM_DOC);
OP(op_normal, "RandomNormal", attrs_normal, WF_OP_RANDOM, shape_normal,
   "output (...) normal with mean and stddev (Box-Muller in double "
   "precision)." STREAM_DOC);
OP(op_truncated, "TruncatedNormal", attrs_normal, WF_OP_RANDOM,
   shape_truncated,
   "output (...) = mean + stddev * z, z standard normal redrawn while "
   "|z| > 2, so every value lies within 2 stddev of the mean; each "
   "element's redraws come from its own substreams, so the result is "
   "deterministic per element. The variance is about 0.774 stddev^2."
   STREAM_DOC);
OP(op_glorot_uniform, "GlorotUniform", attrs_initializer, WF_OP_RANDOM,
   shape_glorot_uniform,
   "Glorot (Xavier) uniform initializer: output (...) uniform in [-limit, "
   "limit), limit = sqrt(6 / (fan_in + fan_out)); variance 2 / (fan_in + "
   "fan_out)." FAN_DOC STREAM_DOC);
OP(op_glorot_normal, "GlorotNormal", attrs_initializer, WF_OP_RANDOM,
   shape_glorot_normal,
   "Glorot (Xavier) normal initializer: output (...) with mean 0 and "
   "variance 2 / (fan_in + fan_out): stddev = sqrt(2 / (fan_in + fan_out)) "
   "/ 0.87962566103 before truncation." TRUNC_DOC FAN_DOC STREAM_DOC);
OP(op_he_uniform, "HeUniform", attrs_initializer, WF_OP_RANDOM,
   shape_he_uniform,
   "He (Kaiming) uniform initializer: output (...) uniform in [-limit, "
   "limit), limit = sqrt(6 / fan_in); variance 2 / fan_in." FAN_DOC
       STREAM_DOC);
OP(op_he_normal, "HeNormal", attrs_initializer, WF_OP_RANDOM,
   shape_he_normal,
   "He (Kaiming) normal initializer: output (...) with mean 0 and variance "
   "2 / fan_in: stddev = sqrt(2 / fan_in) / 0.87962566103 before "
   "truncation." TRUNC_DOC FAN_DOC STREAM_DOC);
OP(op_lecun_normal, "LeCunNormal", attrs_initializer, WF_OP_RANDOM,
   shape_lecun_normal,
   "LeCun normal initializer: output (...) with mean 0 and variance 1 / "
   "fan_in: stddev = sqrt(1 / fan_in) / 0.87962566103 before truncation."
   TRUNC_DOC FAN_DOC STREAM_DOC);
OP(op_zeros, "Zeros", attrs_fill, 0, shape_zeros,
   "output (...) of attribute 'shape', every element 0.");
OP(op_ones, "Ones", attrs_fill, 0, shape_ones,
   "output (...) of attribute 'shape', every element 1.");
OP(op_constant, "Constant", attrs_constant, 0, shape_constant,
   "output (...) of attribute 'shape', every element 'value' (rounded to "
   "nearest for float32; integer dtypes need a whole number in range, "
   "else the node is refused).");

static const wf_op_def *const ops[] = {
    &op_uniform,      &op_normal,      &op_truncated, &op_glorot_uniform,
    &op_glorot_normal, &op_he_uniform, &op_he_normal, &op_lecun_normal,
    &op_zeros,        &op_ones,        &op_constant,  NULL};

/* ---- kernels ----------------------------------------------------------- */

#define FLT WFX_DTYPES_FLOAT
#define NUM WFX_DTYPES_NUMBER

static const wf_kernel_def k_uniform =
    WFX_CPU_REFERENCE("RandomUniform", "dtype", FLT, compute_uniform);
static const wf_kernel_def k_normal =
    WFX_CPU_REFERENCE("RandomNormal", "dtype", FLT, compute_normal);
static const wf_kernel_def k_truncated =
    WFX_CPU_REFERENCE("TruncatedNormal", "dtype", FLT, compute_truncated);
static const wf_kernel_def k_glorot_uniform =
    WFX_CPU_REFERENCE("GlorotUniform", "dtype", FLT, compute_glorot_uniform);
static const wf_kernel_def k_glorot_normal =
    WFX_CPU_REFERENCE("GlorotNormal", "dtype", FLT, compute_glorot_normal);
static const wf_kernel_def k_he_uniform =
    WFX_CPU_REFERENCE("HeUniform", "dtype", FLT, compute_he_uniform);
static const wf_kernel_def k_he_normal =
    WFX_CPU_REFERENCE("HeNormal", "dtype", FLT, compute_he_normal);
static const wf_kernel_def k_lecun_normal =
    WFX_CPU_REFERENCE("LeCunNormal", "dtype", FLT, compute_lecun_normal);
static const wf_kernel_def k_zeros =
    WFX_CPU_REFERENCE("Zeros", "dtype", NUM, compute_zeros);
static const wf_kernel_def k_ones =
    WFX_CPU_REFERENCE("Ones", "dtype", NUM, compute_ones);
static const wf_kernel_def k_constant =
    WFX_CPU_REFERENCE("Constant", "dtype", NUM, compute_constant);

static const wf_kernel_def *const kernels[] = {
    &k_uniform,      &k_normal,      &k_truncated, &k_glorot_uniform,
    &k_glorot_normal, &k_he_uniform, &k_he_normal, &k_lecun_normal,
    &k_zeros,        &k_ones,        &k_constant,  NULL};

/* ---- gradients: none flows through any of these ------------------------ */

#define NOT_DIFFERENTIABLE(opname)                                             \
  {                                                                            \
    WF_STRUCT_INIT(wf_gradient_def), .op = (opname),                           \
                                     .flags = WF_GRAD_NOT_DIFFERENTIABLE       \
  }
static const wf_gradient_def no_gradients[] = {
    NOT_DIFFERENTIABLE("RandomUniform"), NOT_DIFFERENTIABLE("RandomNormal"),
    NOT_DIFFERENTIABLE("TruncatedNormal"), NOT_DIFFERENTIABLE("GlorotUniform"),
    NOT_DIFFERENTIABLE("GlorotNormal"),  NOT_DIFFERENTIABLE("HeUniform"),
    NOT_DIFFERENTIABLE("HeNormal"),      NOT_DIFFERENTIABLE("LeCunNormal"),
    NOT_DIFFERENTIABLE("Zeros"),         NOT_DIFFERENTIABLE("Ones"),
    NOT_DIFFERENTIABLE("Constant")};
static const wf_gradient_def *const gradients[] = {
    &no_gradients[0], &no_gradients[1], &no_gradients[2], &no_gradients[3],
    &no_gradients[4], &no_gradients[5], &no_gradients[6], &no_gradients[7],
    &no_gradients[8], &no_gradients[9], &no_gradients[10], NULL};

/* ---- the plugin -------------------------------------------------------- */

/* The host table, for every file of the plugin: ABI 1.0 has every
 * entry it uses. */
WFX_HOST_DEFINE(1, 0);

static int random_init(const wf_host *host, void **state, wf_status *st) {
  if (WFX_HOST_INIT(host, "ops-random", st))
    return WF_FAILED_PRECONDITION;
  *state = NULL;
  return 0;
}

static const wf_plugin_desc desc = {
    WF_STRUCT_INIT(wf_plugin_desc),
    .name = "ops-random",
    .version = PACKAGE_VERSION,
    .license = "MIT",
    .description = "random ops and initializers: RandomUniform, "
                   "RandomNormal, TruncatedNormal, Glorot/He/LeCun "
                   "initializers, Zeros, Ones, Constant; counter-based "
                   "Philox-4x32-10 streams keyed by seed, node and step",
    .ops = ops,
    .kernels = kernels,
    .gradients = gradients,
    .init = random_init,
};

WF_PLUGIN(ops_random, desc)
