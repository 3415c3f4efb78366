/* swish.c — example op plugin "example-swish" on <weft/plugin_aux.h>: Swish,
 * y = x * sigmoid(beta x), its shape, float32/float64 CPU kernels, gradient
 * op SwishGrad; links no libweft. No second order, no other dtypes/devices. */
#include <math.h>

#include <weft/plugin_aux.h>

/* In double; at x = +-inf, the limits (test_swish.c lists them). */
static double sigmoid(double z) { return 1 / (1 + exp(-z)); }
static double swish(double x, double b) {
  return isinf(x) ? (b == 0 ? x / 2 : b * x > 0 ? x : 0) : x * sigmoid(b * x);
}
static double dswish(double x, double b) {
  double s = sigmoid(b * x);
  return isinf(x) ? (b == 0 ? 0.5 : b * x > 0) : s + b * x * s * (1 - s);
}

/* Both ops: a finite beta; every input and the output of one shape. */
static int shape(wf_shape_ctx *ctx, wf_status *st) {
  double b;
  if (wfx_shape_attr_finite(ctx, "beta", &b, st))
    return wfx_code(st);
  return wfx_shape_all_same(ctx, st);
}

/* x (...) -> y (...). */
static int fwd(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  const wf_tensor *x[1];
  wf_tensor *y;
  double b;
  if (wfx_kernel_attr_float(ctx, "beta", &b, st) ||
      wfx_map_io(ctx, 1, x, &y, st))
    return wfx_code(st);
  WFX_DISPATCH_FLOAT(wfx_dtype(y), st, WFX_MAP1(T, y, x[0], v, swish(v, (T)b)));
  return 0;
}

/* dy (...), x (...) of one shape -> dx = dy * Swish'(x) (...). */
static int bwd(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  const wf_tensor *in[2];
  wf_tensor *dx;
  double b;
  if (wfx_kernel_attr_float(ctx, "beta", &b, st) ||
      wfx_map_io(ctx, 2, in, &dx, st))
    return wfx_code(st);
  WFX_DISPATCH_FLOAT(
      wfx_dtype(dx), st,
      WFX_MAP2(T, dx, in[0], in[1], dy, x, dy * dswish(x, (T)b)));
  return 0;
}

/* dx = SwishGrad(dy, x) with the forward node's beta. */
static int gradient(wf_grad_ctx *ctx, wf_status *st) {
  return wfx_grad_by_op(ctx, "SwishGrad", "beta", st);
}

static const wf_attr_def attrs[] = {
    WFX_ATTR_DTYPE("T", WFX_DTYPES_FLOAT, "element type"),
    WFX_ATTR_FLOAT("beta", 1.0, "slope inside the sigmoid, finite (1: SiLU)"),
    WF_ATTR_END};

WFX_PLUGIN(
    swish, 1, 0, .name = "example-swish", .version = "2.0.0", .license = "MIT",
    .description = "Swish: the SDK's example op",
    .ops = WFX_LIST(
        wf_op_def,
        WFX_OP(.name = "Swish", .attrs = attrs, .shape_fn = shape,
               .inputs = WFX_ARGS(WF_ARG_T("x", "T", "(...)")),
               .outputs = WFX_ARGS(WF_ARG_T("y", "T", "(...) x's shape")),
               .doc = "y = x * sigmoid(beta * x) elementwise"),
        WFX_OP(.name = "SwishGrad", .attrs = attrs, .shape_fn = shape,
               .inputs = WFX_ARGS(WF_ARG_T("dy", "T", "(...)"),
                                  WF_ARG_T("x", "T", "(...) dy's shape")),
               .outputs = WFX_ARGS(WF_ARG_T("dx", "T", "(...) dy's shape")),
               .doc = "dx = dy * d/dx Swish(x), with the same beta")),
    .kernels = WFX_LIST(wf_kernel_def,
                        WFX_CPU_KERNEL("Swish", "T", WFX_DTYPES_FLOAT, fwd),
                        WFX_CPU_KERNEL("SwishGrad", "T", WFX_DTYPES_FLOAT,
                                       bwd)),
    .gradients = WFX_LIST(wf_gradient_def, WFX_GRADIENT("Swish", gradient)))
