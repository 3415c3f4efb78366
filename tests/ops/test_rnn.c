/* tests/ops/test_rnn.c — the ops_rnn plugin: LSTM and GRU forward values
 * against a scalar recurrence written out here (known answers), shape
 * inference and its refusals, and the gradients of every input against
 * central finite differences (gradcheck.h) — in float64 through the
 * reference kernels (step 1e-6, tolerance 1e-6 relative + 1e-7), and in
 * float32 through the CPU plugin's oneDNN kernels where configure found
 * oneDNN, the reference kernels otherwise (step 1e-3, tolerance
 * 2e-3 relative + 1e-4: float32 differences over a step of 1e-3 carry
 * about 1e-4 of rounding), with gradients reaching every output, or only
 * some (the others' are zeros). Loads ops_array (Const, Concat, Reshape,
 * ZerosLike), ops_math (the checker's loss, Cast), ops_rnn and the CPU
 * device. */
#include <config.h>

#include "array_nn_grad.h"

#include <math.h>

static wf_runtime *rt;

static int setup(void **state) {
  static const char *const dirs[] = {
      "plugins/ops/array/.libs", "plugins/ops/math/.libs",
      "plugins/ops/rnn/.libs", "plugins/devices/cpu/.libs"};
  rt = ag_runtime(dirs, 4);
  return 0;
}

static int teardown(void **state) {
  wf_runtime_free(rt);
  return 0;
}

static double sigm(double v) { return 1.0 / (1.0 + exp(-v)); }

/* Runs op on float64 Consts in[0..n) and returns its outputs (caller
 * releases). */
static void run_op(const char *op, wf_tensor **in, int n, wf_tensor **out,
                   int nout) {
  wf_status *st = wf_status_new();
  wf_graph *g = wf_graph_new(rt);
  wf_output ins[9], fetch[3];
  wf_node_desc *d;
  wf_node *node;

  for (int i = 0; i < n; i++) {
    d = wf_node_desc_new(g, "Const", NULL);
    wf_node_desc_set_attr_tensor(d, "value", in[i]);
    wf_node_desc_set_attr_dtype(d, "dtype", wf_tensor_dtype(in[i]));
    ins[i] = (wf_output){ag_node(d, "a Const"), 0};
  }
  d = wf_node_desc_new(g, op, "op");
  for (int i = 0; i < n; i++)
    wf_node_desc_add_input(d, ins[i]);
  node = ag_node(d, op);
  for (int i = 0; i < nout; i++)
    fetch[i] = (wf_output){node, i};
  {
    wf_session *s = wf_session_new(g, st);
    assert_non_null(s);
    if (wf_session_run(s, NULL, NULL, NULL, 0, fetch, out, nout, NULL, 0,
                       NULL, st))
      fail_msg("running %s: %s", op, wf_status_message(st));
    wf_session_free(s);
  }
  wf_graph_free(g);
  wf_status_free(st);
}

static void expect_values(const char *what, const wf_tensor *t,
                          const double *want, int64_t n) {
  const double *p = wf_tensor_data(t);

  assert_int_equal(wf_tensor_count(t), n);
  for (int64_t i = 0; i < n; i++)
    if (fabs(p[i] - want[i]) > 1e-12 * fmax(1, fabs(want[i])))
      fail_msg("%s[%lld] is %.17g, want %.17g", what, (long long)i, p[i],
               want[i]);
}

/* One unit, one input, two steps: the recurrence written out. */
static void test_lstm_computes_the_gated_recurrence(void **state) {
  const double x[2] = {0.5, -1.25}, h0 = 0.3, c0 = -0.2;
  const double w[4] = {0.4, -0.7, 1.1, 0.2}, r[4] = {-0.3, 0.8, 0.5, -0.9};
  const double b[4] = {0.1, 0.6, -0.2, 0.05};
  double h = h0, c = c0, y[2];
  wf_tensor *in[6], *out[3];

  for (int t = 0; t < 2; t++) {
    double a[4];
    for (int g = 0; g < 4; g++)
      a[g] = x[t] * w[g] + h * r[g] + b[g];
    c = sigm(a[1]) * c + sigm(a[0]) * tanh(a[2]);
    h = sigm(a[3]) * tanh(c);
    y[t] = h;
  }
  in[0] = ag_tensor(3, (int64_t[]){2, 1, 1}, x);
  in[1] = ag_tensor(2, (int64_t[]){1, 1}, &h0);
  in[2] = ag_tensor(2, (int64_t[]){1, 1}, &c0);
  in[3] = ag_tensor(2, (int64_t[]){1, 4}, w);
  in[4] = ag_tensor(2, (int64_t[]){1, 4}, r);
  in[5] = ag_tensor(1, (int64_t[]){4}, b);
  run_op("LSTM", in, 6, out, 3);
  expect_values("y", out[0], y, 2);
  expect_values("h_T", out[1], &h, 1);
  expect_values("c_T", out[2], &c, 1);
  for (int i = 0; i < 6; i++)
    wf_tensor_release(in[i]);
  for (int i = 0; i < 3; i++)
    wf_tensor_release(out[i]);
}

/* Two units, so that the reset gate's place shows: it scales h before the
 * recurrent product (r * h) r_o, not the product (cuDNN's form). */
static void test_gru_applies_the_reset_gate_before_the_product(void **state) {
  enum { H = 2 };
  const double x[2] = {0.7, -0.4}, h0[H] = {0.25, -0.6};
  double w[3 * H], r[H * 3 * H], b[3 * H], h[H], y[2 * H];
  wf_tensor *in[5], *out[2];

  for (int i = 0; i < 3 * H; i++) {
    w[i] = 0.3 * sin(1.0 + i);
    b[i] = 0.2 * cos(2.0 + i);
  }
  for (int i = 0; i < H * 3 * H; i++)
    r[i] = 0.5 * sin(0.7 * i - 1.0);
  memcpy(h, h0, sizeof h);
  for (int t = 0; t < 2; t++) {
    double u[H], rr[H], o[H];
    for (int j = 0; j < H; j++) {
      double au = x[t] * w[j] + b[j], ar = x[t] * w[H + j] + b[H + j];
      for (int k = 0; k < H; k++) {
        au += h[k] * r[k * 3 * H + j];
        ar += h[k] * r[k * 3 * H + H + j];
      }
      u[j] = sigm(au);
      rr[j] = sigm(ar);
    }
    for (int j = 0; j < H; j++) {
      double ao = x[t] * w[2 * H + j] + b[2 * H + j];
      for (int k = 0; k < H; k++)
        ao += rr[k] * h[k] * r[k * 3 * H + 2 * H + j];
      o[j] = tanh(ao);
    }
    for (int j = 0; j < H; j++) {
      h[j] = u[j] * h[j] + (1 - u[j]) * o[j];
      y[t * H + j] = h[j];
    }
  }
  in[0] = ag_tensor(3, (int64_t[]){2, 1, 1}, x);
  in[1] = ag_tensor(2, (int64_t[]){1, H}, h0);
  in[2] = ag_tensor(2, (int64_t[]){1, 3 * H}, w);
  in[3] = ag_tensor(2, (int64_t[]){H, 3 * H}, r);
  in[4] = ag_tensor(1, (int64_t[]){3 * H}, b);
  run_op("GRU", in, 5, out, 2);
  expect_values("y", out[0], y, 2 * H);
  expect_values("h_T", out[1], h, H);
  for (int i = 0; i < 5; i++)
    wf_tensor_release(in[i]);
  for (int i = 0; i < 2; i++)
    wf_tensor_release(out[i]);
}

/* ---- shapes ------------------------------------------------------------------ */

/* Adds op on Placeholders of the given shapes (rank -1: unknown); returns
 * the node, or NULL with st set. */
static wf_node *add_on(wf_graph *g, const char *op, const wf_shape *s, int n,
                       wf_status *st) {
  wf_output in[9];
  wf_node_desc *d;

  for (int i = 0; i < n; i++) {
    d = wf_node_desc_new(g, "Placeholder", NULL);
    wf_node_desc_set_attr_dtype(d, "dtype", WF_FLOAT32);
    if (s[i].rank >= 0)
      wf_node_desc_set_attr_shape(d, "shape", s[i].dims, s[i].rank);
    in[i] = (wf_output){ag_node(d, "a Placeholder"), 0};
  }
  d = wf_node_desc_new(g, op, NULL);
  for (int i = 0; i < n; i++)
    wf_node_desc_add_input(d, in[i]);
  return wf_node_desc_finish(d, st);
}

static void shape_of(wf_shape *s, int rank, const int64_t *dims) {
  wf_shape_init(s, dims, rank);
}

static void expect_shape(const wf_node *n, int i, const char *want) {
  wf_shape s;
  char buf[128];

  wf_node_output_shape(n, i, &s);
  if (strcmp(wf_shape_str(&s, buf, sizeof buf), want) != 0)
    fail_msg("output %d has shape %s, want %s", i, buf, want);
}

static void test_lstm_infers_shapes_from_partial_inputs(void **state) {
  wf_status *st = wf_status_new();
  wf_graph *g = wf_graph_new(rt);
  wf_shape s[9];
  wf_node *n;

  /* T from x, N from h0, H from r, C from w. */
  shape_of(&s[0], 3, (int64_t[]){5, -1, -1});
  shape_of(&s[1], 2, (int64_t[]){3, -1});
  s[2].rank = -1;
  shape_of(&s[3], 2, (int64_t[]){7, -1});
  shape_of(&s[4], 2, (int64_t[]){4, 16});
  s[5].rank = -1;
  assert_non_null(n = add_on(g, "LSTM", s, 6, st));
  expect_shape(n, 0, "(5, 3, 4)");
  expect_shape(n, 1, "(3, 4)");
  expect_shape(n, 2, "(3, 4)");
  /* The backward op gives every input's shape. */
  shape_of(&s[0], 3, (int64_t[]){5, 3, 7});
  for (int i = 6; i < 9; i++)
    s[i].rank = -1;
  assert_non_null(n = add_on(g, "LSTMGrad", s, 9, st));
  expect_shape(n, 0, "(5, 3, 7)");
  expect_shape(n, 3, "(7, 16)");
  expect_shape(n, 4, "(4, 16)");
  expect_shape(n, 5, "(16)");
  wf_graph_free(g);
  wf_status_free(st);
}

static void expect_refused(const char *op, const wf_shape *s, int n,
                           const char *part1, const char *part2) {
  wf_status *st = wf_status_new();
  wf_graph *g = wf_graph_new(rt);

  assert_null(add_on(g, op, s, n, st));
  assert_int_equal(wf_status_code(st), WF_INVALID_ARGUMENT);
  if (!strstr(wf_status_message(st), part1) ||
      !strstr(wf_status_message(st), part2))
    fail_msg("%s: the message \"%s\" does not name \"%s\" and \"%s\"", op,
             wf_status_message(st), part1, part2);
  wf_graph_free(g);
  wf_status_free(st);
}

static void test_rnn_ops_refuse_inconsistent_shapes(void **state) {
  wf_shape s[7];

  /* GRU's w: 10 columns are not 3 * H. */
  shape_of(&s[0], 3, (int64_t[]){2, 3, 4});
  shape_of(&s[1], 2, (int64_t[]){3, 5});
  shape_of(&s[2], 2, (int64_t[]){4, 10});
  shape_of(&s[3], 2, (int64_t[]){5, 15});
  shape_of(&s[4], 1, (int64_t[]){15});
  expect_refused("GRU", s, 5, "w has shape (4, 10)", "3 * H");
  /* h0's batch disagrees with x's. */
  shape_of(&s[1], 2, (int64_t[]){2, 5});
  shape_of(&s[2], 2, (int64_t[]){4, 15});
  expect_refused("GRU", s, 5, "h0 has shape (2, 5)", "N = 3");
  /* x of rank 2. */
  shape_of(&s[0], 2, (int64_t[]){3, 4});
  shape_of(&s[1], 2, (int64_t[]){3, 5});
  expect_refused("GRU", s, 5, "x must have rank 3", "(3, 4)");
  /* A backward op whose dy is not y's shape. */
  shape_of(&s[0], 3, (int64_t[]){2, 3, 4});
  shape_of(&s[5], 3, (int64_t[]){2, 3, 6});
  shape_of(&s[6], 2, (int64_t[]){3, 5});
  expect_refused("GRUGrad", s, 7, "dy against y", "(2, 3, 6)");
}

/* ---- gradients ------------------------------------------------------------------ */

/* Drawn constants for the inputs not under test (values of order 1,
 * weights scaled by 1 / sqrt(C + H)). */
typedef struct rnn_inputs {
  double x[64], h0[16], c0[16], w[128], r[128], b[32];
} rnn_inputs;

static void draw(rnn_inputs *v, double scale) {
  gc_rng r = {77};
  for (int i = 0; i < 64; i++)
    v->x[i] = gc_uniform(&r, -1, 1);
  for (int i = 0; i < 16; i++) {
    v->h0[i] = gc_uniform(&r, -0.5, 0.5);
    v->c0[i] = gc_uniform(&r, -0.5, 0.5);
  }
  for (int i = 0; i < 128; i++) {
    v->w[i] = gc_uniform(&r, -scale, scale);
    v->r[i] = gc_uniform(&r, -scale, scale);
  }
  for (int i = 0; i < 32; i++)
    v->b[i] = gc_uniform(&r, -0.5, 0.5);
}

/* The gc_input of a (dims) tensor in [lo, hi). */
static gc_input in_of(int rank, const int64_t *dims, double lo, double hi) {
  gc_input g = {.rank = rank, .lo = lo, .hi = hi};
  memcpy(g.dims, dims, (size_t)rank * sizeof *dims);
  return g;
}

/* T = 3, N = 2, C = 3, H = 2: every LSTM input in two checks (x, h0, c0,
 * w; then r, b with the rest constant), through all three outputs and
 * through y or c_T alone. */
static void test_lstm_gradients_match_finite_differences(void **state) {
  static const int64_t xd[3] = {3, 2, 3}, sd[2] = {2, 2}, wd[2] = {3, 8};
  static const int64_t rd[2] = {2, 8}, bd[1] = {8};
  double scale = 1.0 / sqrt(5.0);
  rnn_inputs v;
  ag_case a = {.op = "LSTM", .order = "xxxxcc", .outputs = 7};
  ag_case b = {.op = "LSTM", .order = "ccccxx", .outputs = 1};
  ag_case c = {.op = "LSTM", .order = "xxxxcc", .outputs = 4};

  draw(&v, scale);
  a.consts[0] = (ag_const){WF_FLOAT64, 2, {2, 8}, v.r};
  a.consts[1] = (ag_const){WF_FLOAT64, 1, {8}, v.b};
  c.consts[0] = a.consts[0];
  c.consts[1] = a.consts[1];
  b.consts[0] = (ag_const){WF_FLOAT64, 3, {3, 2, 3}, v.x};
  b.consts[1] = (ag_const){WF_FLOAT64, 2, {2, 2}, v.h0};
  b.consts[2] = (ag_const){WF_FLOAT64, 2, {2, 2}, v.c0};
  b.consts[3] = (ag_const){WF_FLOAT64, 2, {3, 8}, v.w};
  ag_check(rt,
           (gc_spec){.name = "LSTM x, h0, c0, w (all outputs)",
                     .num_inputs = 4,
                     .in = {in_of(3, xd, -1, 1), in_of(2, sd, -0.5, 0.5),
                            in_of(2, sd, -0.5, 0.5),
                            in_of(2, wd, -scale, scale)}},
           &a);
  ag_check(rt,
           (gc_spec){.name = "LSTM r, b (y only)",
                     .num_inputs = 2,
                     .in = {in_of(2, rd, -scale, scale),
                            in_of(1, bd, -0.5, 0.5)}},
           &b);
  ag_check(rt,
           (gc_spec){.name = "LSTM x, h0, c0, w (c_T only)",
                     .num_inputs = 4,
                     .unknown_dims = 1,
                     .in = {in_of(3, xd, -1, 1), in_of(2, sd, -0.5, 0.5),
                            in_of(2, sd, -0.5, 0.5),
                            in_of(2, wd, -scale, scale)}},
           &c);
}

static void test_gru_gradients_match_finite_differences(void **state) {
  static const int64_t xd[3] = {4, 2, 3}, sd[2] = {2, 3}, wd[2] = {3, 9};
  static const int64_t rd[2] = {3, 9}, bd[1] = {9};
  double scale = 1.0 / sqrt(6.0);
  rnn_inputs v;
  ag_case a = {.op = "GRU", .order = "xxxxc", .outputs = 3};
  ag_case b = {.op = "GRU", .order = "cccxx", .outputs = 2};

  draw(&v, scale);
  a.consts[0] = (ag_const){WF_FLOAT64, 1, {9}, v.b};
  b.consts[0] = (ag_const){WF_FLOAT64, 3, {4, 2, 3}, v.x};
  b.consts[1] = (ag_const){WF_FLOAT64, 2, {2, 3}, v.h0};
  b.consts[2] = (ag_const){WF_FLOAT64, 2, {3, 9}, v.w};
  ag_check(rt,
           (gc_spec){.name = "GRU x, h0, w, r (both outputs)",
                     .num_inputs = 4,
                     .in = {in_of(3, xd, -1, 1), in_of(2, sd, -0.5, 0.5),
                            in_of(2, wd, -scale, scale),
                            in_of(2, rd, -scale, scale)}},
           &a);
  ag_check(rt,
           (gc_spec){.name = "GRU r, b (h_T only)",
                     .num_inputs = 2,
                     .in = {in_of(2, rd, -scale, scale),
                            in_of(1, bd, -0.5, 0.5)}},
           &b);
}

/* ---- float32: the CPU plugin's oneDNN kernels ------------------------------------ */

/* The op in float32 on Casts of its inputs, which come from the checker
 * ('x' in order: the next float64 placeholder) or from consts ('c': the
 * next one, float64 data), every output cast back to float64, flattened
 * and joined. */
typedef struct f32_case {
  const char *op;
  const char *order;
  ag_const consts[4];
  int nout;
} f32_case;

static int build_f32(wf_graph *g, const wf_output *x, wf_output *y,
                     const void *arg, wf_status *st) {
  const f32_case *c = arg;
  const gc_attr to32[] = {{"SrcT", GC_DTYPE(WF_FLOAT64)},
                          {"DstT", GC_DTYPE(WF_FLOAT32)},
                          {NULL}};
  const gc_attr to64[] = {{"SrcT", GC_DTYPE(WF_FLOAT32)},
                          {"DstT", GC_DTYPE(WF_FLOAT64)},
                          {NULL}};
  int nin = (int)strlen(c->order), xi = 0, ci = 0;
  wf_output in[6], outs[3];
  wf_node_desc *d;
  wf_node *n;

  for (int i = 0; i < nin; i++) {
    wf_output src;
    if (c->order[i] == 'x') {
      src = x[xi++];
    } else {
      const ag_const *k = &c->consts[ci++];
      if (gc_const(g, k->dtype, k->dims, k->rank, k->data, &src, st))
        return wf_status_code(st);
    }
    if (gc_op(g, "Cast", &src, 1, to32, &in[i], st))
      return wf_status_code(st);
  }
  d = wf_node_desc_new(g, c->op, NULL);
  for (int i = 0; i < nin; i++)
    wf_node_desc_add_input(d, in[i]);
  if (!(n = wf_node_desc_finish(d, st)))
    return wf_status_code(st);
  for (int i = 0; i < c->nout; i++) {
    wf_output o, ni = {n, i};
    if (gc_op(g, "Cast", &ni, 1, to64, &o, st) ||
        ag_flatten(g, o, &outs[i], st))
      return wf_status_code(st);
  }
  d = wf_node_desc_new(g, "Concat", NULL);
  wf_node_desc_add_input_list(d, outs, c->nout);
  wf_node_desc_set_attr_int(d, "axis", 0);
  if (!(n = wf_node_desc_finish(d, st)))
    return wf_status_code(st);
  *y = (wf_output){n, 0};
  return 0;
}

static void check_f32(gc_spec spec, const f32_case *c) {
  spec.build = build_f32;
  spec.build_arg = c;
  spec.step = 1e-3;
  spec.rtol = 2e-3;
  spec.atol = 1e-4;
  if (gc_check(rt, &spec) != 0)
    fail_msg("%s: the gradient does not match finite differences (see "
             "above)",
             spec.name);
}

/* Every input of both ops, four at a time (the checker's limit), with the
 * CPU plugin's kernels doing the float32 work (its tests check that they
 * are the ones the registry picks). */
static void test_float32_gradients_through_onednn_match_finite_differences(
    void **state) {
  static const int64_t xd[3] = {3, 2, 4}, sd[2] = {2, 3};
  static const int64_t lw[2] = {4, 12}, lr[2] = {3, 12}, lb[1] = {12};
  static const int64_t gw[2] = {4, 9}, gr[2] = {3, 9}, gb[1] = {9};
  rnn_inputs v;
  f32_case lstm1 = {.op = "LSTM", .order = "xxxxcc", .nout = 3};
  f32_case lstm2 = {.op = "LSTM", .order = "ccccxx", .nout = 3};
  f32_case gru1 = {.op = "GRU", .order = "xxxxc", .nout = 2};
  f32_case gru2 = {.op = "GRU", .order = "cccxx", .nout = 2};

  draw(&v, 0.5);
  lstm1.consts[0] = (ag_const){WF_FLOAT64, 2, {3, 12}, v.r};
  lstm1.consts[1] = (ag_const){WF_FLOAT64, 1, {12}, v.b};
  lstm2.consts[0] = (ag_const){WF_FLOAT64, 3, {3, 2, 4}, v.x};
  lstm2.consts[1] = (ag_const){WF_FLOAT64, 2, {2, 3}, v.h0};
  lstm2.consts[2] = (ag_const){WF_FLOAT64, 2, {2, 3}, v.c0};
  lstm2.consts[3] = (ag_const){WF_FLOAT64, 2, {4, 12}, v.w};
  gru1.consts[0] = (ag_const){WF_FLOAT64, 1, {9}, v.b};
  gru2.consts[0] = lstm2.consts[0];
  gru2.consts[1] = lstm2.consts[1];
  gru2.consts[2] = (ag_const){WF_FLOAT64, 2, {4, 9}, v.w};
  check_f32((gc_spec){.name = "LSTM float32 x, h0, c0, w",
                      .num_inputs = 4,
                      .in = {in_of(3, xd, -1, 1), in_of(2, sd, -0.5, 0.5),
                             in_of(2, sd, -0.5, 0.5),
                             in_of(2, lw, -0.5, 0.5)}},
            &lstm1);
  check_f32((gc_spec){.name = "LSTM float32 r, b",
                      .num_inputs = 2,
                      .in = {in_of(2, lr, -0.5, 0.5),
                             in_of(1, lb, -0.5, 0.5)}},
            &lstm2);
  check_f32((gc_spec){.name = "GRU float32 x, h0, w, r",
                      .num_inputs = 4,
                      .in = {in_of(3, xd, -1, 1), in_of(2, sd, -0.5, 0.5),
                             in_of(2, gw, -0.5, 0.5),
                             in_of(2, gr, -0.5, 0.5)}},
            &gru1);
  check_f32((gc_spec){.name = "GRU float32 r, b",
                      .num_inputs = 2,
                      .in = {in_of(2, gr, -0.5, 0.5),
                             in_of(1, gb, -0.5, 0.5)}},
            &gru2);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_lstm_computes_the_gated_recurrence),
      cmocka_unit_test(test_gru_applies_the_reset_gate_before_the_product),
      cmocka_unit_test(test_lstm_infers_shapes_from_partial_inputs),
      cmocka_unit_test(test_rnn_ops_refuse_inconsistent_shapes),
      cmocka_unit_test(test_lstm_gradients_match_finite_differences),
      cmocka_unit_test(test_gru_gradients_match_finite_differences),
      cmocka_unit_test(
          test_float32_gradients_through_onednn_match_finite_differences),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
