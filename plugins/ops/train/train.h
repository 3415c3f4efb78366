/* plugins/ops/train/train.h — what the files of the train op plugin share:
 * the op definitions and kernels that plugin.c lists.
 *
 * Messages here do not name the node or op: the core prefixes every status
 * a shape function or kernel returns with both. They name the variables
 * (by their session names) and inputs involved. */
#ifndef WF_OPS_TRAIN_H
#define WF_OPS_TRAIN_H

#include <stdint.h>

#include <weft/plugin.h>

#include "opcommon.h"
#include "optim.h"

/* Locking, scalar inputs and the update rules are plugins/numerics/optim.h,
 * shared with the device plugins. */

/* ---- what plugin.c lists ----------------------------------------------- */

/* apply.c: the dense and sparse optimizer updates. */
extern const wf_op_def trn_apply_gradient_descent_op, trn_apply_momentum_op,
    trn_apply_adam_op, trn_apply_adamw_op, trn_apply_rmsprop_op,
    trn_apply_centered_rmsprop_op, trn_apply_adagrad_op,
    trn_sparse_apply_gradient_descent_op, trn_sparse_apply_momentum_op,
    trn_sparse_apply_adam_op, trn_sparse_apply_adagrad_op,
    trn_sparse_apply_rmsprop_op;
extern const wf_kernel_def trn_apply_gradient_descent_kernel,
    trn_apply_momentum_kernel, trn_apply_adam_kernel, trn_apply_adamw_kernel,
    trn_apply_rmsprop_kernel, trn_apply_centered_rmsprop_kernel,
    trn_apply_adagrad_kernel, trn_sparse_apply_gradient_descent_kernel,
    trn_sparse_apply_momentum_kernel, trn_sparse_apply_adam_kernel,
    trn_sparse_apply_adagrad_kernel, trn_sparse_apply_rmsprop_kernel;

/* clip.c */
extern const wf_op_def trn_clip_by_global_norm_op;
extern const wf_kernel_def trn_clip_by_global_norm_kernel;

/* schedule.c: learning-rate schedules of the global step. */
extern const wf_op_def trn_exponential_decay_op, trn_piecewise_constant_op,
    trn_cosine_decay_op, trn_linear_warmup_op;
extern const wf_kernel_def trn_exponential_decay_kernel,
    trn_piecewise_constant_kernel, trn_cosine_decay_kernel,
    trn_linear_warmup_kernel;

#endif /* WF_OPS_TRAIN_H */
