/* tests/core/grad_test_ops.c — ops that exercise the autodiff core's
 * corner cases: one with no gradient registered, one registered as not
 * differentiable, and one whose gradient is sparse (every row of x, given
 * as indices 0..N-1). All are float32/float64 identities. */
#include <string.h>

#include <weft/plugin.h>

static const wf_host *host;

static int init(const wf_host *h, void **state, wf_status *st) {
  (void)state;
  (void)st;
  host = h;
  return 0;
}

static int same_shape(wf_shape_ctx *ctx, wf_status *st) {
  int32_t dt;
  wf_shape s;
  (void)st;
  host->shape_input(ctx, 0, &dt, &s);
  host->shape_set_output(ctx, 0, &s);
  return 0;
}

static int copy_compute(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  (void)state;
  const wf_tensor *in = host->kernel_input(ctx, 0);
  wf_shape s;
  host->tensor_shape(in, &s);
  wf_tensor *o = host->kernel_output_new(ctx, 0, &s, st);
  if (!o)
    return host->status_code(st);
  memcpy(host->tensor_data(o), host->tensor_data(in), host->tensor_nbytes(in));
  return 0;
}

/* dx is sparse: indices = Range-like Const 0..N-1, values = dy, shape =
 * Shape(x) (int64). */
static int sparse_rows_grad(wf_grad_ctx *ctx, wf_status *st) {
  wf_output x = host->grad_input(ctx, 0), dy = host->grad_output_grad(ctx, 0);
  wf_shape s;
  int32_t dt;
  if (host->grad_tensor_info(ctx, x, &dt, &s) || s.rank < 1 || s.dims[0] < 0) {
    host->status_set(st, WF_INVALID_ARGUMENT, "needs a known first dim");
    return WF_INVALID_ARGUMENT;
  }
  wf_shape is = {.rank = 1, .dims = {s.dims[0]}};
  wf_tensor *idx = host->tensor_new(WF_INT64, &is, st);
  if (!idx)
    return host->status_code(st);
  for (int64_t i = 0; i < s.dims[0]; i++)
    ((int64_t *)host->tensor_data(idx))[i] = i;
  wf_attr_item ca[2] = {
      {"value", {.type = WF_ATTR_TENSOR, .count = 1, .u.tensor = idx}},
      {"dtype", {.type = WF_ATTR_DTYPE, .count = 1, .u.dtype = WF_INT64}}};
  wf_node *c = host->grad_add_node(ctx, "Const", NULL, 0, ca, 2, st);
  host->tensor_release(idx);
  wf_attr_item sa = {"out_type",
                     {.type = WF_ATTR_DTYPE, .count = 1, .u.dtype = WF_INT64}};
  wf_node *shape = c ? host->grad_add_node(ctx, "Shape", &x, 1, &sa, 1, st)
                     : NULL;
  if (!shape)
    return host->status_code(st);
  host->grad_set_input_grad_sparse(ctx, 0, (wf_output){c, 0}, dy,
                                   (wf_output){shape, 0});
  return 0;
}

static const wf_arg_def x_in[] = {WF_ARG_T("x", "T", "(N, ...)"), WF_ARG_END};
static const wf_arg_def y_out[] = {WF_ARG_T("y", "T", "x"), WF_ARG_END};
static const wf_attr_def t_attr[] = {
    {WF_STRUCT_INIT(wf_attr_def), .name = "T", .type = WF_ATTR_DTYPE,
     .allowed_dtypes = WF_DTYPE_BIT(WF_FLOAT32) | WF_DTYPE_BIT(WF_FLOAT64)},
    WF_ATTR_END};

#define OP(nm)                                                                 \
  static const wf_op_def op_##nm = {WF_STRUCT_INIT(wf_op_def), .name = #nm,    \
                                    .inputs = x_in, .outputs = y_out,          \
                                    .attrs = t_attr, .shape_fn = same_shape,   \
                                    .doc = "identity"};                        \
  static const wf_kernel_def k_##nm = {                                        \
      WF_STRUCT_INIT(wf_kernel_def), .op = #nm, .device_type = "cpu",          \
      .type_attr = "T", .dtypes = WF_DTYPE_BIT(WF_FLOAT32) |                   \
                                  WF_DTYPE_BIT(WF_FLOAT64),                    \
      .label = "test", .compute = copy_compute}
OP(NoGradOp);
OP(NotDiffOp);
OP(SparseRowsOp);

static const wf_gradient_def g_notdiff = {WF_STRUCT_INIT(wf_gradient_def),
                                          .op = "NotDiffOp",
                                          .flags = WF_GRAD_NOT_DIFFERENTIABLE};
static const wf_gradient_def g_sparse = {WF_STRUCT_INIT(wf_gradient_def),
                                         .op = "SparseRowsOp",
                                         .fn = sparse_rows_grad};

static const wf_op_def *const ops[] = {&op_NoGradOp, &op_NotDiffOp,
                                       &op_SparseRowsOp, NULL};
static const wf_kernel_def *const kernels[] = {&k_NoGradOp, &k_NotDiffOp,
                                               &k_SparseRowsOp, NULL};
static const wf_gradient_def *const grads[] = {&g_notdiff, &g_sparse, NULL};

static const wf_plugin_desc desc = {
    WF_STRUCT_INIT(wf_plugin_desc),
    .name = "test-grad-ops",
    .version = "1",
    .license = "MIT",
    .description = "ops for the autodiff core's tests",
    .ops = ops,
    .kernels = kernels,
    .gradients = grads,
    .init = init,
};

WF_PLUGIN(test_grad_ops, desc)
