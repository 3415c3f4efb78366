/* plugins/ops/train/train.h — what the files of the train op plugin share:
 * the op definitions and kernels that plugin.c lists, locking several
 * variables for one update, and reading scalar inputs.
 *
 * Messages here do not name the node or op: the core prefixes every status
 * a shape function or kernel returns with both. They name the variables
 * (by their session names) and inputs involved. */
#ifndef WF_OPS_TRAIN_H
#define WF_OPS_TRAIN_H

#include <stdint.h>

#include <weft/plugin.h>

#include "opcommon.h"

/* ---- locking variables ------------------------------------------------- */

/* Most variables one op updates together (var and its slots). */
#define TRN_MAX_VARS 4

/* Variables of one update: fill n, handle[] and input[] (the op's input
 * names, for messages), then trn_lock. handle[0] is the variable being
 * trained, the others its slots. */
typedef struct trn_vars {
  int n;
  const wf_tensor *handle[TRN_MAX_VARS];
  const char *input[TRN_MAX_VARS];
  wf_tensor *value[TRN_MAX_VARS]; /* by trn_lock: borrowed until unlock */
  int nlocked;                    /* private */
  int order[TRN_MAX_VARS];        /* private: lock order */
} trn_vars;

/* Locks the n variables in host->var_order order (so that concurrent
 * updates sharing variables cannot deadlock) and sets value[], in the
 * memory of the device of ctx's node. Refuses
 * (INVALID_ARGUMENT) two inputs naming one variable, and slots whose dtype
 * or shape differ from handle[0]'s; passes on var_lock's errors (an
 * uninitialised variable is FAILED_PRECONDITION naming it). On error
 * nothing stays locked. */
int trn_lock(trn_vars *v, const wf_kernel_ctx *ctx, wf_status *st);
/* Unlocks what trn_lock locked, in reverse order. Safe after a failed
 * trn_lock. */
void trn_unlock(trn_vars *v);

/* ---- scalar inputs ----------------------------------------------------- */

/* Input i, named `name`, as a double: a rank-0 tensor of float32, float64,
 * int32 or int64. INVALID_ARGUMENT naming it for another rank or dtype. */
int trn_scalar_input(const wf_kernel_ctx *ctx, int32_t i, const char *name,
                     double *out, wf_status *st);

/* During shape inference: input i, named `name`, must be a scalar when its
 * rank is known. */
int trn_shape_scalar(wf_shape_ctx *ctx, int32_t i, const char *name,
                     wf_status *st);

/* Float dtypes the kernels implement. */
#define TRN_DTYPES WFX_DTYPES_FLOAT

/* ---- dense updates on several threads ---------------------------------- */

/* Elements a dense update converts and updates at a time. */
#define TRN_PIECE 256

/* Runs body(arg, begin, end) over [0, n) in ranges whose begin is a
 * multiple of TRN_PIECE, possibly on several threads at once, and returns
 * when all are done. */
typedef void trn_body_fn(void *arg, int64_t begin, int64_t end);
typedef void trn_parallel_fn(trn_body_fn *body, void *arg, int64_t n);

/* The dense update of op (ApplyGradientDescent, ApplyMomentum, ApplyAdam,
 * ApplyAdamW, ApplyRMSProp, ApplyCenteredRMSProp, ApplyAdagrad), or NULL
 * for any other op. */
typedef struct trn_update trn_update;
const trn_update *trn_dense_update(const char *op);

/* Runs update u as its reference kernel does (the same checks, messages,
 * locking and bits), with the element loop split by par. */
int trn_apply_parallel(wf_kernel_ctx *ctx, const trn_update *u,
                       trn_parallel_fn *par, wf_status *st);

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
