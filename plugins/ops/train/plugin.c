/* plugins/ops/train/plugin.c — the train op plugin (module ops_train): its
 * description and the static tables of what it registers. The optimizer
 * updates live in apply.c, ClipByGlobalNorm in clip.c, the learning-rate
 * schedules in schedule.c. Every op here is registered as not
 * differentiable: they consume gradients, they never lie on a path that
 * autodiff walks. */
#include <config.h>

#include "train.h"

static const wf_op_def *const ops[] = {
    &trn_apply_gradient_descent_op,
    &trn_apply_momentum_op,
    &trn_apply_adam_op,
    &trn_apply_adamw_op,
    &trn_apply_rmsprop_op,
    &trn_apply_centered_rmsprop_op,
    &trn_apply_adagrad_op,
    &trn_sparse_apply_gradient_descent_op,
    &trn_sparse_apply_momentum_op,
    &trn_sparse_apply_adam_op,
    &trn_sparse_apply_adagrad_op,
    &trn_sparse_apply_rmsprop_op,
    &trn_clip_by_global_norm_op,
    &trn_exponential_decay_op,
    &trn_piecewise_constant_op,
    &trn_cosine_decay_op,
    &trn_linear_warmup_op,
    NULL};

static const wf_kernel_def *const kernels[] = {
    &trn_apply_gradient_descent_kernel,
    &trn_apply_momentum_kernel,
    &trn_apply_adam_kernel,
    &trn_apply_adamw_kernel,
    &trn_apply_rmsprop_kernel,
    &trn_apply_centered_rmsprop_kernel,
    &trn_apply_adagrad_kernel,
    &trn_sparse_apply_gradient_descent_kernel,
    &trn_sparse_apply_momentum_kernel,
    &trn_sparse_apply_adam_kernel,
    &trn_sparse_apply_adagrad_kernel,
    &trn_sparse_apply_rmsprop_kernel,
    &trn_clip_by_global_norm_kernel,
    &trn_exponential_decay_kernel,
    &trn_piecewise_constant_kernel,
    &trn_cosine_decay_kernel,
    &trn_linear_warmup_kernel,
    NULL};

#define NOT_DIFFERENTIABLE(opname)                                             \
  {                                                                            \
    WF_STRUCT_INIT(wf_gradient_def), .op = (opname),                           \
                                     .flags = WF_GRAD_NOT_DIFFERENTIABLE       \
  }
static const wf_gradient_def no_gradients[] = {
    NOT_DIFFERENTIABLE("ApplyGradientDescent"),
    NOT_DIFFERENTIABLE("ApplyMomentum"),
    NOT_DIFFERENTIABLE("ApplyAdam"),
    NOT_DIFFERENTIABLE("ApplyAdamW"),
    NOT_DIFFERENTIABLE("ApplyRMSProp"),
    NOT_DIFFERENTIABLE("ApplyCenteredRMSProp"),
    NOT_DIFFERENTIABLE("ApplyAdagrad"),
    NOT_DIFFERENTIABLE("SparseApplyGradientDescent"),
    NOT_DIFFERENTIABLE("SparseApplyMomentum"),
    NOT_DIFFERENTIABLE("SparseApplyAdam"),
    NOT_DIFFERENTIABLE("SparseApplyAdagrad"),
    NOT_DIFFERENTIABLE("SparseApplyRMSProp"),
    NOT_DIFFERENTIABLE("ClipByGlobalNorm"),
    NOT_DIFFERENTIABLE("ExponentialDecay"),
    NOT_DIFFERENTIABLE("PiecewiseConstant"),
    NOT_DIFFERENTIABLE("CosineDecay"),
    NOT_DIFFERENTIABLE("LinearWarmup")};
#define NUM_NO_GRADIENTS                                                       \
  ((int)(sizeof no_gradients / sizeof no_gradients[0]))
static const wf_gradient_def *const gradients[] = {
    &no_gradients[0],  &no_gradients[1],  &no_gradients[2],
    &no_gradients[3],  &no_gradients[4],  &no_gradients[5],
    &no_gradients[6],  &no_gradients[7],  &no_gradients[8],
    &no_gradients[9],  &no_gradients[10], &no_gradients[11],
    &no_gradients[12], &no_gradients[13], &no_gradients[14],
    &no_gradients[15], &no_gradients[16], NULL};
_Static_assert(sizeof gradients / sizeof gradients[0] ==
                   NUM_NO_GRADIENTS + 1,
               "every entry of no_gradients is listed once");

/* The host table, for every file of the plugin: ABI 1.0 has every
 * entry it uses. */
WFX_HOST_DEFINE(1, 0);

static int train_init(const wf_host *host, void **state, wf_status *st) {
  if (WFX_HOST_INIT(host, "ops-train", st))
    return WF_FAILED_PRECONDITION;
  *state = NULL;
  return 0;
}

static const wf_plugin_desc desc = {
    WF_STRUCT_INIT(wf_plugin_desc),
    .name = "ops-train",
    .version = PACKAGE_VERSION,
    .license = "MIT",
    .description = "training ops: fused optimizer updates on resource "
                   "variables (gradient descent, momentum, Adam, AdamW, "
                   "RMSProp, centered RMSProp, Adagrad; sparse variants), "
                   "ClipByGlobalNorm and learning-rate schedules",
    .ops = ops,
    .kernels = kernels,
    .gradients = gradients,
    .init = train_init,
};

WF_PLUGIN(ops_train, desc)
