/* plugins/importers/onnx/onnx_fuse.c — the importer's fused ops and the
 * plugin graph passes that build them from the patterns exporters write:
 *   onnx_fuse_layer_norm  Div(x - mean(x), sqrt(mean((x - mean(x))^2) +
 *                         eps)) over trailing axes, with a following
 *                         Mul(., gamma) and Add(., beta) when their shapes
 *                         are the normalised ones -> LayerNorm (ops-nn's,
 *                         over the last axis with a scale and offset) or
 *                         OnnxLayerNorm (other axes, no affine);
 *   onnx_fuse_gelu        x * 0.5 * (1 + erf(x / sqrt 2)) -> Gelu, and the
 *                         tanh form 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715
 *                         x^3))) -> Gelu(approximate);
 *   onnx_fuse_bias        a linear layer's bias (and activation) after the
 *                         Reshape of its rows' product -> BiasAdd before it,
 *                         for ops-nn's fusion pass.
 * Attention (softmax(q kT / c) v) is left as the exporter wrote it: a fused
 * kernel here, with OpenBLAS's products or its own loops, took 0.26-8.7 ms
 * a node on the BERT-tiny-shaped model of bench/onnx_vs_ort.py where the
 * CPU device's BatchMatMul, Div and Softmax take 0.06 ms together (and
 * OpenBLAS's threads fought the device's OpenMP threads for the cores). A
 * fused attention that pays belongs in a device plugin.
 * A pattern fuses only when every value it hides has no reader outside it
 * and is not fetched; constants must be what the formula says (within
 * 1e-6 relative). The core checks the graph after each pass; each pass is
 * switched off by its name in the config's [passes]. OnnxLayerNorm
 * computes in double and has no gradient (working graphs only run). */
#include <config.h>

#include <math.h>
#include <string.h>

#include "onnx_internal.h"

/* ---- reading the working graph ------------------------------------------ */

static int is(const wf_node *n, const char *op) {
  return n && strcmp(wfx_host->node_op(n), op) == 0;
}

static wf_node *in_node(const wf_node *n, int i) {
  if (!n || i >= wfx_host->node_num_inputs(n))
    return NULL;
  return wfx_host->node_input(n, i).node;
}

static wf_output in_out(const wf_node *n, int i) {
  return wfx_host->node_input(n, i);
}

static int same(wf_output a, wf_output b) {
  return a.node == b.node && a.index == b.index;
}

/* The value of a one-element float Const behind o. */
static int const_scalar(wf_output o, double *v) {
  wf_attr_value a;
  if (!is(o.node, "Const") || wfx_host->node_num_control_inputs(o.node) ||
      wfx_host->node_attr(o.node, "value", &a) || a.type != WF_ATTR_TENSOR ||
      !a.u.tensor || wfx_host->tensor_count(a.u.tensor) != 1)
    return 0;
  const void *d = wfx_host->tensor_data(a.u.tensor);
  switch (wfx_host->tensor_dtype(a.u.tensor)) {
  case WF_FLOAT32:
    *v = *(const float *)d;
    return 1;
  case WF_FLOAT64:
    *v = *(const double *)d;
    return 1;
  default:
    return 0;
  }
}

static int near(double a, double b) {
  return fabs(a - b) <= 1e-6 * fabs(b) + 1e-12;
}

/* Output 0 of n is read once, by a node of the pattern, and not fetched. */
static int hidden(const wf_pass_ctx *ctx, const wf_node *n, int readers) {
  wf_output o = {(wf_node *)n, 0};
  return wfx_host->pass_num_consumers(ctx, o) == readers &&
         !wfx_host->pass_is_fetched(ctx, o) &&
         wfx_host->node_num_control_inputs(n) == 0;
}

/* For a binary node n, the input that is not a scalar constant equal to
 * want (n's other input); 0 when neither is. */
static int other_than(const wf_node *n, double want, wf_output *other) {
  double v;
  for (int i = 0; i < 2; i++)
    if (const_scalar(in_out(n, i), &v) && near(v, want)) {
      *other = in_out(n, 1 - i);
      return 1;
    }
  return 0;
}

static wf_output add_node(wf_pass_ctx *ctx, const char *op, const wf_node *at,
                          const wf_output *in, int nin, const wf_attr_item *a,
                          int na, wf_status *st) {
  wf_output o = {NULL, 0};
  o.node = wfx_host->pass_add_node(ctx, op, NULL, wfx_host->node_device(at),
                                   in, nin, a, na, st);
  return o;
}

/* ---- GELU --------------------------------------------------------------- */

/* The factors of a product of single-use Muls rooted at o (o's own node
 * may have other readers). */
static int factors(const wf_pass_ctx *ctx, wf_output o, int root,
                   wf_output *f, int *n) {
  if (is(o.node, "Mul") && (root || hidden(ctx, o.node, 1)) &&
      wfx_host->node_num_inputs(o.node) == 2) {
    return factors(ctx, in_out(o.node, 0), 0, f, n) == 0 &&
                   factors(ctx, in_out(o.node, 1), 0, f, n) == 0
               ? 0
               : -1;
  }
  if (*n == 4)
    return -1;
  f[(*n)++] = o;
  return 0;
}

/* 1 + g(.) with g's node erf or tanh: the argument of g. */
static int one_plus(const wf_pass_ctx *ctx, wf_output o, int tanh_form,
                    wf_output *arg) {
  wf_output t;
  if (!is(o.node, "Add") || !hidden(ctx, o.node, 1) ||
      !other_than(o.node, 1.0, &t) || !hidden(ctx, t.node, 1))
    return 0;
  if (tanh_form) {
    if (!is(t.node, "Tanh"))
      return 0;
  } else {
    wf_attr_value fn;
    if (!is(t.node, "OnnxMath") || wfx_host->node_attr(t.node, "fn", &fn) ||
        fn.type != WF_ATTR_STRING || strcmp(fn.u.s, "erf") != 0)
      return 0;
  }
  *arg = in_out(t.node, 0);
  return 1;
}

/* x / sqrt 2 or x * (1 / sqrt 2): x. */
static int over_sqrt2(const wf_pass_ctx *ctx, wf_output o, wf_output *x) {
  double v;
  if (!hidden(ctx, o.node, 1))
    return 0;
  if (is(o.node, "Div") && const_scalar(in_out(o.node, 1), &v) &&
      near(v, sqrt(2.0))) {
    *x = in_out(o.node, 0);
    return 1;
  }
  return is(o.node, "Mul") && other_than(o.node, 1 / sqrt(2.0), x);
}

/* sqrt(2/pi) * (x + 0.044715 * x^3): x. */
static int tanh_arg(const wf_pass_ctx *ctx, wf_output o, wf_output *x) {
  wf_output s, c, p;
  double three;
  if (!is(o.node, "Mul") || !hidden(ctx, o.node, 1) ||
      !other_than(o.node, sqrt(2.0 / M_PI), &s) || !is(s.node, "Add") ||
      !hidden(ctx, s.node, 1))
    return 0;
  for (int i = 0; i < 2; i++) {
    wf_output a = in_out(s.node, i), b = in_out(s.node, 1 - i);
    if (!is(b.node, "Mul") || !hidden(ctx, b.node, 1) ||
        !other_than(b.node, 0.044715, &c) || !is(c.node, "Pow") ||
        !hidden(ctx, c.node, 1))
      continue;
    p = in_out(c.node, 0);
    if (same(p, a) && const_scalar(in_out(c.node, 1), &three) &&
        near(three, 3.0)) {
      *x = a;
      return 1;
    }
  }
  return 0;
}

static int fuse_gelu(wf_pass_ctx *ctx, wf_status *st) {
  int32_t n = wfx_host->pass_num_nodes(ctx);
  for (int32_t i = 0; i < n; i++) {
    wf_node *m = wfx_host->pass_node(ctx, i);
    wf_output f[4], root = {m, 0}, x = {NULL, 0};
    int nf = 0, approx = -1;
    if (!is(m, "Mul") || factors(ctx, root, 1, f, &nf) || nf != 3)
      continue;
    /* one factor 0.5, one 1 + g(arg), the third x itself */
    for (int h = 0; h < 3 && approx < 0; h++) {
      double v;
      if (!const_scalar(f[h], &v) || !near(v, 0.5))
        continue;
      for (int k = 0; k < 3 && approx < 0; k++) {
        if (k == h)
          continue;
        wf_output xo = f[3 - h - k], arg, inner;
        if (one_plus(ctx, f[k], 0, &arg) && over_sqrt2(ctx, arg, &inner) &&
            same(inner, xo))
          approx = 0, x = xo;
        else if (one_plus(ctx, f[k], 1, &arg) && tanh_arg(ctx, arg, &inner) &&
                 same(inner, xo))
          approx = 1, x = xo;
      }
    }
    int32_t dt = WF_DTYPE_INVALID;
    wf_shape s;
    if (approx < 0 || wfx_host->node_output_info(m, 0, &dt, &s) ||
        (dt != WF_FLOAT32 && dt != WF_FLOAT64))
      continue;
    wf_attr_item a = WFX_ITEM_BOOL("approximate", approx);
    /* GELU of a Reshape that only the Erf form reads (x and x / sqrt 2):
     * the Reshape after the Gelu, so that a product and bias before it
     * fuse with it */
    if (approx == 0 && is(x.node, "Reshape") && x.index == 0 &&
        hidden(ctx, x.node, 2)) {
      /* the Reshape is kept and made to read the Gelu (see fuse_bias) */
      wf_node *r = x.node;
      wf_output g = add_node(ctx, "Gelu", m, (wf_output[]){in_out(r, 0)}, 1,
                             &a, 1, st);
      if (!g.node || wfx_host->pass_set_input(ctx, r, 0, g, st) ||
          wfx_host->pass_replace(ctx, root, x, st))
        return wfx_code(st);
      continue;
    }
    wf_output g = add_node(ctx, "Gelu", m, &x, 1, &a, 1, st);
    if (!g.node || wfx_host->pass_replace(ctx, root, g, st))
      return wfx_code(st);
  }
  return 0;
}

/* ---- LayerNorm ---------------------------------------------------------- */

/* A Mean over trailing axes of a rank-r input, keeping them: the first. */
static int trailing_mean(const wf_node *m, int *first) {
  wf_attr_value axes, keep;
  int32_t dt;
  wf_shape s;
  if (!is(m, "Mean") || wfx_host->node_attr(m, "axes", &axes) ||
      wfx_host->node_attr(m, "keep_dims", &keep) || !keep.u.b ||
      axes.count < 1 || axes.count > WF_MAX_RANK ||
      wfx_host->node_output_info(in_node(m, 0), in_out(m, 0).index, &dt,
                                 &s) ||
      s.rank < 1)
    return 0;
  int mask = 0;
  for (int64_t i = 0; i < axes.count; i++) {
    int64_t a = axes.u.ints[i] < 0 ? axes.u.ints[i] + s.rank : axes.u.ints[i];
    if (a < 0 || a >= s.rank)
      return 0;
    mask |= 1 << a;
  }
  int f = s.rank - (int)axes.count;
  if (mask != ((1 << s.rank) - 1) - ((1 << f) - 1))
    return 0;
  *first = f;
  return 1;
}

/* d = Div(x - mean(x), sqrt(var + eps)): x, the first normalised axis and
 * eps. */
static int ln_core(const wf_pass_ctx *ctx, const wf_node *d, wf_output *x,
                   int *first, double *eps) {
  if (!is(d, "Div"))
    return 0;
  wf_node *sub = in_node(d, 0), *sq = in_node(d, 1);
  if (!is(sub, "Sub") || !is(sq, "Sqrt") || !hidden(ctx, sq, 1))
    return 0;
  wf_node *mu = in_node(sub, 1);
  *x = in_out(sub, 0);
  if (!trailing_mean(mu, first) || !same(in_out(mu, 0), *x) ||
      !hidden(ctx, mu, 1))
    return 0;
  wf_node *add = in_node(sq, 0);
  wf_output var;
  if (!is(add, "Add") || !hidden(ctx, add, 1))
    return 0;
  int ok = 0;
  for (int i = 0; i < 2 && !ok; i++)
    if (const_scalar(in_out(add, i), eps) && *eps >= 0) {
      var = in_out(add, 1 - i);
      ok = 1;
    }
  int f2;
  if (!ok || !trailing_mean(var.node, &f2) || f2 != *first ||
      !hidden(ctx, var.node, 1))
    return 0;
  /* the square of the deviation: Pow(sub, 2) or Mul(sub, sub) */
  wf_node *p = in_node(var.node, 0);
  double two;
  int readers;
  wf_output so = {sub, 0};
  if (is(p, "Pow") && same(in_out(p, 0), so) &&
      const_scalar(in_out(p, 1), &two) && near(two, 2.0))
    readers = 2;
  else if (is(p, "Mul") && same(in_out(p, 0), so) && same(in_out(p, 1), so))
    readers = 3;
  else
    return 0;
  return hidden(ctx, p, 1) && hidden(ctx, sub, readers);
}

/* v's static shape is exactly x's dims from first on. */
static int affine_shape(wf_output v, wf_output x, int first) {
  int32_t dt;
  wf_shape vs, xs;
  if (wfx_host->node_output_info(v.node, v.index, &dt, &vs) ||
      wfx_host->node_output_info(x.node, x.index, &dt, &xs) ||
      vs.rank != xs.rank - first)
    return 0;
  for (int i = 0; i < vs.rank; i++)
    if (vs.dims[i] < 0 || vs.dims[i] != xs.dims[first + i])
      return 0;
  return 1;
}

static int fuse_layer_norm(wf_pass_ctx *ctx, wf_status *st) {
  int32_t n = wfx_host->pass_num_nodes(ctx);
  wf_node *done[256];
  int ndone = 0;
  /* with the affine Mul and Add first, then bare normalisations */
  for (int pass = 0; pass < 2; pass++)
    for (int32_t i = 0; i < n; i++) {
      wf_node *root = wfx_host->pass_node(ctx, i), *d = root;
      wf_output x, gamma = {NULL, 0}, beta = {NULL, 0};
      int first;
      double eps;
      if (pass == 0) {
        if (!is(root, "Add"))
          continue;
        int found = 0;
        for (int k = 0; k < 2 && !found; k++) {
          wf_node *mul = in_node(root, k);
          if (!is(mul, "Mul") || !hidden(ctx, mul, 1))
            continue;
          for (int j = 0; j < 2 && !found; j++) {
            d = in_node(mul, j);
            if (is(d, "Div") && hidden(ctx, d, 1)) {
              gamma = in_out(mul, 1 - j);
              beta = in_out(root, 1 - k);
              found = 1;
            }
          }
        }
        if (!found)
          continue;
      }
      int seen = 0;
      for (int k = 0; k < ndone; k++)
        seen |= done[k] == d;
      if (seen || !ln_core(ctx, d, &x, &first, &eps))
        continue;
      if (pass == 0 &&
          (!affine_shape(gamma, x, first) || !affine_shape(beta, x, first)))
        continue;
      int32_t dt;
      wf_shape s;
      if (wfx_host->node_output_info(root, 0, &dt, &s) ||
          (dt != WF_FLOAT32 && dt != WF_FLOAT64))
        continue;
      wf_shape es = {.rank = 1, .dims = {0}};
      wf_attr_item ea[2];
      wf_output in[3] = {x, gamma, beta};
      for (int k = 1; k < 3 && pass == 1; k++) { /* no affine: empty */
        wf_tensor *t = wfx_host->tensor_new(dt, &es, st);
        if (!t)
          return wfx_code(st);
        ea[0] = WFX_ITEM_DTYPE("dtype", dt);
        ea[1] = (wf_attr_item){
            "value", {.type = WF_ATTR_TENSOR, .count = 1, .u.tensor = t}};
        in[k] = add_node(ctx, "Const", root, NULL, 0, ea, 2, st);
        wfx_host->tensor_release(t);
        if (!in[k].node)
          return wfx_code(st);
      }
      wf_attr_item a[2] = {WFX_ITEM_INT("axis", first),
                           WFX_ITEM_FLOAT("epsilon", eps)};
      /* over the last axis with (C,) scale and offset: ops-nn's LayerNorm,
       * which device plugins run fast */
      int last = pass == 0 && s.rank >= 1 && first == s.rank - 1;
      wf_output y = last ? add_node(ctx, "LayerNorm", root, in, 3, a + 1, 1, st)
                         : add_node(ctx, "OnnxLayerNorm", root, in, 3, a, 2, st);
      wf_output ro = {root, 0};
      if (!y.node || wfx_host->pass_replace(ctx, ro, y, st))
        return wfx_code(st);
      if (ndone < 256)
        done[ndone++] = d;
    }
  return 0;
}

/* ---- the fused ops -------------------------------------------------------- */

static int ln_compute(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  const wf_tensor *x, *g, *b;
  wf_shape s;
  wf_tensor *y;
  int64_t axis;
  double eps;
  int a;
  (void)state;
  if (wfx_kernel_input(ctx, 0, &x, &s, st) ||
      wfx_kernel_input(ctx, 1, &g, NULL, st) ||
      wfx_kernel_input(ctx, 2, &b, NULL, st) ||
      wfx_kernel_attr_int(ctx, "axis", &axis, st) ||
      wfx_kernel_attr_float(ctx, "epsilon", &eps, st) ||
      wfx_axis_normalize(axis, s.rank, &a, "axis", st) ||
      wfx_kernel_output(ctx, 0, &s, &y, st))
    return wfx_code(st);
  int64_t inner = 1, n = wfx_count(x);
  for (int i = a; i < s.rank; i++)
    inner *= s.dims[i];
  int64_t ng = wfx_count(g), nb = wfx_count(b);
  if ((ng && ng != inner) || (nb && nb != inner))
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "scale and bias need %lld values (or none)",
                    (long long)inner);
  WFX_DISPATCH_FLOAT(wfx_dtype(x), st, {
    const T *xp = wfx_data(x), *gp = wfx_data(g), *bp = wfx_data(b);
    T *yp = wfx_data(y);
    for (int64_t r = 0; inner && r < n / inner; r++) {
      const T *row = xp + r * inner;
      double mean = 0, var = 0;
      for (int64_t k = 0; k < inner; k++)
        mean += (double)row[k];
      mean /= (double)inner;
      for (int64_t k = 0; k < inner; k++)
        var += ((double)row[k] - mean) * ((double)row[k] - mean);
      double inv = 1 / sqrt(var / (double)inner + eps);
      for (int64_t k = 0; k < inner; k++) {
        double v = ((double)row[k] - mean) * inv;
        if (ng)
          v *= (double)gp[k];
        if (nb)
          v += (double)bp[k];
        yp[r * inner + k] = (T)v;
      }
    }
  });
  return 0;
}

const wf_op_def ox_layer_norm_op = {
    WF_STRUCT_INIT(wf_op_def),
    .name = "OnnxLayerNorm",
    .inputs = WFX_ARGS(WF_ARG_T("x", "T", "(D0, ..., DR-1)"),
                       WF_ARG_T("scale", "T", "(Daxis, ..., DR-1) or (0,)"),
                       WF_ARG_T("bias", "T", "(Daxis, ..., DR-1) or (0,)")),
    .outputs = WFX_ARGS(WF_ARG_T("y", "T", "x's shape")),
    .attrs = WFX_ATTRS(
        WFX_ATTR_DTYPE("T", WFX_DTYPES_FLOAT, "element type"),
        WFX_ATTR_INT("axis", -1, "the first normalised axis"),
        WFX_ATTR_FLOAT("epsilon", 1e-5, "added to the variance")),
    .shape_fn = wfx_shape_like_input0,
    .doc = "(x - mean) / sqrt(var + epsilon) * scale + bias over the axes "
           "from axis on, the variance biased, in double (ONNX "
           "LayerNormalization; built by onnx_fuse_layer_norm)."};

const wf_kernel_def ox_layer_norm_kernel =
    WFX_CPU_REFERENCE("OnnxLayerNorm", "T", WFX_DTYPES_FLOAT, ln_compute);

/* ---- a linear layer's bias ---------------------------------------------- */

/* The importer maps a (..., K) x (K, N) MatMul to Reshape(MatMul(rows, w),
 * (..., N)), and exporters add the bias after it: Add(Reshape(MatMul),
 * b) with b of shape (N). Moved before the Reshape as a BiasAdd, the
 * product and its bias (and a GELU after them, which onnx_fuse_gelu moves
 * before the Reshape too) meet ops-nn's fusion pass as one _FusedMatMul.
 * The MatMul and Reshape must have no other reader. Runs before
 * onnx_fuse_gelu, which then sees GELU's x as the Reshape. */

/* The number of elements of o's last axis, or -1 when not known. */
static int64_t last_dim(wf_output o, int *rank) {
  wf_shape s;
  if (wfx_host->node_output_info(o.node, o.index, NULL, &s) || s.rank < 1)
    return -1;
  *rank = s.rank;
  return s.dims[s.rank - 1];
}

/* Whether the shape vector o ends with n: a Const, or a Concat (along
 * its one axis) whose last part does (how the importer writes (..., N)). */
static int shape_ends_with(wf_output o, int64_t n) {
  wf_attr_value a;
  if (is(o.node, "Concat")) {
    int32_t k = wfx_host->node_num_inputs(o.node);
    return k > 0 && shape_ends_with(in_out(o.node, k - 1), n);
  }
  if (!is(o.node, "Const") || wfx_host->node_attr(o.node, "value", &a) ||
      a.type != WF_ATTR_TENSOR || !a.u.tensor)
    return 0;
  int64_t c = wfx_host->tensor_count(a.u.tensor);
  const void *d = wfx_host->tensor_data(a.u.tensor);
  if (c < 1)
    return 0;
  switch (wfx_host->tensor_dtype(a.u.tensor)) {
  case WF_INT64:
    return ((const int64_t *)d)[c - 1] == n;
  case WF_INT32:
    return ((const int32_t *)d)[c - 1] == n;
  default:
    return 0;
  }
}

static int bias_of_rows(const wf_pass_ctx *ctx, const wf_node *add,
                        wf_output *prod, wf_node **reshape, int *at,
                        wf_output *bias) {
  for (int i = 0; i < 2; i++) {
    wf_output r = in_out(add, i), b = in_out(add, 1 - i);
    int rr = 0, rb = 0, rm = 0;
    if (!is(r.node, "Reshape") || !hidden(ctx, r.node, 1))
      continue;
    wf_output m = in_out(r.node, 0);
    if (!is(m.node, "MatMul") || !hidden(ctx, m.node, 1))
      continue;
    int64_t n = last_dim(m, &rm);
    if (n < 0 || rm != 2 || last_dim(b, &rb) != n || rb != 1 ||
        (last_dim(r, &rr) != n && !shape_ends_with(in_out(r.node, 1), n)))
      continue;
    *prod = m, *reshape = r.node, *at = i, *bias = b;
    return 1;
  }
  return 0;
}

/* The nodes a pass replaces stay in the graph until the pass ends, and
 * count as readers of what they read until then: so the Reshape is kept
 * and made to read the BiasAdd (the MatMul's one reader then), and the
 * replaced Add is left reading the bias twice; with dead-node removal
 * switched off ([passes] dead_nodes = false) they stay for later passes
 * too, and the fusion pass still sees single readers. */
static int fuse_bias(wf_pass_ctx *ctx, wf_status *st) {
  int32_t n = wfx_host->pass_num_nodes(ctx);
  for (int32_t i = 0; i < n; i++) {
    wf_node *add = wfx_host->pass_node(ctx, i), *r;
    wf_output m, b;
    int at;
    if (!is(add, "Add") || wfx_host->node_num_inputs(add) != 2 ||
        wfx_host->node_num_control_inputs(add) ||
        !bias_of_rows(ctx, add, &m, &r, &at, &b))
      continue;
    wf_attr_item fmt = {.name = "data_format",
                        .value = {.type = WF_ATTR_STRING,
                                  .count = 1,
                                  .u.s = "NHWC"}};
    wf_output y = add_node(ctx, "BiasAdd", add, (wf_output[]){m, b}, 2,
                           &fmt, 1, st);
    if (!y.node || wfx_host->pass_set_input(ctx, r, 0, y, st) ||
        wfx_host->pass_replace(ctx, (wf_output){add, 0}, (wf_output){r, 0},
                               st) ||
        wfx_host->pass_set_input(ctx, add, at, b, st))
      return wfx_code(st);
  }
  return 0;
}

const wf_pass_def ox_fuse_layer_norm_pass = {
    WF_STRUCT_INIT(wf_pass_def),
    .name = "onnx_fuse_layer_norm",
    .doc = "the exported LayerNorm pattern (ReduceMean, Sub, Pow, ReduceMean, "
           "Add, Sqrt, Div, and the affine Mul and Add) -> OnnxLayerNorm",
    .order = 100,
    .run = fuse_layer_norm};
const wf_pass_def ox_fuse_gelu_pass = {
    WF_STRUCT_INIT(wf_pass_def),
    .name = "onnx_fuse_gelu",
    .doc = "GELU's Erf and tanh forms -> Gelu",
    .order = 110,
    .run = fuse_gelu};
const wf_pass_def ox_fuse_bias_pass = {
    WF_STRUCT_INIT(wf_pass_def),
    .name = "onnx_fuse_bias",
    .doc = "Add(Reshape(MatMul(rows, w)), b) with b on the last axis -> "
           "Reshape(BiasAdd(MatMul, b)), which the fusion pass makes one "
           "_FusedMatMul",
    .order = 105,
    .run = fuse_bias};

