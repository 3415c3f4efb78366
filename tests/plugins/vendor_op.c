/* tests/plugins/vendor_op.c — "test-vendor": ops under a vendor domain
 * (testvendor.Scale, testvendor.BAdd), written on the helper layer
 * <weft/plugin_aux.h> so that tests/plugins/test_plugin_aux.c exercises it
 * through the core: the plugin and host macros, table initialisers, typed
 * attribute and input reads with their checks, dtype dispatch, the
 * elementwise and broadcasting loops and a gradient. CPU only. */
#include <weft/plugin_aux.h>

/* Scale: y = k * x (...), k a finite float attribute. */
static int scale_shape(wf_shape_ctx *ctx, wf_status *st) {
  double k;
  if (wfx_shape_attr_finite(ctx, "k", &k, st))
    return wfx_code(st);
  return wfx_shape_like_input0(ctx, st);
}

static int scale(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  const wf_tensor *x[1];
  wf_tensor *y;
  double k;
  (void)state;
  if (wfx_kernel_attr_float(ctx, "k", &k, st) || wfx_map_io(ctx, 1, x, &y, st))
    return wfx_code(st);
  WFX_DISPATCH_NUMBER(wfx_dtype(y), st, WFX_MAP1(T, y, x[0], v, v * k));
  return 0;
}

/* dx = Scale(dy) with the same k. */
static int scale_grad(wf_grad_ctx *ctx, wf_status *st) {
  wf_attr_item k = {.name = "k"};
  wf_output dy = wfx_host->grad_output_grad(ctx, 0);
  if (wfx_grad_attr(ctx, "k", WF_ATTR_FLOAT, &k.value, st))
    return wfx_code(st);
  wfx_grad_set(ctx, 0,
               wfx_grad_node(ctx, "testvendor.Scale", &dy, 1, &k, 1, st));
  return wfx_grad_done(st);
}

/* BAdd: z = a + b with NumPy broadcasting; a must have rank 2 at most (a
 * check that names the input). */
static int badd_shape(wf_shape_ctx *ctx, wf_status *st) {
  wf_shape a;
  if (wfx_shape_input(ctx, 0, NULL, &a, st))
    return wfx_code(st);
  if (a.rank > 2)
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "input 0 (a) has rank %d; at most 2", (int)a.rank);
  return wfx_shape_broadcast(ctx, st);
}

static int badd(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  const wf_tensor *a, *b;
  wf_tensor *z;
  wfx_bcast w;
  (void)state;
  if (wfx_binary_io(ctx, &a, &b, &z, &w, st))
    return wfx_code(st);
  WFX_DISPATCH_NUMBER(wfx_dtype(z), st, {
    T *zp = wfx_data(z);
    const T *ap = wfx_data(a), *bp = wfx_data(b);
    WFX_BCAST_EACH(&w, o, i)
    zp[o] = (T)(ap[WFX_BCAST_AT(&w, 0, i)] + bp[WFX_BCAST_AT(&w, 1, i)]);
  });
  return 0;
}

/* Refuses the node unless input 0 is a float32 matrix: the checked input
 * read's message is what the test looks at. */
static int need_matrix(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  const wf_tensor *x;
  (void)state;
  if (wfx_kernel_input_check(ctx, 0, WF_FLOAT32, 2, &x, NULL, st))
    return wfx_code(st);
  return wfx_host->kernel_output_set(ctx, 0, (wf_tensor *)x, st);
}

static const wf_attr_def scale_attrs[] = {
    WFX_ATTR_DTYPE("T", WFX_DTYPES_NUMBER, "element type"),
    WFX_ATTR_FLOAT("k", 2.0, "the factor; finite"), WF_ATTR_END};
static const wf_attr_def t_attr[] = {
    WFX_ATTR_DTYPE("T", WFX_DTYPES_NUMBER, "element type"), WF_ATTR_END};

WFX_PLUGIN(
    vendor_op, 1, 0, .name = "test-vendor", .version = "1.0",
    .license = "MIT", .description = "ops under a vendor domain",
    .ops = WFX_LIST(
        wf_op_def,
        WFX_OP(.name = "testvendor.Scale", .attrs = scale_attrs,
               .shape_fn = scale_shape,
               .inputs = WFX_ARGS(WF_ARG_T("x", "T", "(...)")),
               .outputs = WFX_ARGS(WF_ARG_T("y", "T", "(...) x's shape")),
               .doc = "y = k * x"),
        WFX_OP(.name = "testvendor.BAdd", .attrs = t_attr,
               .shape_fn = badd_shape,
               .inputs = WFX_ARGS(WF_ARG_T("a", "T", "(...) rank <= 2"),
                                  WF_ARG_T("b", "T", "(...)")),
               .outputs = WFX_ARGS(WF_ARG_T("z", "T", "broadcast shape")),
               .doc = "z = a + b, broadcasting"),
        WFX_OP(.name = "testvendor.NeedMatrix", .attrs = t_attr,
               .inputs = WFX_ARGS(WF_ARG_T("x", "T", "(M, N) float32")),
               .outputs = WFX_ARGS(WF_ARG_T("y", "T", "x")),
               .doc = "y = x; the kernel wants a float32 matrix")),
    .kernels = WFX_LIST(
        wf_kernel_def,
        WFX_CPU_KERNEL("testvendor.Scale", "T", WFX_DTYPES_NUMBER, scale),
        WFX_CPU_KERNEL("testvendor.BAdd", "T", WFX_DTYPES_NUMBER, badd),
        WFX_CPU_KERNEL("testvendor.NeedMatrix", "T", WFX_DTYPES_NUMBER,
                       need_matrix)),
    .gradients = WFX_LIST(wf_gradient_def,
                          WFX_GRADIENT("testvendor.Scale", scale_grad)))
