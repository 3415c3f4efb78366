/* plugins/ops/nn/plugin.c — the nn op plugin (module ops_nn): its
 * description and the static tables of what it registers. The ops, their
 * shape functions and reference CPU kernels live in the files beside this
 * one, the gradient functions in grad.c, the fusion pass in fusion.c. */
#include <config.h>

#include "nn.h"

/* fused.c: _FusedConv2D, _FusedConv2DMaxPool and _FusedConv2DAndMaxPool,
 * made by the graph pass of fusion.c. */
extern const wf_op_def nn_fused_conv2d_op, nn_fused_conv2d_max_pool_op,
    nn_fused_conv2d_and_max_pool_op;
extern const wf_kernel_def nn_fused_conv2d_kernel,
    nn_fused_conv2d_max_pool_kernel, nn_fused_conv2d_and_max_pool_kernel;
/* pool.c: _FusedMaxPoolGradReluGrad, made by the same pass. */
extern const wf_op_def nn_fused_max_pool_grad_relu_op;
extern const wf_kernel_def nn_fused_max_pool_grad_relu_kernel;
extern const wf_pass_def nn_fusion_pass;

static const wf_pass_def *const passes[] = {&nn_fusion_pass, NULL};

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
                                       &nn_bias_add_grad_op,
                                       &nn_conv2d_backprop_input_op,
                                       &nn_conv2d_backprop_filter_op,
                                       &nn_max_pool_grad_op,
                                       &nn_avg_pool_grad_op,
                                       &nn_softmax_grad_op,
                                       &nn_log_softmax_grad_op,
                                       &nn_batch_norm_grad_op,
                                       &nn_fused_conv2d_op,
                                       &nn_fused_conv2d_max_pool_op,
                                       &nn_fused_conv2d_and_max_pool_op,
                                       &nn_fused_max_pool_grad_relu_op,
                                       &nn_layer_norm_op,
                                       &nn_layer_norm_grad_op,
                                       NULL};

static const wf_kernel_def *const kernels[] = {
    &nn_bias_add_kernel,
    &nn_conv2d_kernel,
    &nn_max_pool_kernel,
    &nn_avg_pool_kernel,
    &nn_softmax_kernel,
    &nn_log_softmax_kernel,
    &nn_softmax_xent_kernel,
    &nn_sparse_softmax_xent_kernel,
    &nn_batch_norm_kernel,
    &nn_dropout_kernel,
    &nn_bias_add_grad_kernel,
    &nn_conv2d_backprop_input_kernel,
    &nn_conv2d_backprop_filter_kernel,
    &nn_max_pool_grad_kernel,
    &nn_avg_pool_grad_kernel,
    &nn_softmax_grad_kernel,
    &nn_log_softmax_grad_kernel,
    &nn_batch_norm_grad_kernel,
    &nn_fused_conv2d_kernel,
    &nn_fused_conv2d_max_pool_kernel,
    &nn_fused_conv2d_and_max_pool_kernel,
    &nn_fused_max_pool_grad_relu_kernel,
    &nn_layer_norm_kernel,
    &nn_layer_norm_grad_kernel,
    NULL};

/* The host table, for every file of the plugin: the fusion pass uses
 * entries of ABI 1.4 (node_num_control_consumers) and 1.8
 * (pass_kernel_device). */
WFX_HOST_DEFINE(1, 8);

static int init(const wf_host *host, void **state, wf_status *st) {
  if (WFX_HOST_INIT(host, "ops-nn", st))
    return WF_FAILED_PRECONDITION;
  *state = NULL;
  return 0;
}

static const wf_plugin_desc desc = {
    WF_STRUCT_INIT(wf_plugin_desc),
    .name = "ops-nn",
    .version = PACKAGE_VERSION,
    .license = "MIT",
    .description =
        "Neural-network ops (BiasAdd, Conv2D, MaxPool, AvgPool, "
        "Softmax, LogSoftmax, softmax cross-entropy, BatchNorm, "
        "LayerNorm, Dropout), their backward ops and gradients, with reference CPU "
        "kernels",
    .ops = ops,
    .kernels = kernels,
    .gradients = nn_gradients,
    .passes = passes,
    .init = init,
};

WF_PLUGIN(ops_nn, desc)
