/* plugins/numerics/optim.c — the optimizer updates (contracts in optim.h):
 * the update rules, what each optimizer reads, the checks of an update,
 * its dense and sparse loops, locking a variable with its slots and reading
 * scalar inputs. The ops themselves are ops-train's (plugins/ops/train).
 *
 * Every update locks the variable and its slots in the host's variable
 * order, checks everything it will use, and only then writes in place; on
 * any error nothing has been written. Arithmetic is in the variable's
 * type (float32 or float64), one IEEE operation at a time, subnormals
 * read as zeros (below). */
#include <config.h>

#include "optim.h"

#include <assert.h>
#include <float.h>
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

/* ---- subnormal arithmetic ----------------------------------------------- */

/* The rules run with the floating-point unit treating subnormal inputs and
 * results as zeros of their sign (x86: MXCSR's DAZ and FTZ; AArch64:
 * FPCR.FZ), set for each range of elements and restored after it, as
 * TensorFlow's CPU kernels run. Why: a product that lands in the subnormal
 * range costs a microcode assist of ~100 cycles on Intel cores, and the
 * rules make many: a confident model's gradients are ~1e-20, whose squares
 * (Adam's and RMSProp's second moments, Adagrad's sum) are subnormal in
 * float32, and alpha * m is subnormal for a decaying first moment under
 * 1e-35. The mlp's Adam took 107 us of its 510 us step with the assists,
 * 86 without. The stored slots are flushed besides (flush_f32 below), which
 * is all that other machines get. */
#if defined(__x86_64__) || (defined(__i386__) && defined(__SSE2__))
#include <xmmintrin.h>
typedef unsigned int fp_mode;
static inline fp_mode flush_enter(void) {
  fp_mode old = _mm_getcsr();

  _mm_setcsr(old | 0x8040u); /* FTZ (bit 15), DAZ (bit 6) */
  return old;
}
static inline void flush_leave(fp_mode old) { _mm_setcsr(old); }
#elif defined(__aarch64__) && defined(__GNUC__)
typedef unsigned long fp_mode;
static inline fp_mode flush_enter(void) {
  fp_mode old, fz;

  __asm__ __volatile__("mrs %0, fpcr" : "=r"(old));
  fz = old | (1ul << 24); /* FZ */
  __asm__ __volatile__("msr fpcr, %0" : : "r"(fz));
  return old;
}
static inline void flush_leave(fp_mode old) {
  __asm__ __volatile__("msr fpcr, %0" : : "r"(old));
}
#else
typedef int fp_mode;
static inline fp_mode flush_enter(void) { return 0; }
static inline void flush_leave(fp_mode old) { (void)old; }
#endif

typedef struct params {
  double lr, beta1, beta2, epsilon, momentum, rho, weight_decay, step;
  double alpha; /* Adam: lr * sqrt(1 - beta2^step) / (1 - beta1^step) */
  int nesterov, amsgrad;
} params;

/* Updates elements [off, off + n) of the variable and its slots (s[k]: the
 * data of resource input k, in input order) with the gradient g[0..n-1],
 * which has the variable's type. */
typedef void rule_fn(void *const *s, int64_t off, const void *g, int64_t n,
                     const params *p);

/* The square root and maximum of each type, for the rules below. */
static inline float sqrt_f32(float x) { return sqrtf(x); }
static inline double sqrt_f64(double x) { return sqrt(x); }
static inline float fmax_f32(float a, float b) { return fmaxf(a, b); }
static inline double fmax_f64(double a, double b) { return fmax(a, b); }

/* A slot value below the type's smallest normal number is stored as a zero
 * of its sign: the moments of a weight whose gradient has stopped (a pixel
 * that is seldom lit, a dead unit) decay into the subnormal range and stay
 * there (0.9 times the smallest subnormal rounds back to it), and every
 * operation on a subnormal costs a microcode assist of ~100 cycles on
 * Intel cores: the mlp's first layer's Adam took half its step. This is
 * what TensorFlow's CPU kernels store (they run with flush-to-zero). */
static inline float flush_f32(float x) {
  return fabsf(x) < FLT_MIN ? copysignf(0.0f, x) : x;
}
static inline double flush_f64(double x) {
  return fabs(x) < DBL_MIN ? copysign(0.0, x) : x;
}

/* The rules compute in the variable's type T, as TensorFlow's and
 * PyTorch's do: every operation is one IEEE operation of T (no contraction
 * into multiply-adds), in the order written, so the CUDA plugin's rules
 * (cuda_train.cu) give the same bits. Hyperparameters and the constants
 * derived from them (1 - beta1, lr * momentum, ...) are computed in double
 * and rounded to T once. In float32, Adam's square root and division run
 * eight (AVX2) or sixteen (AVX-512) to a vector instead of four: the mlp's
 * 235k parameters update 3.6x faster than they did in double. */
#define DEF_RULES(T, sfx, dt, u)                                               \
  static void sgd_##sfx(void *const *s, int64_t off, const void *g_,           \
                        int64_t n, const params *p) {                          \
    T *var = (T *)s[0] + off;                                                  \
    const T *g = g_, lr = (T)p->lr;                                            \
    for (int64_t i = 0; i < n; i++)                                            \
      var[i] = var[i] - lr * g[i];                                             \
  }                                                                            \
  static void momentum_##sfx(void *const *s, int64_t off, const void *g_,      \
                             int64_t n, const params *p) {                     \
    T *var = (T *)s[0] + off, *accum = (T *)s[1] + off;                        \
    const T *g = g_, lr = (T)p->lr, mu = (T)p->momentum;                       \
    const T lr_mu = (T)(p->lr * p->momentum);                                  \
    for (int64_t i = 0; i < n; i++) {                                          \
      T a = flush_##sfx(mu * accum[i] + g[i]);                                 \
      accum[i] = a;                                                            \
      if (p->nesterov)                                                         \
        var[i] = var[i] - (lr * g[i] + lr_mu * a);                             \
      else                                                                     \
        var[i] = var[i] - lr * a;                                              \
    }                                                                          \
  }                                                                            \
  /* Adam and AdamW (weight_decay 0 for Adam). Branch-free loops over     \
   * restrict pointers, so that the compiler vectorizes them (the file is  \
   * built without errno from sqrt and without contracted multiply-adds:   \
   * the results are the same bits as element by element). */             \
  static WF_VECTOR_CLONES void adam_##sfx(void *const *s, int64_t off,        \
                                          const void *g_, int64_t n,          \
                                          const params *p) {                  \
    T *restrict var = (T *)s[0] + off, *restrict m = (T *)s[1] + off;         \
    T *restrict v = (T *)s[2] + off;                                          \
    const T *restrict g = g_;                                                 \
    const T b1 = (T)p->beta1, b2 = (T)p->beta2, c1 = (T)(1 - p->beta1);       \
    const T c2 = (T)(1 - p->beta2), decay = (T)(p->lr * p->weight_decay);     \
    const T alpha = (T)p->alpha, eps = (T)p->epsilon;                         \
    if (p->amsgrad) {                                                         \
      T *restrict vhat = (T *)s[3] + off;                                     \
      for (int64_t i = 0; i < n; i++) {                                       \
        T mi = flush_##sfx(b1 * m[i] + c1 * g[i]);                            \
        T vi = flush_##sfx(b2 * v[i] + c2 * g[i] * g[i]);                     \
        T vh = fmax_##sfx(vhat[i], vi);                                       \
        T x = var[i];                                                         \
        m[i] = mi;                                                            \
        v[i] = vi;                                                            \
        vhat[i] = vh;                                                         \
        x = x - decay * x;                                                    \
        var[i] = x - alpha * mi / (sqrt_##sfx(vh) + eps);                     \
      }                                                                       \
      return;                                                                 \
    }                                                                         \
    for (int64_t i = 0; i < n; i++) {                                         \
      T mi = flush_##sfx(b1 * m[i] + c1 * g[i]);                              \
      T vi = flush_##sfx(b2 * v[i] + c2 * g[i] * g[i]);                       \
      T x = var[i];                                                           \
      m[i] = mi;                                                              \
      v[i] = vi;                                                              \
      x = x - decay * x;                                                      \
      var[i] = x - alpha * mi / (sqrt_##sfx(vi) + eps);                       \
    }                                                                         \
  }                                                                           \
  static void rmsprop_##sfx(void *const *s, int64_t off, const void *g_,       \
                            int64_t n, const params *p) {                      \
    T *var = (T *)s[0] + off, *ms = (T *)s[1] + off, *mom = (T *)s[2] + off;   \
    const T *g = g_, rho = (T)p->rho, c = (T)(1 - p->rho);                     \
    const T mu = (T)p->momentum, lr = (T)p->lr, eps = (T)p->epsilon;           \
    for (int64_t i = 0; i < n; i++) {                                          \
      T msi = flush_##sfx(rho * ms[i] + c * g[i] * g[i]);                      \
      T mo = flush_##sfx(mu * mom[i] + lr * g[i] / sqrt_##sfx(msi + eps));     \
      ms[i] = msi;                                                             \
      mom[i] = mo;                                                             \
      var[i] = var[i] - mo;                                                    \
    }                                                                          \
  }                                                                            \
  static void centered_rmsprop_##sfx(void *const *s, int64_t off,              \
                                     const void *g_, int64_t n,                \
                                     const params *p) {                        \
    T *var = (T *)s[0] + off, *mg = (T *)s[1] + off, *ms = (T *)s[2] + off;    \
    T *mom = (T *)s[3] + off;                                                  \
    const T *g = g_, rho = (T)p->rho, c = (T)(1 - p->rho);                     \
    const T mu = (T)p->momentum, lr = (T)p->lr, eps = (T)p->epsilon;           \
    for (int64_t i = 0; i < n; i++) {                                          \
      T mgi = flush_##sfx(rho * mg[i] + c * g[i]);                             \
      T msi = flush_##sfx(rho * ms[i] + c * g[i] * g[i]);                      \
      T mo = flush_##sfx(mu * mom[i] +                                         \
                         lr * g[i] / sqrt_##sfx(msi - mgi * mgi + eps));       \
      mg[i] = mgi;                                                             \
      ms[i] = msi;                                                             \
      mom[i] = mo;                                                             \
      var[i] = var[i] - mo;                                                    \
    }                                                                          \
  }                                                                            \
  static void adagrad_##sfx(void *const *s, int64_t off, const void *g_,       \
                            int64_t n, const params *p) {                      \
    T *var = (T *)s[0] + off, *accum = (T *)s[1] + off;                        \
    const T *g = g_, lr = (T)p->lr, eps = (T)p->epsilon;                       \
    for (int64_t i = 0; i < n; i++) {                                          \
      T a = flush_##sfx(accum[i] + g[i] * g[i]);                               \
      accum[i] = a;                                                            \
      var[i] = var[i] - lr * g[i] / (sqrt_##sfx(a) + eps);                     \
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

struct trn_update {
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
};
typedef trn_update optimizer;

#define RULES(name) .rule_f32 = name##_f32, .rule_f64 = name##_f64

/* Input numbers below follow the argument lists further down. */
const trn_update trn_update_gd = {
    .nres = 1, .res = {"var"}, .grad = 2, .indices = -1, .nscalars = 1,
    .scalar = {SCALAR(1, lr)}, .step = -1, RULES(sgd)};
const trn_update trn_update_momentum = {
    .nres = 2, .res = {"var", "accum"}, .grad = 3, .indices = -1,
    .nscalars = 2, .scalar = {SCALAR(2, lr), SCALAR(4, momentum)},
    .step = -1, .has_nesterov = 1, RULES(momentum)};
const trn_update trn_update_adam = {
    .nres = 4, .res = {"var", "m", "v", "vhat"}, .amsgrad = 1, .grad = 8,
    .indices = -1, .nscalars = 4,
    .scalar = {SCALAR(4, lr), SCALAR(5, beta1), SCALAR(6, beta2),
               SCALAR(7, epsilon)},
    .step = 9, RULES(adam)};
const trn_update trn_update_adamw = {
    .nres = 4, .res = {"var", "m", "v", "vhat"}, .amsgrad = 1, .grad = 9,
    .indices = -1, .nscalars = 5,
    .scalar = {SCALAR(4, lr), SCALAR(5, beta1), SCALAR(6, beta2),
               SCALAR(7, epsilon), SCALAR(8, weight_decay)},
    .step = 10, RULES(adam)};
const trn_update trn_update_rmsprop = {
    .nres = 3, .res = {"var", "ms", "mom"}, .grad = 7, .indices = -1,
    .nscalars = 4,
    .scalar = {SCALAR(3, lr), SCALAR(4, rho), SCALAR(5, momentum),
               SCALAR(6, epsilon)},
    .step = -1, RULES(rmsprop)};
const trn_update trn_update_centered_rmsprop = {
    .nres = 4, .res = {"var", "mg", "ms", "mom"}, .grad = 8, .indices = -1,
    .nscalars = 4,
    .scalar = {SCALAR(4, lr), SCALAR(5, rho), SCALAR(6, momentum),
               SCALAR(7, epsilon)},
    .step = -1, RULES(centered_rmsprop)};
const trn_update trn_update_adagrad = {
    .nres = 2, .res = {"var", "accum"}, .grad = 4, .indices = -1,
    .nscalars = 2, .scalar = {SCALAR(2, lr), SCALAR(3, epsilon)}, .step = -1,
    RULES(adagrad)};

const trn_update trn_update_sparse_gd = {
    .nres = 1, .res = {"var"}, .grad = 2, .indices = 3, .nscalars = 1,
    .scalar = {SCALAR(1, lr)}, .step = -1, RULES(sgd)};
const trn_update trn_update_sparse_momentum = {
    .nres = 2, .res = {"var", "accum"}, .grad = 3, .indices = 4,
    .nscalars = 2, .scalar = {SCALAR(2, lr), SCALAR(5, momentum)},
    .step = -1, .has_nesterov = 1, RULES(momentum)};
const trn_update trn_update_sparse_adam = {
    .nres = 4, .res = {"var", "m", "v", "vhat"}, .amsgrad = 1, .grad = 8,
    .indices = 9, .nscalars = 4,
    .scalar = {SCALAR(4, lr), SCALAR(5, beta1), SCALAR(6, beta2),
               SCALAR(7, epsilon)},
    .step = 10, RULES(adam)};
const trn_update trn_update_sparse_adagrad = {
    .nres = 2, .res = {"var", "accum"}, .grad = 4, .indices = 5,
    .nscalars = 2, .scalar = {SCALAR(2, lr), SCALAR(3, epsilon)}, .step = -1,
    RULES(adagrad)};
const trn_update trn_update_sparse_rmsprop = {
    .nres = 3, .res = {"var", "ms", "mom"}, .grad = 7, .indices = 8,
    .nscalars = 4,
    .scalar = {SCALAR(3, lr), SCALAR(4, rho), SCALAR(5, momentum),
               SCALAR(6, epsilon)},
    .step = -1, RULES(rmsprop)};

/* ---- shape functions --------------------------------------------------- */

int trn_update_shape(wf_shape_ctx *ctx, const trn_update *o, wf_status *st) {
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

/* A dense update of elements [begin, end) (begin a multiple of
 * TRN_PIECE): what update_dense runs, whole or in pieces on several
 * threads. Each element's arithmetic is the same wherever it is cut, so
 * the results are the same bits. */
typedef struct dense_job {
  rule_fn *rule;
  void *const *slots;
  size_t elem; /* bytes of an element of the variable's type */
  const void *grad;
  const params *p;
} dense_job;

static void update_range(void *arg, int64_t begin, int64_t end) {
  const dense_job *j = arg;
  fp_mode mode = flush_enter();

  for (int64_t off = begin; off < end; off += TRN_PIECE) {
    int64_t n = end - off < TRN_PIECE ? end - off : TRN_PIECE;

    j->rule(j->slots, off, (const char *)j->grad + (size_t)off * j->elem, n,
            j->p);
  }
  flush_leave(mode);
}

static void update_dense(rule_fn *rule, void *const *slots, int32_t dtype,
                         const void *grad, int64_t count, const params *p,
                         trn_parallel_fn *par) {
  dense_job j = {rule, slots, dtype == WF_FLOAT32 ? sizeof(float)
                                                  : sizeof(double),
                 grad, p};

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

/* Sparse: rows indices[k] get values[k]; repeated rows are summed in
 * double (in the order they appear), rounded to the variable's type and
 * updated once. Every index is checked before anything is written. */
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
  void *rowg = NULL; /* the summed row in the variable's type */
  fp_mode mode;
  int rc = 0;

  for (int d = 1; d < vshape->rank; d++)
    width *= vshape->dims[d];
  if (k_rows == 0)
    return 0;
  refs = wfx_host->alloc((size_t)k_rows * sizeof *refs, 0);
  acc = wfx_host->alloc((size_t)(width > 0 ? width : 1) * sizeof *acc, 0);
  rowg = wfx_host->alloc((size_t)(width > 0 ? width : 1) * sizeof(double), 0);
  if (!refs || !acc || !rowg) {
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
    if (dtype == WF_FLOAT32)
      for (int64_t j = 0; j < width; j++)
        ((float *)rowg)[j] = (float)acc[j];
    else
      memcpy(rowg, acc, (size_t)width * sizeof *acc);
    mode = flush_enter();
    rule(slots, row * width, rowg, width, p);
    flush_leave(mode);
  }

done:
  wfx_host->free(rowg);
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

int trn_update_apply(wf_kernel_ctx *ctx, const trn_update *o,
                     trn_parallel_fn *par, wf_status *st) {
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

/* ---- the dense updates by op name --------------------------------------- */

static const struct {
  const char *op;
  const optimizer *o;
} dense_updates[] = {
    {"ApplyGradientDescent", &trn_update_gd},
    {"ApplyMomentum", &trn_update_momentum},
    {"ApplyAdam", &trn_update_adam},
    {"ApplyAdamW", &trn_update_adamw},
    {"ApplyRMSProp", &trn_update_rmsprop},
    {"ApplyCenteredRMSProp", &trn_update_centered_rmsprop},
    {"ApplyAdagrad", &trn_update_adagrad},
};

const trn_update *trn_dense_update(const char *op) {
  for (size_t i = 0; i < sizeof dense_updates / sizeof dense_updates[0]; i++)
    if (strcmp(dense_updates[i].op, op) == 0)
      return dense_updates[i].o;
  return NULL;
}

/* ---- locking and scalar inputs ----------------------------------------- */

int trn_lock(trn_vars *v, const wf_kernel_ctx *ctx, wf_status *st) {
  char s0[WFX_SHAPE_STR_MAX], s1[WFX_SHAPE_STR_MAX];
  wf_shape vs, ss;
  int rc;

  assert(v->n >= 1 && v->n <= TRN_MAX_VARS);
  v->nlocked = 0;
  for (int i = 0; i < v->n; i++) {
    v->order[i] = i;
    v->value[i] = NULL;
  }
  /* Insertion sort by the host's order; equal handles are one variable. */
  for (int i = 1; i < v->n; i++) {
    for (int j = i; j > 0; j--) {
      int a = v->order[j - 1], b = v->order[j];
      int c = wfx_host->var_order(v->handle[a], v->handle[b]);

      if (c == 0)
        return wfx_fail(st, WF_INVALID_ARGUMENT,
                        "inputs '%s' and '%s' are the same variable '%s'; "
                        "each needs its own",
                        v->input[a < b ? a : b], v->input[a < b ? b : a],
                        wfx_host->var_name(v->handle[a]));
      if (c < 0)
        break;
      v->order[j - 1] = b;
      v->order[j] = a;
    }
  }
  for (int i = 0; i < v->n; i++) {
    int k = v->order[i];

    v->value[k] = wfx_var_lock(ctx, v->handle[k], st);
    if (!v->value[k]) {
      rc = wfx_code(st);
      goto fail;
    }
    v->nlocked++;
  }
  wfx_host->tensor_shape(v->value[0], &vs);
  for (int k = 1; k < v->n; k++) {
    wfx_host->tensor_shape(v->value[k], &ss);
    if (wfx_dtype(v->value[k]) != wfx_dtype(v->value[0]) ||
        ss.rank != vs.rank ||
        memcmp(ss.dims, vs.dims, sizeof ss.dims[0] * (size_t)ss.rank) != 0) {
      rc = wfx_fail(st, WF_INVALID_ARGUMENT,
                    "slot '%s' (variable '%s') is %s %s but '%s' (variable "
                    "'%s') is %s %s; a slot has its variable's dtype and "
                    "shape",
                    v->input[k], wfx_host->var_name(v->handle[k]),
                    wfx_dtype_name(wfx_dtype(v->value[k])),
                    wfx_shape_str(&ss, s1, sizeof s1), v->input[0],
                    wfx_host->var_name(v->handle[0]),
                    wfx_dtype_name(wfx_dtype(v->value[0])),
                    wfx_shape_str(&vs, s0, sizeof s0));
      goto fail;
    }
  }
  return 0;

fail:
  trn_unlock(v);
  return rc;
}

void trn_unlock(trn_vars *v) {

  while (v->nlocked > 0) {
    int k = v->order[--v->nlocked];
    wfx_host->var_unlock(v->handle[k]);
    v->value[k] = NULL;
  }
}

int trn_scalar_input(const wf_kernel_ctx *ctx, int32_t i, const char *name,
                     double *out, wf_status *st) {
  const wf_tensor *t;
  wf_shape s;
  char buf[WFX_SHAPE_STR_MAX];
  const void *p;

  if (wfx_kernel_input(ctx, i, &t, &s, st))
    return wfx_code(st);
  if (s.rank != 0)
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "input '%s' has shape %s; it must be a scalar", name,
                    wfx_shape_str(&s, buf, sizeof buf));
  p = wfx_data(t);
  switch (wfx_dtype(t)) {
  case WF_FLOAT32: *out = *(const float *)p; return 0;
  case WF_FLOAT64: *out = *(const double *)p; return 0;
  case WF_INT32: *out = *(const int32_t *)p; return 0;
  case WF_INT64: *out = (double)*(const int64_t *)p; return 0;
  default:
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "input '%s' is %s; expected float32, float64, int32 or "
                    "int64",
                    name, wfx_dtype_name(wfx_dtype(t)));
  }
}

int trn_shape_scalar(wf_shape_ctx *ctx, int32_t i, const char *name,
                     wf_status *st) {
  wf_shape s;
  char buf[WFX_SHAPE_STR_MAX];

  if (wfx_shape_input(ctx, i, NULL, &s, st))
    return wfx_code(st);
  if (s.rank > 0)
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "input '%s' has shape %s; it must be a scalar", name,
                    wfx_shape_str(&s, buf, sizeof buf));
  return 0;
}
