/* tests/core/test_layers_transformer.c — the transformer layers of the
 * layers API (layer norm, positional embedding, multi-head attention, the
 * encoder block, global average pooling, dense over a sequence): names and
 * shapes of their variables, multi-head attention and the encoder block
 * against a float64 reference computed here from the variables' initial
 * values (tolerance 1e-4 relative to max(|want|, 1)), refused inputs, and
 * a small encoder learning a sequence task with Adam. LayerNorm's own
 * numerics are tests/ops/test_layer_norm's. */
#include <config.h>

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <weft/weft.h>

static wf_runtime *rt;
static wf_status *st;

static int setup(void **state) {
  (void)state;
  st = wf_status_new();
  rt = wf_runtime_new(NULL, st);
  if (!rt)
    fail_msg("runtime: %s", wf_status_message(st));
  return 0;
}

static int teardown(void **state) {
  (void)state;
  wf_runtime_free(rt);
  wf_status_free(st);
  return 0;
}

#define OK(x)                                                                  \
  do {                                                                         \
    if (x)                                                                     \
      fail_msg("%s: %s", #x, wf_status_message(st));                           \
  } while (0)

static wf_output placeholder(wf_graph *g, const char *name, wf_dtype dt,
                             const int64_t *dims, int rank) {
  wf_node_desc *d = wf_node_desc_new(g, "Placeholder", name);
  wf_node_desc_set_attr_dtype(d, "dtype", dt);
  wf_node_desc_set_attr_shape(d, "shape", dims, rank);
  wf_node *n = wf_node_desc_finish(d, st);
  if (!n)
    fail_msg("placeholder: %s", wf_status_message(st));
  return (wf_output){n, 0};
}

static void init_model(wf_session *s, wf_model *m) {
  wf_node *init = wf_model_init_op(m, st);
  assert_non_null(init);
  OK(wf_session_run(s, NULL, NULL, NULL, 0, NULL, NULL, 0, &init, 1, NULL, st));
}

static wf_tensor *tensor3(int64_t d0, int64_t d1, int64_t d2,
                          const float *v) {
  int64_t dims[3] = {d0, d1, d2};
  wf_tensor *t = wf_tensor_new(WF_FLOAT32, dims, 3, st);
  assert_non_null(t);
  memcpy(wf_tensor_data(t), v, wf_tensor_nbytes(t));
  return t;
}

/* The variable of m called name, read once more in g (a new ReadVariable:
 * the value the session holds). */
static wf_output read_var(wf_graph *g, wf_model *m, const char *name) {
  for (int i = 0; i < wf_model_num_variables(m); i++) {
    wf_output h;
    if (strcmp(wf_model_variable_name(m, i, &h, NULL), name) != 0)
      continue;
    wf_attr_value shape;
    OK(wf_node_get_attr(h.node, "shape", &shape, st));
    wf_node_desc *d = wf_node_desc_new(g, "ReadVariable", NULL);
    wf_node_desc_add_input(d, h);
    wf_node_desc_set_attr_dtype(d, "dtype", WF_FLOAT32);
    wf_node_desc_set_attr(d, "shape", &shape);
    wf_node *n = wf_node_desc_finish(d, st);
    if (!n)
      fail_msg("reading %s: %s", name, wf_status_message(st));
    return (wf_output){n, 0};
  }
  fail_msg("the model has no variable %s", name);
  return (wf_output){NULL, 0};
}

/* ---- a float64 reference ------------------------------------------------- */

/* y (R, U) = x (R, D) W (D, U) + b. */
static void ref_affine(double *y, const double *x, const float *w,
                       const float *b, int r, int d, int u) {
  for (int i = 0; i < r; i++)
    for (int j = 0; j < u; j++) {
      double s = b[j];
      for (int k = 0; k < d; k++)
        s += x[i * d + k] * w[k * u + j];
      y[i * u + j] = s;
    }
}

static void ref_layer_norm(double *y, const double *x, const float *g,
                           const float *b, int r, int d, double eps) {
  for (int i = 0; i < r; i++) {
    double m = 0, v = 0;
    for (int k = 0; k < d; k++)
      m += x[i * d + k] / d;
    for (int k = 0; k < d; k++)
      v += (x[i * d + k] - m) * (x[i * d + k] - m) / d;
    for (int k = 0; k < d; k++)
      y[i * d + k] = (x[i * d + k] - m) / sqrt(v + eps) * g[k] + b[k];
  }
}

/* Self-attention of x (n, t, d) with h heads; w[0..3] kernels of query,
 * key, value and output, b[0..3] their biases. */
static void ref_attention(double *y, const double *x, int n, int t, int d,
                          int h, const float *const *w,
                          const float *const *b) {
  int r = n * t, dh = d / h;
  double *q = malloc(sizeof(double) * r * d), *k = malloc(sizeof(double) * r * d),
         *v = malloc(sizeof(double) * r * d), *c = malloc(sizeof(double) * r * d);
  assert_true(q && k && v && c);
  ref_affine(q, x, w[0], b[0], r, d, d);
  ref_affine(k, x, w[1], b[1], r, d, d);
  ref_affine(v, x, w[2], b[2], r, d, d);
  for (int s = 0; s < n; s++)
    for (int hd = 0; hd < h; hd++)
      for (int i = 0; i < t; i++) {
        double p[64], mx = -INFINITY, sum = 0;
        assert_true(t <= 64);
        for (int j = 0; j < t; j++) {
          double dot = 0;
          for (int e = 0; e < dh; e++)
            dot += q[(s * t + i) * d + hd * dh + e] *
                   k[(s * t + j) * d + hd * dh + e];
          p[j] = dot / sqrt((double)dh);
          mx = fmax(mx, p[j]);
        }
        for (int j = 0; j < t; j++)
          sum += p[j] = exp(p[j] - mx);
        for (int e = 0; e < dh; e++) {
          double acc = 0;
          for (int j = 0; j < t; j++)
            acc += p[j] / sum * v[(s * t + j) * d + hd * dh + e];
          c[(s * t + i) * d + hd * dh + e] = acc;
        }
      }
  ref_affine(y, c, w[3], b[3], r, d, d);
  free(q), free(k), free(v), free(c);
}

static void expect_close(const float *got, const double *want, int64_t n,
                         const char *what) {
  for (int64_t i = 0; i < n; i++)
    if (!(fabs(got[i] - want[i]) <= 1e-4 * fmax(fabs(want[i]), 1)))
      fail_msg("%s: element %lld is %.8g, want %.8g", what, (long long)i,
               got[i], want[i]);
}

/* ---- tests --------------------------------------------------------------- */

static void test_transformer_layers_name_and_shape_their_variables(
    void **state) {
  (void)state;
  wf_graph *g = wf_graph_new(rt);
  const int64_t xd[3] = {-1, 5, 3};
  wf_output x = placeholder(g, "x", WF_FLOAT32, xd, 3);
  wf_model *m = wf_model_new(g, 3, st);
  wf_model_begin(m, 1);
  wf_output h = wf_layer_dense(m, x, 8, WF_ACT_NONE, st);
  h = wf_layer_positional_embedding(m, h, st);
  h = wf_layer_transformer_encoder(m, h, 2, 16, st);
  assert_non_null(h.node);
  wf_shape hs;
  wf_node_output_shape(h.node, h.index, &hs);
  assert_int_equal(hs.rank, 3);
  assert_int_equal(hs.dims[1], 5);
  assert_int_equal(hs.dims[2], 8);
  wf_output p = wf_layer_global_avg_pool(m, h, st);
  assert_non_null(p.node);
  wf_node_output_shape(p.node, p.index, &hs);
  assert_int_equal(hs.rank, 2);
  assert_int_equal(hs.dims[1], 8);

  const struct {
    const char *name;
    int64_t d0, d1; /* d1 0: a vector */
  } want[] = {{"dense/kernel", 3, 8},
              {"dense/bias", 8, 0},
              {"positional_embedding/embeddings", 5, 8},
              {"layer_norm/gamma", 8, 0},
              {"layer_norm/beta", 8, 0},
              {"multi_head_attention/query/kernel", 8, 8},
              {"multi_head_attention/query/bias", 8, 0},
              {"multi_head_attention/key/kernel", 8, 8},
              {"multi_head_attention/key/bias", 8, 0},
              {"multi_head_attention/value/kernel", 8, 8},
              {"multi_head_attention/value/bias", 8, 0},
              {"multi_head_attention/output/kernel", 8, 8},
              {"multi_head_attention/output/bias", 8, 0},
              {"layer_norm_1/gamma", 8, 0},
              {"layer_norm_1/beta", 8, 0},
              {"dense_1/kernel", 8, 16},
              {"dense_1/bias", 16, 0},
              {"dense_2/kernel", 16, 8},
              {"dense_2/bias", 8, 0}};
  int nwant = (int)(sizeof want / sizeof want[0]);
  assert_int_equal(wf_model_num_variables(m), nwant);
  for (int i = 0; i < nwant; i++) {
    int trainable = 0;
    wf_output handle;
    const char *name = wf_model_variable_name(m, i, &handle, &trainable);
    assert_string_equal(name, want[i].name);
    assert_true(trainable);
    wf_attr_value v;
    OK(wf_node_get_attr(handle.node, "shape", &v, st));
    assert_int_equal(v.u.shape.rank, want[i].d1 ? 2 : 1);
    assert_int_equal(v.u.shape.dims[0], want[i].d0);
    if (want[i].d1)
      assert_int_equal(v.u.shape.dims[1], want[i].d1);
  }
  wf_model_free(m);
  wf_graph_free(g);
}

/* One encoder block on a batch of 3 sequences of 4 tokens of 8, against
 * the reference built from the variables' initial values (the layer norms
 * start at gamma 1, beta 0, but the reference reads them too). Also
 * checks the attention layer alone and the pooled mean. */
static void test_encoder_block_matches_a_reference(void **state) {
  (void)state;
  enum { N = 3, T = 4, D = 8, H = 2, F = 12 };
  wf_graph *g = wf_graph_new(rt);
  const int64_t xd[3] = {-1, T, D};
  wf_output x = placeholder(g, "x", WF_FLOAT32, xd, 3);
  wf_model *m = wf_model_new(g, 5, st);
  wf_model_begin(m, 0);
  wf_output att = wf_layer_multi_head_attention(m, x, H, st);
  wf_output enc = wf_layer_transformer_encoder(m, x, H, F, st);
  wf_output pool = wf_layer_global_avg_pool(m, enc, st);
  assert_non_null(att.node);
  assert_non_null(pool.node);

  static const char *const names[] = {
      "multi_head_attention/query/kernel",  "multi_head_attention/key/kernel",
      "multi_head_attention/value/kernel",  "multi_head_attention/output/kernel",
      "multi_head_attention/query/bias",    "multi_head_attention/key/bias",
      "multi_head_attention/value/bias",    "multi_head_attention/output/bias",
      "multi_head_attention_1/query/kernel",
      "multi_head_attention_1/key/kernel",
      "multi_head_attention_1/value/kernel",
      "multi_head_attention_1/output/kernel",
      "multi_head_attention_1/query/bias",  "multi_head_attention_1/key/bias",
      "multi_head_attention_1/value/bias",  "multi_head_attention_1/output/bias",
      "layer_norm/gamma",                   "layer_norm/beta",
      "layer_norm_1/gamma",                 "layer_norm_1/beta",
      "dense/kernel",                       "dense/bias",
      "dense_1/kernel",                     "dense_1/bias"};
  enum { NV = sizeof names / sizeof names[0] };
  wf_output fetch[NV + 3];
  for (int i = 0; i < NV; i++)
    fetch[i] = read_var(g, m, names[i]);
  fetch[NV] = att;
  fetch[NV + 1] = enc;
  fetch[NV + 2] = pool;

  wf_session *s = wf_session_new(g, st);
  assert_non_null(s);
  init_model(s, m);
  float xv[N * T * D];
  for (int i = 0; i < N * T * D; i++)
    xv[i] = (float)((i * 37) % 23) / 11.0f - 1.0f;
  wf_tensor *xt = tensor3(N, T, D, xv);
  wf_tensor *out[NV + 3];
  OK(wf_session_run(s, NULL, &x, &xt, 1, fetch, out, NV + 3, NULL, 0, NULL,
                    st));
  const float *v[NV];
  for (int i = 0; i < NV; i++)
    v[i] = wf_tensor_data(out[i]);

  enum { R = N * T };
  double x64[R * D], a[R * D], h1[R * D], ln[R * D], f[R * F], y[R * D],
      mean[N * D];
  for (int i = 0; i < R * D; i++)
    x64[i] = xv[i];
  ref_attention(a, x64, N, T, D, H, v, v + 4);
  expect_close(wf_tensor_data(out[NV]), a, R * D, "multi_head_attention");

  ref_layer_norm(ln, x64, v[16], v[17], R, D, 1e-5);
  ref_attention(a, ln, N, T, D, H, v + 8, v + 12);
  for (int i = 0; i < R * D; i++)
    h1[i] = x64[i] + a[i];
  ref_layer_norm(ln, h1, v[18], v[19], R, D, 1e-5);
  ref_affine(f, ln, v[20], v[21], R, D, F);
  for (int i = 0; i < R * F; i++) /* exact GELU */
    f[i] = 0.5 * f[i] * (1 + erf(f[i] / sqrt(2.0)));
  ref_affine(y, f, v[22], v[23], R, F, D);
  for (int i = 0; i < R * D; i++)
    y[i] += h1[i];
  expect_close(wf_tensor_data(out[NV + 1]), y, R * D, "encoder block");
  for (int s2 = 0; s2 < N; s2++)
    for (int k = 0; k < D; k++) {
      mean[s2 * D + k] = 0;
      for (int t = 0; t < T; t++)
        mean[s2 * D + k] += y[(s2 * T + t) * D + k] / T;
    }
  expect_close(wf_tensor_data(out[NV + 2]), mean, N * D, "global_avg_pool");

  for (int i = 0; i < NV + 3; i++)
    wf_tensor_release(out[i]);
  wf_tensor_release(xt);
  wf_session_free(s);
  wf_model_free(m);
  wf_graph_free(g);
}

static void test_transformer_layers_refuse_bad_inputs(void **state) {
  (void)state;
  wf_graph *g = wf_graph_new(rt);
  const int64_t md[2] = {-1, 6}, sd[3] = {-1, 4, 6};
  wf_output mat = placeholder(g, "mat", WF_FLOAT32, md, 2);
  wf_output seq = placeholder(g, "seq", WF_FLOAT32, sd, 3);
  wf_model *m = wf_model_new(g, 3, st);
  wf_model_begin(m, 1);
  wf_output r = wf_layer_multi_head_attention(m, mat, 2, st);
  assert_null(r.node);
  assert_int_equal(wf_status_code(st), WF_INVALID_ARGUMENT);
  assert_non_null(strstr(wf_status_message(st), "(N, T, D)"));
  r = wf_layer_multi_head_attention(m, seq, 4, st);
  assert_null(r.node);
  assert_non_null(strstr(wf_status_message(st), "4 heads do not divide the 6"));
  r = wf_layer_positional_embedding(m, mat, st);
  assert_null(r.node);
  assert_non_null(strstr(wf_status_message(st), "positional_embedding"));
  r = wf_layer_transformer_encoder(m, seq, 2, 0, st);
  assert_null(r.node);
  assert_non_null(strstr(wf_status_message(st), "mlp_units is 0"));
  r = wf_layer_global_avg_pool(m, mat, st);
  assert_null(r.node);
  assert_non_null(strstr(wf_status_message(st), "rank of at least 3"));
  r = wf_layer_layer_norm(m, seq, -1, st);
  assert_null(r.node);
  assert_non_null(strstr(wf_status_message(st), "epsilon (-1)"));
  assert_int_equal(wf_model_num_variables(m), 0);
  wf_model_free(m);
  wf_graph_free(g);
}

/* Sequences of T tokens of 2 values; one token in each holds a marker
 * (first value 1, the others 0) and the label is the sign of that token's
 * second value: the model must find the marked token wherever it sits
 * (attention) and read its value. dense, positions, one encoder block,
 * layer norm, mean, dense; Adam on one fixed batch. */
static void test_encoder_learns_to_attend_to_a_marked_token(void **state) {
  (void)state;
  enum { N = 32, T = 6 };
  wf_graph *g = wf_graph_new(rt);
  const int64_t xd[3] = {-1, T, 2}, yd[1] = {-1};
  wf_output x = placeholder(g, "x", WF_FLOAT32, xd, 3);
  wf_output y = placeholder(g, "y", WF_INT32, yd, 1);
  wf_model *m = wf_model_new(g, 7, st);
  wf_model_begin(m, 1);
  wf_output h = wf_layer_dense(m, x, 16, WF_ACT_NONE, st);
  h = wf_layer_positional_embedding(m, h, st);
  h = wf_layer_transformer_encoder(m, h, 2, 32, st);
  h = wf_layer_layer_norm(m, h, 1e-5, st);
  h = wf_layer_global_avg_pool(m, h, st);
  wf_output logits = wf_layer_dense(m, h, 2, WF_ACT_NONE, st);
  wf_output loss = wf_loss_sparse_softmax_cross_entropy(m, logits, y, st);
  assert_non_null(loss.node);
  wf_optimizer opt = wf_optimizer_defaults(WF_OPT_ADAM);
  opt.learning_rate = 0.01;
  wf_node *train = wf_model_minimize(m, loss, &opt, st);
  if (!train)
    fail_msg("minimize: %s", wf_status_message(st));

  float xv[N * T * 2];
  int32_t lv[N];
  unsigned r = 4242;
  for (int n = 0; n < N; n++) {
    r = r * 1103515245u + 12345u;
    int at = (int)((r >> 16) % T);
    for (int t = 0; t < T; t++) {
      r = r * 1103515245u + 12345u;
      xv[(n * T + t) * 2] = t == at;
      xv[(n * T + t) * 2 + 1] = (float)((r >> 16) % 1000) / 500.0f - 1.0f;
    }
    xv[(n * T + at) * 2 + 1] = n % 2 ? 0.8f : -0.8f; /* both classes */
    lv[n] = n % 2;
  }
  wf_tensor *in[2] = {tensor3(N, T, 2, xv), NULL};
  int64_t nd = N;
  in[1] = wf_tensor_new(WF_INT32, &nd, 1, st);
  assert_non_null(in[1]);
  memcpy(wf_tensor_data(in[1]), lv, sizeof lv);
  wf_output feeds[2] = {x, y};

  wf_session *s = wf_session_new(g, st);
  assert_non_null(s);
  init_model(s, m);
  float first = 0, last = 0;
  for (int step = 0; step < 150; step++) {
    wf_tensor *lt = NULL;
    OK(wf_session_run(s, NULL, feeds, in, 2, &loss, &lt, 1, &train, 1, NULL,
                      st));
    last = *(float *)wf_tensor_data(lt);
    if (step == 0)
      first = last;
    wf_tensor_release(lt);
  }
  assert_true(isfinite(last));
  assert_true(first > 0.5f); /* chance: log 2 = 0.69 */
  if (!(last < 0.2f * first))
    fail_msg("loss went from %g to %g in 150 Adam steps", first, last);
  wf_tensor_release(in[0]);
  wf_tensor_release(in[1]);
  wf_session_free(s);
  wf_model_free(m);
  wf_graph_free(g);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_transformer_layers_name_and_shape_their_variables),
      cmocka_unit_test(test_encoder_block_matches_a_reference),
      cmocka_unit_test(test_transformer_layers_refuse_bad_inputs),
      cmocka_unit_test(test_encoder_learns_to_attend_to_a_marked_token),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
