/* tests/abi/abi_plugin.c — the ABI test plugin. It is compiled once against
 * each frozen copy of the plugin headers (tests/abi/MAJOR.MINOR/weft/,
 * chosen by -I; never sdk/include) into the module ABI_MODULE that the
 * build rule names, and is loaded into the current core by
 * test_abi_frozen.c. It registers, under names that carry the ABI it was
 * built for:
 *
 *   plugin "test-abi-MAJOR.MINOR"
 *   op AbiAffineMAJOR_MINOR   x: T -> y: T, y = a * x + b (float attrs a,
 *                             b); shape inference: y has x's shape
 *   its CPU kernel (float32, float64), label "frozen-abi", with create
 *                             (reads a and b) and destroy
 *   its gradient              dx = AbiAffine(dy) with the same a and b = 0
 *
 * It uses only what the frozen headers declare, so a core that still
 * loads and runs it keeps the ABI of that release. */
#include <config.h>

#include <string.h>

#include <weft/plugin.h>

#ifndef ABI_MODULE
#error "ABI_MODULE (the module's base name) must be defined by the build"
#endif

#define STR_(x) #x
#define STR(x) STR_(x)
#define ABI_TAG STR(WF_ABI_MAJOR) "." STR(WF_ABI_MINOR)
#define OP_NAME "AbiAffine" STR(WF_ABI_MAJOR) "_" STR(WF_ABI_MINOR)
#define DTYPES (WF_DTYPE_BIT(WF_FLOAT32) | WF_DTYPE_BIT(WF_FLOAT64))

static const wf_host *host;

static int fail(wf_status *st, int32_t code, const char *what,
                const char *node) {
  host->status_set(st, code, "node '%s' (" OP_NAME "): %s", node, what);
  return code;
}

static int affine_shape(wf_shape_ctx *ctx, wf_status *st) {
  int32_t dtype;
  wf_shape s;

  if (host->shape_input(ctx, 0, &dtype, &s) != 0)
    return fail(st, WF_INVALID_ARGUMENT, "no input x",
                host->shape_node_name(ctx));
  host->shape_set_output(ctx, 0, &s);
  return 0;
}

typedef struct affine_state {
  double a, b;
} affine_state;

static int affine_create(wf_kernel_ctx *ctx, void **state, wf_status *st) {
  wf_attr_value a, b;
  affine_state *s;

  if (host->kernel_attr(ctx, "a", &a) != 0 || a.type != WF_ATTR_FLOAT ||
      host->kernel_attr(ctx, "b", &b) != 0 || b.type != WF_ATTR_FLOAT)
    return fail(st, WF_INTERNAL, "float attributes a and b are missing",
                host->kernel_node_name(ctx));
  s = host->alloc(sizeof *s, 0);
  if (!s)
    return fail(st, WF_RESOURCE_EXHAUSTED, "out of memory",
                host->kernel_node_name(ctx));
  s->a = a.u.f;
  s->b = b.u.f;
  *state = s;
  return 0;
}

static void affine_destroy(void *state) { host->free(state); }

static int affine_compute(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  const affine_state *s = state;
  const wf_tensor *x = host->kernel_input(ctx, 0);
  int64_t n = host->tensor_count(x);
  wf_tensor *y;
  wf_shape shape;

  host->tensor_shape(x, &shape);
  y = host->kernel_output_new(ctx, 0, &shape, st);
  if (!y)
    return host->status_code(st);
  if (host->tensor_dtype(x) == WF_FLOAT32) {
    const float *px = host->tensor_data(x);
    float *py = host->tensor_data(y);
    for (int64_t i = 0; i < n; i++)
      py[i] = (float)(s->a * px[i] + s->b);
  } else {
    const double *px = host->tensor_data(x);
    double *py = host->tensor_data(y);
    for (int64_t i = 0; i < n; i++)
      py[i] = s->a * px[i] + s->b;
  }
  return 0;
}

/* y = a x + b, so dx = a dy: the op itself with b = 0. */
static int affine_grad(wf_grad_ctx *ctx, wf_status *st) {
  wf_attr_item attrs[2];
  wf_output dy = host->grad_output_grad(ctx, 0);
  wf_node *n;

  memset(attrs, 0, sizeof attrs);
  attrs[0].name = "a";
  attrs[1].name = "b";
  if (host->grad_attr(ctx, "a", &attrs[0].value) != 0)
    return fail(st, WF_INTERNAL, "no attribute a", host->grad_node_name(ctx));
  attrs[1].value.type = WF_ATTR_FLOAT;
  attrs[1].value.count = 1;
  attrs[1].value.u.f = 0.0;
  n = host->grad_add_node(ctx, OP_NAME, &dy, 1, attrs, 2, st);
  if (!n)
    return host->status_code(st);
  host->grad_set_input_grad(ctx, 0, (wf_output){n, 0});
  return 0;
}

#define FLOAT_ATTR(nm, dc)                                                     \
  {                                                                            \
    WF_STRUCT_INIT(wf_attr_def), .name = (nm), .type = WF_ATTR_FLOAT,          \
                                 .doc = (dc)                                   \
  }
static const wf_attr_def attrs[] = {
    {WF_STRUCT_INIT(wf_attr_def), .name = "T", .type = WF_ATTR_DTYPE,
     .allowed_dtypes = DTYPES, .doc = "float32 or float64"},
    FLOAT_ATTR("a", "scale"),
    FLOAT_ATTR("b", "offset"),
    WF_ATTR_END};
static const wf_arg_def inputs[] = {WF_ARG_T("x", "T", "(...) any shape"),
                                    WF_ARG_END};
static const wf_arg_def outputs[] = {WF_ARG_T("y", "T", "(...) x's shape"),
                                     WF_ARG_END};

static const wf_op_def affine_op = {
    WF_STRUCT_INIT(wf_op_def),
    .name = OP_NAME,
    .inputs = inputs,
    .outputs = outputs,
    .attrs = attrs,
    .shape_fn = affine_shape,
    .doc = "y = a * x + b (test plugin built against the frozen ABI " ABI_TAG
           " headers).",
};
static const wf_op_def *const ops[] = {&affine_op, NULL};

static const wf_kernel_def affine_kernel = {
    WF_STRUCT_INIT(wf_kernel_def),
    .op = OP_NAME,
    .device_type = "cpu",
    .type_attr = "T",
    .dtypes = DTYPES,
    .label = "frozen-abi",
    .create = affine_create,
    .compute = affine_compute,
    .destroy = affine_destroy,
};
static const wf_kernel_def *const kernels[] = {&affine_kernel, NULL};

static const wf_gradient_def affine_gradient = {
    WF_STRUCT_INIT(wf_gradient_def), .op = OP_NAME, .fn = affine_grad};
static const wf_gradient_def *const gradients[] = {&affine_gradient, NULL};

static int abi_init(const wf_host *h, void **state, wf_status *st) {
  if (!WF_HOST_HAS(h, grad_node_name)) {
    if (WF_HOST_HAS(h, status_set))
      h->status_set(st, WF_FAILED_PRECONDITION,
                    "test-abi-" ABI_TAG ": the host table (%u bytes) is "
                    "smaller than that of ABI " ABI_TAG,
                    (unsigned)h->struct_size);
    return WF_FAILED_PRECONDITION;
  }
  host = h;
  *state = NULL;
  return 0;
}

static const wf_plugin_desc desc = {
    WF_STRUCT_INIT(wf_plugin_desc),
    .name = "test-abi-" ABI_TAG,
    .version = ABI_TAG,
    .license = "MIT",
    .description = "test plugin built against the frozen plugin headers of "
                   "ABI " ABI_TAG,
    .ops = ops,
    .kernels = kernels,
    .gradients = gradients,
    .init = abi_init,
};

WF_PLUGIN(ABI_MODULE, desc)
