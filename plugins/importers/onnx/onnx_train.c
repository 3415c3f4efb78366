/* plugins/importers/onnx/onnx_train.c — the optimizer ops of the domain
 * ai.onnx.preview.training (version 1): Adagrad, Momentum (standard and
 * Nesterov) and Adam, each one update step of n tensors written out with
 * weft's element-wise ops (ONNX's semantics, which weft's own optimizers
 * do not share: they update variables in place, these return new values).
 * Inputs R (the learning rate) and T (the update count, int64), then the
 * n tensors X, their gradients G and the optimizer's state; outputs the
 * new X and the new state, in the order the operators' pseudo code gives
 * them. The scalars are computed in X's dtype. */
#include <config.h>

#include <string.h>

#include "onnx_internal.h"

/* The pieces of one call. */
typedef struct opt_in {
  int n;            /* tensors updated */
  int32_t dt;       /* their dtype */
  wf_output r, t;   /* R, and T cast to dt */
  wf_output tpos;   /* 1 where T > 0, else 0, in dt */
} opt_in;

static wf_output in_at(ox_node *n, int i, wf_status *st) {
  if (wfx_code(st))
    return (wf_output){NULL, 0};
  if (i >= n->nin || !n->in[i]) {
    ox_fail(n, st, WF_INVALID_ARGUMENT, "input %d is required", i);
    return (wf_output){NULL, 0};
  }
  return ox_use(n, n->in[i], st);
}

static wf_output k(ox_node *n, const opt_in *o, double v, wf_status *st) {
  return ox_scalar(n, o->dt, v, st);
}

static wf_output mul(ox_node *n, wf_output a, wf_output b, wf_status *st) {
  return ox_add2(n, "Mul", a, b, st);
}

static wf_output add(ox_node *n, wf_output a, wf_output b, wf_status *st) {
  return ox_add2(n, "Add", a, b, st);
}

static wf_output sub(ox_node *n, wf_output a, wf_output b, wf_status *st) {
  return ox_add2(n, "Sub", a, b, st);
}

static wf_output dvd(ox_node *n, wf_output a, wf_output b, wf_status *st) {
  return ox_add2(n, "Div", a, b, st);
}

/* Checks the input and output counts (2 + groups * n inputs, outs * n
 * outputs) and reads R and T. */
static int opt_begin(ox_node *n, int groups, int outs, opt_in *o,
                     wf_status *st) {
  if (n->nin < 2 + groups || (n->nin - 2) % groups ||
      n->nout != (n->nin - 2) / groups * outs)
    return ox_fail(n, st, WF_INVALID_ARGUMENT,
                   "%s takes R, T and %d groups of n tensors, and gives %d "
                   "groups of n; it has %d inputs and %d outputs",
                   n->p->op_type, groups, outs, n->nin, n->nout);
  o->n = (n->nin - 2) / groups;
  wf_output x0 = in_at(n, 2, st);
  if (wfx_code(st))
    return wfx_code(st);
  o->dt = ox_dtype_of(x0);
  if (o->dt != WF_FLOAT32 && o->dt != WF_FLOAT64)
    return ox_fail(n, st, WF_INVALID_ARGUMENT,
                   "%s updates float tensors (X is %s)", n->p->op_type,
                   wfx_dtype_name(o->dt));
  o->r = in_at(n, 0, st);
  wf_output t = in_at(n, 1, st);
  if (wfx_code(st))
    return wfx_code(st);
  wf_attr_item a = WFX_ITEM_DTYPE("DstT", o->dt);
  if (ox_dtype_of(o->r) != o->dt)
    o->r = ox_add(n, "Cast", &o->r, 1, &a, 1, st);
  o->t = ox_add(n, "Cast", &t, 1, &a, 1, st);
  wf_output gt = ox_add2(n, "Greater", o->t, k(n, o, 0, st), st);
  o->tpos = ox_add(n, "Cast", &gt, 1, &a, 1, st);
  return wfx_code(st);
}

/* G_regularized = norm_coefficient * X + G */
static wf_output regularized(ox_node *n, const opt_in *o, wf_output x,
                             wf_output g, double norm, wf_status *st) {
  return norm == 0 ? g : add(n, mul(n, k(n, o, norm, st), x, st), g, st);
}

static int m_adagrad(ox_node *n, wf_status *st) {
  opt_in o;
  double norm = ox_attr_f(n, "norm_coefficient", 0);
  double decay = ox_attr_f(n, "decay_factor", 0);
  double eps = ox_attr_f(n, "epsilon", 1e-6);
  if (opt_begin(n, 3, 2, &o, st))
    return wfx_code(st);
  /* r = R / (1 + T * decay_factor) */
  wf_output r = dvd(
      n, o.r, add(n, k(n, &o, 1, st), mul(n, o.t, k(n, &o, decay, st), st), st),
      st);
  for (int i = 0; i < o.n; i++) {
    wf_output x = in_at(n, 2 + i, st), g = in_at(n, 2 + o.n + i, st);
    wf_output h = in_at(n, 2 + 2 * o.n + i, st);
    wf_output gr = regularized(n, &o, x, g, norm, st);
    wf_output hn = add(n, h, mul(n, gr, gr, st), st);
    wf_output ha = add(n, ox_add1(n, "Sqrt", hn, st), k(n, &o, eps, st), st);
    wf_output xn = sub(n, x, dvd(n, mul(n, r, gr, st), ha, st), st);
    if (ox_set_out(n, i, xn, st) || ox_set_out(n, o.n + i, hn, st))
      return wfx_code(st);
  }
  return 0;
}

static int m_momentum(ox_node *n, wf_status *st) {
  opt_in o;
  char mode[32];
  const Onnx__AttributeProto *aa = ox_attr(n, "alpha"),
                             *ab = ox_attr(n, "beta"),
                             *an = ox_attr(n, "norm_coefficient");
  ox_attr_s(n, "mode", "", mode, sizeof mode);
  if (!aa || !ab || !an || !mode[0])
    return ox_fail(n, st, WF_INVALID_ARGUMENT,
                   "Momentum needs the attributes alpha, beta, mode and "
                   "norm_coefficient");
  int nesterov = strcmp(mode, "nesterov") == 0;
  if (!nesterov && strcmp(mode, "standard") != 0)
    return ox_fail(n, st, WF_INVALID_ARGUMENT,
                   "Momentum's mode is '%s' (standard or nesterov)", mode);
  double alpha = ox_attr_f(n, "alpha", 0), beta = ox_attr_f(n, "beta", 0);
  double norm = ox_attr_f(n, "norm_coefficient", 0);
  if (opt_begin(n, 3, 2, &o, st))
    return wfx_code(st);
  /* beta_adjusted = T > 0 ? beta : 1, as 1 + [T > 0] (beta - 1) */
  wf_output badj = add(n, k(n, &o, 1, st),
                       mul(n, o.tpos, k(n, &o, beta - 1, st), st), st);
  for (int i = 0; i < o.n; i++) {
    wf_output x = in_at(n, 2 + i, st), g = in_at(n, 2 + o.n + i, st);
    wf_output v = in_at(n, 2 + 2 * o.n + i, st);
    wf_output gr = regularized(n, &o, x, g, norm, st);
    wf_output vn = add(n, mul(n, k(n, &o, alpha, st), v, st),
                       mul(n, badj, gr, st), st);
    wf_output step =
        nesterov ? add(n, gr, mul(n, k(n, &o, alpha, st), vn, st), st) : vn;
    wf_output xn = sub(n, x, mul(n, o.r, step, st), st);
    if (ox_set_out(n, i, xn, st) || ox_set_out(n, o.n + i, vn, st))
      return wfx_code(st);
  }
  return 0;
}

static int m_adam(ox_node *n, wf_status *st) {
  opt_in o;
  double alpha = ox_attr_f(n, "alpha", 0.9), beta = ox_attr_f(n, "beta", 0.999);
  double eps = ox_attr_f(n, "epsilon", 1e-6);
  double norm = ox_attr_f(n, "norm_coefficient", 0);
  double post = ox_attr_f(n, "norm_coefficient_post", 0);
  if (opt_begin(n, 4, 3, &o, st))
    return wfx_code(st);
  /* R_adjusted = T > 0 ? R sqrt(1 - beta^T) / (1 - alpha^T) : R; at T = 0
   * the quotient is 0 / 0, so the factor is taken as
   * [T > 0] (quotient of the guarded powers - 1) + 1 with T raised to at
   * least 1 inside */
  wf_output t1 = ox_add2(n, "Maximum", o.t, k(n, &o, 1, st), st);
  wf_output ap = ox_add2(n, "Pow", k(n, &o, alpha, st), t1, st);
  wf_output bp = ox_add2(n, "Pow", k(n, &o, beta, st), t1, st);
  wf_output q = dvd(n,
                    ox_add1(n, "Sqrt", sub(n, k(n, &o, 1, st), bp, st), st),
                    sub(n, k(n, &o, 1, st), ap, st), st);
  wf_output f = add(n, mul(n, o.tpos, sub(n, q, k(n, &o, 1, st), st), st),
                    k(n, &o, 1, st), st);
  wf_output radj = mul(n, o.r, f, st);
  for (int i = 0; i < o.n; i++) {
    wf_output x = in_at(n, 2 + i, st), g = in_at(n, 2 + o.n + i, st);
    wf_output v = in_at(n, 2 + 2 * o.n + i, st);
    wf_output h = in_at(n, 2 + 3 * o.n + i, st);
    wf_output gr = regularized(n, &o, x, g, norm, st);
    wf_output vn = add(n, mul(n, k(n, &o, alpha, st), v, st),
                       mul(n, k(n, &o, 1 - alpha, st), gr, st), st);
    wf_output hn = add(n, mul(n, k(n, &o, beta, st), h, st),
                       mul(n, k(n, &o, 1 - beta, st), mul(n, gr, gr, st), st),
                       st);
    wf_output hs = add(n, ox_add1(n, "Sqrt", hn, st), k(n, &o, eps, st), st);
    wf_output xn = sub(n, x, dvd(n, mul(n, radj, vn, st), hs, st), st);
    if (post != 0)
      xn = mul(n, k(n, &o, 1 - post, st), xn, st);
    if (ox_set_out(n, i, xn, st) || ox_set_out(n, o.n + i, vn, st) ||
        ox_set_out(n, 2 * o.n + i, hn, st))
      return wfx_code(st);
  }
  return 0;
}

ox_build_fn *ox_training_mapping(const char *op_type) {
  static const struct {
    const char *op;
    ox_build_fn *fn;
  } ops[] = {{"Adagrad", m_adagrad}, {"Adam", m_adam}, {"Momentum", m_momentum}};
  for (size_t i = 0; i < sizeof ops / sizeof *ops; i++)
    if (strcmp(ops[i].op, op_type) == 0)
      return ops[i].fn;
  return NULL;
}
