/* plugins/ops/train/apply.c — the fused optimizer updates on resource
 * variables: ApplyGradientDescent, ApplyMomentum, ApplyAdam, ApplyAdamW,
 * ApplyRMSProp, ApplyCenteredRMSProp, ApplyAdagrad and the sparse variants
 * for gradients given as rows (indices, values). Each update rule is
 * written out in its op's doc; slots are initialised by whoever builds the
 * optimizer (these ops never create or reset them).
 *
 * Every kernel locks the variable and its slots in the host's variable
 * order, checks everything it will use, and only then writes in place; on
 * any error nothing has been written. Arithmetic is in double for both
 * float32 and float64 variables, rounded once when stored. */
#include <config.h>

#include "train.h"

#include <inttypes.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* ---- update rules ------------------------------------------------------ */

/* The hot rules are compiled for AVX-512 and AVX2 next to the baseline,
 * chosen at load time (GCC's target_clones; IEEE operations without
 * contraction give the same bits on each). */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) &&         \
    defined(__linux__)
#define WF_VECTOR_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define WF_VECTOR_CLONES
#endif

typedef struct params {
  double lr, beta1, beta2, epsilon, momentum, rho, weight_decay, step;
  double alpha; /* Adam: lr * sqrt(1 - beta2^step) / (1 - beta1^step) */
  int nesterov, amsgrad;
} params;

/* Updates elements [off, off + n) of the variable and its slots (s[k]: the
 * data of resource input k, in input order) with the gradient g[0..n-1]. */
typedef void rule_fn(void *const *s, int64_t off, const double *g, int64_t n,
                     const params *p);

#define DEF_RULES(T, sfx, dt, u)                                               \
  static void sgd_##sfx(void *const *s, int64_t off, const double *g,          \
                        int64_t n, const params *p) {                          \
    T *var = (T *)s[0] + off;                                                  \
    for (int64_t i = 0; i < n; i++)                                            \
      var[i] = (T)(var[i] - p->lr * g[i]);                                     \
  }                                                                            \
  static void momentum_##sfx(void *const *s, int64_t off, const double *g,     \
                             int64_t n, const params *p) {                     \
    T *var = (T *)s[0] + off, *accum = (T *)s[1] + off;                        \
    for (int64_t i = 0; i < n; i++) {                                          \
      double a = p->momentum * accum[i] + g[i];                                \
      accum[i] = (T)a;                                                         \
      if (p->nesterov)                                                         \
        var[i] = (T)(var[i] - (p->lr * g[i] + p->lr * p->momentum * a));       \
      else                                                                     \
        var[i] = (T)(var[i] - p->lr * a);                                      \
    }                                                                          \
  }                                                                            \
  /* Adam and AdamW (weight_decay 0 for Adam). Branch-free loops over     \
   * restrict pointers, so that the compiler vectorizes them (the file is  \
   * built without errno from sqrt and without contracted multiply-adds:   \
   * the results are the same bits as element by element). */             \
  static WF_VECTOR_CLONES void adam_##sfx(void *const *s, int64_t off,        \
                                          const double *restrict g,           \
                                          int64_t n, const params *p) {       \
    T *restrict var = (T *)s[0] + off, *restrict m = (T *)s[1] + off;         \
    T *restrict v = (T *)s[2] + off;                                          \
    const double b1 = p->beta1, b2 = p->beta2, c1 = 1 - p->beta1;             \
    const double c2 = 1 - p->beta2, decay = p->lr * p->weight_decay;          \
    const double alpha = p->alpha, eps = p->epsilon;                          \
    if (p->amsgrad) {                                                         \
      T *restrict vhat = (T *)s[3] + off;                                     \
      for (int64_t i = 0; i < n; i++) {                                       \
        double mi = b1 * m[i] + c1 * g[i];                                    \
        double vi = b2 * v[i] + c2 * g[i] * g[i];                             \
        double vh = fmax((double)vhat[i], vi);                                \
        double x = var[i];                                                    \
        m[i] = (T)mi;                                                         \
        v[i] = (T)vi;                                                         \
        vhat[i] = (T)vh;                                                      \
        x = x - decay * x;                                                    \
        var[i] = (T)(x - alpha * mi / (sqrt(vh) + eps));                      \
      }                                                                       \
      return;                                                                 \
    }                                                                         \
    for (int64_t i = 0; i < n; i++) {                                         \
      double mi = b1 * m[i] + c1 * g[i];                                      \
      double vi = b2 * v[i] + c2 * g[i] * g[i];                               \
      double x = var[i];                                                      \
      m[i] = (T)mi;                                                           \
      v[i] = (T)vi;                                                           \
      x = x - decay * x;                                                      \
      var[i] = (T)(x - alpha * mi / (sqrt(vi) + eps));                        \
    }                                                                         \
  }                                                                           \
  static void rmsprop_##sfx(void *const *s, int64_t off, const double *g,      \
                            int64_t n, const params *p) {                      \
    T *var = (T *)s[0] + off, *ms = (T *)s[1] + off, *mom = (T *)s[2] + off;   \
    for (int64_t i = 0; i < n; i++) {                                          \
      double msi = p->rho * ms[i] + (1 - p->rho) * g[i] * g[i];                \
      double mo =                                                              \
          p->momentum * mom[i] + p->lr * g[i] / sqrt(msi + p->epsilon);        \
      ms[i] = (T)msi;                                                          \
      mom[i] = (T)mo;                                                          \
      var[i] = (T)(var[i] - mo);                                               \
    }                                                                          \
  }                                                                            \
  static void centered_rmsprop_##sfx(void *const *s, int64_t off,              \
                                     const double *g, int64_t n,               \
                                     const params *p) {                        \
    T *var = (T *)s[0] + off, *mg = (T *)s[1] + off, *ms = (T *)s[2] + off;    \
    T *mom = (T *)s[3] + off;                                                  \
    for (int64_t i = 0; i < n; i++) {                                          \
      double mgi = p->rho * mg[i] + (1 - p->rho) * g[i];                       \
      double msi = p->rho * ms[i] + (1 - p->rho) * g[i] * g[i];                \
      double mo = p->momentum * mom[i] +                                       \
                  p->lr * g[i] / sqrt(msi - mgi * mgi + p->epsilon);           \
      mg[i] = (T)mgi;                                                          \
      ms[i] = (T)msi;                                                          \
      mom[i] = (T)mo;                                                          \
      var[i] = (T)(var[i] - mo);                                               \
    }                                                                          \
  }                                                                            \
  static void adagrad_##sfx(void *const *s, int64_t off, const double *g,      \
                            int64_t n, const params *p) {                      \
    T *var = (T *)s[0] + off, *accum = (T *)s[1] + off;                        \
    for (int64_t i = 0; i < n; i++) {                                          \
      double a = accum[i] + g[i] * g[i];                                       \
      accum[i] = (T)a;                                                         \
      var[i] = (T)(var[i] - p->lr * g[i] / (sqrt(a) + p->epsilon));            \
    }                                                                          \
  }
WFX_TYPES_FLOAT(DEF_RULES, _)

/* ---- optimizer descriptions -------------------------------------------- */

typedef struct scalar_in {
  int input;
  const char *name;
  size_t offset; /* into params */
} scalar_in;

#define SCALAR(in, field)                                                      \
  { (in), #field, offsetof(params, field) }

typedef struct optimizer {
  int nres;                        /* resource inputs 0..nres-1, var first */
  const char *res[TRN_MAX_VARS];   /* their input names */
  int amsgrad;                     /* the last resource is vhat: used only
                                      with the amsgrad attribute */
  int grad;                        /* input of the gradient (sparse: values) */
  int indices;                     /* sparse: input of indices; dense: -1 */
  int nscalars;
  scalar_in scalar[6];
  int step;                        /* input of the step count, or -1 */
  int has_nesterov;                /* reads the use_nesterov attribute */
  rule_fn *rule_f32, *rule_f64;
} optimizer;

#define RULES(name) .rule_f32 = name##_f32, .rule_f64 = name##_f64

/* Input numbers below follow the argument lists further down. */
static const optimizer opt_gd = {
    .nres = 1, .res = {"var"}, .grad = 2, .indices = -1, .nscalars = 1,
    .scalar = {SCALAR(1, lr)}, .step = -1, RULES(sgd)};
static const optimizer opt_momentum = {
    .nres = 2, .res = {"var", "accum"}, .grad = 3, .indices = -1,
    .nscalars = 2, .scalar = {SCALAR(2, lr), SCALAR(4, momentum)},
    .step = -1, .has_nesterov = 1, RULES(momentum)};
static const optimizer opt_adam = {
    .nres = 4, .res = {"var", "m", "v", "vhat"}, .amsgrad = 1, .grad = 8,
    .indices = -1, .nscalars = 4,
    .scalar = {SCALAR(4, lr), SCALAR(5, beta1), SCALAR(6, beta2),
               SCALAR(7, epsilon)},
    .step = 9, RULES(adam)};
static const optimizer opt_adamw = {
    .nres = 4, .res = {"var", "m", "v", "vhat"}, .amsgrad = 1, .grad = 9,
    .indices = -1, .nscalars = 5,
    .scalar = {SCALAR(4, lr), SCALAR(5, beta1), SCALAR(6, beta2),
               SCALAR(7, epsilon), SCALAR(8, weight_decay)},
    .step = 10, RULES(adam)};
static const optimizer opt_rmsprop = {
    .nres = 3, .res = {"var", "ms", "mom"}, .grad = 7, .indices = -1,
    .nscalars = 4,
    .scalar = {SCALAR(3, lr), SCALAR(4, rho), SCALAR(5, momentum),
               SCALAR(6, epsilon)},
    .step = -1, RULES(rmsprop)};
static const optimizer opt_centered_rmsprop = {
    .nres = 4, .res = {"var", "mg", "ms", "mom"}, .grad = 8, .indices = -1,
    .nscalars = 4,
    .scalar = {SCALAR(4, lr), SCALAR(5, rho), SCALAR(6, momentum),
               SCALAR(7, epsilon)},
    .step = -1, RULES(centered_rmsprop)};
static const optimizer opt_adagrad = {
    .nres = 2, .res = {"var", "accum"}, .grad = 4, .indices = -1,
    .nscalars = 2, .scalar = {SCALAR(2, lr), SCALAR(3, epsilon)}, .step = -1,
    RULES(adagrad)};

static const optimizer opt_sparse_gd = {
    .nres = 1, .res = {"var"}, .grad = 2, .indices = 3, .nscalars = 1,
    .scalar = {SCALAR(1, lr)}, .step = -1, RULES(sgd)};
static const optimizer opt_sparse_momentum = {
    .nres = 2, .res = {"var", "accum"}, .grad = 3, .indices = 4,
    .nscalars = 2, .scalar = {SCALAR(2, lr), SCALAR(5, momentum)},
    .step = -1, .has_nesterov = 1, RULES(momentum)};
static const optimizer opt_sparse_adam = {
    .nres = 4, .res = {"var", "m", "v", "vhat"}, .amsgrad = 1, .grad = 8,
    .indices = 9, .nscalars = 4,
    .scalar = {SCALAR(4, lr), SCALAR(5, beta1), SCALAR(6, beta2),
               SCALAR(7, epsilon)},
    .step = 10, RULES(adam)};
static const optimizer opt_sparse_adagrad = {
    .nres = 2, .res = {"var", "accum"}, .grad = 4, .indices = 5,
    .nscalars = 2, .scalar = {SCALAR(2, lr), SCALAR(3, epsilon)}, .step = -1,
    RULES(adagrad)};
static const optimizer opt_sparse_rmsprop = {
    .nres = 3, .res = {"var", "ms", "mom"}, .grad = 7, .indices = 8,
    .nscalars = 4,
    .scalar = {SCALAR(3, lr), SCALAR(4, rho), SCALAR(5, momentum),
               SCALAR(6, epsilon)},
    .step = -1, RULES(rmsprop)};

/* ---- shape functions --------------------------------------------------- */

/* Scalars must be scalars; sparse: indices (K,), values (K, ...). The
 * variable's shape is not known while building (it sits behind a handle),
 * so the gradient is checked against it at run time. */
static int shape_apply(wf_shape_ctx *ctx, const optimizer *o, wf_status *st) {
  wf_shape is, vs;
  char b1[WFX_SHAPE_STR_MAX], b2[WFX_SHAPE_STR_MAX];

  for (int k = 0; k < o->nres; k++)
    if (trn_shape_scalar(ctx, k, o->res[k], st))
      return wfx_code(st);
  for (int k = 0; k < o->nscalars; k++)
    if (trn_shape_scalar(ctx, o->scalar[k].input, o->scalar[k].name, st))
      return wfx_code(st);
  if (o->step >= 0 && trn_shape_scalar(ctx, o->step, "step", st))
    return wfx_code(st);
  if (o->indices < 0)
    return 0;
  if (wfx_shape_input(ctx, o->indices, NULL, &is, st) ||
      wfx_shape_input(ctx, o->grad, NULL, &vs, st))
    return wfx_code(st);
  if (is.rank >= 0 && is.rank != 1)
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "input 'indices' has shape %s; it must be a vector (K,)",
                    wfx_shape_str(&is, b1, sizeof b1));
  if (vs.rank == 0)
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "input 'values' is a scalar; it must be rows (K, ...)");
  if (is.rank == 1 && vs.rank >= 1 && is.dims[0] >= 0 && vs.dims[0] >= 0 &&
      is.dims[0] != vs.dims[0])
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "input 'indices' %s and input 'values' %s disagree on "
                    "the number of rows K",
                    wfx_shape_str(&is, b1, sizeof b1),
                    wfx_shape_str(&vs, b2, sizeof b2));
  return 0;
}

/* ---- kernels ----------------------------------------------------------- */

/* Dense: the gradient converted to double a chunk at a time. */
/* A dense update of elements [begin, end) (begin a multiple of
 * TRN_PIECE): what update_dense runs, whole or in pieces on several
 * threads. Each element's arithmetic is the same wherever it is cut, so
 * the results are the same bits. */
typedef struct dense_job {
  rule_fn *rule;
  void *const *slots;
  int32_t dtype;
  const void *grad;
  const params *p;
} dense_job;

static void update_range(void *arg, int64_t begin, int64_t end) {
  const dense_job *j = arg;
  double buf[TRN_PIECE];

  for (int64_t off = begin; off < end; off += TRN_PIECE) {
    int64_t n = end - off < TRN_PIECE ? end - off : TRN_PIECE;

    if (j->dtype == WF_FLOAT32)
      for (int64_t i = 0; i < n; i++)
        buf[i] = ((const float *)j->grad)[off + i];
    else
      for (int64_t i = 0; i < n; i++)
        buf[i] = ((const double *)j->grad)[off + i];
    j->rule(j->slots, off, buf, n, j->p);
  }
}

static void update_dense(rule_fn *rule, void *const *slots, int32_t dtype,
                         const void *grad, int64_t count, const params *p,
                         trn_parallel_fn *par) {
  dense_job j = {rule, slots, dtype, grad, p};

  if (par)
    par(update_range, &j, count);
  else
    update_range(&j, 0, count);
}

/* One row of a sparse gradient: its variable row and its place in values. */
typedef struct row_ref {
  int64_t row;
  int64_t pos;
} row_ref;

static int row_ref_cmp(const void *a_, const void *b_) {
  const row_ref *a = a_, *b = b_;

  if (a->row != b->row)
    return a->row < b->row ? -1 : 1;
  return (a->pos > b->pos) - (a->pos < b->pos);
}

/* Sparse: rows indices[k] get values[k]; repeated rows are summed (in the
 * order they appear) and updated once. Every index is checked before
 * anything is written. */
static int update_sparse(rule_fn *rule, void *const *slots, int32_t dtype,
                         const char *var_name, const wf_shape *vshape,
                         const wf_tensor *values, const wf_tensor *indices,
                         const params *p, wf_status *st) {
  int64_t k_rows = wfx_count(indices), nrows = vshape->dims[0];
  int64_t width = 1;
  const void *iv = wfx_data(indices), *vv = wfx_data(values);
  int32_t idt = wfx_dtype(indices);
  row_ref *refs = NULL;
  double *acc = NULL;
  int rc = 0;

  for (int d = 1; d < vshape->rank; d++)
    width *= vshape->dims[d];
  if (k_rows == 0)
    return 0;
  refs = wfx_host->alloc((size_t)k_rows * sizeof *refs, 0);
  acc = wfx_host->alloc((size_t)(width > 0 ? width : 1) * sizeof *acc, 0);
  if (!refs || !acc) {
    rc = wfx_fail(st, WF_RESOURCE_EXHAUSTED,
                  "out of memory for %" PRId64 " sparse rows of %" PRId64
                  " elements",
                  k_rows, width);
    goto done;
  }
  for (int64_t k = 0; k < k_rows; k++) {
    int64_t r = idt == WF_INT32 ? ((const int32_t *)iv)[k]
                                : ((const int64_t *)iv)[k];
    if (r < 0 || r >= nrows) {
      rc = wfx_fail(st, WF_INVALID_ARGUMENT,
                    "indices[%" PRId64 "] = %" PRId64 " is out of range for "
                    "variable '%s' of %" PRId64 " rows (valid: 0 to %" PRId64
                    ")",
                    k, r, var_name, nrows, nrows - 1);
      goto done;
    }
    refs[k] = (row_ref){r, k};
  }
  qsort(refs, (size_t)k_rows, sizeof *refs, row_ref_cmp);
  for (int64_t k = 0; k < k_rows;) {
    int64_t row = refs[k].row;

    memset(acc, 0, (size_t)width * sizeof *acc);
    for (; k < k_rows && refs[k].row == row; k++) {
      int64_t base = refs[k].pos * width;
      if (dtype == WF_FLOAT32)
        for (int64_t j = 0; j < width; j++)
          acc[j] += ((const float *)vv)[base + j];
      else
        for (int64_t j = 0; j < width; j++)
          acc[j] += ((const double *)vv)[base + j];
    }
    rule(slots, row * width, acc, width, p);
  }

done:
  wfx_host->free(acc);
  wfx_host->free(refs);
  return rc;
}

/* Reads every non-resource input of o and derives Adam's step size. */
static int read_params(const wf_kernel_ctx *ctx, const optimizer *o, params *p,
                       wf_status *st) {

  memset(p, 0, sizeof *p);
  if (o->has_nesterov &&
      wfx_kernel_attr_bool(ctx, "use_nesterov", &p->nesterov, st))
    return wfx_code(st);
  if (o->amsgrad && wfx_kernel_attr_bool(ctx, "amsgrad", &p->amsgrad, st))
    return wfx_code(st);
  for (int k = 0; k < o->nscalars; k++)
    if (trn_scalar_input(ctx, o->scalar[k].input, o->scalar[k].name,
                         (double *)((char *)p + o->scalar[k].offset), st))
      return wfx_code(st);
  if (o->step >= 0) {
    double c1, c2;

    if (trn_scalar_input(ctx, o->step, "step", &p->step, st))
      return wfx_code(st);
    if (!(p->step >= 1))
      return wfx_fail(st, WF_INVALID_ARGUMENT,
                      "input 'step' is %g; the bias correction needs the "
                      "1-based count of updates (>= 1)",
                      p->step);
    c1 = 1 - pow(p->beta1, p->step);
    c2 = 1 - pow(p->beta2, p->step);
    if (c1 == 0)
      return wfx_fail(st, WF_INVALID_ARGUMENT,
                      "beta1 %g gives a bias correction 1 - beta1^step of 0",
                      p->beta1);
    p->alpha = p->lr * sqrt(c2) / c1;
  }
  return 0;
}

static int apply(wf_kernel_ctx *ctx, const optimizer *o, trn_parallel_fn *par,
                 wf_status *st) {
  const wf_tensor *grad, *indices = NULL;
  wf_shape gs, vs, is;
  char b1[WFX_SHAPE_STR_MAX], b2[WFX_SHAPE_STR_MAX];
  void *slots[TRN_MAX_VARS] = {NULL};
  const char *grad_name = o->indices >= 0 ? "values" : "grad";
  trn_vars v;
  params p;
  int32_t dt, vdt;
  rule_fn *rule;
  int rc = 0;

  if (read_params(ctx, o, &p, st) ||
      wfx_kernel_input(ctx, o->grad, &grad, &gs, st))
    return wfx_code(st);
  dt = wfx_dtype(grad);
  rule = dt == WF_FLOAT32 ? o->rule_f32
                          : dt == WF_FLOAT64 ? o->rule_f64 : NULL;
  if (!rule)
    return wfx_fail(st, WF_UNIMPLEMENTED, "no kernel for %s",
                    wfx_dtype_name(dt));
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

  vdt = wfx_dtype(v.value[0]);
  wfx_host->tensor_shape(v.value[0], &vs);
  if (vdt != dt) {
    rc = wfx_fail(st, WF_INVALID_ARGUMENT,
                  "variable '%s' is %s but input '%s' is %s",
                  wfx_host->var_name(v.handle[0]), wfx_dtype_name(vdt),
                  grad_name, wfx_dtype_name(dt));
    goto done;
  }
  for (int k = 0; k < v.n; k++)
    slots[k] = wfx_data(v.value[k]);

  if (o->indices < 0) {
    if (gs.rank != vs.rank ||
        memcmp(gs.dims, vs.dims, sizeof gs.dims[0] * (size_t)gs.rank) != 0) {
      rc = wfx_fail(st, WF_INVALID_ARGUMENT,
                    "variable '%s' has shape %s but input 'grad' has %s",
                    wfx_host->var_name(v.handle[0]),
                    wfx_shape_str(&vs, b1, sizeof b1),
                    wfx_shape_str(&gs, b2, sizeof b2));
      goto done;
    }
    update_dense(rule, slots, dt, wfx_data(grad), wfx_count(grad), &p, par);
  } else {
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
    rc = update_sparse(rule, slots, dt, wfx_host->var_name(v.handle[0]), &vs,
                       grad, indices, &p, st);
  }

done:
  trn_unlock(&v);
  return rc;
}

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
  "in double, rounded once per stored value. No outputs; run it as a "         \
  "target."
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
    return shape_apply(ctx, &(o), st);                                         \
  }                                                                            \
  static int compute_##sym(wf_kernel_ctx *ctx, void *state, wf_status *st) {   \
    return apply(ctx, &(o), NULL, st);                                         \
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
         opt_gd, "Gradient descent: var -= lr * grad." LOCK_DOC);
APPLY_OP(apply_momentum, "ApplyMomentum", in_momentum, attrs_momentum,
         opt_momentum,
         "Momentum: accum = momentum * accum + grad; then var -= lr * accum, "
         "or with use_nesterov var -= lr * grad + lr * momentum * accum "
         "(the new accum), as TensorFlow's ApplyMomentum." LOCK_DOC);
APPLY_OP(apply_adam, "ApplyAdam", in_adam, attrs_adam, opt_adam,
         "Adam (Kingma and Ba), g = grad." ADAM_DOC LOCK_DOC);
APPLY_OP(apply_adamw, "ApplyAdamW", in_adamw, attrs_adam, opt_adamw,
         "AdamW (Loshchilov and Hutter), g = grad: first the decoupled "
         "weight decay var -= lr * weight_decay * var (not part of the "
         "gradient, so not seen by m and v), then the Adam update:" ADAM_DOC
             LOCK_DOC);
APPLY_OP(apply_rmsprop, "ApplyRMSProp", in_rmsprop, attrs_t, opt_rmsprop,
         "RMSProp, g = grad: ms = rho * ms + (1 - rho) * g^2; mom = "
         "momentum * mom + lr * g / sqrt(ms + epsilon); var -= mom "
         "(TensorFlow's ApplyRMSProp; epsilon under the root)." LOCK_DOC);
APPLY_OP(apply_centered_rmsprop, "ApplyCenteredRMSProp", in_centered_rmsprop,
         attrs_t, opt_centered_rmsprop,
         "Centered RMSProp, g = grad: mg = rho * mg + (1 - rho) * g; ms = "
         "rho * ms + (1 - rho) * g^2; mom = momentum * mom + lr * g / "
         "sqrt(ms - mg^2 + epsilon); var -= mom (TensorFlow's "
         "ApplyCenteredRMSProp)." LOCK_DOC);
APPLY_OP(apply_adagrad, "ApplyAdagrad", in_adagrad, attrs_t, opt_adagrad,
         "Adagrad, g = grad: accum += g^2; var -= lr * g / (sqrt(accum) + "
         "epsilon) (TensorFlow's ApplyAdagradV2 and PyTorch's form, epsilon "
         "outside the root). The starting accum (Keras uses 0.1) is its "
         "initializer's job." LOCK_DOC);

APPLY_OP(sparse_apply_gradient_descent, "SparseApplyGradientDescent",
         in_sparse_gd, attrs_sparse, opt_sparse_gd,
         "Gradient descent on rows: var[r] -= lr * g[r] for each touched "
         "row r." SPARSE_DOC LOCK_DOC);
APPLY_OP(sparse_apply_momentum, "SparseApplyMomentum", in_sparse_momentum,
         attrs_sparse_momentum, opt_sparse_momentum,
         "Momentum on rows: for each touched row r, accum[r] = momentum * "
         "accum[r] + g[r]; var[r] -= lr * accum[r], or with use_nesterov "
         "var[r] -= lr * g[r] + lr * momentum * accum[r]. Untouched rows "
         "keep their accum (it does not decay) and var." SPARSE_DOC
             LOCK_DOC);
APPLY_OP(sparse_apply_adam, "SparseApplyAdam", in_sparse_adam,
         attrs_sparse_adam, opt_sparse_adam,
         "Lazy Adam on rows: the dense Adam update, applied to the touched "
         "rows only, g = their summed values. This differs from dense Adam "
         "with a zero gradient elsewhere: there, every row's m and v decay "
         "and var keeps moving with m; here untouched rows' var, m, v and "
         "vhat stay exactly as they were. The bias correction still uses "
         "the global step." ADAM_DOC SPARSE_DOC LOCK_DOC);
APPLY_OP(sparse_apply_adagrad, "SparseApplyAdagrad", in_sparse_adagrad,
         attrs_sparse, opt_sparse_adagrad,
         "Adagrad on rows: for each touched row r, accum[r] += g[r]^2; "
         "var[r] -= lr * g[r] / (sqrt(accum[r]) + epsilon) (the same as the "
         "dense update, since a zero gradient changes nothing)." SPARSE_DOC
             LOCK_DOC);
APPLY_OP(sparse_apply_rmsprop, "SparseApplyRMSProp", in_sparse_rmsprop,
         attrs_sparse, opt_sparse_rmsprop,
         "RMSProp on rows: the ApplyRMSProp update (ms = rho * ms + (1 - "
         "rho) * g^2; mom = momentum * mom + lr * g / sqrt(ms + epsilon); "
         "var -= mom) applied to the touched rows only; untouched rows' ms "
         "and mom do not decay." SPARSE_DOC LOCK_DOC);

/* ---- the dense updates for other kernels ------------------------------- */

static const struct {
  const char *op;
  const optimizer *o;
} dense_updates[] = {
    {"ApplyGradientDescent", &opt_gd},
    {"ApplyMomentum", &opt_momentum},
    {"ApplyAdam", &opt_adam},
    {"ApplyAdamW", &opt_adamw},
    {"ApplyRMSProp", &opt_rmsprop},
    {"ApplyCenteredRMSProp", &opt_centered_rmsprop},
    {"ApplyAdagrad", &opt_adagrad},
};

const trn_update *trn_dense_update(const char *op) {
  for (size_t i = 0; i < sizeof dense_updates / sizeof dense_updates[0]; i++)
    if (strcmp(dense_updates[i].op, op) == 0)
      return (const trn_update *)dense_updates[i].o;
  return NULL;
}

int trn_apply_parallel(wf_kernel_ctx *ctx, const trn_update *u,
                       trn_parallel_fn *par, wf_status *st) {
  return apply(ctx, (const optimizer *)u, par, st);
}
