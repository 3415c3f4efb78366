/* tests/ops/test_train.c — the ops_train plugin through sessions: every
 * optimizer update against an independent float64 implementation of the
 * formula in its op's doc, over three steps with changing gradients (and
 * float32 once); sparse variants touching only the named rows, summing
 * repeated indices, refusing out-of-range ones; refusals naming variables
 * and slots; concurrent updates that share variables; learning-rate
 * schedules against hand-computed values; ClipByGlobalNorm.
 *
 * Tolerance: float64 results within 1e-12 * max(1, |want|) of the
 * reference (the kernels round differently only in the last bits);
 * float32 within 2e-6 * max(1, |want|); schedules and clipping within
 * 1e-12 (float64) or 1e-6 (float32) relative. */
#include <config.h>

#include <float.h>
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "train_harness.h"

static wf_runtime *rt;

static int setup(void **state) {
  rt = th_runtime_new(4);
  return rt ? 0 : -1;
}

static int teardown(void **state) {
  wf_runtime_free(rt);
  rt = NULL;
  return 0;
}

static void expect_near(const char *what, int64_t i, double got, double want,
                        double tol) {
  if (!(fabs(got - want) <= tol * fmax(1.0, fabs(want))))
    fail_msg("%s[%lld]: got %.17g, expected %.17g", what, (long long)i, got,
             want);
}

/* A new tensor of dtype and shape holding data (as doubles, converted). */
static wf_tensor *tensor_of(wf_dtype dt, const int64_t *dims, int rank,
                            const double *data) {
  wf_status *st = wf_status_new();
  wf_tensor *t = wf_tensor_new(dt, dims, rank, st);
  void *p;

  if (!t)
    fail_msg("tensor: %s", wf_status_message(st));
  p = wf_tensor_data(t);
  for (int64_t i = 0; i < wf_tensor_count(t); i++)
    switch (dt) {
    case WF_FLOAT32:
      ((float *)p)[i] = (float)data[i];
      break;
    case WF_FLOAT64:
      ((double *)p)[i] = data[i];
      break;
    case WF_INT32:
      ((int32_t *)p)[i] = (int32_t)data[i];
      break;
    case WF_INT64:
      ((int64_t *)p)[i] = (int64_t)data[i];
      break;
    default:
      fail_msg("tensor_of: dtype %d", (int)dt);
    }
  wf_status_free(st);
  return t;
}

/* A Const of dtype and shape holding data (doubles, converted). */
static wf_node *const_of(wf_graph *g, wf_dtype dt, const int64_t *dims,
                         int rank, const double *data) {
  wf_tensor *t = tensor_of(dt, dims, rank, data);
  wf_node_desc *d = wf_node_desc_new(g, "Const", NULL);

  wf_node_desc_set_attr_tensor(d, "value", t);
  wf_node_desc_set_attr_dtype(d, "dtype", dt);
  wf_tensor_release(t);
  return th_finish(d, "Const");
}

/* VarHandle `name` of dtype and shape; its initialiser (an AssignVariable
 * of data) is appended to inits[*ninits]. */
static wf_node *var_init(wf_graph *g, const char *name, wf_dtype dt,
                         const int64_t *dims, int rank, const double *data,
                         wf_node **inits, int *ninits) {
  wf_node *h = th_var(g, name, dt, dims, rank);

  inits[(*ninits)++] = th_assign(g, h, const_of(g, dt, dims, rank, data));
  return h;
}

/* Runs target with the feeds; returns the code. */
static int run_fed(wf_session *s, const wf_node *const *feeds,
                   wf_tensor *const *values, int n, wf_node *target,
                   wf_status *st) {
  wf_output outs[4];

  for (int i = 0; i < n; i++)
    outs[i] = th_out((wf_node *)feeds[i]);
  return wf_session_run(s, NULL, outs, values, n, NULL, NULL, 0, &target, 1,
                        NULL, st);
}

/* Node `op` on inputs in order, with an optional bool attribute; named
 * after the op ("ApplyAdam", "ApplyAdam_1", ...). */
static wf_node *apply_node(wf_graph *g, const char *op, wf_node *const *in,
                           int n, const char *battr, int bval, wf_status *st) {
  wf_node_desc *d = wf_node_desc_new(g, op, NULL);

  for (int i = 0; i < n; i++)
    wf_node_desc_add_input(d, th_out(in[i]));
  if (battr)
    wf_node_desc_set_attr_bool(d, battr, bval);
  return wf_node_desc_finish(d, st);
}

/* ---- reference updates (float64, element by element) ------------------- */

/* r[0] is the variable, r[1..] its slots in input order; s the scalar
 * inputs in input order (those before the gradient, then those after);
 * t the step count; flag use_nesterov or amsgrad. */
typedef void ref_fn(double *const *r, const double *g, int n, const double *s,
                    double t, int flag);

static void ref_sgd(double *const *r, const double *g, int n, const double *s,
                    double t, int flag) {
  for (int i = 0; i < n; i++)
    r[0][i] -= s[0] * g[i];
}

/* s: lr, momentum */
static void ref_momentum(double *const *r, const double *g, int n,
                         const double *s, double t, int nesterov) {
  double lr = s[0], mu = s[1];
  for (int i = 0; i < n; i++) {
    r[1][i] = mu * r[1][i] + g[i];
    if (nesterov)
      r[0][i] -= lr * g[i] + lr * mu * r[1][i];
    else
      r[0][i] -= lr * r[1][i];
  }
}

/* s: lr, beta1, beta2, epsilon[, weight_decay] */
static void adam_common(double *const *r, const double *g, int n,
                        const double *s, double t, int amsgrad, double wd) {
  double lr = s[0], b1 = s[1], b2 = s[2], eps = s[3];
  double alpha = lr * sqrt(1 - pow(b2, t)) / (1 - pow(b1, t));
  for (int i = 0; i < n; i++) {
    double denom;
    r[0][i] -= lr * wd * r[0][i];
    r[1][i] = b1 * r[1][i] + (1 - b1) * g[i];
    r[2][i] = b2 * r[2][i] + (1 - b2) * g[i] * g[i];
    if (amsgrad) {
      if (r[2][i] > r[3][i])
        r[3][i] = r[2][i];
      denom = sqrt(r[3][i]) + eps;
    } else {
      denom = sqrt(r[2][i]) + eps;
    }
    r[0][i] -= alpha * r[1][i] / denom;
  }
}

static void ref_adam(double *const *r, const double *g, int n, const double *s,
                     double t, int amsgrad) {
  adam_common(r, g, n, s, t, amsgrad, 0);
}

static void ref_adamw(double *const *r, const double *g, int n, const double *s,
                      double t, int amsgrad) {
  adam_common(r, g, n, s, t, amsgrad, s[4]);
}

/* s: lr, rho, momentum, epsilon */
static void ref_rmsprop(double *const *r, const double *g, int n,
                        const double *s, double t, int flag) {
  double lr = s[0], rho = s[1], mu = s[2], eps = s[3];
  for (int i = 0; i < n; i++) {
    r[1][i] = rho * r[1][i] + (1 - rho) * g[i] * g[i];
    r[2][i] = mu * r[2][i] + lr * g[i] / sqrt(r[1][i] + eps);
    r[0][i] -= r[2][i];
  }
}

/* slots mg, ms, mom; s: lr, rho, momentum, epsilon */
static void ref_centered_rmsprop(double *const *r, const double *g, int n,
                                 const double *s, double t, int flag) {
  double lr = s[0], rho = s[1], mu = s[2], eps = s[3];
  for (int i = 0; i < n; i++) {
    r[1][i] = rho * r[1][i] + (1 - rho) * g[i];
    r[2][i] = rho * r[2][i] + (1 - rho) * g[i] * g[i];
    r[3][i] =
        mu * r[3][i] + lr * g[i] / sqrt(r[2][i] - r[1][i] * r[1][i] + eps);
    r[0][i] -= r[3][i];
  }
}

/* s: lr, epsilon */
static void ref_adagrad(double *const *r, const double *g, int n,
                        const double *s, double t, int flag) {
  for (int i = 0; i < n; i++) {
    r[1][i] += g[i] * g[i];
    r[0][i] -= s[0] * g[i] / (sqrt(r[1][i]) + s[1]);
  }
}

/* ---- dense optimizers -------------------------------------------------- */

#define MAX_RES 4
#define NSTEPS 3

/* One optimizer op: inputs are [var, slots...] [scalars before] grad
 * [scalars after] [step]. */
typedef struct opt_case {
  const char *op;
  int nres;
  double slot_init[MAX_RES]; /* initial value of every element of slot k */
  int nbefore, nafter;
  double scalars[6]; /* before, then after */
  int has_step;
  const char *battr; /* use_nesterov / amsgrad, or NULL */
  int bval;
  ref_fn *ref;
} opt_case;

static const double w0[6] = {0.5, -1.25, 2, 0.75, -0.3, 1.1};
static const double grads[NSTEPS][6] = {{0.1, -0.2, 0.3, -0.4, 0.5, 0.05},
                                        {-0.3, 0.25, 0.05, 0.2, -0.1, 0.6},
                                        {0.7, 0.01, -0.45, 0.15, 0.35, -0.2}};

/* One optimizer op in a session: the variable and its slots (holding
 * init[k] at first), the scalars, the fed gradient and step. */
typedef struct opt_graph {
  const opt_case *c;
  wf_dtype dt;
  const int64_t *dims;
  int rank;
  wf_graph *g;
  wf_session *s;
  wf_status *st;
  wf_node *reads[MAX_RES], *grad, *step, *apply;
} opt_graph;

static void opt_graph_init(opt_graph *o, const opt_case *c, wf_dtype dt,
                           const int64_t *dims, int rank,
                           const double *const init[MAX_RES]) {
  static const char *const names[MAX_RES] = {"w", "slot1", "slot2", "slot3"};
  wf_node *inits[MAX_RES], *in[16];
  int ninits = 0, nin = 0;

  memset(o, 0, sizeof *o);
  o->c = c, o->dt = dt, o->dims = dims, o->rank = rank;
  o->g = wf_graph_new(rt);
  o->st = wf_status_new();
  for (int k = 0; k < c->nres; k++) {
    in[nin] = var_init(o->g, names[k], dt, dims, rank, init[k], inits,
                       &ninits);
    o->reads[k] = th_read(o->g, in[nin++], dt, dims, rank);
  }
  for (int k = 0; k < c->nbefore; k++)
    in[nin++] = const_of(o->g, dt, NULL, 0, &c->scalars[k]);
  o->grad = th_placeholder(o->g, "grad", dt, dims, rank);
  in[nin++] = o->grad;
  for (int k = 0; k < c->nafter; k++)
    in[nin++] = const_of(o->g, dt, NULL, 0, &c->scalars[c->nbefore + k]);
  if (c->has_step) {
    o->step = th_placeholder(o->g, "step", WF_INT64, NULL, 0);
    in[nin++] = o->step;
  }
  o->apply = apply_node(o->g, c->op, in, nin, c->battr, c->bval, o->st);
  if (!o->apply)
    fail_msg("adding %s: %s", c->op, wf_status_message(o->st));
  o->s = wf_session_new(o->g, o->st);
  assert_non_null(o->s);
  th_run_ok(o->s, inits, ninits);
}

/* Runs the op once as step t with gradient gd. */
static void opt_graph_step(opt_graph *o, const double *gd, int t) {
  const wf_node *feeds[2] = {o->grad, o->step};
  double tv = t;
  wf_tensor *vals[2] = {tensor_of(o->dt, o->dims, o->rank, gd),
                        tensor_of(WF_INT64, NULL, 0, &tv)};

  if (run_fed(o->s, feeds, vals, o->c->has_step ? 2 : 1, o->apply, o->st))
    fail_msg("%s step %d: %s", o->c->op, t, wf_status_message(o->st));
  wf_tensor_release(vals[0]);
  wf_tensor_release(vals[1]);
}

static void opt_graph_free(opt_graph *o) {
  wf_session_free(o->s);
  wf_status_free(o->st);
  wf_graph_free(o->g);
}

/* Runs c on a (2, 3) variable of dtype dt for NSTEPS steps and compares the
 * variable and every slot with the reference after each step. */
static void check_dense(const opt_case *c, wf_dtype dt, double tol) {
  static const char *const names[MAX_RES] = {"w", "slot1", "slot2", "slot3"};
  double ref[MAX_RES][6], *refp[MAX_RES];
  opt_graph o;

  for (int k = 0; k < c->nres; k++) {
    for (int i = 0; i < 6; i++)
      ref[k][i] = k == 0 ? w0[i] : c->slot_init[k];
    refp[k] = ref[k];
  }
  opt_graph_init(&o, c, dt, TH_DIMS(2, 3), 2, (const double *const *)refp);
  for (int t = 1; t <= NSTEPS; t++) {
    opt_graph_step(&o, grads[t - 1], t);
    c->ref(refp, grads[t - 1], 6, c->scalars, t, c->bval);
    for (int k = 0; k < c->nres; k++) {
      wf_tensor *v = th_fetch(o.s, o.reads[k]);
      char what[96];
      snprintf(what, sizeof what, "%s %s step %d %s", c->op, wf_dtype_name(dt),
               t, names[k]);
      for (int i = 0; i < 6; i++)
        expect_near(what, i, th_get(v, i), ref[k][i], tol);
      wf_tensor_release(v);
    }
  }
  opt_graph_free(&o);
}

static const opt_case gd_case = {.op = "ApplyGradientDescent",
                                 .nres = 1,
                                 .slot_init = {0},
                                 .nbefore = 1,
                                 .scalars = {0.1},
                                 .ref = ref_sgd};

static void test_gradient_descent_matches_reference(void **state) {
  check_dense(&gd_case, WF_FLOAT64, 1e-12);
  check_dense(&gd_case, WF_FLOAT32, 2e-6);
}

static void test_momentum_matches_reference(void **state) {
  opt_case c = {.op = "ApplyMomentum",
                .nres = 2,
                .slot_init = {0, 0.2},
                .nbefore = 1,
                .nafter = 1,
                .scalars = {0.1, 0.9},
                .ref = ref_momentum};
  check_dense(&c, WF_FLOAT64, 1e-12);
  c.battr = "use_nesterov";
  c.bval = 1;
  check_dense(&c, WF_FLOAT64, 1e-12);
}

static void test_adam_matches_reference(void **state) {
  opt_case c = {.op = "ApplyAdam",
                .nres = 4,
                .slot_init = {0, 0, 0, 0},
                .nbefore = 4,
                .scalars = {0.01, 0.9, 0.999, 1e-7},
                .has_step = 1,
                .ref = ref_adam};
  check_dense(&c, WF_FLOAT64, 1e-12);
  check_dense(&c, WF_FLOAT32, 2e-6);
  /* AMSGrad; vhat starts above some v so the maximum matters. */
  c.battr = "amsgrad";
  c.bval = 1;
  c.slot_init[3] = 0.01;
  check_dense(&c, WF_FLOAT64, 1e-12);
}

static void test_adamw_matches_reference(void **state) {
  opt_case c = {.op = "ApplyAdamW",
                .nres = 4,
                .slot_init = {0, 0.05, 0.01, 0},
                .nbefore = 5,
                .scalars = {0.01, 0.9, 0.999, 1e-7, 0.1},
                .has_step = 1,
                .ref = ref_adamw};
  check_dense(&c, WF_FLOAT64, 1e-12);
  c.battr = "amsgrad";
  c.bval = 1;
  check_dense(&c, WF_FLOAT64, 1e-12);
}

/* Float32 variables update in float32 arithmetic, one IEEE operation at a
 * time in the documented order (the order the CUDA plugin repeats), with
 * the constants derived from the hyperparameters in double and rounded
 * once. A variable of 37 elements takes the vector loop and its remainder.
 * Tolerance: none (bit for bit) against this float32 reference. */
#define F32N 37

/* A slot value below the smallest normal float is stored as a zero of its
 * sign (checked on its own below). */
static float flush_f(float x) {
  return fabsf(x) < FLT_MIN ? copysignf(0.0f, x) : x;
}

static void ref_adam_f32(float *w, float *m, float *v, float *vhat,
                         const float *g, const double *s, double t,
                         int amsgrad, double wd) {
  const float b1 = (float)s[1], b2 = (float)s[2], eps = (float)s[3];
  const float c1 = (float)(1 - s[1]), c2 = (float)(1 - s[2]);
  const float decay = (float)(s[0] * wd);
  const float alpha =
      (float)(s[0] * sqrt(1 - pow(s[2], t)) / (1 - pow(s[1], t)));

  for (int i = 0; i < F32N; i++) {
    float mi = flush_f(b1 * m[i] + c1 * g[i]);
    float vi = flush_f(b2 * v[i] + c2 * g[i] * g[i]);
    float d = vi, x = w[i];

    m[i] = mi;
    v[i] = vi;
    if (amsgrad) {
      d = fmaxf(vhat[i], vi);
      vhat[i] = d;
    }
    x = x - decay * x;
    w[i] = x - alpha * mi / (sqrtf(d) + eps);
  }
}

static void check_adam_f32(const char *op, int amsgrad) {
  static const char *const names[4] = {"fw", "fm", "fv", "fvhat"};
  /* lr, beta1, beta2, epsilon, weight_decay: float32 inputs, so the
   * kernel reads them as their float32 values */
  const double sc[5] = {(float)0.01, (float)0.9, (float)0.999, (float)1e-7,
                        (float)0.1};
  const int nsc = strcmp(op, "ApplyAdamW") == 0 ? 5 : 4;
  const double wd = nsc == 5 ? sc[4] : 0;
  const int64_t dims[1] = {F32N};
  wf_graph *g = wf_graph_new(rt);
  wf_status *st = wf_status_new();
  wf_node *inits[4], *in[16], *reads[4], *grad, *step, *apply;
  float ref[4][F32N];
  double init[4][F32N];
  int ninits = 0, nin = 0;
  wf_session *s;

  for (int i = 0; i < F32N; i++) {
    init[0][i] = 0.01 * sin(0.7 * i + 0.3); /* near the step size */
    init[1][i] = 0.01 * cos(1.3 * i);
    init[2][i] = 0.001 * (1 + sin(0.9 * i));
    init[3][i] = 0.002 * (i % 3);
    for (int k = 0; k < 4; k++)
      ref[k][i] = (float)init[k][i];
  }
  for (int k = 0; k < 4; k++) {
    in[nin] = var_init(g, names[k], WF_FLOAT32, dims, 1, init[k], inits,
                       &ninits);
    reads[k] = th_read(g, in[nin++], WF_FLOAT32, dims, 1);
  }
  for (int k = 0; k < nsc; k++)
    in[nin++] = const_of(g, WF_FLOAT32, NULL, 0, &sc[k]);
  grad = th_placeholder(g, "grad", WF_FLOAT32, dims, 1);
  in[nin++] = grad;
  step = th_placeholder(g, "step", WF_INT64, NULL, 0);
  in[nin++] = step;
  apply = apply_node(g, op, in, nin, "amsgrad", amsgrad, st);
  if (!apply)
    fail_msg("adding %s: %s", op, wf_status_message(st));
  s = wf_session_new(g, st);
  assert_non_null(s);
  th_run_ok(s, inits, ninits);

  for (int t = 1; t <= NSTEPS; t++) {
    const wf_node *feeds[2] = {grad, step};
    double gd[F32N], tv = t;
    float gf[F32N];
    wf_tensor *vals[2];

    for (int i = 0; i < F32N; i++) {
      gd[i] = 0.3 * sin(2.1 * i + t) * (i % 5 == 0 ? 1e-3 : 1);
      gf[i] = (float)gd[i];
    }
    vals[0] = tensor_of(WF_FLOAT32, dims, 1, gd);
    vals[1] = tensor_of(WF_INT64, NULL, 0, &tv);
    if (run_fed(s, feeds, vals, 2, apply, st))
      fail_msg("%s step %d: %s", op, t, wf_status_message(st));
    wf_tensor_release(vals[0]);
    wf_tensor_release(vals[1]);
    ref_adam_f32(ref[0], ref[1], ref[2], ref[3], gf, sc, t, amsgrad, wd);
    for (int k = 0; k < (amsgrad ? 4 : 3); k++) {
      wf_tensor *v = th_fetch(s, reads[k]);
      const float *got = wf_tensor_data(v);

      for (int i = 0; i < F32N; i++)
        if (memcmp(&got[i], &ref[k][i], sizeof got[i]) != 0)
          fail_msg("%s%s float32 step %d %s[%d]: got %.9g, expected %.9g",
                   op, amsgrad ? " (amsgrad)" : "", t, names[k], i,
                   (double)got[i], (double)ref[k][i]);
      wf_tensor_release(v);
    }
  }
  wf_session_free(s);
  wf_status_free(st);
  wf_graph_free(g);
}

static void test_float32_adam_computes_in_float32(void **state) {
  check_adam_f32("ApplyAdam", 0);
  check_adam_f32("ApplyAdam", 1);
  check_adam_f32("ApplyAdamW", 1);
}

/* ---- slots below the smallest normal number ---------------------------- */

/* How a slot's elements start and what one update with a zero gradient
 * (of the moment's sign: the rules' products flush to a zero of their
 * sign, to which +0 would add +0), every decay factor 0.5, leaves in them
 * (MIN: the type's smallest normal number): 'd' (a signed moment) 2 MIN, MIN, -MIN -> MIN, +0, -0; 's' (a
 * square's average) 2 MIN, MIN, MIN -> MIN, +0, +0; 'a' (Adagrad's sum of
 * squares) 0 with gradients 2^(e+1), 2^e, -2^e, where 2^(2e) is a quarter
 * of MIN: MIN, +0, +0; '-' not looked at. */
static double flush_init(char kind, int i, double min) {
  static const double d[3] = {2, 1, -1}, sq[3] = {2, 1, 1};
  return kind == 'd' ? d[i % 3] * min : kind == 's' ? sq[i % 3] * min : 0;
}

static double flush_want(char kind, int i, double min) {
  static const double d[3] = {1, 0.0, -0.0}, sq[3] = {1, 0.0, 0.0};
  return (kind == 'd' ? d[i % 3] : sq[i % 3]) * min;
}

#define FLN 37 /* the vector loops and their remainder */

/* Runs c once on a variable of FLN elements of dtype dt whose slots start
 * as kinds[k - 1] says, and checks every slot element's bits. */
static void check_flush(const opt_case *c, const char *kinds, wf_dtype dt) {
  static const char *const names[MAX_RES] = {"w", "slot1", "slot2", "slot3"};
  const double min = dt == WF_FLOAT32 ? FLT_MIN : DBL_MIN;
  const int e = dt == WF_FLOAT32 ? -64 : -512; /* 2^(2e) = MIN / 4 */
  const int64_t dims[1] = {FLN};
  double init[MAX_RES][FLN], gd[FLN];
  const double *initp[MAX_RES] = {init[0], init[1], init[2], init[3]};
  opt_graph o;

  for (int i = 0; i < FLN; i++) {
    init[0][i] = 0.5 - 0.01 * i;
    for (int k = 1; k < c->nres; k++)
      init[k][i] = flush_init(kinds[k - 1], i, min);
    gd[i] = strchr(kinds, 'a') ? ldexp(i % 3 == 2 ? -1 : 1, e + (i % 3 == 0))
                               : (i % 3 == 2 ? -0.0 : 0.0);
  }
  opt_graph_init(&o, c, dt, dims, 1, initp);
  opt_graph_step(&o, gd, 1);
  for (int k = 1; k < c->nres; k++) {
    wf_tensor *v;
    if (kinds[k - 1] == '-')
      continue;
    v = th_fetch(o.s, o.reads[k]);
    for (int i = 0; i < FLN; i++) {
      double got = th_get(v, i), want = flush_want(kinds[k - 1], i, min);
      if (got != want || signbit(got) != signbit(want))
        fail_msg("%s %s %s[%d]: got %a, expected %a", c->op,
                 wf_dtype_name(dt), names[k], i, got, want);
    }
    wf_tensor_release(v);
  }
  opt_graph_free(&o);
}

/* Moments that decay into the subnormal range would stay there (0.9 times
 * the smallest subnormal rounds back to it), and arithmetic on them is
 * ~100 times slower on Intel cores: every rule stores a slot value below
 * the smallest normal as a zero of its sign, in float32 and float64. */
static void test_slots_below_the_smallest_normal_are_stored_as_zero(
    void **state) {
  const opt_case cases[] = {
      {.op = "ApplyMomentum", .nres = 2, .nbefore = 1, .nafter = 1,
       .scalars = {0.1, 0.5}},
      {.op = "ApplyAdam", .nres = 4, .nbefore = 4,
       .scalars = {0.01, 0.5, 0.5, 1e-7}, .has_step = 1},
      {.op = "ApplyAdamW", .nres = 4, .nbefore = 5,
       .scalars = {0.01, 0.5, 0.5, 1e-7, 0.1}, .has_step = 1,
       .battr = "amsgrad", .bval = 1},
      {.op = "ApplyRMSProp", .nres = 3, .nbefore = 4,
       .scalars = {0.01, 0.5, 0.5, 1e-7}},
      {.op = "ApplyCenteredRMSProp", .nres = 4, .nbefore = 4,
       .scalars = {0.01, 0.5, 0.5, 1e-7}},
      {.op = "ApplyAdagrad", .nres = 2, .nbefore = 2, .scalars = {0.01, 1e-7}},
  };
  /* slots in input order; AMSGrad's vhat holds a maximum, which never
   * decays, and is not looked at */
  static const char *const kinds[] = {"d", "ds-", "ds-", "sd", "dsd", "a"};

  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    check_flush(&cases[k], kinds[k], WF_FLOAT32);
    check_flush(&cases[k], kinds[k], WF_FLOAT64);
  }
}

/* The rules compute with subnormal inputs and results read as zeros (as
 * TensorFlow's CPU kernels do; products that land there cost ~100 cycles
 * each on Intel cores): a gradient whose square is a quarter of the
 * smallest normal adds nothing to a second moment of three times the
 * smallest normal, where exact arithmetic would add that quarter times the
 * rule's factor. Float32 and float64; on machines whose units cannot
 * flush, only the stored slots are flushed, and this does not apply. */
static void test_subnormal_squares_add_nothing(void **state) {
#if defined(__x86_64__) || defined(__aarch64__)
  const opt_case cases[] = {
      {.op = "ApplyAdam", .nres = 4, .nbefore = 4,
       .scalars = {0.01, 0.5, 0.5, 1e-7}, .has_step = 1},
      {.op = "ApplyRMSProp", .nres = 3, .nbefore = 4,
       .scalars = {0.01, 0.5, 0.5, 1e-7}},
      {.op = "ApplyAdagrad", .nres = 2, .nbefore = 2, .scalars = {0.01, 1e-7}},
  };
  const int slot[] = {2, 1, 1};    /* the second moment's input */
  const double keep[] = {0.5, 0.5, 1}; /* its factor on the old value */
  const int64_t dims[1] = {FLN};

  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
    for (int d = 0; d < 2; d++) {
      wf_dtype dt = d ? WF_FLOAT64 : WF_FLOAT32;
      double min = dt == WF_FLOAT32 ? FLT_MIN : DBL_MIN;
      int e = dt == WF_FLOAT32 ? -64 : -512; /* 2^(2e) = min / 4 */
      double init[MAX_RES][FLN] = {{0}}, gd[FLN];
      const double *initp[MAX_RES] = {init[0], init[1], init[2], init[3]};
      opt_graph o;
      wf_tensor *v;

      for (int i = 0; i < FLN; i++) {
        init[0][i] = 0.5 - 0.01 * i;
        init[slot[c]][i] = 3 * min;
        gd[i] = ldexp(i % 2 ? -1 : 1, e);
      }
      opt_graph_init(&o, &cases[c], dt, dims, 1, initp);
      opt_graph_step(&o, gd, 1);
      v = th_fetch(o.s, o.reads[slot[c]]);
      for (int i = 0; i < FLN; i++) {
        double got = th_get(v, i), want = keep[c] * 3 * min;
        if (got != want)
          fail_msg("%s %s slot %d [%d]: got %a, expected %a (exact "
                   "arithmetic: %a)",
                   cases[c].op, wf_dtype_name(dt), slot[c], i, got, want,
                   want + (1 - keep[c] ? 1 - keep[c] : 1) * min / 4);
      }
      wf_tensor_release(v);
      opt_graph_free(&o);
    }
#else
  skip();
#endif
  (void)state;
}

static void test_rmsprop_matches_reference(void **state) {
  opt_case c = {.op = "ApplyRMSProp",
                .nres = 3,
                .slot_init = {0, 0.1, 0},
                .nbefore = 4,
                .scalars = {0.01, 0.9, 0.5, 1e-7},
                .ref = ref_rmsprop};
  check_dense(&c, WF_FLOAT64, 1e-12);
}

static void test_centered_rmsprop_matches_reference(void **state) {
  opt_case c = {.op = "ApplyCenteredRMSProp",
                .nres = 4,
                .slot_init = {0, 0, 0.1, 0},
                .nbefore = 4,
                .scalars = {0.01, 0.9, 0.5, 1e-7},
                .ref = ref_centered_rmsprop};
  check_dense(&c, WF_FLOAT64, 1e-12);
}

static void test_adagrad_matches_reference(void **state) {
  opt_case c = {.op = "ApplyAdagrad",
                .nres = 2,
                .slot_init = {0, 0.1},
                .nbefore = 2,
                .scalars = {0.5, 0.01},
                .ref = ref_adagrad};
  check_dense(&c, WF_FLOAT64, 1e-12);
  check_dense(&c, WF_FLOAT32, 2e-6);
}

/* ---- sparse optimizers ------------------------------------------------- */

#define ROWS 5
#define WIDTH 2

/* Sparse steps: rows and their values (K, 2); duplicates on purpose. */
typedef struct sparse_step {
  int k;
  double idx[4];
  double values[4][WIDTH];
} sparse_step;

static const sparse_step sparse_steps[NSTEPS] = {
    {3, {3, 1, 3}, {{0.1, -0.2}, {0.3, 0.4}, {-0.5, 0.25}}},
    {4, {0, 4, 0, 0}, {{0.2, 0.1}, {-0.3, 0.6}, {0.05, -0.1}, {0.4, 0.3}}},
    {2, {1, 2}, {{-0.7, 0.2}, {0.15, -0.35}}}};

/* Runs the sparse op of c (inputs as the dense op's with the gradient
 * replaced by values and indices) on a (5, 2) float64 variable and checks
 * variable and slots after each step against the dense reference applied
 * to each touched row with its summed values; untouched rows must not
 * change at all. */
static void check_sparse(const opt_case *c, wf_dtype index_dtype) {
  static const char *const names[MAX_RES] = {"sw", "sslot1", "sslot2",
                                             "sslot3"};
  wf_graph *g = wf_graph_new(rt);
  wf_status *st = wf_status_new();
  wf_node *inits[MAX_RES], *in[16], *reads[MAX_RES], *values, *indices;
  wf_node *step = NULL, *apply;
  int ninits = 0, nin = 0;
  double ref[MAX_RES][ROWS * WIDTH];
  wf_session *s;

  for (int k = 0; k < c->nres; k++) {
    for (int i = 0; i < ROWS * WIDTH; i++)
      ref[k][i] = k == 0 ? 0.1 * i - 0.3 : c->slot_init[k];
    in[nin] = var_init(g, names[k], WF_FLOAT64, TH_DIMS(ROWS, WIDTH), 2, ref[k],
                       inits, &ninits);
    reads[k] = th_read(g, in[nin++], WF_FLOAT64, TH_DIMS(ROWS, WIDTH), 2);
  }
  for (int k = 0; k < c->nbefore; k++)
    in[nin++] = const_of(g, WF_FLOAT64, NULL, 0, &c->scalars[k]);
  values = th_placeholder(g, "values", WF_FLOAT64, TH_DIMS(-1, WIDTH), 2);
  indices = th_placeholder(g, "indices", index_dtype, TH_DIMS(-1), 1);
  in[nin++] = values;
  in[nin++] = indices;
  for (int k = 0; k < c->nafter; k++)
    in[nin++] = const_of(g, WF_FLOAT64, NULL, 0, &c->scalars[c->nbefore + k]);
  if (c->has_step) {
    step = th_placeholder(g, "step", WF_INT64, NULL, 0);
    in[nin++] = step;
  }
  apply = apply_node(g, c->op, in, nin, c->battr, c->bval, st);
  if (!apply)
    fail_msg("adding %s: %s", c->op, wf_status_message(st));
  s = wf_session_new(g, st);
  assert_non_null(s);
  th_run_ok(s, inits, ninits);

  for (int t = 1; t <= NSTEPS; t++) {
    const sparse_step *ss = &sparse_steps[t - 1];
    const wf_node *feeds[3] = {values, indices, step};
    double tv = t;
    wf_tensor *vals[3] = {
        tensor_of(WF_FLOAT64, TH_DIMS(ss->k, WIDTH), 2, &ss->values[0][0]),
        tensor_of(index_dtype, TH_DIMS(ss->k), 1, ss->idx),
        tensor_of(WF_INT64, NULL, 0, &tv)};

    if (run_fed(s, feeds, vals, c->has_step ? 3 : 2, apply, st))
      fail_msg("%s step %d: %s", c->op, t, wf_status_message(st));
    for (int i = 0; i < 3; i++)
      wf_tensor_release(vals[i]);
    /* The reference: each touched row once, with its values summed. */
    for (int row = 0; row < ROWS; row++) {
      double gsum[WIDTH] = {0};
      int touched = 0;
      double *rows[MAX_RES];
      for (int j = 0; j < ss->k; j++)
        if ((int)ss->idx[j] == row) {
          touched = 1;
          for (int w = 0; w < WIDTH; w++)
            gsum[w] += ss->values[j][w];
        }
      if (!touched)
        continue;
      for (int k = 0; k < c->nres; k++)
        rows[k] = ref[k] + row * WIDTH;
      c->ref(rows, gsum, WIDTH, c->scalars, t, c->bval);
    }
    for (int k = 0; k < c->nres; k++) {
      wf_tensor *v = th_fetch(s, reads[k]);
      char what[96];
      snprintf(what, sizeof what, "%s step %d %s", c->op, t, names[k]);
      for (int i = 0; i < ROWS * WIDTH; i++)
        expect_near(what, i, th_get(v, i), ref[k][i], 1e-12);
      wf_tensor_release(v);
    }
  }
  wf_session_free(s);
  wf_status_free(st);
  wf_graph_free(g);
}

static void test_sparse_gradient_descent_updates_named_rows(void **state) {
  opt_case c = gd_case;
  c.op = "SparseApplyGradientDescent";
  check_sparse(&c, WF_INT32);
  check_sparse(&c, WF_INT64);
}

static void test_sparse_momentum_updates_named_rows(void **state) {
  opt_case c = {.op = "SparseApplyMomentum",
                .nres = 2,
                .slot_init = {0, 0.2},
                .nbefore = 1,
                .nafter = 1,
                .scalars = {0.1, 0.9},
                .ref = ref_momentum};
  check_sparse(&c, WF_INT64);
  c.battr = "use_nesterov";
  c.bval = 1;
  check_sparse(&c, WF_INT32);
}

static void test_sparse_adam_is_lazy(void **state) {
  /* Slots start non-zero, so dense Adam would decay untouched rows' m and
   * v: check_sparse requires them unchanged. */
  opt_case c = {.op = "SparseApplyAdam",
                .nres = 4,
                .slot_init = {0, 0.05, 0.02, 0},
                .nbefore = 4,
                .scalars = {0.01, 0.9, 0.999, 1e-7},
                .has_step = 1,
                .ref = ref_adam};
  check_sparse(&c, WF_INT64);
  c.battr = "amsgrad";
  c.bval = 1;
  c.slot_init[3] = 0.03;
  check_sparse(&c, WF_INT32);
}

static void test_sparse_adagrad_updates_named_rows(void **state) {
  opt_case c = {.op = "SparseApplyAdagrad",
                .nres = 2,
                .slot_init = {0, 0.1},
                .nbefore = 2,
                .scalars = {0.5, 0.01},
                .ref = ref_adagrad};
  check_sparse(&c, WF_INT64);
}

static void test_sparse_rmsprop_updates_named_rows(void **state) {
  opt_case c = {.op = "SparseApplyRMSProp",
                .nres = 3,
                .slot_init = {0, 0.1, 0.02},
                .nbefore = 4,
                .scalars = {0.01, 0.9, 0.5, 1e-7},
                .ref = ref_rmsprop};
  check_sparse(&c, WF_INT32);
}

static void test_sparse_index_out_of_range_changes_nothing(void **state) {
  wf_graph *g = wf_graph_new(rt);
  wf_status *st = wf_status_new();
  const double init[ROWS * WIDTH] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  const double idx[2] = {1, 7}, vals[4] = {1, 1, 1, 1}, lr = 1;
  wf_node *inits[1], *in[4], *apply;
  int ninits = 0;
  wf_tensor *v;
  wf_session *s;

  in[0] = var_init(g, "table", WF_FLOAT64, TH_DIMS(ROWS, WIDTH), 2, init, inits,
                   &ninits);
  in[1] = const_of(g, WF_FLOAT64, NULL, 0, &lr);
  in[2] = const_of(g, WF_FLOAT64, TH_DIMS(2, WIDTH), 2, vals);
  in[3] = const_of(g, WF_INT64, TH_DIMS(2), 1, idx);
  apply = apply_node(g, "SparseApplyGradientDescent", in, 4, NULL, 0, st);
  assert_non_null(apply);
  s = wf_session_new(g, st);
  th_run_ok(s, inits, ninits);
  assert_int_equal(th_run_targets(s, &apply, 1, st), WF_INVALID_ARGUMENT);
  th_expect_message(st, "SparseApplyGradientDescent", "indices[1] = 7", "table",
                    NULL);
  v = th_fetch(s, th_read(g, in[0], WF_FLOAT64, TH_DIMS(ROWS, WIDTH), 2));
  assert_memory_equal(wf_tensor_data(v), init, sizeof init);
  wf_tensor_release(v);
  wf_session_free(s);
  wf_status_free(st);
  wf_graph_free(g);
}

/* ---- refusals ---------------------------------------------------------- */

static void test_bad_slots_and_inputs_are_refused(void **state) {
  wf_graph *g = wf_graph_new(rt);
  wf_status *st = wf_status_new();
  const double six[6] = {0}, three[3] = {0}, lr = 0.1, mu = 0.9;
  wf_node *inits[3], *in[5], *n;
  int ninits = 0;
  wf_node *w =
      var_init(g, "w", WF_FLOAT64, TH_DIMS(2, 3), 2, six, inits, &ninits);
  wf_node *small = var_init(g, "small_accum", WF_FLOAT64, TH_DIMS(3), 1, three,
                            inits, &ninits);
  wf_node *cold = th_var(g, "cold_accum", WF_FLOAT64, TH_DIMS(2, 3), 2);
  wf_node *grad = const_of(g, WF_FLOAT64, TH_DIMS(2, 3), 2, six);
  wf_node *bad_grad = const_of(g, WF_FLOAT64, TH_DIMS(3), 1, three);
  wf_node *lrn = const_of(g, WF_FLOAT64, NULL, 0, &lr);
  wf_node *mun = const_of(g, WF_FLOAT64, NULL, 0, &mu);
  wf_session *s;

  s = wf_session_new(g, st);
  th_run_ok(s, inits, ninits);

  /* A slot of another shape names the slot's variable. */
  in[0] = w, in[1] = small, in[2] = lrn, in[3] = grad, in[4] = mun;
  n = apply_node(g, "ApplyMomentum", in, 5, NULL, 0, st);
  assert_int_equal(th_run_targets(s, &n, 1, st), WF_INVALID_ARGUMENT);
  th_expect_message(st, "accum", "small_accum", "(3)", "(2, 3)", NULL);

  /* One variable as var and slot. */
  in[1] = w;
  n = apply_node(g, "ApplyMomentum", in, 5, NULL, 0, st);
  assert_non_null(n);
  assert_int_equal(th_run_targets(s, &n, 1, st), WF_INVALID_ARGUMENT);
  th_expect_message(st, "'var'", "'accum'", "same variable", NULL);

  /* An uninitialised slot. */
  in[1] = cold;
  n = apply_node(g, "ApplyMomentum", in, 5, NULL, 0, st);
  assert_non_null(n);
  assert_int_equal(th_run_targets(s, &n, 1, st), WF_FAILED_PRECONDITION);
  th_expect_message(st, "cold_accum", NULL);

  /* A gradient of another shape. */
  in[0] = w, in[1] = lrn, in[2] = bad_grad;
  n = apply_node(g, "ApplyGradientDescent", in, 3, NULL, 0, st);
  assert_non_null(n);
  assert_int_equal(th_run_targets(s, &n, 1, st), WF_INVALID_ARGUMENT);
  th_expect_message(st, "'w'", "(2, 3)", "(3)", NULL);

  /* A learning rate that is not a scalar is refused while building. */
  in[1] = bad_grad, in[2] = grad;
  assert_null(apply_node(g, "ApplyGradientDescent", in, 3, NULL, 0, st));
  th_expect_message(st, "lr", "scalar", NULL);
  wf_session_free(s);
  wf_status_free(st);
  wf_graph_free(g);
}

static void test_adam_refuses_step_zero(void **state) {
  wf_graph *g = wf_graph_new(rt);
  wf_status *st = wf_status_new();
  const double six[6] = {0}, lr = 0.1, beta = 0.9, eps = 1e-7, step0 = 0;
  wf_node *inits[3], *in[10], *n;
  int ninits = 0;
  wf_session *s;

  in[0] = var_init(g, "w", WF_FLOAT64, TH_DIMS(2, 3), 2, six, inits, &ninits);
  in[1] = var_init(g, "m", WF_FLOAT64, TH_DIMS(2, 3), 2, six, inits, &ninits);
  in[2] = var_init(g, "v", WF_FLOAT64, TH_DIMS(2, 3), 2, six, inits, &ninits);
  in[3] = in[2]; /* vhat: unused without amsgrad, so any handle will do */
  in[4] = const_of(g, WF_FLOAT64, NULL, 0, &lr);
  in[5] = in[6] = const_of(g, WF_FLOAT64, NULL, 0, &beta);
  in[7] = const_of(g, WF_FLOAT64, NULL, 0, &eps);
  in[8] = const_of(g, WF_FLOAT64, TH_DIMS(2, 3), 2, six);
  in[9] = const_of(g, WF_INT64, NULL, 0, &step0);
  n = apply_node(g, "ApplyAdam", in, 10, NULL, 0, st);
  if (!n)
    fail_msg("adding ApplyAdam: %s", wf_status_message(st));
  s = wf_session_new(g, st);
  th_run_ok(s, inits, ninits);
  assert_int_equal(th_run_targets(s, &n, 1, st), WF_INVALID_ARGUMENT);
  th_expect_message(st, "ApplyAdam", "step", "1-based", NULL);
  wf_session_free(s);
  wf_status_free(st);
  wf_graph_free(g);
}

/* ---- concurrency ------------------------------------------------------- */

#define CONC_THREADS 4
#define CONC_RUNS 150

typedef struct conc_job {
  wf_session *s;
  wf_node *target;
  int failures;
} conc_job;

static void *conc_thread(void *arg) {
  conc_job *job = arg;
  wf_status *st = wf_status_new();

  for (int i = 0; i < CONC_RUNS; i++)
    if (th_run_targets(job->s, &job->target, 1, st))
      job->failures++;
  wf_status_free(st);
  return NULL;
}

/* Two momentum updates lock the same two variables named in opposite
 * input order (x as var and y as slot, and the reverse): ordered locking
 * keeps them from deadlocking. A gradient-descent update shared by all
 * threads must not lose a step. */
static void
test_concurrent_updates_neither_deadlock_nor_lose_steps(void **state) {
  wf_graph *g = wf_graph_new(rt);
  wf_status *st = wf_status_new();
  const double zeros[8] = {0}, ones[8] = {1, 1, 1, 1, 1, 1, 1, 1};
  const double lr = 1, small = 1e-3, mu = 0.5;
  wf_node *inits[3], *in[5], *targets[3], *gd_var;
  int ninits = 0;
  wf_node *x =
      var_init(g, "x", WF_FLOAT64, TH_DIMS(8), 1, zeros, inits, &ninits);
  wf_node *y =
      var_init(g, "y", WF_FLOAT64, TH_DIMS(8), 1, zeros, inits, &ninits);
  wf_node *one = const_of(g, WF_FLOAT64, TH_DIMS(8), 1, ones);
  pthread_t threads[CONC_THREADS];
  conc_job jobs[CONC_THREADS];
  wf_session *s;
  wf_tensor *v;

  gd_var =
      var_init(g, "counted", WF_FLOAT64, TH_DIMS(8), 1, zeros, inits, &ninits);
  in[0] = x, in[1] = y, in[2] = const_of(g, WF_FLOAT64, NULL, 0, &small);
  in[3] = one, in[4] = const_of(g, WF_FLOAT64, NULL, 0, &mu);
  targets[0] = apply_node(g, "ApplyMomentum", in, 5, NULL, 0, st);
  in[0] = y, in[1] = x;
  targets[1] = apply_node(g, "ApplyMomentum", in, 5, NULL, 0, st);
  in[0] = gd_var, in[1] = const_of(g, WF_FLOAT64, NULL, 0, &lr), in[2] = one;
  targets[2] = apply_node(g, "ApplyGradientDescent", in, 3, NULL, 0, st);
  assert_non_null(targets[0]);
  assert_non_null(targets[1]);
  assert_non_null(targets[2]);
  s = wf_session_new(g, st);
  th_run_ok(s, inits, ninits);
  for (int t = 0; t < CONC_THREADS; t++) {
    /* Threads 0 and 1 alternate the momentum pair; all also run GD. */
    jobs[t] = (conc_job){s, targets[t < 2 ? t : 2], 0};
    assert_int_equal(pthread_create(&threads[t], NULL, conc_thread, &jobs[t]),
                     0);
  }
  for (int t = 0; t < CONC_THREADS; t++) {
    pthread_join(threads[t], NULL);
    assert_int_equal(jobs[t].failures, 0);
  }
  v = th_fetch(s, th_read(g, gd_var, WF_FLOAT64, TH_DIMS(8), 1));
  for (int i = 0; i < 8; i++)
    assert_true(th_get(v, i) == -(double)((CONC_THREADS - 2) * CONC_RUNS));
  wf_tensor_release(v);
  wf_session_free(s);
  wf_status_free(st);
  wf_graph_free(g);
}

/* ---- schedules --------------------------------------------------------- */

typedef struct sched_point {
  int64_t step;
  double want;
} sched_point;

/* Evaluates schedule node n (input 0: a fed int64 step) at each point. */
static void check_schedule(wf_graph *g, wf_node *n, wf_node *step,
                           const sched_point *pts, int npts, double tol) {
  wf_session *s = wf_session_new(g, NULL);
  wf_status *st = wf_status_new();

  for (int i = 0; i < npts; i++) {
    wf_output feed = th_out(step), fetch = th_out(n);
    wf_tensor *sv = wf_tensor_new(WF_INT64, NULL, 0, st), *v = NULL;
    *(int64_t *)wf_tensor_data(sv) = pts[i].step;
    if (wf_session_run(s, NULL, &feed, &sv, 1, &fetch, &v, 1, NULL, 0, NULL,
                       st))
      fail_msg("%s at step %lld: %s", wf_node_name(n), (long long)pts[i].step,
               wf_status_message(st));
    expect_near(wf_node_name(n), pts[i].step, th_get(v, 0), pts[i].want, tol);
    wf_tensor_release(v);
    wf_tensor_release(sv);
  }
  wf_status_free(st);
  wf_session_free(s);
}

/* The description of schedule op `op` on step (and lr, for LinearWarmup;
 * otherwise the output dtype is dt); attributes are set by the caller. */
static wf_node_desc *schedule(wf_graph *g, const char *op, wf_node *step,
                              wf_node *lr, wf_dtype dt) {
  wf_node_desc *d = wf_node_desc_new(g, op, NULL);

  wf_node_desc_add_input(d, th_out(step));
  if (lr)
    wf_node_desc_add_input(d, th_out(lr));
  else
    wf_node_desc_set_attr_dtype(d, "dtype", dt);
  return d;
}

static void test_exponential_decay_matches_hand_values(void **state) {
  wf_graph *g = wf_graph_new(rt);
  wf_node *step = th_placeholder(g, "step", WF_INT64, NULL, 0);
  wf_node_desc *d;
  wf_node *smooth, *stairs;
  const sched_point smooth_pts[] = {{0, 0.1},
                                    {5, 0.070710678118654752},
                                    {10, 0.05},
                                    {25, 0.017677669529663688}};
  const sched_point stair_pts[] = {{0, 0.1}, {9, 0.1}, {10, 0.05}, {25, 0.025}};

  for (int k = 0; k < 2; k++) {
    d = schedule(g, "ExponentialDecay", step, NULL,
                 k ? WF_FLOAT32 : WF_FLOAT64);
    wf_node_desc_set_attr_float(d, "learning_rate", 0.1);
    wf_node_desc_set_attr_int(d, "decay_steps", 10);
    wf_node_desc_set_attr_float(d, "decay_rate", 0.5);
    wf_node_desc_set_attr_bool(d, "staircase", k);
    if (k)
      stairs = th_finish(d, "ExponentialDecay");
    else
      smooth = th_finish(d, "ExponentialDecay");
  }
  check_schedule(g, smooth, step, smooth_pts, 4, 1e-12);
  check_schedule(g, stairs, step, stair_pts, 4, 1e-6);
  wf_graph_free(g);
}

static void test_piecewise_constant_matches_hand_values(void **state) {
  wf_graph *g = wf_graph_new(rt);
  wf_status *st = wf_status_new();
  wf_node *step = th_placeholder(g, "step", WF_INT64, NULL, 0);
  const int64_t bounds[2] = {10, 20}, bad_bounds[2] = {20, 10};
  const double values[3] = {1, 0.5, 0.1};
  const sched_point pts[] = {{0, 1},    {10, 1},   {11, 0.5},
                             {20, 0.5}, {21, 0.1}, {1000, 0.1}};
  wf_node_desc *d;
  wf_node *n;

  d = schedule(g, "PiecewiseConstant", step, NULL, WF_FLOAT64);
  wf_node_desc_set_attr_int_list(d, "boundaries", bounds, 2);
  wf_node_desc_set_attr_float_list(d, "values", values, 3);
  n = th_finish(d, "PiecewiseConstant");
  check_schedule(g, n, step, pts, 6, 1e-12);

  d = wf_node_desc_new(g, "PiecewiseConstant", "too_few_values");
  wf_node_desc_add_input(d, th_out(step));
  wf_node_desc_set_attr_int_list(d, "boundaries", bounds, 2);
  wf_node_desc_set_attr_float_list(d, "values", values, 2);
  assert_null(wf_node_desc_finish(d, st));
  th_expect_message(st, "too_few_values", "need 3 values", NULL);

  d = wf_node_desc_new(g, "PiecewiseConstant", "decreasing");
  wf_node_desc_add_input(d, th_out(step));
  wf_node_desc_set_attr_int_list(d, "boundaries", bad_bounds, 2);
  wf_node_desc_set_attr_float_list(d, "values", values, 3);
  assert_null(wf_node_desc_finish(d, st));
  th_expect_message(st, "decreasing", "increase strictly", NULL);
  wf_status_free(st);
  wf_graph_free(g);
}

static void test_cosine_decay_matches_hand_values(void **state) {
  wf_graph *g = wf_graph_new(rt);
  wf_node *step = th_placeholder(g, "step", WF_INT64, NULL, 0);
  /* (1 + cos(pi s / 100)) / 2 * 0.9 + 0.1 */
  const sched_point pts[] = {
      {0, 1}, {25, 0.86819805153394639}, {50, 0.55}, {100, 0.1}, {200, 0.1}};
  wf_node_desc *d = schedule(g, "CosineDecay", step, NULL, WF_FLOAT64);
  wf_node *n;

  wf_node_desc_set_attr_float(d, "learning_rate", 1);
  wf_node_desc_set_attr_int(d, "decay_steps", 100);
  wf_node_desc_set_attr_float(d, "alpha", 0.1);
  n = th_finish(d, "CosineDecay");
  check_schedule(g, n, step, pts, 5, 1e-12);
  wf_graph_free(g);
}

static void test_linear_warmup_matches_hand_values(void **state) {
  wf_graph *g = wf_graph_new(rt);
  wf_status *st = wf_status_new();
  wf_node *step = th_placeholder(g, "step", WF_INT64, NULL, 0);
  const double half = 0.5;
  wf_node *lr = const_of(g, WF_FLOAT64, NULL, 0, &half);
  const sched_point pts[] = {{0, 0.05}, {5, 0.275}, {10, 0.5}, {15, 0.5}};
  wf_node_desc *d = schedule(g, "LinearWarmup", step, lr, WF_FLOAT64);
  wf_node *n;
  wf_output feed = th_out(step), fetch;
  wf_tensor *sv, *v = NULL;
  wf_session *s;

  wf_node_desc_set_attr_int(d, "warmup_steps", 10);
  wf_node_desc_set_attr_float(d, "initial_fraction", 0.1);
  n = th_finish(d, "LinearWarmup");
  check_schedule(g, n, step, pts, 4, 1e-12);

  /* A negative step is refused, naming the node. */
  s = wf_session_new(g, st);
  sv = wf_tensor_new(WF_INT64, NULL, 0, st);
  *(int64_t *)wf_tensor_data(sv) = -3;
  fetch = th_out(n);
  assert_int_equal(
      wf_session_run(s, NULL, &feed, &sv, 1, &fetch, &v, 1, NULL, 0, NULL, st),
      WF_INVALID_ARGUMENT);
  th_expect_message(st, "LinearWarmup", "-3", NULL);
  wf_tensor_release(sv);
  wf_session_free(s);
  wf_status_free(st);
  wf_graph_free(g);
}

/* ---- ClipByGlobalNorm -------------------------------------------------- */

/* Clips t1 = (3, 0) and t2 = ((0, 4)) (global norm 5) to clip_norm; the
 * outputs must be scale * inputs and the norm 5. */
static void check_clip(wf_dtype dt, double clip, const double *x1,
                       const double *x2, double want_norm, double scale,
                       double tol) {
  wf_graph *g = wf_graph_new(rt);
  wf_status *st = wf_status_new();
  wf_output ins[2], outs[3];
  wf_tensor *v[3] = {NULL, NULL, NULL};
  wf_node_desc *d;
  wf_node *n;
  wf_session *s;

  ins[0] = th_out(const_of(g, dt, TH_DIMS(2), 1, x1));
  ins[1] = th_out(const_of(g, dt, TH_DIMS(1, 2), 2, x2));
  d = wf_node_desc_new(g, "ClipByGlobalNorm", NULL);
  wf_node_desc_add_input_list(d, ins, 2);
  wf_node_desc_add_input(d, th_out(const_of(g, dt, NULL, 0, &clip)));
  n = th_finish(d, "ClipByGlobalNorm");
  assert_int_equal(wf_node_num_outputs(n), 3);
  for (int i = 0; i < 3; i++)
    outs[i] = (wf_output){n, i};
  s = wf_session_new(g, st);
  if (wf_session_run(s, NULL, NULL, NULL, 0, outs, v, 3, NULL, 0, NULL, st))
    fail_msg("ClipByGlobalNorm: %s", wf_status_message(st));
  for (int i = 0; i < 2; i++) {
    expect_near("clipped t1", i, th_get(v[0], i), x1[i] * scale, tol);
    expect_near("clipped t2", i, th_get(v[1], i), x2[i] * scale, tol);
  }
  expect_near("global_norm", 0, th_get(v[2], 0), want_norm, tol);
  for (int i = 0; i < 3; i++)
    wf_tensor_release(v[i]);
  wf_session_free(s);
  wf_status_free(st);
  wf_graph_free(g);
}

static void test_clip_by_global_norm_scales_the_list(void **state) {
  const double x1[2] = {3, 0}, x2[2] = {0, 4};

  check_clip(WF_FLOAT64, 2.5, x1, x2, 5, 0.5, 1e-12);
  check_clip(WF_FLOAT32, 2.5, x1, x2, 5, 0.5, 1e-6);
  check_clip(WF_FLOAT64, 10, x1, x2, 5, 1, 1e-12); /* under the limit */
}

static void test_clip_by_global_norm_of_infinity_is_nan(void **state) {
  wf_graph *g = wf_graph_new(rt);
  wf_status *st = wf_status_new();
  const double x[2] = {INFINITY, 1}, clip = 1, bad = 0;
  wf_output in = th_out(const_of(g, WF_FLOAT64, TH_DIMS(2), 1, x)), outs[2];
  wf_tensor *v[2] = {NULL, NULL};
  wf_node_desc *d;
  wf_node *n, *refused;
  wf_session *s;

  d = wf_node_desc_new(g, "ClipByGlobalNorm", NULL);
  wf_node_desc_add_input_list(d, &in, 1);
  wf_node_desc_add_input(d, th_out(const_of(g, WF_FLOAT64, NULL, 0, &clip)));
  n = th_finish(d, "ClipByGlobalNorm");
  d = wf_node_desc_new(g, "ClipByGlobalNorm", "zero_clip");
  wf_node_desc_add_input_list(d, &in, 1);
  wf_node_desc_add_input(d, th_out(const_of(g, WF_FLOAT64, NULL, 0, &bad)));
  refused = th_finish(d, "ClipByGlobalNorm");
  outs[0] = (wf_output){n, 0};
  outs[1] = (wf_output){n, 1};
  s = wf_session_new(g, st);
  if (wf_session_run(s, NULL, NULL, NULL, 0, outs, v, 2, NULL, 0, NULL, st))
    fail_msg("ClipByGlobalNorm: %s", wf_status_message(st));
  assert_true(isnan(th_get(v[0], 0)) && isnan(th_get(v[0], 1)));
  assert_true(isinf(th_get(v[1], 0)));
  wf_tensor_release(v[0]);
  wf_tensor_release(v[1]);
  outs[0] = (wf_output){refused, 0};
  v[0] = NULL;
  assert_int_equal(
      wf_session_run(s, NULL, NULL, NULL, 0, outs, v, 1, NULL, 0, NULL, st),
      WF_INVALID_ARGUMENT);
  th_expect_message(st, "zero_clip", "clip_norm", NULL);
  wf_session_free(s);
  wf_status_free(st);
  wf_graph_free(g);
}

static void test_train_ops_are_not_differentiable(void **state) {
  static const char *const ops[] = {"ApplyGradientDescent",
                                    "ApplyMomentum",
                                    "ApplyAdam",
                                    "ApplyAdamW",
                                    "ApplyRMSProp",
                                    "ApplyCenteredRMSProp",
                                    "ApplyAdagrad",
                                    "SparseApplyGradientDescent",
                                    "SparseApplyMomentum",
                                    "SparseApplyAdam",
                                    "SparseApplyAdagrad",
                                    "SparseApplyRMSProp",
                                    "ClipByGlobalNorm",
                                    "ExponentialDecay",
                                    "PiecewiseConstant",
                                    "CosineDecay",
                                    "LinearWarmup"};

  for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
    const wf_op_def *def = wf_runtime_op_find(rt, ops[i]);
    if (!def)
      fail_msg("op %s is not registered", ops[i]);
    assert_int_equal(wf_runtime_op_gradient(rt, ops[i]), 0);
    /* The updates are stateful (never merged or folded). */
    assert_int_equal((def->flags & WF_OP_STATEFUL) != 0, i < 12);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_gradient_descent_matches_reference),
      cmocka_unit_test(test_momentum_matches_reference),
      cmocka_unit_test(test_adam_matches_reference),
      cmocka_unit_test(test_adamw_matches_reference),
      cmocka_unit_test(test_float32_adam_computes_in_float32),
      cmocka_unit_test(test_slots_below_the_smallest_normal_are_stored_as_zero),
      cmocka_unit_test(test_subnormal_squares_add_nothing),
      cmocka_unit_test(test_rmsprop_matches_reference),
      cmocka_unit_test(test_centered_rmsprop_matches_reference),
      cmocka_unit_test(test_adagrad_matches_reference),
      cmocka_unit_test(test_sparse_gradient_descent_updates_named_rows),
      cmocka_unit_test(test_sparse_momentum_updates_named_rows),
      cmocka_unit_test(test_sparse_adam_is_lazy),
      cmocka_unit_test(test_sparse_adagrad_updates_named_rows),
      cmocka_unit_test(test_sparse_rmsprop_updates_named_rows),
      cmocka_unit_test(test_sparse_index_out_of_range_changes_nothing),
      cmocka_unit_test(test_bad_slots_and_inputs_are_refused),
      cmocka_unit_test(test_adam_refuses_step_zero),
      cmocka_unit_test(test_concurrent_updates_neither_deadlock_nor_lose_steps),
      cmocka_unit_test(test_exponential_decay_matches_hand_values),
      cmocka_unit_test(test_piecewise_constant_matches_hand_values),
      cmocka_unit_test(test_cosine_decay_matches_hand_values),
      cmocka_unit_test(test_linear_warmup_matches_hand_values),
      cmocka_unit_test(test_clip_by_global_norm_scales_the_list),
      cmocka_unit_test(test_clip_by_global_norm_of_infinity_is_nan),
      cmocka_unit_test(test_train_ops_are_not_differentiable),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
