/* core/core_ops.c — the ops the core itself puts into the graphs it
 * executes, registered like any plugin's (an in-process description added
 * when a runtime is created): _Feed, which stands for a fed tensor in a
 * signature's working graph. They are internal: their names start with '_'.
 *
 * Computation stays in plugins; these ops only move tensors. */
#include <config.h>

#include "core_ops.h"
#include "host.h"

static const wf_host *host;

static int init(const wf_host *h, void **state, wf_status *st) {
  (void)state;
  (void)st;
  host = h;
  return 0;
}

/* Output 0 has the dtype and shape of the tensor fed. */
static int feed_shape(wf_shape_ctx *ctx, wf_status *st) {
  wf_attr_value v;
  (void)st;
  if (host->shape_attr(ctx, "shape", &v) == 0)
    host->shape_set_output(ctx, 0, &v.u.shape);
  return 0;
}

static const wf_arg_def feed_out[] = {
    WF_ARG_T("output", "dtype", "(...) the fed tensor"), WF_ARG_END};
static const wf_attr_def feed_attrs[] = {
    {WF_STRUCT_INIT(wf_attr_def), .name = "dtype", .type = WF_ATTR_DTYPE,
     .doc = "dtype of the fed tensor"},
    {WF_STRUCT_INIT(wf_attr_def), .name = "shape", .type = WF_ATTR_SHAPE,
     .has_default = 1,
     .default_value = {.type = WF_ATTR_SHAPE, .count = 1,
                       .u.shape = {.rank = WF_UNKNOWN_RANK}},
     .doc = "shape known for it when the signature was prepared"},
    {WF_STRUCT_INIT(wf_attr_def), .name = "tensor", .type = WF_ATTR_STRING,
     .has_default = 1,
     .default_value = {.type = WF_ATTR_STRING, .count = 1, .u.s = ""},
     .doc = "the graph tensor it replaces, \"node:index\", for messages"},
    WF_ATTR_END};

static const wf_op_def feed_op = {
    WF_STRUCT_INIT(wf_op_def),
    .name = "_Feed",
    .outputs = feed_out,
    .attrs = feed_attrs,
    .flags = WF_OP_SOURCE_FED | WF_OP_STATEFUL,
    .shape_fn = feed_shape,
    .doc = "A tensor given to the step by the caller (the core's rewrite of "
           "a fed graph output). Never run: the executor fills its "
           "consumers' inputs.",
};

static const wf_op_def *const ops[] = {&feed_op, NULL};

static const wf_gradient_def feed_grad = {WF_STRUCT_INIT(wf_gradient_def),
                                          .op = "_Feed",
                                          .flags = WF_GRAD_NOT_DIFFERENTIABLE};
static const wf_gradient_def *const grads[] = {&feed_grad, NULL};

static const wf_plugin_desc desc = {
    WF_STRUCT_INIT(wf_plugin_desc),
    .name = "core",
    .version = WF_VERSION_STRING,
    .license = "MIT",
    .description = "ops the core inserts when it rewrites a graph for "
                   "execution (_Feed)",
    .ops = ops,
    .gradients = grads,
    .init = init,
};

const wf_plugin_desc *wf__core_ops(void) { return &desc; }
