/* plugins/numerics/optim.h — the optimizer updates every plugin that runs
 * them must run alike: the update rules (ApplyGradientDescent, ApplyMomentum,
 * ApplyAdam, ApplyAdamW, ApplyRMSProp, ApplyCenteredRMSProp, ApplyAdagrad and
 * the sparse forms), the checks and messages of an update, locking a
 * variable with its slots in the host's variable order (two plugins that
 * locked in different orders could deadlock each other), and reading scalar
 * inputs. ops-train's reference kernels and the CPU device plugin's threaded
 * ones run these rules (the same bits); the CUDA plugin locks through
 * trn_lock.
 *
 * The op definitions (inputs, attributes, docs) stay with ops-train. Messages
 * here do not name the node or op: the core prefixes every status a shape
 * function or kernel returns with both. They name the variables (by their
 * session names) and inputs involved. */
#ifndef WF_NUMERICS_OPTIM_H
#define WF_NUMERICS_OPTIM_H

#include <stdint.h>

#include <weft/plugin_aux.h>

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

/* Float dtypes the updates implement. */
#define TRN_DTYPES WFX_DTYPES_FLOAT

/* ---- the updates ------------------------------------------------------- */

/* One optimizer update: which inputs are the variable, its slots, the
 * gradient, the scalars and the step, and its rule. Opaque. */
typedef struct trn_update trn_update;

/* The dense updates, in their ops' input order (ops-train's apply.c). */
extern const trn_update trn_update_gd, trn_update_momentum, trn_update_adam,
    trn_update_adamw, trn_update_rmsprop, trn_update_centered_rmsprop,
    trn_update_adagrad;
/* The sparse ones (gradient rows: values and indices). */
extern const trn_update trn_update_sparse_gd, trn_update_sparse_momentum,
    trn_update_sparse_adam, trn_update_sparse_adagrad,
    trn_update_sparse_rmsprop;

/* The shape function of u's op: scalars must be scalars; sparse: indices
 * (K,), values (K, ...). The variable's shape is not known while building
 * (it sits behind a handle), so the gradient is checked at run time. */
int trn_update_shape(wf_shape_ctx *ctx, const trn_update *u, wf_status *st);

/* Elements a dense update converts and updates at a time. */
#define TRN_PIECE 256

/* Runs body(arg, begin, end) over [0, n) in ranges whose begin is a
 * multiple of TRN_PIECE, possibly on several threads at once, and returns
 * when all are done. */
typedef void trn_body_fn(void *arg, int64_t begin, int64_t end);
typedef void trn_parallel_fn(trn_body_fn *body, void *arg, int64_t n);

/* Runs update u on the kernel's inputs: locks the variable and its slots,
 * checks everything it will use, and only then writes in place (on any
 * error nothing has been written). Arithmetic is in the variable's type,
 * one IEEE operation at a time in a fixed order (a sparse gradient's
 * repeated rows are summed in double first), with subnormal operands and
 * results read as zeros of their sign where the unit can flush them (x86,
 * AArch64; optim.c); a slot value below the type's smallest normal number
 * is stored as a zero of its sign. par NULL: on the calling thread;
 * otherwise a dense update's element loop is split by par (each
 * element's arithmetic is the same wherever it is cut, so are the bits). */
int trn_update_apply(wf_kernel_ctx *ctx, const trn_update *u,
                     trn_parallel_fn *par, wf_status *st);

/* The dense update of op (ApplyGradientDescent, ApplyMomentum, ApplyAdam,
 * ApplyAdamW, ApplyRMSProp, ApplyCenteredRMSProp, ApplyAdagrad), or NULL
 * for any other op. */
const trn_update *trn_dense_update(const char *op);

#endif /* WF_NUMERICS_OPTIM_H */
