/* plugins/ops/nn/plugin.c — the nn op plugin (module ops_nn): its
 * description and the static tables of what it registers. The ops, their
 * shape functions and reference CPU kernels live in the files beside this
 * one; gradients are not defined yet. */
#include <config.h>

#include "nn.h"

static const wf_op_def *const ops[] = {&nn_bias_add_op,
                                       &nn_conv2d_op,
                                       &nn_max_pool_op,
                                       &nn_avg_pool_op,
                                       &nn_softmax_op,
                                       &nn_log_softmax_op,
                                       &nn_softmax_xent_op,
                                       &nn_sparse_softmax_xent_op,
                                       &nn_batch_norm_op,
                                       &nn_dropout_op,
                                       NULL};

static const wf_kernel_def *const kernels[] = {&nn_bias_add_kernel,
                                               &nn_conv2d_kernel,
                                               &nn_max_pool_kernel,
                                               &nn_avg_pool_kernel,
                                               &nn_softmax_kernel,
                                               &nn_log_softmax_kernel,
                                               &nn_softmax_xent_kernel,
                                               &nn_sparse_softmax_xent_kernel,
                                               &nn_batch_norm_kernel,
                                               &nn_dropout_kernel,
                                               NULL};

static int init(const wf_host *host, void **state, wf_status *st) {
  /* Every entry used here exists since ABI 1.0; refuse a truncated table. */
  if (!WF_HOST_HAS(host, kernel_output_dtype)) {
    if (WF_HOST_HAS(host, status_set))
      host->status_set(st, WF_FAILED_PRECONDITION,
                       "ops-nn: the host table (%u bytes) lacks the kernel "
                       "entries of ABI 1.0",
                       (unsigned)host->struct_size);
    return WF_FAILED_PRECONDITION;
  }
  opc_set_host(host);
  *state = NULL;
  return 0;
}

static const wf_plugin_desc desc = {
    WF_STRUCT_INIT(wf_plugin_desc),
    .name = "ops-nn",
    .version = PACKAGE_VERSION,
    .license = "MIT",
    .description = "Neural-network ops (BiasAdd, Conv2D, MaxPool, AvgPool, "
                   "Softmax, LogSoftmax, softmax cross-entropy, BatchNorm, "
                   "Dropout) with reference CPU kernels",
    .ops = ops,
    .kernels = kernels,
    .init = init,
};

WF_PLUGIN(ops_nn, desc)
