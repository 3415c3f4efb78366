/* core/exec/core_ops.c — the ops the core itself puts into the graphs it
 * executes, registered like any plugin's (an in-process description added
 * when a runtime is created): _Feed, which stands for a fed tensor in a
 * signature's working graph, and the transfer pairs partitioning inserts
 * between devices (_Send/_Recv for tensors, _SendControl/_RecvControl for
 * control edges), whose kernels work on host memory (device type "host").
 * They are internal: their names start with '_'.
 *
 * Computation stays in plugins; these ops only move tensors. */
#include <config.h>

#include "base/log.h"
#include "exec/core_ops.h"
#include "exec/kernel.h"
#include "exec/rendezvous.h"
#include "graph/graph_internal.h"

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
     .default_value = {.type = WF_ATTR_SHAPE,
                       .count = 1,
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

/* ---- transfers between partitions ------------------------------------- */

static int32_t slot_of(const wf_kernel_ctx *ctx) {
  const wf_attr_value *v = wf__node_attr(ctx->node, "slot");
  return v ? (int32_t)v->u.i : -1;
}

static wf__rendezvous *rendezvous_of(const wf_kernel_ctx *ctx, wf_status *st) {
  if (!ctx->step_ctx || !ctx->step_ctx->rendezvous) {
    host->status_set(st, WF_FAILED_PRECONDITION,
                     "transfers run only inside a partitioned step");
    return NULL;
  }
  return ctx->step_ctx->rendezvous;
}

static int send_compute(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  (void)state;
  wf__rendezvous *r = rendezvous_of(ctx, st);
  if (!r)
    return WF_FAILED_PRECONDITION;
  wf__rendezvous_send(r, slot_of(ctx),
                      ctx->num_inputs ? (wf_tensor *)ctx->inputs[0] : NULL);
  return 0;
}

static int recv_compute(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  (void)state;
  wf__rendezvous *r = rendezvous_of(ctx, st);
  if (!r)
    return WF_FAILED_PRECONDITION;
  wf__rendezvous_recv(r, slot_of(ctx), ctx);
  return 0;
}

static int recv_shape(wf_shape_ctx *ctx, wf_status *st) {
  return feed_shape(ctx, st);
}

#define TRANSFER_ATTRS                                                         \
  {WF_STRUCT_INIT(wf_attr_def), .name = "slot", .type = WF_ATTR_INT,           \
   .doc = "the rendezvous slot of this pair"},                                 \
  {                                                                            \
    WF_STRUCT_INIT(wf_attr_def),                                               \
        .name = "key", .type = WF_ATTR_STRING,                                 \
        .doc = "\"tensor->device\" moved, for messages"                        \
  }

static const wf_arg_def send_in[] = {
    WF_ARG_T("input", "T", "(...) the tensor to hand over"), WF_ARG_END};
static const wf_attr_def send_attrs[] = {
    {WF_STRUCT_INIT(wf_attr_def), .name = "T", .type = WF_ATTR_DTYPE},
    TRANSFER_ATTRS,
    WF_ATTR_END};
static const wf_attr_def recv_attrs[] = {
    {WF_STRUCT_INIT(wf_attr_def), .name = "dtype", .type = WF_ATTR_DTYPE},
    {WF_STRUCT_INIT(wf_attr_def), .name = "shape", .type = WF_ATTR_SHAPE,
     .has_default = 1,
     .default_value = {.type = WF_ATTR_SHAPE,
                       .count = 1,
                       .u.shape = {.rank = WF_UNKNOWN_RANK}}},
    TRANSFER_ATTRS,
    WF_ATTR_END};
static const wf_attr_def ctrl_attrs[] = {TRANSFER_ATTRS, WF_ATTR_END};

static const wf_op_def send_op = {
    WF_STRUCT_INIT(wf_op_def),
    .name = "_Send",
    .inputs = send_in,
    .attrs = send_attrs,
    .flags = WF_OP_STATEFUL,
    .doc = "Hands its input to the matching _Recv of another partition."};
static const wf_op_def recv_op = {
    WF_STRUCT_INIT(wf_op_def),
    .name = "_Recv",
    .outputs = feed_out,
    .attrs = recv_attrs,
    .flags = WF_OP_STATEFUL,
    .shape_fn = recv_shape,
    .doc = "Outputs what the matching _Send of another partition handed "
           "over."};
static const wf_op_def send_ctrl_op = {
    WF_STRUCT_INIT(wf_op_def), .name = "_SendControl", .attrs = ctrl_attrs,
    .flags = WF_OP_STATEFUL,
    .doc = "Signals, once its control inputs ran, the matching "
           "_RecvControl of another partition."};
static const wf_op_def recv_ctrl_op = {
    WF_STRUCT_INIT(wf_op_def), .name = "_RecvControl", .attrs = ctrl_attrs,
    .flags = WF_OP_STATEFUL,
    .doc = "Completes when the matching _SendControl signals: carries a "
           "control edge between partitions."};

#define TRANSFER_KERNEL(var, opname, fn, fl)                                   \
  static const wf_kernel_def var = {                                           \
      WF_STRUCT_INIT(wf_kernel_def), .op = opname,                             \
      .device_type = "host",         .flags = fl,                              \
      .label = "rendezvous",         .compute = fn}
TRANSFER_KERNEL(send_kernel, "_Send", send_compute, WF_KERNEL_CHEAP);
TRANSFER_KERNEL(recv_kernel, "_Recv", recv_compute,
                WF_KERNEL_CHEAP | WF_KERNEL_ASYNC);
TRANSFER_KERNEL(send_ctrl_kernel, "_SendControl", send_compute,
                WF_KERNEL_CHEAP);
TRANSFER_KERNEL(recv_ctrl_kernel, "_RecvControl", recv_compute,
                WF_KERNEL_CHEAP | WF_KERNEL_ASYNC);

static const wf_op_def *const ops[] = {&feed_op,      &send_op,      &recv_op,
                                       &send_ctrl_op, &recv_ctrl_op, NULL};
static const wf_kernel_def *const kernels[] = {
    &send_kernel, &recv_kernel, &send_ctrl_kernel, &recv_ctrl_kernel, NULL};

#define NOT_DIFF(var, opname)                                                  \
  static const wf_gradient_def var = {WF_STRUCT_INIT(wf_gradient_def),         \
                                      .op = opname,                            \
                                      .flags = WF_GRAD_NOT_DIFFERENTIABLE}
NOT_DIFF(feed_grad, "_Feed");
NOT_DIFF(send_grad, "_Send");
NOT_DIFF(recv_grad, "_Recv");
static const wf_gradient_def *const grads[] = {&feed_grad, &send_grad,
                                               &recv_grad, NULL};

static const wf_plugin_desc desc = {
    WF_STRUCT_INIT(wf_plugin_desc),
    .name = "core",
    .version = WF_VERSION_STRING,
    .license = "MIT",
    .description = "ops the core inserts when it rewrites a graph for "
                   "execution (_Feed, and _Send/_Recv between partitions)",
    .ops = ops,
    .kernels = kernels,
    .gradients = grads,
    .init = init,
};

const wf_plugin_desc *wf__core_ops(void) { return &desc; }
