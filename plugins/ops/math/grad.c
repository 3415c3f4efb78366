/* plugins/ops/math/grad.c — the gradient functions of the math ops, built
 * from ops of this plugin (the fused backward ops among them) and of
 * ops-array (ZerosLike, OnesLike) through the host table. plugin.c lists
 * them; the ops without a gradient (ArgMax, comparisons) are registered
 * there as not differentiable.
 *
 * Conventions: x, y are the forward inputs, z the forward output, dz the
 * gradient arriving at z (each op here has one output, so it is always
 * there). Inputs of broadcasting ops get their gradient summed back to
 * their own shape (opc_grad_sum_to). The core only asks for gradients of
 * float tensors, so integer and bool inputs are never set. Second-order
 * gradients: the fused backward ops have gradients of their own except
 * GeluGrad, RsqrtGrad, MaxMinGrad and ProdGrad (differentiating through
 * those is a NOT_FOUND error naming them). */
#include <config.h>

#include "math_ops.h"

static wf_output in_(wf_grad_ctx *ctx, int32_t i) {
  return wfx_host->grad_input(ctx, i);
}

static wf_output out_(wf_grad_ctx *ctx) {
  return wfx_host->grad_output(ctx, 0);
}

static wf_output dz_(wf_grad_ctx *ctx) {
  return wfx_host->grad_output_grad(ctx, 0);
}

#define OP1(op, a) wfx_grad_op1(ctx, (op), (a), st)
#define OP2(op, a, b) wfx_grad_op2(ctx, (op), (a), (b), st)
#define OP3(op, a, b, c) wfx_grad_op3(ctx, (op), (a), (b), (c), st)
#define SUM_TO(g, like) opc_grad_sum_to(ctx, (g), (like), st)
#define SET(i, g) wfx_grad_set(ctx, (i), (g))

/* ---- broadcasting binary ops ------------------------------------------- */

int math_grad_add(wf_grad_ctx *ctx, wf_status *st) {
  wf_output x = in_(ctx, 0), y = in_(ctx, 1), dz = dz_(ctx);

  SET(0, SUM_TO(dz, x));
  SET(1, SUM_TO(dz, y));
  return wfx_grad_done(st);
}

int math_grad_sub(wf_grad_ctx *ctx, wf_status *st) {
  wf_output x = in_(ctx, 0), y = in_(ctx, 1), dz = dz_(ctx);

  SET(0, SUM_TO(dz, x));
  /* negated after the reduction: fewer elements */
  SET(1, OP1("Neg", SUM_TO(dz, y)));
  return wfx_grad_done(st);
}

int math_grad_mul(wf_grad_ctx *ctx, wf_status *st) {
  wf_output x = in_(ctx, 0), y = in_(ctx, 1), dz = dz_(ctx);

  SET(0, SUM_TO(OP2("Mul", dz, y), x));
  SET(1, SUM_TO(OP2("Mul", dz, x), y));
  return wfx_grad_done(st);
}

/* dx = dz / y; dy = -dz x / y^2 = -(dz z) / y. */
int math_grad_div(wf_grad_ctx *ctx, wf_status *st) {
  wf_output x = in_(ctx, 0), y = in_(ctx, 1), z = out_(ctx), dz = dz_(ctx);

  SET(0, SUM_TO(OP2("Div", dz, y), x));
  SET(1, OP1("Neg", SUM_TO(OP2("Div", OP2("Mul", dz, z), y), y)));
  return wfx_grad_done(st);
}

/* The gradient goes to x where `x_loses` is false, else to y: ties go to x
 * (TensorFlow does the same). */
static int route(wf_grad_ctx *ctx, const char *x_loses_op, wf_status *st) {
  wf_output x = in_(ctx, 0), y = in_(ctx, 1), dz = dz_(ctx);
  wf_output zeros = OP1("ZerosLike", dz);
  wf_output loses = OP2(x_loses_op, x, y);

  SET(0, SUM_TO(OP3("Select", loses, zeros, dz), x));
  SET(1, SUM_TO(OP3("Select", loses, dz, zeros), y));
  return wfx_grad_done(st);
}

int math_grad_maximum(wf_grad_ctx *ctx, wf_status *st) {
  return route(ctx, "Less", st);
}

int math_grad_minimum(wf_grad_ctx *ctx, wf_status *st) {
  return route(ctx, "Greater", st);
}

/* dx = dz y x^(y-1); dy = dz z ln x where x > 0, and 0 where x <= 0 (the
 * real power is not differentiable in y there). */
int math_grad_pow(wf_grad_ctx *ctx, wf_status *st) {
  wf_output x = in_(ctx, 0), y = in_(ctx, 1), z = out_(ctx), dz = dz_(ctx);
  wf_output ym1 = OP2("Sub", y, OP1("OnesLike", y));
  wf_output zeros = OP1("ZerosLike", x);
  wf_output log_x = OP3("Select", OP2("Greater", x, zeros), OP1("Log", x),
                        zeros);

  SET(0, SUM_TO(OP2("Mul", OP2("Mul", dz, y), OP2("Pow", x, ym1)), x));
  SET(1, SUM_TO(OP2("Mul", OP2("Mul", dz, z), log_x), y));
  return wfx_grad_done(st);
}

/* The condition gets nothing; x and y get dz where they were taken. */
int math_grad_select(wf_grad_ctx *ctx, wf_status *st) {
  wf_output c = in_(ctx, 0), x = in_(ctx, 1), y = in_(ctx, 2), dz = dz_(ctx);
  wf_output zeros = OP1("ZerosLike", dz);

  SET(1, SUM_TO(OP3("Select", c, dz, zeros), x));
  SET(2, SUM_TO(OP3("Select", c, zeros, dz), y));
  return wfx_grad_done(st);
}

int math_grad_add_n(wf_grad_ctx *ctx, wf_status *st) {
  int32_t n = wfx_host->grad_num_inputs(ctx);
  wf_output dz = dz_(ctx);

  for (int32_t i = 0; i < n; i++)
    SET(i, dz);
  return wfx_grad_done(st);
}

/* ---- elementwise ops on one input -------------------------------------- */

int math_grad_neg(wf_grad_ctx *ctx, wf_status *st) {
  SET(0, OP1("Neg", dz_(ctx)));
  return wfx_grad_done(st);
}

int math_grad_abs(wf_grad_ctx *ctx, wf_status *st) {
  SET(0, OP2("AbsGrad", dz_(ctx), in_(ctx, 0)));
  return wfx_grad_done(st);
}

int math_grad_exp(wf_grad_ctx *ctx, wf_status *st) {
  SET(0, OP2("Mul", dz_(ctx), out_(ctx)));
  return wfx_grad_done(st);
}

int math_grad_log(wf_grad_ctx *ctx, wf_status *st) {
  SET(0, OP2("Div", dz_(ctx), in_(ctx, 0)));
  return wfx_grad_done(st);
}

int math_grad_sqrt(wf_grad_ctx *ctx, wf_status *st) {
  SET(0, OP2("SqrtGrad", dz_(ctx), out_(ctx)));
  return wfx_grad_done(st);
}

int math_grad_rsqrt(wf_grad_ctx *ctx, wf_status *st) {
  SET(0, OP2("RsqrtGrad", dz_(ctx), out_(ctx)));
  return wfx_grad_done(st);
}

/* 2 x dz, as (x + x) dz: no constant needed. */
int math_grad_square(wf_grad_ctx *ctx, wf_status *st) {
  wf_output x = in_(ctx, 0);

  SET(0, OP2("Mul", dz_(ctx), OP2("Add", x, x)));
  return wfx_grad_done(st);
}

int math_grad_tanh(wf_grad_ctx *ctx, wf_status *st) {
  SET(0, OP2("TanhGrad", dz_(ctx), out_(ctx)));
  return wfx_grad_done(st);
}

int math_grad_sigmoid(wf_grad_ctx *ctx, wf_status *st) {
  SET(0, OP2("SigmoidGrad", dz_(ctx), out_(ctx)));
  return wfx_grad_done(st);
}

/* ReluGrad reads Relu's output, not its input: y > 0 exactly where x > 0
 * (NaN and -0 give y <= 0 as x <= 0 does), so dx is the same, and the
 * product and BiasAdd before a Relu keep their single reader, which lets
 * the fusion pass make one node of the three in training graphs too (the
 * cnn's training step 1.11x, bench/train, alternated runs). */
int math_grad_relu(wf_grad_ctx *ctx, wf_status *st) {
  SET(0, OP2("ReluGrad", dz_(ctx), out_(ctx)));
  return wfx_grad_done(st);
}

int math_grad_elu(wf_grad_ctx *ctx, wf_status *st) {
  SET(0, OP2("EluGrad", dz_(ctx), out_(ctx)));
  return wfx_grad_done(st);
}

int math_grad_softplus(wf_grad_ctx *ctx, wf_status *st) {
  SET(0, OP2("SoftplusGrad", dz_(ctx), in_(ctx, 0)));
  return wfx_grad_done(st);
}

/* An op (dy, v) -> dx that takes the forward node's attribute `attr` of
 * type `type` unchanged. */
static int grad_with_attr(wf_grad_ctx *ctx, const char *op, wf_output v,
                          const char *attr, int32_t type, wf_status *st) {
  wf_attr_value a;
  wf_attr_item item;
  wf_output in[2] = {dz_(ctx), v};

  if (wfx_grad_attr(ctx, attr, type, &a, st))
    return wfx_grad_done(st);
  item = WFX_ITEM_VALUE(attr, a);
  SET(0, wfx_grad_node(ctx, op, in, 2, &item, 1, st));
  return wfx_grad_done(st);
}

int math_grad_leaky_relu(wf_grad_ctx *ctx, wf_status *st) {
  return grad_with_attr(ctx, "LeakyReluGrad", in_(ctx, 0), "alpha",
                        WF_ATTR_FLOAT, st);
}

int math_grad_gelu(wf_grad_ctx *ctx, wf_status *st) {
  return grad_with_attr(ctx, "GeluGrad", in_(ctx, 0), "approximate",
                        WF_ATTR_BOOL, st);
}

/* Between float types the gradient is cast back to the source type; a
 * cast from or to an integer or bool type passes no gradient (the core
 * never asks for one through an integer tensor, so only float-to-float
 * casts get here with something to do). */
int math_grad_cast(wf_grad_ctx *ctx, wf_status *st) {
  wf_attr_value src, dst;
  wf_attr_item item;
  wf_output dz = dz_(ctx);

  if (wfx_grad_attr(ctx, "SrcT", WF_ATTR_DTYPE, &src, st) ||
      wfx_grad_attr(ctx, "DstT", WF_ATTR_DTYPE, &dst, st))
    return wfx_grad_done(st);
  if (!wfx_dtype_is_float(src.u.dtype) || !wfx_dtype_is_float(dst.u.dtype))
    return 0;
  if (src.u.dtype == dst.u.dtype) {
    SET(0, dz);
    return wfx_grad_done(st);
  }
  item = WFX_ITEM_DTYPE("DstT", src.u.dtype);
  SET(0, wfx_grad_node(ctx, "Cast", &dz, 1, &item, 1, st));
  return wfx_grad_done(st);
}

/* ---- reductions -------------------------------------------------------- */

/* op(inputs..., axes and keep_dims of the forward node) -> dx. */
static int reduce_grad(wf_grad_ctx *ctx, const char *op, const wf_output *in,
                       int n, wf_status *st) {
  wf_attr_value axes, keep;
  wf_attr_item items[2];

  if (wfx_grad_attr(ctx, "axes", WF_ATTR_LIST | WF_ATTR_INT, &axes, st) ||
      wfx_grad_attr(ctx, "keep_dims", WF_ATTR_BOOL, &keep, st))
    return wfx_grad_done(st);
  items[0] = WFX_ITEM_VALUE("axes", axes);
  items[1] = WFX_ITEM_VALUE("keep_dims", keep);
  SET(0, wfx_grad_node(ctx, op, in, n, items, 2, st));
  return wfx_grad_done(st);
}

int math_grad_sum(wf_grad_ctx *ctx, wf_status *st) {
  wf_output in[2] = {dz_(ctx), in_(ctx, 0)};

  return reduce_grad(ctx, "SumGrad", in, 2, st);
}

int math_grad_mean(wf_grad_ctx *ctx, wf_status *st) {
  wf_output in[2] = {dz_(ctx), in_(ctx, 0)};

  return reduce_grad(ctx, "MeanGrad", in, 2, st);
}

/* Max and Min: to the elements equal to the result, ties sharing it. */
int math_grad_max_min(wf_grad_ctx *ctx, wf_status *st) {
  wf_output in[3] = {dz_(ctx), in_(ctx, 0), out_(ctx)};

  return reduce_grad(ctx, "MaxMinGrad", in, 3, st);
}

int math_grad_prod(wf_grad_ctx *ctx, wf_status *st) {
  wf_output in[2] = {dz_(ctx), in_(ctx, 0)};

  return reduce_grad(ctx, "ProdGrad", in, 2, st);
}

/* ---- matrix products --------------------------------------------------- */

/* Gradients of z = op(a) op(b) (op: transpose when the flag is set), with
 * a, b the stored operands, each one product of the op itself:
 *   ta tb | da          | db
 *   0  0  | dz b^T      | a^T dz
 *   0  1  | dz b        | dz^T a
 *   1  0  | b dz^T      | a dz
 *   1  1  | b^T dz^T    | dz^T a^T
 * product_rules[2 ta + tb][0 for da, 1 for db] = (first, second operand,
 * their transpose flags). */
enum { OPND_A, OPND_B, OPND_DZ };
static const struct {
  int8_t first, second, t_first, t_second;
} product_rules[4][2] = {
    {{OPND_DZ, OPND_B, 0, 1}, {OPND_A, OPND_DZ, 1, 0}},
    {{OPND_DZ, OPND_B, 0, 0}, {OPND_DZ, OPND_A, 1, 0}},
    {{OPND_B, OPND_DZ, 0, 1}, {OPND_A, OPND_DZ, 0, 0}},
    {{OPND_B, OPND_DZ, 1, 1}, {OPND_DZ, OPND_A, 1, 1}},
};

/* fa, fb: the op's transpose attributes; sum_batch: sum broadcast batch
 * dims back to each operand's shape (BatchMatMul). */
static int product_grad(wf_grad_ctx *ctx, const char *op, const char *fa,
                        const char *fb, int sum_batch, wf_status *st) {
  wf_attr_value va, vb;
  wf_output opnd[3] = {in_(ctx, 0), in_(ctx, 1), dz_(ctx)};
  int rule;

  if (wfx_grad_attr(ctx, fa, WF_ATTR_BOOL, &va, st) ||
      wfx_grad_attr(ctx, fb, WF_ATTR_BOOL, &vb, st))
    return wfx_grad_done(st);
  rule = 2 * (va.u.b != 0) + (vb.u.b != 0);
  for (int k = 0; k < 2; k++) {
    wf_output in[2] = {opnd[product_rules[rule][k].first],
                       opnd[product_rules[rule][k].second]};
    wf_attr_item at[2] = {WFX_ITEM_BOOL(fa, product_rules[rule][k].t_first),
                          WFX_ITEM_BOOL(fb, product_rules[rule][k].t_second)};
    wf_output g = wfx_grad_node(ctx, op, in, 2, at, 2, st);

    SET(k, sum_batch ? SUM_TO(g, opnd[k]) : g);
  }
  return wfx_grad_done(st);
}

int math_grad_matmul(wf_grad_ctx *ctx, wf_status *st) {
  return product_grad(ctx, "MatMul", "transpose_a", "transpose_b", 0, st);
}

int math_grad_batch_matmul(wf_grad_ctx *ctx, wf_status *st) {
  return product_grad(ctx, "BatchMatMul", "adj_x", "adj_y", 1, st);
}

/* ---- second order: the backward ops linear in dy ------------------------ */

/* SumToLike(x, like): x gets dz broadcast back to x's shape, like nothing
 * (only its shape is read). */
int math_grad_sum_to_like(wf_grad_ctx *ctx, wf_status *st) {
  wf_output x = in_(ctx, 0);

  SET(0, OP2("Add", OP1("ZerosLike", x), dz_(ctx)));
  return wfx_grad_done(st);
}

/* SumGrad(dy, x) spreads dy: its gradient sums back (Sum), and MeanGrad's
 * averages back (Mean); x's values are not used. */
static int spread_grad(wf_grad_ctx *ctx, const char *op, wf_status *st) {
  wf_output ddx = dz_(ctx);

  return reduce_grad(ctx, op, &ddx, 1, st);
}

int math_grad_sum_grad(wf_grad_ctx *ctx, wf_status *st) {
  return spread_grad(ctx, "Sum", st);
}

int math_grad_mean_grad(wf_grad_ctx *ctx, wf_status *st) {
  return spread_grad(ctx, "Mean", st);
}

/* ReluGrad(dy, x) and AbsGrad(dy, x) are dy times a factor that is
 * piecewise constant in x: linear in dy, zero gradient for x. */
int math_grad_relu_grad(wf_grad_ctx *ctx, wf_status *st) {
  SET(0, OP2("ReluGrad", dz_(ctx), in_(ctx, 1)));
  return wfx_grad_done(st);
}

int math_grad_abs_grad(wf_grad_ctx *ctx, wf_status *st) {
  SET(0, OP2("AbsGrad", dz_(ctx), in_(ctx, 1)));
  return wfx_grad_done(st);
}

int math_grad_leaky_relu_grad(wf_grad_ctx *ctx, wf_status *st) {
  return grad_with_attr(ctx, "LeakyReluGrad", in_(ctx, 1), "alpha",
                        WF_ATTR_FLOAT, st);
}

/* ---- second order: the backward ops of the smooth activations ----------- */

/* In these, g is the gradient arriving at the backward op's output dx. */

/* SigmoidGrad(dy, y) = dy y (1 - y): d/ddy = SigmoidGrad(g, y),
 * d/dy = g dy (1 - 2 y). */
int math_grad_sigmoid_grad(wf_grad_ctx *ctx, wf_status *st) {
  wf_output dy = in_(ctx, 0), y = in_(ctx, 1), g = dz_(ctx);
  wf_output one_minus_2y = OP2("Sub", OP2("Sub", OP1("OnesLike", y), y), y);

  SET(0, OP2("SigmoidGrad", g, y));
  SET(1, OP2("Mul", OP2("Mul", g, dy), one_minus_2y));
  return wfx_grad_done(st);
}

/* TanhGrad(dy, y) = dy (1 - y^2): d/ddy = TanhGrad(g, y),
 * d/dy = -2 g dy y. */
int math_grad_tanh_grad(wf_grad_ctx *ctx, wf_status *st) {
  wf_output dy = in_(ctx, 0), y = in_(ctx, 1), g = dz_(ctx);

  SET(0, OP2("TanhGrad", g, y));
  SET(1, OP1("Neg", OP2("Mul", OP2("Mul", g, dy), OP2("Add", y, y))));
  return wfx_grad_done(st);
}

/* SqrtGrad(dy, y) = dy / (2 y): d/ddy = SqrtGrad(g, y),
 * d/dy = -g dy / (2 y^2) = -SqrtGrad(g dy, y) / y. */
int math_grad_sqrt_grad(wf_grad_ctx *ctx, wf_status *st) {
  wf_output dy = in_(ctx, 0), y = in_(ctx, 1), g = dz_(ctx);

  SET(0, OP2("SqrtGrad", g, y));
  SET(1, OP1("Neg", OP2("Div", OP2("SqrtGrad", OP2("Mul", g, dy), y), y)));
  return wfx_grad_done(st);
}

/* EluGrad(dy, y) = dy where y > 0, dy (y + 1) elsewhere: d/ddy =
 * EluGrad(g, y), d/dy = g dy where y <= 0, else 0. */
int math_grad_elu_grad(wf_grad_ctx *ctx, wf_status *st) {
  wf_output dy = in_(ctx, 0), y = in_(ctx, 1), g = dz_(ctx);
  wf_output zeros = OP1("ZerosLike", y);

  SET(0, OP2("EluGrad", g, y));
  SET(1, OP3("Select", OP2("Greater", y, zeros), zeros, OP2("Mul", g, dy)));
  return wfx_grad_done(st);
}

/* SoftplusGrad(dy, x) = dy sigmoid(x): d/ddy = SoftplusGrad(g, x),
 * d/dx = g dy sigmoid'(x) = SigmoidGrad(g dy, sigmoid(x)). */
int math_grad_softplus_grad(wf_grad_ctx *ctx, wf_status *st) {
  wf_output dy = in_(ctx, 0), x = in_(ctx, 1), g = dz_(ctx);

  SET(0, OP2("SoftplusGrad", g, x));
  SET(1, OP2("SigmoidGrad", OP2("Mul", g, dy), OP1("Sigmoid", x)));
  return wfx_grad_done(st);
}
