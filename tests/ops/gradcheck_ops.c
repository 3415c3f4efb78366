/* tests/ops/gradcheck_ops.c — a test plugin (module gradcheck_ops) for the
 * self-tests of the gradient checker: GcCube, whose registered gradient is
 * wrong on purpose (dy x^2 instead of 3 dy x^2), and GcTakeRows, whose
 * gradient is sparse. float64 only; nothing here is a real op. */
#include <config.h>

#include <string.h>

#include <weft/plugin.h>

static const wf_host *host;

static int fail(wf_status *st, const char *msg) {
  host->status_set(st, WF_INVALID_ARGUMENT, "%s", msg);
  return WF_INVALID_ARGUMENT;
}

/* ---- GcCube: y = x^3 ---------------------------------------------------- */

static int cube_shape(wf_shape_ctx *ctx, wf_status *st) {
  int32_t dt;
  wf_shape s;

  if (host->shape_input(ctx, 0, &dt, &s) != 0)
    return fail(st, "GcCube needs one input");
  host->shape_set_output(ctx, 0, &s);
  return 0;
}

static int cube_compute(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  const wf_tensor *x = host->kernel_input(ctx, 0);
  wf_shape s;
  wf_tensor *y;
  const double *in;
  double *out;

  host->tensor_shape(x, &s);
  if (!(y = host->kernel_output_new(ctx, 0, &s, st)))
    return host->status_code(st);
  in = host->tensor_data(x);
  out = host->tensor_data(y);
  for (int64_t i = 0; i < host->tensor_count(x); i++)
    out[i] = in[i] * in[i] * in[i];
  return 0;
}

/* Wrong on purpose: the factor 3 is missing. */
static int cube_grad(wf_grad_ctx *ctx, wf_status *st) {
  wf_output x = host->grad_input(ctx, 0);
  wf_output in[2] = {x, x};
  wf_node *xx = host->grad_add_node(ctx, "Mul", in, 2, NULL, 0, st);

  if (!xx)
    return host->status_code(st);
  in[0] = host->grad_output_grad(ctx, 0);
  in[1] = (wf_output){xx, 0};
  if (!(xx = host->grad_add_node(ctx, "Mul", in, 2, NULL, 0, st)))
    return host->status_code(st);
  host->grad_set_input_grad(ctx, 0, (wf_output){xx, 0});
  return 0;
}

/* ---- GcTakeRows: y = x[rows] ------------------------------------------- */

static int rows_attr(int rc, const wf_attr_value *v, int64_t nrows,
                     wf_status *st) {
  if (rc != 0 || v->type != (WF_ATTR_LIST | WF_ATTR_INT))
    return fail(st, "GcTakeRows needs attr rows: list(int)");
  for (int64_t i = 0; i < v->count; i++)
    if (v->u.ints[i] < 0 || (nrows >= 0 && v->u.ints[i] >= nrows))
      return fail(st, "GcTakeRows: a row index is out of range");
  return 0;
}

static int take_shape(wf_shape_ctx *ctx, wf_status *st) {
  int32_t dt;
  wf_shape s;
  wf_attr_value v;

  if (host->shape_input(ctx, 0, &dt, &s) != 0 || s.rank != 2)
    return fail(st, "GcTakeRows takes one matrix (R, C)");
  if (rows_attr(host->shape_attr(ctx, "rows", &v), &v, s.dims[0], st))
    return WF_INVALID_ARGUMENT;
  s.dims[0] = v.count;
  host->shape_set_output(ctx, 0, &s);
  return 0;
}

static int take_compute(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  const wf_tensor *x = host->kernel_input(ctx, 0);
  wf_attr_value v;
  wf_shape s;
  wf_tensor *y;
  int64_t cols;

  host->tensor_shape(x, &s);
  if (rows_attr(host->kernel_attr(ctx, "rows", &v), &v, s.dims[0], st))
    return WF_INVALID_ARGUMENT;
  cols = s.dims[1];
  s.dims[0] = v.count;
  if (!(y = host->kernel_output_new(ctx, 0, &s, st)))
    return host->status_code(st);
  for (int64_t r = 0; r < v.count; r++)
    memcpy((double *)host->tensor_data(y) + r * cols,
           (const double *)host->tensor_data(x) + v.u.ints[r] * cols,
           (size_t)cols * sizeof(double));
  return 0;
}

/* Sparse: indices = rows (a Const), values = dy, dense_shape = Shape(x). */
static int take_grad(wf_grad_ctx *ctx, wf_status *st) {
  wf_attr_value rows;
  wf_shape s = {.rank = 1};
  wf_tensor *t;
  wf_attr_item at[2];
  wf_node *idx, *shape;
  wf_output x = host->grad_input(ctx, 0);

  if (host->grad_attr(ctx, "rows", &rows) != 0)
    return fail(st, "GcTakeRows gradient: no rows attribute");
  s.dims[0] = rows.count;
  if (!(t = host->tensor_new(WF_INT64, &s, st)))
    return host->status_code(st);
  if (rows.count > 0)
    memcpy(host->tensor_data(t), rows.u.ints,
           (size_t)rows.count * sizeof(int64_t));
  at[0] = (wf_attr_item){"value", {.type = WF_ATTR_TENSOR, .count = 1,
                                   .u.tensor = t}};
  at[1] = (wf_attr_item){"dtype", {.type = WF_ATTR_DTYPE, .count = 1,
                                   .u.dtype = WF_INT64}};
  idx = host->grad_add_node(ctx, "Const", NULL, 0, at, 2, st);
  host->tensor_release(t);
  if (!idx)
    return host->status_code(st);
  at[0] = (wf_attr_item){"out_type", {.type = WF_ATTR_DTYPE, .count = 1,
                                      .u.dtype = WF_INT64}};
  if (!(shape = host->grad_add_node(ctx, "Shape", &x, 1, at, 1, st)))
    return host->status_code(st);
  host->grad_set_input_grad_sparse(ctx, 0, (wf_output){idx, 0},
                                   host->grad_output_grad(ctx, 0),
                                   (wf_output){shape, 0});
  return 0;
}

/* ---- tables ------------------------------------------------------------ */

static const wf_arg_def in_x[] = {
    WF_ARG_FIXED("x", WF_FLOAT64, "(...) any shape"), WF_ARG_END};
static const wf_arg_def out_y[] = {
    WF_ARG_FIXED("y", WF_FLOAT64, "(...) see the op"), WF_ARG_END};
static const wf_attr_def take_attrs[] = {
    {WF_STRUCT_INIT(wf_attr_def), .name = "rows",
     .type = WF_ATTR_LIST | WF_ATTR_INT, .doc = "rows of x to take"},
    WF_ATTR_END};

static const wf_op_def op_cube = {
    WF_STRUCT_INIT(wf_op_def), .name = "GcCube", .inputs = in_x,
    .outputs = out_y, .shape_fn = cube_shape,
    .doc = "y = x^3 (test op: its gradient is wrong on purpose)"};
static const wf_op_def op_take = {
    WF_STRUCT_INIT(wf_op_def), .name = "GcTakeRows", .inputs = in_x,
    .outputs = out_y, .attrs = take_attrs, .shape_fn = take_shape,
    .doc = "y (K, C) = rows `rows` of x (R, C) (test op: sparse gradient)"};
static const wf_op_def *const ops[] = {&op_cube, &op_take, NULL};

static const wf_kernel_def k_cube = {
    WF_STRUCT_INIT(wf_kernel_def), .op = "GcCube", .device_type = "cpu",
    .label = "test", .compute = cube_compute};
static const wf_kernel_def k_take = {
    WF_STRUCT_INIT(wf_kernel_def), .op = "GcTakeRows", .device_type = "cpu",
    .label = "test", .compute = take_compute};
static const wf_kernel_def *const kernels[] = {&k_cube, &k_take, NULL};

static const wf_gradient_def g_cube = {WF_STRUCT_INIT(wf_gradient_def),
                                       .op = "GcCube", .fn = cube_grad};
static const wf_gradient_def g_take = {WF_STRUCT_INIT(wf_gradient_def),
                                       .op = "GcTakeRows", .fn = take_grad};
static const wf_gradient_def *const gradients[] = {&g_cube, &g_take, NULL};

static int init(const wf_host *h, void **state, wf_status *st) {
  host = h;
  *state = NULL;
  return 0;
}

static const wf_plugin_desc desc = {
    WF_STRUCT_INIT(wf_plugin_desc),
    .name = "gradcheck-test-ops",
    .version = "0",
    .license = "MIT",
    .description = "test ops for the gradient checker's self-tests",
    .ops = ops,
    .kernels = kernels,
    .gradients = gradients,
    .init = init,
};

WF_PLUGIN(gradcheck_ops, desc)
