/* swish.c — an out-of-tree weft op plugin (module swish.so, plugin
 * "example-swish"): the Swish activation y = x * sigmoid(beta * x) with
 * shape inference, reference CPU kernels for float32 and float64, and its
 * gradient, built from a backward op of its own (SwishGrad).
 *
 * It includes only <weft/plugin.h> and never links libweft: everything it
 * needs from the core comes through the host table handed to init. It has
 * no second-order gradient (differentiating SwishGrad is a NOT_FOUND error
 * naming it) and no kernels for other devices or dtypes. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <weft/plugin.h>

/* The core's functions: set once by swish_init, before anything else here
 * runs, and never changed afterwards. */
static const wf_host *host;

#define SWISH_DTYPES (WF_DTYPE_BIT(WF_FLOAT32) | WF_DTYPE_BIT(WF_FLOAT64))

/* ---- the math ------------------------------------------------------------ */

/* sigmoid(z) without overflow, with full relative precision in both tails. */
static double sigmoid_f64(double z) {
  if (z >= 0)
    return 1.0 / (1.0 + exp(-z));
  double e = exp(z);
  return e / (1.0 + e);
}

static float sigmoid_f32(float z) {
  if (z >= 0)
    return 1.0f / (1.0f + expf(-z));
  float e = expf(z);
  return e / (1.0f + e);
}

/* At x = +-inf the formulas below would give inf * 0 or 0 * inf: the
 * limits are x where beta * x -> +inf, 0 where beta * x -> -inf and x / 2
 * for beta = 0; the derivative's are 1, 0 and 1/2. */
#define SWISH_KERNELS(T, sfx)                                                  \
  static void swish_forward_##sfx(T *y, const T *x, T beta, int64_t n) {       \
    for (int64_t i = 0; i < n; i++) {                                          \
      T a = x[i];                                                              \
      if (isinf(a))                                                            \
        y[i] = beta == 0 ? a / 2 : beta * a > 0 ? a : (T)0;                    \
      else                                                                     \
        y[i] = a * sigmoid_##sfx(beta * a);                                    \
    }                                                                          \
  }                                                                            \
  /* dx = dy * (s + beta x s (1 - s)), s = sigmoid(beta x). */                 \
  static void swish_backward_##sfx(T *dx, const T *dy, const T *x, T beta,     \
                                   int64_t n) {                                \
    for (int64_t i = 0; i < n; i++) {                                          \
      T a = x[i], d;                                                           \
      if (isinf(a)) {                                                          \
        d = beta == 0 ? (T)0.5 : beta * a > 0 ? (T)1 : (T)0;                   \
      } else {                                                                 \
        T s = sigmoid_##sfx(beta * a);                                         \
        d = s + beta * a * s * ((T)1 - s);                                     \
      }                                                                        \
      dx[i] = dy[i] * d;                                                       \
    }                                                                          \
  }
SWISH_KERNELS(float, f32)
SWISH_KERNELS(double, f64)

/* ---- helpers ------------------------------------------------------------- */

/* Checks the attribute beta as a shape, kernel or gradient context's
 * accessor returned it (found: the accessor returned 0): a finite float. */
static int check_beta(int found, const wf_attr_value *v, const char *node,
                      wf_status *st) {
  if (!found || v->type != WF_ATTR_FLOAT) {
    host->status_set(st, WF_INVALID_ARGUMENT,
                     "node '%s': no float attribute 'beta'", node);
    return WF_INVALID_ARGUMENT;
  }
  if (!isfinite(v->u.f)) {
    host->status_set(st, WF_INVALID_ARGUMENT,
                     "node '%s': beta must be finite, got %g", node, v->u.f);
    return WF_INVALID_ARGUMENT;
  }
  return 0;
}

/* Writes s as "(2, ?, 3)" into buf, as weft's messages show shapes (cut
 * short when buf is too small). */
static const char *shape_str(const wf_shape *s, char *buf, size_t len) {
  size_t n = 0;

  if (s->rank == WF_UNKNOWN_RANK) {
    snprintf(buf, len, "<unknown>");
    return buf;
  }
  n += (size_t)snprintf(buf, len, "(");
  for (int i = 0; i < s->rank && n < len; i++) {
    if (s->dims[i] == WF_UNKNOWN_DIM)
      n += (size_t)snprintf(buf + n, len - n, "%s?", i ? ", " : "");
    else
      n += (size_t)snprintf(buf + n, len - n, "%s%lld", i ? ", " : "",
                            (long long)s->dims[i]);
  }
  if (n < len)
    snprintf(buf + n, len - n, ")");
  return buf;
}

/* ---- shape inference ----------------------------------------------------- */

/* Swish: y has x's shape; a non-finite beta is refused while the graph is
 * built, so a bad node never reaches a kernel. */
static int swish_shape(wf_shape_ctx *ctx, wf_status *st) {
  const char *node = host->shape_node_name(ctx);
  wf_attr_value beta;
  int32_t dtype;
  wf_shape s;

  if (check_beta(host->shape_attr(ctx, "beta", &beta) == 0, &beta, node, st))
    return WF_INVALID_ARGUMENT;
  if (host->shape_input(ctx, 0, &dtype, &s) != 0) {
    host->status_set(st, WF_INVALID_ARGUMENT, "node '%s' (Swish): no input x",
                     node);
    return WF_INVALID_ARGUMENT;
  }
  host->shape_set_output(ctx, 0, &s);
  return 0;
}

/* SwishGrad: dy and x must be able to have one shape; dx gets what is
 * known of it from either (unknown dims are -1, an unknown rank -1). */
static int swish_grad_shape(wf_shape_ctx *ctx, wf_status *st) {
  const char *node = host->shape_node_name(ctx);
  wf_attr_value beta;
  int32_t dtype;
  wf_shape dy, x, merged;
  char a[192], b[192];

  if (check_beta(host->shape_attr(ctx, "beta", &beta) == 0, &beta, node, st))
    return WF_INVALID_ARGUMENT;
  if (host->shape_input(ctx, 0, &dtype, &dy) != 0 ||
      host->shape_input(ctx, 1, &dtype, &x) != 0) {
    host->status_set(st, WF_INVALID_ARGUMENT,
                     "node '%s' (SwishGrad): needs inputs dy and x", node);
    return WF_INVALID_ARGUMENT;
  }
  if (dy.rank == WF_UNKNOWN_RANK) {
    host->shape_set_output(ctx, 0, &x);
    return 0;
  }
  merged = dy;
  if (x.rank != WF_UNKNOWN_RANK) {
    if (x.rank != dy.rank)
      goto mismatch;
    for (int i = 0; i < x.rank; i++) {
      if (dy.dims[i] == WF_UNKNOWN_DIM)
        merged.dims[i] = x.dims[i];
      else if (x.dims[i] != WF_UNKNOWN_DIM && x.dims[i] != dy.dims[i])
        goto mismatch;
    }
  }
  host->shape_set_output(ctx, 0, &merged);
  return 0;

mismatch:
  host->status_set(st, WF_INVALID_ARGUMENT,
                   "node '%s' (SwishGrad): dy %s and x %s must have one shape",
                   node, shape_str(&dy, a, sizeof a),
                   shape_str(&x, b, sizeof b));
  return WF_INVALID_ARGUMENT;
}

/* ---- kernels ------------------------------------------------------------- */

/* A node's beta, read once when its executor is built (create) rather than
 * on every run. Allocated with host->alloc, freed by kernel_destroy. */
typedef struct swish_state {
  double beta;
} swish_state;

static int kernel_create(wf_kernel_ctx *ctx, void **state, wf_status *st) {
  const char *node = host->kernel_node_name(ctx);
  wf_attr_value beta;
  swish_state *s;

  if (check_beta(host->kernel_attr(ctx, "beta", &beta) == 0, &beta, node, st))
    return WF_INVALID_ARGUMENT;
  s = host->alloc(sizeof *s, 0);
  if (!s) {
    host->status_set(st, WF_RESOURCE_EXHAUSTED,
                     "node '%s': out of memory for the kernel state", node);
    return WF_RESOURCE_EXHAUSTED;
  }
  s->beta = beta.u.f;
  *state = s;
  return 0;
}

static void kernel_destroy(void *state) { host->free(state); }

static int unsupported(wf_kernel_ctx *ctx, int32_t dtype, wf_status *st) {
  host->status_set(st, WF_UNIMPLEMENTED,
                   "node '%s': no Swish kernel for dtype %d (float32 and "
                   "float64 only)",
                   host->kernel_node_name(ctx), (int)dtype);
  return WF_UNIMPLEMENTED;
}

/* x (...) -> y (...). */
static int swish_compute(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  const swish_state *s = state;
  const wf_tensor *x = host->kernel_input(ctx, 0);
  int32_t dtype = host->tensor_dtype(x);
  int64_t n = host->tensor_count(x);
  wf_tensor *y;
  wf_shape shape;

  if (dtype != WF_FLOAT32 && dtype != WF_FLOAT64)
    return unsupported(ctx, dtype, st);
  host->tensor_shape(x, &shape);
  y = host->kernel_output_new(ctx, 0, &shape, st);
  if (!y)
    return host->status_code(st);
  if (dtype == WF_FLOAT32)
    swish_forward_f32(host->tensor_data(y), host->tensor_data(x),
                      (float)s->beta, n);
  else
    swish_forward_f64(host->tensor_data(y), host->tensor_data(x), s->beta, n);
  return 0;
}

/* dy (...), x (...) of one shape -> dx (...). */
static int swish_grad_compute(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  const swish_state *s = state;
  const wf_tensor *dy = host->kernel_input(ctx, 0);
  const wf_tensor *x = host->kernel_input(ctx, 1);
  int32_t dtype = host->tensor_dtype(x);
  int64_t n = host->tensor_count(x);
  wf_tensor *dx;
  wf_shape sdy, sx;

  if (dtype != WF_FLOAT32 && dtype != WF_FLOAT64)
    return unsupported(ctx, dtype, st);
  host->tensor_shape(dy, &sdy);
  host->tensor_shape(x, &sx);
  if (sdy.rank != sx.rank ||
      memcmp(sdy.dims, sx.dims, (size_t)sx.rank * sizeof sx.dims[0]) != 0) {
    host->status_set(st, WF_INVALID_ARGUMENT,
                     "node '%s': dy and x must have one shape (%lld and %lld "
                     "elements)",
                     host->kernel_node_name(ctx),
                     (long long)host->tensor_count(dy), (long long)n);
    return WF_INVALID_ARGUMENT;
  }
  dx = host->kernel_output_new(ctx, 0, &sx, st);
  if (!dx)
    return host->status_code(st);
  if (dtype == WF_FLOAT32)
    swish_backward_f32(host->tensor_data(dx), host->tensor_data(dy),
                       host->tensor_data(x), (float)s->beta, n);
  else
    swish_backward_f64(host->tensor_data(dx), host->tensor_data(dy),
                       host->tensor_data(x), s->beta, n);
  return 0;
}

/* ---- the gradient -------------------------------------------------------- */

/* dx = SwishGrad(dy, x) with the forward node's beta. The core fills in the
 * type attribute T from the inputs. */
static int swish_grad(wf_grad_ctx *ctx, wf_status *st) {
  wf_attr_item beta = {.name = "beta"};
  wf_output in[2];
  wf_node *n;

  if (check_beta(host->grad_attr(ctx, "beta", &beta.value) == 0, &beta.value,
                 host->grad_node_name(ctx), st))
    return WF_INVALID_ARGUMENT;
  in[0] = host->grad_output_grad(ctx, 0);
  in[1] = host->grad_input(ctx, 0);
  n = host->grad_add_node(ctx, "SwishGrad", in, 2, &beta, 1, st);
  if (!n)
    return host->status_code(st);
  host->grad_set_input_grad(ctx, 0, (wf_output){n, 0});
  return 0;
}

/* ---- the static tables --------------------------------------------------- */

static const wf_attr_def swish_attrs[] = {
    {WF_STRUCT_INIT(wf_attr_def), .name = "T", .type = WF_ATTR_DTYPE,
     .allowed_dtypes = SWISH_DTYPES, .doc = "element type: float32 or float64"},
    {WF_STRUCT_INIT(wf_attr_def), .name = "beta", .type = WF_ATTR_FLOAT,
     .has_default = 1,
     .default_value = {.type = WF_ATTR_FLOAT, .count = 1, .u = {.f = 1.0}},
     .doc = "slope inside the sigmoid; must be finite (1: SiLU)"},
    WF_ATTR_END};

static const wf_arg_def swish_in[] = {WF_ARG_T("x", "T", "(...) any shape"),
                                      WF_ARG_END};
static const wf_arg_def swish_out[] = {WF_ARG_T("y", "T", "(...) x's shape"),
                                       WF_ARG_END};
static const wf_arg_def grad_in[] = {
    WF_ARG_T("dy", "T", "(...) gradient arriving at Swish's output"),
    WF_ARG_T("x", "T", "(...) Swish's input; dy's shape"), WF_ARG_END};
static const wf_arg_def grad_out[] = {
    WF_ARG_T("dx", "T", "(...) gradient of Swish's input; dy's shape"),
    WF_ARG_END};

static const wf_op_def swish_op = {
    WF_STRUCT_INIT(wf_op_def),
    .name = "Swish",
    .inputs = swish_in,
    .outputs = swish_out,
    .attrs = swish_attrs,
    .shape_fn = swish_shape,
    .doc = "y = x * sigmoid(beta * x) elementwise (SiLU for beta = 1), "
           "without overflow; at x = +-inf its limits (x, 0, or x / 2 for "
           "beta = 0).",
};

static const wf_op_def swish_grad_op = {
    WF_STRUCT_INIT(wf_op_def),
    .name = "SwishGrad",
    .inputs = grad_in,
    .outputs = grad_out,
    .attrs = swish_attrs,
    .shape_fn = swish_grad_shape,
    .doc = "dx = dy * (s + beta * x * s * (1 - s)), s = sigmoid(beta * x): "
           "the gradient of Swish with the same beta.",
};

static const wf_op_def *const ops[] = {&swish_op, &swish_grad_op, NULL};

#define KERNEL(var, op_name, fn)                                               \
  static const wf_kernel_def var = {WF_STRUCT_INIT(wf_kernel_def),             \
                                    .op = (op_name),                           \
                                    .device_type = "cpu",                      \
                                    .type_attr = "T",                          \
                                    .dtypes = SWISH_DTYPES,                    \
                                    .priority = 0,                             \
                                    .label = "reference",                      \
                                    .create = kernel_create,                   \
                                    .compute = (fn),                           \
                                    .destroy = kernel_destroy}
KERNEL(swish_kernel, "Swish", swish_compute);
KERNEL(swish_grad_kernel, "SwishGrad", swish_grad_compute);

static const wf_kernel_def *const kernels[] = {&swish_kernel,
                                               &swish_grad_kernel, NULL};

static const wf_gradient_def swish_gradient = {WF_STRUCT_INIT(wf_gradient_def),
                                               .op = "Swish", .fn = swish_grad};

static const wf_gradient_def *const gradients[] = {&swish_gradient, NULL};

/* ---- the plugin ---------------------------------------------------------- */

/* Keeps the host table. Every entry used here exists since ABI 1.0;
 * grad_node_name is the last of them in the table, so a table that holds
 * it holds them all. */
static int swish_init(const wf_host *h, void **state, wf_status *st) {
  if (!WF_HOST_HAS(h, grad_node_name)) {
    if (WF_HOST_HAS(h, status_set))
      h->status_set(st, WF_FAILED_PRECONDITION,
                    "example-swish: the host table (%u bytes) lacks the "
                    "entries of ABI 1.0",
                    (unsigned)h->struct_size);
    return WF_FAILED_PRECONDITION;
  }
  host = h;
  *state = NULL;
  return 0;
}

static const wf_plugin_desc desc = {
    WF_STRUCT_INIT(wf_plugin_desc),
    .name = "example-swish",
    .version = "1.0.0",
    .license = "MIT",
    .description = "the Swish activation (x * sigmoid(beta * x)) with a "
                   "reference CPU kernel and its gradient: the SDK's "
                   "example op plugin",
    .ops = ops,
    .kernels = kernels,
    .gradients = gradients,
    .init = swish_init,
};

WF_PLUGIN(swish, desc)
