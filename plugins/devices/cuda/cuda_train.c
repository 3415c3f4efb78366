/* plugins/devices/cuda/cuda_train.c — the optimizer updates of ops-train on
 * the GPU: ApplyGradientDescent, ApplyMomentum, ApplyAdam, ApplyAdamW,
 * ApplyRMSProp, ApplyCenteredRMSProp, ApplyAdagrad and the sparse forms
 * (SparseApply*), plus AssignAddVariable/AssignSubVariable, on variables
 * whose values the core keeps in device memory for kernels of this device
 * (VarHandle, ReadVariable and AssignVariable are ops-state's kernels for
 * any device: a read is a reference, and the core's copy on write keeps it
 * a snapshot).
 *
 * As the CPU kernels (plugins/numerics/optim.c): variables are locked in
 * the host's order (trn_lock, the one lock order of every update), everything is checked before anything is written, and
 * the arithmetic is in the variable's type with the CPU's rounding. Hyperparameters,
 * the step and sparse indices are host inputs (read and checked here);
 * the update is queued on the device's stream and the locks released
 * once it is queued: later work on the variables is ordered after it. */
#include <config.h>

#include "cuda_work.h"
#include "optim.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


/* ---- optimizer descriptions (input numbers as ops-train's) ------------- */

typedef struct scalar_in {
  int input;
  const char *name;
  size_t offset; /* into cuda_apply_params */
} scalar_in;

#define SCALAR(in, field) {(in), #field, offsetof(cuda_apply_params, field)}

typedef struct optimizer {
  int rule;           /* WF_CUDA_* */
  int nres;           /* resource inputs 0..nres-1, var first */
  const char *res[TRN_MAX_VARS];
  int amsgrad;        /* the last resource is vhat, used with amsgrad only */
  int grad, indices;  /* gradient (sparse: values); indices or -1 */
  int nscalars;
  scalar_in scalar[6];
  int step;           /* input of the step count, or -1 */
  int has_nesterov;
} optimizer;

static const optimizer opt_gd = {
    WF_CUDA_SGD, 1, {"var"}, 0, 2, -1, 1, {SCALAR(1, lr)}, -1, 0};
static const optimizer opt_momentum = {
    WF_CUDA_MOMENTUM, 2, {"var", "accum"}, 0, 3, -1, 2,
    {SCALAR(2, lr), SCALAR(4, momentum)}, -1, 1};
static const optimizer opt_adam = {
    WF_CUDA_ADAM, 4, {"var", "m", "v", "vhat"}, 1, 8, -1, 4,
    {SCALAR(4, lr), SCALAR(5, beta1), SCALAR(6, beta2), SCALAR(7, epsilon)},
    9, 0};
static const optimizer opt_adamw = {
    WF_CUDA_ADAM, 4, {"var", "m", "v", "vhat"}, 1, 9, -1, 5,
    {SCALAR(4, lr), SCALAR(5, beta1), SCALAR(6, beta2), SCALAR(7, epsilon),
     SCALAR(8, weight_decay)},
    10, 0};
static const optimizer opt_rmsprop = {
    WF_CUDA_RMSPROP, 3, {"var", "ms", "mom"}, 0, 7, -1, 4,
    {SCALAR(3, lr), SCALAR(4, rho), SCALAR(5, momentum), SCALAR(6, epsilon)},
    -1, 0};
static const optimizer opt_centered_rmsprop = {
    WF_CUDA_CENTERED_RMSPROP, 4, {"var", "mg", "ms", "mom"}, 0, 8, -1, 4,
    {SCALAR(4, lr), SCALAR(5, rho), SCALAR(6, momentum), SCALAR(7, epsilon)},
    -1, 0};
static const optimizer opt_adagrad = {
    WF_CUDA_ADAGRAD, 2, {"var", "accum"}, 0, 4, -1, 2,
    {SCALAR(2, lr), SCALAR(3, epsilon)}, -1, 0};
static const optimizer opt_sparse_gd = {
    WF_CUDA_SGD, 1, {"var"}, 0, 2, 3, 1, {SCALAR(1, lr)}, -1, 0};
static const optimizer opt_sparse_momentum = {
    WF_CUDA_MOMENTUM, 2, {"var", "accum"}, 0, 3, 4, 2,
    {SCALAR(2, lr), SCALAR(5, momentum)}, -1, 1};
static const optimizer opt_sparse_adam = {
    WF_CUDA_ADAM, 4, {"var", "m", "v", "vhat"}, 1, 8, 9, 4,
    {SCALAR(4, lr), SCALAR(5, beta1), SCALAR(6, beta2), SCALAR(7, epsilon)},
    10, 0};
static const optimizer opt_sparse_adagrad = {
    WF_CUDA_ADAGRAD, 2, {"var", "accum"}, 0, 4, 5, 2,
    {SCALAR(2, lr), SCALAR(3, epsilon)}, -1, 0};
static const optimizer opt_sparse_rmsprop = {
    WF_CUDA_RMSPROP, 3, {"var", "ms", "mom"}, 0, 7, 8, 4,
    {SCALAR(3, lr), SCALAR(4, rho), SCALAR(5, momentum), SCALAR(6, epsilon)},
    -1, 0};

static int read_params(const wf_kernel_ctx *ctx, const optimizer *o,
                       cuda_apply_params *p, wf_status *st) {
  int b;

  memset(p, 0, sizeof *p);
  if (o->has_nesterov) {
    if (wfx_kernel_attr_bool(ctx, "use_nesterov", &b, st))
      return wfx_code(st);
    p->nesterov = b;
  }
  if (o->amsgrad) {
    if (wfx_kernel_attr_bool(ctx, "amsgrad", &b, st))
      return wfx_code(st);
    p->amsgrad = b;
  }
  for (int k = 0; k < o->nscalars; k++)
    if (trn_scalar_input(ctx, o->scalar[k].input, o->scalar[k].name,
                     (double *)((char *)p + o->scalar[k].offset), st))
      return wfx_code(st);
  if (o->step >= 0) {
    double step, c1, c2;

    if (trn_scalar_input(ctx, o->step, "step", &step, st))
      return wfx_code(st);
    if (!(step >= 1))
      return wfx_fail(st, WF_INVALID_ARGUMENT,
                      "input 'step' is %g; the bias correction needs the "
                      "1-based count of updates (>= 1)",
                      step);
    c1 = 1 - pow(p->beta1, step);
    c2 = 1 - pow(p->beta2, step);
    if (c1 == 0)
      return wfx_fail(st, WF_INVALID_ARGUMENT,
                      "beta1 %g gives a bias correction 1 - beta1^step of 0",
                      p->beta1);
    p->alpha = p->lr * sqrt(c2) / c1;
  }
  return 0;
}

/* One sparse row reference, sorted by (row, position) as the CPU sums. */
typedef struct row_ref {
  int64_t row, pos;
} row_ref;

static int row_ref_cmp(const void *a_, const void *b_) {
  const row_ref *a = a_, *b = b_;

  if (a->row != b->row)
    return a->row < b->row ? -1 : 1;
  return (a->pos > b->pos) - (a->pos < b->pos);
}

/* The rows of a sparse gradient grouped: urow[u] the distinct rows in
 * increasing order, start[u]..start[u+1] their positions (order[]) in
 * values. Checks every index against nrows. One host block holds all
 * three arrays (k + 1 + 2k entries). */
typedef struct row_lists {
  int64_t *mem, *urow, *start, *order, nunique;
} row_lists;

static int row_lists_make(const wf_tensor *indices, int64_t nrows,
                          const char *what, row_lists *rl, wf_status *st) {
  int64_t k = wfx_count(indices);
  const void *iv = wfx_data(indices);
  int32_t idt = wfx_dtype(indices);
  row_ref *refs;

  memset(rl, 0, sizeof *rl);
  if (k == 0)
    return 0;
  if ((uint64_t)k > SIZE_MAX / (4 * sizeof(int64_t)) ||
      !(rl->mem = wfx_host->alloc((size_t)(3 * k + 1) * sizeof(int64_t), 0)) ||
      !(refs = wfx_host->alloc((size_t)k * sizeof *refs, 0))) {
    wfx_host->free(rl->mem);
    rl->mem = NULL;
    return wfx_fail(st, WF_RESOURCE_EXHAUSTED,
                    "out of host memory for %" PRId64 " sparse rows", k);
  }
  for (int64_t j = 0; j < k; j++) {
    int64_t r = idt == WF_INT32 ? ((const int32_t *)iv)[j]
                                : ((const int64_t *)iv)[j];
    if (r < 0 || r >= nrows) {
      wfx_host->free(refs);
      wfx_host->free(rl->mem);
      rl->mem = NULL;
      return wfx_fail(st, WF_INVALID_ARGUMENT,
                      "indices[%" PRId64 "] = %" PRId64 " is out of range "
                      "for %s of %" PRId64 " rows (valid: 0 to %" PRId64 ")",
                      j, r, what, nrows, nrows - 1);
    }
    refs[j] = (row_ref){r, j};
  }
  qsort(refs, (size_t)k, sizeof *refs, row_ref_cmp);
  rl->order = rl->mem;          /* k */
  rl->urow = rl->mem + k;       /* <= k */
  rl->start = rl->mem + 2 * k;  /* <= k + 1 */
  for (int64_t j = 0; j < k; j++) {
    rl->order[j] = refs[j].pos;
    if (j == 0 || refs[j].row != refs[j - 1].row) {
      rl->urow[rl->nunique] = refs[j].row;
      rl->start[rl->nunique++] = j;
    }
  }
  rl->start[rl->nunique] = k;
  wfx_host->free(refs);
  return 0;
}

static void row_lists_free(row_lists *rl) {
  wfx_host->free(rl->mem);
  rl->mem = NULL;
}

static int apply(wf_kernel_ctx *ctx, const optimizer *o, wf_status *st) {
  const wf_tensor *grad, *indices = NULL;
  wf_shape gs, vs, is;
  char b1[WFX_SHAPE_STR_MAX], b2[WFX_SHAPE_STR_MAX];
  void *slots[TRN_MAX_VARS] = {NULL};
  const char *grad_name = o->indices >= 0 ? "values" : "grad";
  cuda_apply_params p;
  row_lists rl = {0};
  cuw w = {0};
  trn_vars v;
  int32_t dt;
  int type, rc;
  cudaError_t err;

  if (read_params(ctx, o, &p, st) ||
      wfx_kernel_input(ctx, o->grad, &grad, &gs, st))
    return wfx_code(st);
  dt = wfx_dtype(grad);
  if (cuw_float_type(dt, &type, st))
    return wfx_code(st);
  if (o->indices >= 0) {
    int32_t idt;

    if (wfx_kernel_input(ctx, o->indices, &indices, &is, st))
      return wfx_code(st);
    idt = wfx_dtype(indices);
    if ((idt != WF_INT32 && idt != WF_INT64) || is.rank != 1 ||
        gs.rank < 1 || gs.dims[0] != is.dims[0])
      return wfx_fail(st, WF_INVALID_ARGUMENT,
                      "input 'indices' is %s %s and 'values' %s; expected "
                      "int32 or int64 indices (K,) and values (K, ...)",
                      wfx_dtype_name(idt), wfx_shape_str(&is, b1, sizeof b1),
                      wfx_shape_str(&gs, b2, sizeof b2));
  }

  memset(&v, 0, sizeof v);
  v.n = o->nres - (o->amsgrad && !p.amsgrad ? 1 : 0);
  for (int k = 0; k < v.n; k++) {
    if (wfx_kernel_input(ctx, k, &v.handle[k], NULL, st))
      return wfx_code(st);
    v.input[k] = o->res[k];
  }
  if (trn_lock(&v, ctx, st))
    return wfx_code(st);
  wfx_host->tensor_shape(v.value[0], &vs);
  if (wfx_dtype(v.value[0]) != dt) {
    rc = wfx_fail(
        st, WF_INVALID_ARGUMENT, "variable '%s' is %s but input '%s' is %s",
        wfx_host->var_name(v.handle[0]), wfx_dtype_name(wfx_dtype(v.value[0])),
        grad_name, wfx_dtype_name(dt));
    goto done;
  }
  for (int k = 0; k < v.n; k++)
    slots[k] = wfx_data(v.value[k]);
  if ((rc = cuw_begin(&w, ctx, st)) != 0)
    goto done;

  if (o->indices < 0) {
    if (!wfx_shape_equal(&gs, &vs)) {
      rc = wfx_fail(st, WF_INVALID_ARGUMENT,
                    "variable '%s' has shape %s but input 'grad' has %s",
                    wfx_host->var_name(v.handle[0]),
                    wfx_shape_str(&vs, b1, sizeof b1),
                    wfx_shape_str(&gs, b2, sizeof b2));
      goto done;
    }
    err = cuda_apply(o->rule, type, wfx_count(grad), slots, wfx_data(grad), &p,
                     w.dev->stream);
    rc = cuw_check(&w, "the update kernel", err, st);
  } else {
    int64_t width = 1;
    void *dev_lists;

    if (vs.rank < 1 || gs.rank != vs.rank ||
        memcmp(gs.dims + 1, vs.dims + 1,
               sizeof gs.dims[0] * (size_t)(gs.rank - 1)) != 0) {
      rc = wfx_fail(st, WF_INVALID_ARGUMENT,
                    "variable '%s' has shape %s but input 'values' has %s; "
                    "values are rows (K, ...) of the variable (N, ...)",
                    wfx_host->var_name(v.handle[0]),
                    wfx_shape_str(&vs, b1, sizeof b1),
                    wfx_shape_str(&gs, b2, sizeof b2));
      goto done;
    }
    for (int d = 1; d < vs.rank; d++)
      width *= vs.dims[d];
    {
      char what[300];
      snprintf(what, sizeof what, "variable '%s'",
               wfx_host->var_name(v.handle[0]));
      if ((rc = row_lists_make(indices, vs.dims[0], what, &rl, st)) != 0)
        goto done;
    }
    if (rl.nunique == 0 || width == 0)
      goto done;
    {
      int64_t k = wfx_count(indices);
      if ((rc = cuw_upload(&w, rl.mem,
                               (size_t)(3 * k + 1) * sizeof(int64_t),
                               &dev_lists, "the sparse rows", st)) != 0)
        goto done;
      err = cuda_apply_sparse(
          o->rule, type, rl.nunique, width, (int64_t *)dev_lists + k,
          (int64_t *)dev_lists + 2 * k, (int64_t *)dev_lists, slots,
          wfx_data(grad), &p, w.dev->stream);
      rc = cuw_check(&w, "the sparse update kernel", err, st);
    }
  }

done:
  row_lists_free(&rl);
  cuw_end(&w);
  trn_unlock(&v);
  return rc;
}

/* ---- AssignAdd / AssignSub ------------------------------------------------ */

static int update_in_place(wf_kernel_ctx *ctx, int subtract, wf_status *st) {
  const wf_tensor *handle, *delta;
  wf_tensor *var;
  wf_shape vs, ds;
  int32_t vdt, ddt;
  char sv[WFX_SHAPE_STR_MAX], sd[WFX_SHAPE_STR_MAX];
  cuw w = {0};
  int rc = 0, type;

  if (wfx_kernel_input(ctx, 0, &handle, NULL, st) ||
      wfx_kernel_input(ctx, 1, &delta, &ds, st))
    return wfx_code(st);
  if (!(var = wfx_var_lock(ctx, handle, st)))
    return wfx_code(st);
  vdt = wfx_dtype(var);
  ddt = wfx_dtype(delta);
  wfx_host->tensor_shape(var, &vs);
  if (vdt != ddt || !wfx_shape_equal(&vs, &ds)) {
    rc = wfx_fail(st, WF_INVALID_ARGUMENT,
                  "variable '%s' is %s %s but the value to %s is %s %s",
                  wfx_host->var_name(handle), wfx_dtype_name(vdt),
                  wfx_shape_str(&vs, sv, sizeof sv),
                  subtract ? "subtract" : "add", wfx_dtype_name(ddt),
                  wfx_shape_str(&ds, sd, sizeof sd));
    goto done;
  }
  if ((type = cuw_type_of(vdt)) < 0 || type == WF_CUDA_BOOL) {
    rc = wfx_fail(st, WF_UNIMPLEMENTED, "no CUDA %s kernel for %s",
                  subtract ? "AssignSubVariable" : "AssignAddVariable",
                  wfx_dtype_name(vdt));
    goto done;
  }
  if ((rc = cuw_begin(&w, ctx, st)) != 0)
    goto done;
  rc = cuw_check(&w, "the accumulation kernel",
                 cuda_accumulate(type, wfx_count(var), wfx_data(var),
                                 wfx_data(delta), subtract, w.dev->stream),
                 st);

done:
  cuw_end(&w);
  wfx_host->var_unlock(handle);
  return rc;
}

static int assign_add_compute(wf_kernel_ctx *ctx, void *state,
                              wf_status *st) {
  return update_in_place(ctx, 0, st);
}

static int assign_sub_compute(wf_kernel_ctx *ctx, void *state,
                              wf_status *st) {
  return update_in_place(ctx, 1, st);
}

/* ---- the table ----------------------------------------------------------- */

#define APPLY(sym, o)                                                          \
  static int compute_##sym(wf_kernel_ctx *ctx, void *state, wf_status *st) {   \
    return apply(ctx, &(o), st);                                               \
  }
APPLY(gd, opt_gd)
APPLY(momentum, opt_momentum)
APPLY(adam, opt_adam)
APPLY(adamw, opt_adamw)
APPLY(rmsprop, opt_rmsprop)
APPLY(centered_rmsprop, opt_centered_rmsprop)
APPLY(adagrad, opt_adagrad)
APPLY(sparse_gd, opt_sparse_gd)
APPLY(sparse_momentum, opt_sparse_momentum)
APPLY(sparse_adam, opt_sparse_adam)
APPLY(sparse_adagrad, opt_sparse_adagrad)
APPLY(sparse_rmsprop, opt_sparse_rmsprop)

#define FLT (WF_DTYPE_BIT(WF_FLOAT32) | WF_DTYPE_BIT(WF_FLOAT64))
#define NUM                                                                    \
  (FLT | WF_DTYPE_BIT(WF_INT8) | WF_DTYPE_BIT(WF_UINT8) |                      \
   WF_DTYPE_BIT(WF_INT32) | WF_DTYPE_BIT(WF_INT64))
#define B WF_CUW_BIT

/* Host inputs: every scalar hyperparameter, the step and the indices
 * (resource handles are host memory anyway). */
static const wf_kernel_def k_gd =
    WFX_KERNEL_FOR("cuda", "cuda", "ApplyGradientDescent", "T", FLT, compute_gd,
                   .flags = WF_KERNEL_CHEAP, .host_inputs = B(1));
static const wf_kernel_def k_momentum =
    WFX_KERNEL_FOR("cuda", "cuda", "ApplyMomentum", "T", FLT, compute_momentum,
                   .flags = WF_KERNEL_CHEAP, .host_inputs = B(2) | B(4));
static const wf_kernel_def k_adam = WFX_KERNEL_FOR(
    "cuda", "cuda", "ApplyAdam", "T", FLT, compute_adam,
    .flags = WF_KERNEL_CHEAP, .host_inputs = B(4) | B(5) | B(6) | B(7) | B(9));
static const wf_kernel_def k_adamw =
    WFX_KERNEL_FOR("cuda", "cuda", "ApplyAdamW", "T", FLT, compute_adamw,
                   .flags = WF_KERNEL_CHEAP,
                   .host_inputs = B(4) | B(5) | B(6) | B(7) | B(8) | B(10));
static const wf_kernel_def k_rmsprop = WFX_KERNEL_FOR(
    "cuda", "cuda", "ApplyRMSProp", "T", FLT, compute_rmsprop,
    .flags = WF_KERNEL_CHEAP, .host_inputs = B(3) | B(4) | B(5) | B(6));
static const wf_kernel_def k_centered_rmsprop = WFX_KERNEL_FOR(
    "cuda", "cuda", "ApplyCenteredRMSProp", "T", FLT, compute_centered_rmsprop,
    .flags = WF_KERNEL_CHEAP, .host_inputs = B(4) | B(5) | B(6) | B(7));
static const wf_kernel_def k_adagrad =
    WFX_KERNEL_FOR("cuda", "cuda", "ApplyAdagrad", "T", FLT, compute_adagrad,
                   .flags = WF_KERNEL_CHEAP, .host_inputs = B(2) | B(3));
static const wf_kernel_def k_sparse_gd = WFX_KERNEL_FOR(
    "cuda", "cuda", "SparseApplyGradientDescent", "T", FLT, compute_sparse_gd,
    .flags = WF_KERNEL_CHEAP, .host_inputs = B(1) | B(3));
static const wf_kernel_def k_sparse_momentum = WFX_KERNEL_FOR(
    "cuda", "cuda", "SparseApplyMomentum", "T", FLT, compute_sparse_momentum,
    .flags = WF_KERNEL_CHEAP, .host_inputs = B(2) | B(4) | B(5));
static const wf_kernel_def k_sparse_adam =
    WFX_KERNEL_FOR("cuda", "cuda", "SparseApplyAdam", "T", FLT,
                   compute_sparse_adam, .flags = WF_KERNEL_CHEAP,
                   .host_inputs = B(4) | B(5) | B(6) | B(7) | B(9) | B(10));
static const wf_kernel_def k_sparse_adagrad = WFX_KERNEL_FOR(
    "cuda", "cuda", "SparseApplyAdagrad", "T", FLT, compute_sparse_adagrad,
    .flags = WF_KERNEL_CHEAP, .host_inputs = B(2) | B(3) | B(5));
static const wf_kernel_def k_sparse_rmsprop = WFX_KERNEL_FOR(
    "cuda", "cuda", "SparseApplyRMSProp", "T", FLT, compute_sparse_rmsprop,
    .flags = WF_KERNEL_CHEAP, .host_inputs = B(3) | B(4) | B(5) | B(6) | B(8));
static const wf_kernel_def k_assign_add =
    WFX_KERNEL_FOR("cuda", "cuda", "AssignAddVariable", "dtype", NUM,
                   assign_add_compute, .flags = WF_KERNEL_CHEAP);
static const wf_kernel_def k_assign_sub =
    WFX_KERNEL_FOR("cuda", "cuda", "AssignSubVariable", "dtype", NUM,
                   assign_sub_compute, .flags = WF_KERNEL_CHEAP);

const wf_kernel_def *const cuda_train_kernels[] = {
    &k_gd,          &k_momentum,        &k_adam,          &k_adamw,
    &k_rmsprop,     &k_centered_rmsprop, &k_adagrad,      &k_sparse_gd,
    &k_sparse_momentum, &k_sparse_adam, &k_sparse_adagrad, &k_sparse_rmsprop,
    &k_assign_add,  &k_assign_sub,      NULL};
