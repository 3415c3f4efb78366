/* plugins/ops/train/apply.c — the fused optimizer update ops on resource
 * variables: ApplyGradientDescent, ApplyMomentum, ApplyAdam, ApplyAdamW,
 * ApplyRMSProp, ApplyCenteredRMSProp, ApplyAdagrad and the sparse variants
 * for gradients given as rows (indices, values): their inputs, attributes,
 * docs and reference kernels. Each update rule is written out in its op's
 * doc; the rules, checks and locking themselves are plugins/numerics/optim.c
 * (the CPU device plugin runs the same ones). Slots are initialised by
 * whoever builds the optimizer (these ops never create or reset them). */
#include <config.h>

#include "train.h"

/* ---- argument lists ---------------------------------------------------- */

#define RES(nm, dc) WF_ARG_FIXED(nm, WF_RESOURCE, dc)
#define VAR RES("var", "() handle of the variable trained, (...) of T")
#define SCAL(nm, dc) WF_ARG_T(nm, "T", "() " dc)
#define GRAD WF_ARG_T("grad", "T", "(...) the variable's shape")
#define VALUES                                                                 \
  WF_ARG_T("values", "T",                                                      \
           "(K, ...) gradient rows; the variable is (N, ...)")
#define INDICES                                                                \
  WF_ARG_T("indices", "Tindices",                                              \
           "(K,) int32/int64 rows of the variable, in [0, N); repeats add "    \
           "up")
#define STEP                                                                   \
  WF_ARG_T("step", "Tstep",                                                    \
           "() 1-based count of updates including this one (int32, int64, "    \
           "float32 or float64)")
#define SLOT(nm, dc) RES(nm, "() handle of slot " dc ", the variable's shape")
#define ADAM_SLOTS                                                             \
  SLOT("m", "m (first moment)"), SLOT("v", "v (second moment)"),               \
      SLOT("vhat",                                                             \
           "vhat (AMSGrad's running maximum of v); read and locked only "      \
           "with amsgrad, so without it any handle will do (v's included)")
#define ADAM_SCALARS                                                           \
  SCAL("lr", "learning rate"), SCAL("beta1", "decay of m"),                    \
      SCAL("beta2", "decay of v"), SCAL("epsilon", "added to sqrt(v)")

static const wf_arg_def in_gd[] = {VAR, SCAL("lr", "learning rate"), GRAD,
                                   WF_ARG_END};
static const wf_arg_def in_momentum[] = {
    VAR, SLOT("accum", "accum (velocity)"), SCAL("lr", "learning rate"), GRAD,
    SCAL("momentum", "momentum"), WF_ARG_END};
static const wf_arg_def in_adam[] = {VAR,  ADAM_SLOTS, ADAM_SCALARS,
                                     GRAD, STEP,       WF_ARG_END};
static const wf_arg_def in_adamw[] = {
    VAR,  ADAM_SLOTS, ADAM_SCALARS,
    SCAL("weight_decay", "decoupled weight decay coefficient"),
    GRAD, STEP,       WF_ARG_END};
static const wf_arg_def in_rmsprop[] = {
    VAR,
    SLOT("ms", "ms (mean square)"),
    SLOT("mom", "mom (momentum)"),
    SCAL("lr", "learning rate"),
    SCAL("rho", "decay of ms"),
    SCAL("momentum", "momentum"),
    SCAL("epsilon", "added to ms under the square root"),
    GRAD,
    WF_ARG_END};
static const wf_arg_def in_centered_rmsprop[] = {
    VAR,
    SLOT("mg", "mg (mean gradient)"),
    SLOT("ms", "ms (mean square)"),
    SLOT("mom", "mom (momentum)"),
    SCAL("lr", "learning rate"),
    SCAL("rho", "decay of mg and ms"),
    SCAL("momentum", "momentum"),
    SCAL("epsilon", "added under the square root"),
    GRAD,
    WF_ARG_END};
static const wf_arg_def in_adagrad[] = {
    VAR,
    SLOT("accum", "accum (sum of squares)"),
    SCAL("lr", "learning rate"),
    SCAL("epsilon", "added to sqrt(accum)"),
    GRAD,
    WF_ARG_END};

static const wf_arg_def in_sparse_gd[] = {
    VAR, SCAL("lr", "learning rate"), VALUES, INDICES, WF_ARG_END};
static const wf_arg_def in_sparse_momentum[] = {
    VAR,     SLOT("accum", "accum (velocity)"), SCAL("lr", "learning rate"),
    VALUES,  INDICES, SCAL("momentum", "momentum"),
    WF_ARG_END};
static const wf_arg_def in_sparse_adam[] = {
    VAR, ADAM_SLOTS, ADAM_SCALARS, VALUES, INDICES, STEP, WF_ARG_END};
static const wf_arg_def in_sparse_adagrad[] = {
    VAR,
    SLOT("accum", "accum (sum of squares)"),
    SCAL("lr", "learning rate"),
    SCAL("epsilon", "added to sqrt(accum)"),
    VALUES,
    INDICES,
    WF_ARG_END};
static const wf_arg_def in_sparse_rmsprop[] = {
    VAR,
    SLOT("ms", "ms (mean square)"),
    SLOT("mom", "mom (momentum)"),
    SCAL("lr", "learning rate"),
    SCAL("rho", "decay of ms"),
    SCAL("momentum", "momentum"),
    SCAL("epsilon", "added to ms under the square root"),
    VALUES,
    INDICES,
    WF_ARG_END};

/* ---- attributes -------------------------------------------------------- */

#define ATTR_T                                                                 \
  {WF_STRUCT_INIT(wf_attr_def), .name = "T", .type = WF_ATTR_DTYPE,            \
   .allowed_dtypes = TRN_DTYPES,                                               \
   .doc = "element type of the variable, its slots, the gradient and the "     \
          "hyperparameters"}
#define ATTR_BOOL(nm, dc)                                                      \
  {WF_STRUCT_INIT(wf_attr_def), .name = (nm), .type = WF_ATTR_BOOL,            \
   .has_default = 1,                                                           \
   .default_value = {.type = WF_ATTR_BOOL, .count = 1, .u = {.b = 0}},         \
   .doc = (dc)}
#define ATTR_TSTEP                                                             \
  {WF_STRUCT_INIT(wf_attr_def), .name = "Tstep", .type = WF_ATTR_DTYPE,        \
   .has_default = 1,                                                           \
   .default_value = {.type = WF_ATTR_DTYPE, .count = 1,                        \
                     .u = {.dtype = WF_INT64}},                                \
   .allowed_dtypes = WF_DTYPE_BIT(WF_INT32) | WF_DTYPE_BIT(WF_INT64) |         \
                     TRN_DTYPES,                                               \
   .doc = "element type of step"}
#define ATTR_TINDICES                                                          \
  {WF_STRUCT_INIT(wf_attr_def), .name = "Tindices", .type = WF_ATTR_DTYPE,     \
   .allowed_dtypes = WF_DTYPE_BIT(WF_INT32) | WF_DTYPE_BIT(WF_INT64),          \
   .doc = "element type of indices"}
#define ATTR_NESTEROV                                                          \
  ATTR_BOOL("use_nesterov", "true: Nesterov momentum (see the update)")
#define ATTR_AMSGRAD                                                           \
  ATTR_BOOL("amsgrad", "true: AMSGrad, dividing by sqrt(vhat) (see the "       \
                       "update)")

static const wf_attr_def attrs_t[] = {ATTR_T, WF_ATTR_END};
static const wf_attr_def attrs_momentum[] = {ATTR_T, ATTR_NESTEROV,
                                             WF_ATTR_END};
static const wf_attr_def attrs_adam[] = {ATTR_T, ATTR_TSTEP, ATTR_AMSGRAD,
                                         WF_ATTR_END};
static const wf_attr_def attrs_sparse[] = {ATTR_T, ATTR_TINDICES,
                                           WF_ATTR_END};
static const wf_attr_def attrs_sparse_momentum[] = {
    ATTR_T, ATTR_TINDICES, ATTR_NESTEROV, WF_ATTR_END};
static const wf_attr_def attrs_sparse_adam[] = {
    ATTR_T, ATTR_TINDICES, ATTR_TSTEP, ATTR_AMSGRAD, WF_ATTR_END};

/* ---- op definitions and kernels ---------------------------------------- */

#define LOCK_DOC                                                               \
  " The variable and its slots are locked (in the host's variable order) "     \
  "for the whole update, which is made in place: concurrent apply ops on "     \
  "shared variables serialise, and snapshots read earlier keep their "         \
  "values. Slots must have the variable's dtype and shape and be distinct "    \
  "variables; they are initialised by whoever creates them. Arithmetic is "    \
  "in the variable's type, as TensorFlow's (repeated sparse rows are summed " \
  "in double first). No outputs; run it as a target."
#define SPARSE_DOC                                                             \
  " Sparse form: the gradient is zero except rows indices[k], which hold "     \
  "values[k] (K, ...); repeated indices are summed first, so each touched "    \
  "row is updated once with its total gradient. Rows not named are not "       \
  "touched at all (variable and slots). An index outside [0, N) is "           \
  "INVALID_ARGUMENT naming it and nothing is updated."
#define ADAM_DOC                                                               \
  " With t = step: m = beta1 m + (1 - beta1) g; v = beta2 v + (1 - beta2) "    \
  "g^2; alpha = lr sqrt(1 - beta2^t) / (1 - beta1^t); without amsgrad var "    \
  "-= alpha m / (sqrt(v) + epsilon); with amsgrad vhat = max(vhat, v) and "    \
  "var -= alpha m / (sqrt(vhat) + epsilon) (Keras's and TensorFlow's form, "   \
  "epsilon outside the bias correction). step < 1 is INVALID_ARGUMENT."

#define APPLY_OP(sym, nm, in, at, o, dc)                                       \
  static int shape_##sym(wf_shape_ctx *ctx, wf_status *st) {                   \
    return trn_update_shape(ctx, &(o), st);                                         \
  }                                                                            \
  static int compute_##sym(wf_kernel_ctx *ctx, void *state, wf_status *st) {   \
    return trn_update_apply(ctx, &(o), NULL, st);                                         \
  }                                                                            \
  const wf_op_def trn_##sym##_op = {WF_STRUCT_INIT(wf_op_def),                 \
                                    .name = (nm),                              \
                                    .inputs = (in),                            \
                                    .attrs = (at),                             \
                                    .flags = WF_OP_STATEFUL,                   \
                                    .shape_fn = shape_##sym,                   \
                                    .doc = (dc)};                              \
  const wf_kernel_def trn_##sym##_kernel = {                                   \
      WF_STRUCT_INIT(wf_kernel_def), .op = (nm), .device_type = "cpu",         \
      .type_attr = "T", .dtypes = TRN_DTYPES, .priority = 0,                   \
      .label = "reference", .compute = compute_##sym}

APPLY_OP(apply_gradient_descent, "ApplyGradientDescent", in_gd, attrs_t,
         trn_update_gd, "Gradient descent: var -= lr * grad." LOCK_DOC);
APPLY_OP(apply_momentum, "ApplyMomentum", in_momentum, attrs_momentum,
         trn_update_momentum,
         "Momentum: accum = momentum * accum + grad; then var -= lr * accum, "
         "or with use_nesterov var -= lr * grad + lr * momentum * accum "
         "(the new accum), as TensorFlow's ApplyMomentum." LOCK_DOC);
APPLY_OP(apply_adam, "ApplyAdam", in_adam, attrs_adam, trn_update_adam,
         "Adam (Kingma and Ba), g = grad." ADAM_DOC LOCK_DOC);
APPLY_OP(apply_adamw, "ApplyAdamW", in_adamw, attrs_adam, trn_update_adamw,
         "AdamW (Loshchilov and Hutter), g = grad: first the decoupled "
         "weight decay var -= lr * weight_decay * var (not part of the "
         "gradient, so not seen by m and v), then the Adam update:" ADAM_DOC
             LOCK_DOC);
APPLY_OP(apply_rmsprop, "ApplyRMSProp", in_rmsprop, attrs_t, trn_update_rmsprop,
         "RMSProp, g = grad: ms = rho * ms + (1 - rho) * g^2; mom = "
         "momentum * mom + lr * g / sqrt(ms + epsilon); var -= mom "
         "(TensorFlow's ApplyRMSProp; epsilon under the root)." LOCK_DOC);
APPLY_OP(apply_centered_rmsprop, "ApplyCenteredRMSProp", in_centered_rmsprop,
         attrs_t, trn_update_centered_rmsprop,
         "Centered RMSProp, g = grad: mg = rho * mg + (1 - rho) * g; ms = "
         "rho * ms + (1 - rho) * g^2; mom = momentum * mom + lr * g / "
         "sqrt(ms - mg^2 + epsilon); var -= mom (TensorFlow's "
         "ApplyCenteredRMSProp)." LOCK_DOC);
APPLY_OP(apply_adagrad, "ApplyAdagrad", in_adagrad, attrs_t, trn_update_adagrad,
         "Adagrad, g = grad: accum += g^2; var -= lr * g / (sqrt(accum) + "
         "epsilon) (TensorFlow's ApplyAdagradV2 and PyTorch's form, epsilon "
         "outside the root). The starting accum (Keras uses 0.1) is its "
         "initializer's job." LOCK_DOC);

APPLY_OP(sparse_apply_gradient_descent, "SparseApplyGradientDescent",
         in_sparse_gd, attrs_sparse, trn_update_sparse_gd,
         "Gradient descent on rows: var[r] -= lr * g[r] for each touched "
         "row r." SPARSE_DOC LOCK_DOC);
APPLY_OP(sparse_apply_momentum, "SparseApplyMomentum", in_sparse_momentum,
         attrs_sparse_momentum, trn_update_sparse_momentum,
         "Momentum on rows: for each touched row r, accum[r] = momentum * "
         "accum[r] + g[r]; var[r] -= lr * accum[r], or with use_nesterov "
         "var[r] -= lr * g[r] + lr * momentum * accum[r]. Untouched rows "
         "keep their accum (it does not decay) and var." SPARSE_DOC
             LOCK_DOC);
APPLY_OP(sparse_apply_adam, "SparseApplyAdam", in_sparse_adam,
         attrs_sparse_adam, trn_update_sparse_adam,
         "Lazy Adam on rows: the dense Adam update, applied to the touched "
         "rows only, g = their summed values. This differs from dense Adam "
         "with a zero gradient elsewhere: there, every row's m and v decay "
         "and var keeps moving with m; here untouched rows' var, m, v and "
         "vhat stay exactly as they were. The bias correction still uses "
         "the global step." ADAM_DOC SPARSE_DOC LOCK_DOC);
APPLY_OP(sparse_apply_adagrad, "SparseApplyAdagrad", in_sparse_adagrad,
         attrs_sparse, trn_update_sparse_adagrad,
         "Adagrad on rows: for each touched row r, accum[r] += g[r]^2; "
         "var[r] -= lr * g[r] / (sqrt(accum[r]) + epsilon) (the same as the "
         "dense update, since a zero gradient changes nothing)." SPARSE_DOC
             LOCK_DOC);
APPLY_OP(sparse_apply_rmsprop, "SparseApplyRMSProp", in_sparse_rmsprop,
         attrs_sparse, trn_update_sparse_rmsprop,
         "RMSProp on rows: the ApplyRMSProp update (ms = rho * ms + (1 - "
         "rho) * g^2; mom = momentum * mom + lr * g / sqrt(ms + epsilon); "
         "var -= mom) applied to the touched rows only; untouched rows' ms "
         "and mom do not decay." SPARSE_DOC LOCK_DOC);
