/* plugins/ops/nn/grad.c — the gradient functions of the nn ops. Each builds
 * its part of the backward graph from this plugin's backward ops
 * (BiasAddGrad, Conv2DBackpropInput/Filter, MaxPoolGrad, AvgPoolGrad,
 * SoftmaxGrad, LogSoftmaxGrad, BatchNormGrad, LayerNormGrad, Dropout) and a few ops of
 * ops-array (Const, Shape, ExpandDims, ZerosLike) and ops-math (Mul, Neg,
 * AddN). The backward ops themselves have no gradients (no second order
 * through this plugin's backward ops). */
#include <config.h>

#include "nn.h"

#include <string.h>

/* ---- building blocks ----------------------------------------------------- */

#define IN(i) (wfx_host->grad_input(ctx, (i)))
#define OUT(i) (wfx_host->grad_output(ctx, (i)))
#define DY(i) (wfx_host->grad_output_grad(ctx, (i)))

/* x's shape as an int64 vector: a Const when fully known while building,
 * else a Shape node. */
static wf_output shape_of(wf_grad_ctx *ctx, wf_output x, wf_status *st) {
  wf_attr_item attrs[2];
  wf_output out = {NULL, 0};
  wf_tensor *t;
  wf_shape s, len;
  int64_t n;

  if (!x.node || wfx_code(st))
    return out;
  if (wfx_host->grad_tensor_info(ctx, x, NULL, &s) != 0 ||
      !wfx_shape_is_known(&s)) {
    attrs[0] = WFX_ITEM_DTYPE("out_type", WF_INT64);
    return wfx_grad_node(ctx, "Shape", &x, 1, attrs, 1, st);
  }
  n = s.rank;
  wfx_shape_make(&len, 1, &n);
  if (!(t = wfx_host->tensor_new(WF_INT64, &len, st)))
    return out;
  if (n > 0)
    memcpy(wfx_data(t), s.dims, (size_t)n * sizeof s.dims[0]);
  attrs[0] = (wf_attr_item){
      "value", {.type = WF_ATTR_TENSOR, .count = 1, .u.tensor = t}};
  attrs[1] = WFX_ITEM_DTYPE("dtype", WF_INT64);
  out = wfx_grad_node(ctx, "Const", NULL, 0, attrs, 2, st);
  wfx_host->tensor_release(t);
  return out;
}

/* Copies the forward attributes names[0..n-1] (of any type) into items. */
static int copy_attrs(const wf_grad_ctx *ctx, const char *const *names, int n,
                      wf_attr_item *items, wf_status *st) {

  for (int i = 0; i < n; i++) {
    wf_attr_value v;

    if (wfx_host->grad_attr(ctx, names[i], &v) != 0)
      return wfx_fail(st, WF_INVALID_ARGUMENT,
                      "gradient of node '%s': attribute '%s' is missing",
                      wfx_host->grad_node_name(ctx), names[i]);
    items[i] = WFX_ITEM_VALUE(names[i], v);
  }
  return 0;
}

/* The gradient arriving at output i, or zeros of that output. */
static wf_output grad_or_zeros(wf_grad_ctx *ctx, int32_t i, wf_status *st) {
  wf_output g = DY(i);

  return g.node ? g : wfx_grad_op1(ctx, "ZerosLike", OUT(i), st);
}

/* a + b where either may be missing (node NULL): the other, or AddN. */
static wf_output add_maybe(wf_grad_ctx *ctx, wf_output a, wf_output b,
                           wf_status *st) {
  if (!a.node)
    return b;
  if (!b.node)
    return a;
  return wfx_grad_op2(ctx, "AddN", a, b, st);
}

/* ---- the gradients ------------------------------------------------------- */

/* BiasAdd: value gets dy, bias BiasAddGrad(dy). */
static int grad_bias_add(wf_grad_ctx *ctx, wf_status *st) {
  static const char *const names[] = {"data_format"};
  wf_attr_item attrs[1];
  wf_output dy = DY(0);

  if (copy_attrs(ctx, names, 1, attrs, st))
    return wfx_code(st);
  wfx_grad_set(ctx, 0, dy);
  wfx_grad_set(ctx, 1, wfx_grad_node(ctx, "BiasAddGrad", &dy, 1, attrs, 1, st));
  return wfx_grad_done(st);
}

/* Conv2D: input Conv2DBackpropInput(shape(input), filter, dy), filter
 * Conv2DBackpropFilter(input, shape(filter), dy), with Conv2D's
 * attributes. */
static int grad_conv2d(wf_grad_ctx *ctx, wf_status *st) {
  static const char *const names[] = {"strides", "padding", "explicit_paddings",
                                      "dilations", "data_format"};
  wf_attr_item attrs[5];
  wf_output in[3];

  if (copy_attrs(ctx, names, 5, attrs, st))
    return wfx_code(st);
  in[0] = shape_of(ctx, IN(0), st);
  in[1] = IN(1);
  in[2] = DY(0);
  wfx_grad_set(ctx, 0,
               wfx_grad_node(ctx, "Conv2DBackpropInput", in, 3, attrs, 5, st));
  in[0] = IN(0);
  in[1] = shape_of(ctx, IN(1), st);
  wfx_grad_set(ctx, 1,
               wfx_grad_node(ctx, "Conv2DBackpropFilter", in, 3, attrs, 5, st));
  return wfx_grad_done(st);
}

static const char *const pool_attr_names[] = {
    "ksize", "strides", "padding", "explicit_paddings", "data_format"};

/* MaxPool: MaxPoolGrad(input, dy), the gradient at each window's pick. */
static int grad_max_pool(wf_grad_ctx *ctx, wf_status *st) {
  wf_attr_item attrs[5];

  if (copy_attrs(ctx, pool_attr_names, 5, attrs, st))
    return wfx_code(st);
  {
    wf_output in[2] = {IN(0), DY(0)};
    wfx_grad_set(ctx, 0,
                 wfx_grad_node(ctx, "MaxPoolGrad", in, 2, attrs, 5, st));
  }
  return wfx_grad_done(st);
}

/* AvgPool: AvgPoolGrad(shape(input), dy). */
static int grad_avg_pool(wf_grad_ctx *ctx, wf_status *st) {
  wf_attr_item attrs[5];

  if (copy_attrs(ctx, pool_attr_names, 5, attrs, st))
    return wfx_code(st);
  {
    wf_output in[2] = {shape_of(ctx, IN(0), st), DY(0)};
    wfx_grad_set(ctx, 0,
                 wfx_grad_node(ctx, "AvgPoolGrad", in, 2, attrs, 5, st));
  }
  return wfx_grad_done(st);
}

/* Softmax: SoftmaxGrad(y, dy). */
static int grad_softmax(wf_grad_ctx *ctx, wf_status *st) {
  wfx_grad_set(ctx, 0, wfx_grad_op2(ctx, "SoftmaxGrad", OUT(0), DY(0), st));
  return wfx_grad_done(st);
}

/* LogSoftmax: LogSoftmaxGrad(y, dy). */
static int grad_log_softmax(wf_grad_ctx *ctx, wf_status *st) {
  wfx_grad_set(ctx, 0, wfx_grad_op2(ctx, "LogSoftmaxGrad", OUT(0), DY(0), st));
  return wfx_grad_done(st);
}

/* The softmax cross-entropies. With dloss (N,) the loss's gradient, e =
 * ExpandDims(dloss, -1) (N, 1) (backprop is the loss's gradient for label
 * rows that sum to 1, the op's contract):
 *   features += backprop * e          (backprop = softmax - labels)
 *   labels   += -LogSoftmax(features) * e          (dense labels only)
 * and with dbp the gradient of the backprop output itself:
 *   features += SoftmaxGrad(Softmax(features), dbp)
 *   labels   += -dbp                                (dense labels only)
 * Sparse labels are indices and get no gradient. */
static int xent_grad(wf_grad_ctx *ctx, int dense_labels, wf_status *st) {
  wf_output dloss = DY(0), dbp = DY(1);
  wf_output dfeat = {NULL, 0}, dlab = {NULL, 0};

  if (dloss.node) {
    wf_attr_item axis = {"axis", {.type = WF_ATTR_INT, .count = 1, .u.i = -1}};
    wf_output e = wfx_grad_node(ctx, "ExpandDims", &dloss, 1, &axis, 1, st);

    dfeat = wfx_grad_op2(ctx, "Mul", OUT(1), e, st);
    if (dense_labels)
      dlab = wfx_grad_op1(
          ctx, "Neg",
          wfx_grad_op2(ctx, "Mul", wfx_grad_op1(ctx, "LogSoftmax", IN(0), st),
                       e, st),
          st);
  }
  if (dbp.node) {
    wf_output sm = wfx_grad_op1(ctx, "Softmax", IN(0), st);

    dfeat = add_maybe(ctx, dfeat, wfx_grad_op2(ctx, "SoftmaxGrad", sm, dbp, st),
                      st);
    if (dense_labels)
      dlab = add_maybe(ctx, dlab, wfx_grad_op1(ctx, "Neg", dbp, st), st);
  }
  wfx_grad_set(ctx, 0, dfeat);
  if (dense_labels)
    wfx_grad_set(ctx, 1, dlab);
  return wfx_grad_done(st);
}

static int grad_softmax_xent(wf_grad_ctx *ctx, wf_status *st) {
  return xent_grad(ctx, 1, st);
}

static int grad_sparse_softmax_xent(wf_grad_ctx *ctx, wf_status *st) {
  return xent_grad(ctx, 0, st);
}

/* BatchNorm: one BatchNormGrad(dy, x, scale, batch_mean, batch_variance,
 * dbatch_mean, dbatch_variance) whose outputs are the gradients of x,
 * scale and offset (missing output gradients are zeros). In training the
 * batch statistics depend on x, and their gradients flow into x's; in
 * inference mean and variance are constants: neither they nor anything
 * through outputs 1 and 2 (copies of them) gets a gradient. */
static int grad_batch_norm(wf_grad_ctx *ctx, wf_status *st) {
  static const char *const names[] = {"epsilon", "is_training", "data_format"};
  wf_attr_item attrs[3];
  wf_attr_value training;
  wf_output in[7];
  wf_node *n;

  if (copy_attrs(ctx, names, 3, attrs, st) ||
      wfx_grad_attr(ctx, "is_training", WF_ATTR_BOOL, &training, st))
    return wfx_code(st);
  if (!training.u.b && !DY(0).node)
    return 0;
  in[0] = grad_or_zeros(ctx, 0, st);
  in[1] = IN(0);
  in[2] = IN(1);
  in[3] = OUT(1);
  in[4] = OUT(2);
  in[5] = grad_or_zeros(ctx, 1, st);
  in[6] = grad_or_zeros(ctx, 2, st);
  for (int i = 0; i < 7; i++)
    if (!in[i].node)
      return wfx_grad_done(st);
  if (!(n = wfx_host->grad_add_node(ctx, "BatchNormGrad", in, 7, attrs, 3, st)))
    return wfx_code(st);
  for (int i = 0; i < 3; i++)
    wfx_host->grad_set_input_grad(ctx, i, (wf_output){n, i});
  return 0;
}

/* LayerNorm: one LayerNormGrad(dy, x, scale) whose outputs are the
 * gradients of x, scale and offset. */
static int grad_layer_norm(wf_grad_ctx *ctx, wf_status *st) {
  static const char *const names[] = {"epsilon"};
  wf_attr_item attrs[1];
  wf_output in[3] = {DY(0), IN(0), IN(1)};
  wf_node *n;

  if (!in[0].node)
    return 0;
  if (copy_attrs(ctx, names, 1, attrs, st))
    return wfx_code(st);
  if (!(n = wfx_host->grad_add_node(ctx, "LayerNormGrad", in, 3, attrs, 1,
                                    st)))
    return wfx_code(st);
  for (int i = 0; i < 3; i++)
    wfx_host->grad_set_input_grad(ctx, i, (wf_output){n, i});
  return 0;
}

/* Dropout: the same mask applied to dy, i.e. a Dropout node with the
 * forward rate and seeds whose stream_name is the forward node's stream
 * (its stream_name, or its own name): in the same step it draws exactly
 * the forward mask. */
static int grad_dropout(wf_grad_ctx *ctx, wf_status *st) {
  static const char *const names[] = {"rate", "seed", "seed2"};
  wf_attr_item attrs[4];
  wf_attr_value stream;
  wf_output dy = DY(0);

  if (copy_attrs(ctx, names, 3, attrs, st) ||
      wfx_grad_attr(ctx, "stream_name", WF_ATTR_STRING, &stream, st))
    return wfx_code(st);
  if (!stream.u.s || !stream.u.s[0])
    stream.u.s = wfx_host->grad_node_name(ctx);
  attrs[3] = WFX_ITEM_VALUE("stream_name", stream);
  wfx_grad_set(ctx, 0, wfx_grad_node(ctx, "Dropout", &dy, 1, attrs, 4, st));
  return wfx_grad_done(st);
}

/* ---- the table ----------------------------------------------------------- */

#define GRADIENT(opname, func)                                                 \
  { WF_STRUCT_INIT(wf_gradient_def), .op = (opname), .fn = (func) }

static const wf_gradient_def gradient_defs[] = {
    GRADIENT("BiasAdd", grad_bias_add),
    GRADIENT("Conv2D", grad_conv2d),
    GRADIENT("MaxPool", grad_max_pool),
    GRADIENT("AvgPool", grad_avg_pool),
    GRADIENT("Softmax", grad_softmax),
    GRADIENT("LogSoftmax", grad_log_softmax),
    GRADIENT("SoftmaxCrossEntropyWithLogits", grad_softmax_xent),
    GRADIENT("SparseSoftmaxCrossEntropyWithLogits", grad_sparse_softmax_xent),
    GRADIENT("BatchNorm", grad_batch_norm),
    GRADIENT("Dropout", grad_dropout),
    GRADIENT("LayerNorm", grad_layer_norm),
};

#define NGRADS (sizeof gradient_defs / sizeof gradient_defs[0])
_Static_assert(NGRADS == 11, "list every entry of gradient_defs below");

const wf_gradient_def *const nn_gradients[NGRADS + 1] = {&gradient_defs[0],
                                                         &gradient_defs[1],
                                                         &gradient_defs[2],
                                                         &gradient_defs[3],
                                                         &gradient_defs[4],
                                                         &gradient_defs[5],
                                                         &gradient_defs[6],
                                                         &gradient_defs[7],
                                                         &gradient_defs[8],
                                                         &gradient_defs[9],
                                                         &gradient_defs[10],
                                                         NULL};
