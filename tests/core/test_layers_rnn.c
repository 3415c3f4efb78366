/* tests/core/test_layers_rnn.c — the recurrent layers of the layers API:
 * names and shapes, the sequence output, a refused input, and a stacked GRU
 * learning a task with Adam. The GRU/LSTM ops' numerics are tests/ops'. */
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

static void test_recurrent_layers_name_and_shape_their_variables(
    void **state) {
  (void)state;
  wf_graph *g = wf_graph_new(rt);
  const int64_t xd[3] = {-1, 5, 3};
  wf_output x = placeholder(g, "x", WF_FLOAT32, xd, 3);
  wf_model *m = wf_model_new(g, 3, st);
  wf_model_begin(m, 1);
  wf_output seq;
  wf_output h = wf_layer_gru(m, x, 4, &seq, st);
  assert_non_null(h.node);
  assert_non_null(seq.node);
  wf_output c = wf_layer_lstm(m, x, 2, NULL, st);
  assert_non_null(c.node);
  wf_output h2 = wf_layer_gru(m, x, 4, NULL, st);
  assert_non_null(h2.node);

  const struct {
    const char *name;
    int rank;
    int64_t d0, d1;
  } want[9] = {{"gru/kernel", 2, 3, 12},
               {"gru/recurrent_kernel", 2, 4, 12},
               {"gru/bias", 1, 12, 0},
               {"lstm/kernel", 2, 3, 8},
               {"lstm/recurrent_kernel", 2, 2, 8},
               {"lstm/bias", 1, 8, 0},
               {"gru_1/kernel", 2, 3, 12},
               {"gru_1/recurrent_kernel", 2, 4, 12},
               {"gru_1/bias", 1, 12, 0}};
  assert_int_equal(wf_model_num_variables(m), 9);
  for (int i = 0; i < 9; i++) {
    int trainable = 0;
    wf_output handle;
    const char *name = wf_model_variable_name(m, i, &handle, &trainable);
    assert_non_null(name);
    assert_string_equal(name, want[i].name);
    assert_true(trainable);
    wf_attr_value v;
    OK(wf_node_get_attr(handle.node, "shape", &v, st));
    assert_int_equal(v.u.shape.rank, want[i].rank);
    assert_int_equal(v.u.shape.dims[0], want[i].d0);
    if (want[i].rank == 2)
      assert_int_equal(v.u.shape.dims[1], want[i].d1);
  }
  /* As built, with the batch size unknown: h (N, 4), seq (N, 5, 4). */
  wf_shape hs, ss, cs;
  wf_node_output_shape(h.node, h.index, &hs);
  wf_node_output_shape(seq.node, seq.index, &ss);
  wf_node_output_shape(c.node, c.index, &cs);
  assert_int_equal(hs.rank, 2);
  assert_int_equal(hs.dims[1], 4);
  assert_int_equal(ss.rank, 3);
  assert_int_equal(ss.dims[1], 5);
  assert_int_equal(ss.dims[2], 4);
  assert_int_equal(cs.rank, 2);
  assert_int_equal(cs.dims[1], 2);

  /* Run on a batch of 2: the last row of the sequence is the last state. */
  wf_session *s = wf_session_new(g, st);
  assert_non_null(s);
  init_model(s, m);
  float xv[2 * 5 * 3];
  for (int i = 0; i < 30; i++)
    xv[i] = (float)((i * 7) % 11) / 11.0f - 0.5f;
  wf_tensor *xt = tensor3(2, 5, 3, xv);
  wf_output fetch[3] = {h, seq, c};
  wf_tensor *out[3] = {NULL, NULL, NULL};
  OK(wf_session_run(s, NULL, &x, &xt, 1, fetch, out, 3, NULL, 0, NULL, st));
  assert_int_equal(wf_tensor_rank(out[0]), 2);
  assert_int_equal(wf_tensor_dim(out[0], 0), 2);
  assert_int_equal(wf_tensor_dim(out[0], 1), 4);
  assert_int_equal(wf_tensor_rank(out[1]), 3);
  assert_int_equal(wf_tensor_dim(out[1], 0), 2);
  assert_int_equal(wf_tensor_dim(out[1], 1), 5);
  assert_int_equal(wf_tensor_dim(out[1], 2), 4);
  assert_int_equal(wf_tensor_dim(out[2], 0), 2);
  assert_int_equal(wf_tensor_dim(out[2], 1), 2);
  const float *hv = wf_tensor_data(out[0]), *sv = wf_tensor_data(out[1]);
  double norm = 0;
  for (int n = 0; n < 2; n++)
    for (int j = 0; j < 4; j++) {
      assert_float_equal(hv[n * 4 + j], sv[(n * 5 + 4) * 4 + j], 1e-6);
      norm += fabs(hv[n * 4 + j]);
    }
  assert_true(norm > 1e-3); /* Glorot weights move the state off zero */
  for (int i = 0; i < 3; i++)
    wf_tensor_release(out[i]);
  wf_tensor_release(xt);
  wf_session_free(s);
  wf_model_free(m);
  wf_graph_free(g);
}

static void test_recurrent_layers_refuse_a_matrix_input(void **state) {
  (void)state;
  wf_graph *g = wf_graph_new(rt);
  const int64_t xd[2] = {-1, 3};
  wf_output x = placeholder(g, "x", WF_FLOAT32, xd, 2);
  wf_model *m = wf_model_new(g, 3, st);
  wf_model_begin(m, 1);
  wf_output seq = {(wf_node *)1, 0};
  wf_output h = wf_layer_gru(m, x, 4, &seq, st);
  assert_null(h.node);
  assert_null(seq.node);
  assert_int_equal(wf_status_code(st), WF_INVALID_ARGUMENT);
  assert_non_null(strstr(wf_status_message(st), "gru layer"));
  assert_non_null(strstr(wf_status_message(st), "(N, T, C)"));
  h = wf_layer_lstm(m, x, 4, NULL, st);
  assert_null(h.node);
  assert_non_null(strstr(wf_status_message(st), "lstm layer"));
  assert_int_equal(wf_model_num_variables(m), 0);
  wf_model_free(m);
  wf_graph_free(g);
}

/* Sequences of T values in {-1, 1}; the label is the sign of the first
 * value, which the model must carry through T - 1 later steps. A stacked
 * GRU (the first layer's sequence into the second) and a dense layer,
 * trained by Adam on one fixed batch. */
static void test_stacked_gru_model_learns_a_sequence_task(void **state) {
  (void)state;
  enum { N = 16, T = 6 };
  wf_graph *g = wf_graph_new(rt);
  const int64_t xd[3] = {-1, T, 1}, yd[1] = {-1};
  wf_output x = placeholder(g, "x", WF_FLOAT32, xd, 3);
  wf_output y = placeholder(g, "y", WF_INT32, yd, 1);
  wf_model *m = wf_model_new(g, 11, st);
  wf_model_begin(m, 1);
  wf_output seq;
  wf_output h = wf_layer_gru(m, x, 8, &seq, st);
  assert_non_null(h.node);
  h = wf_layer_gru(m, seq, 8, NULL, st);
  wf_output logits = wf_layer_dense(m, h, 2, WF_ACT_NONE, st);
  wf_output loss = wf_loss_sparse_softmax_cross_entropy(m, logits, y, st);
  assert_non_null(loss.node);
  wf_optimizer opt = wf_optimizer_defaults(WF_OPT_ADAM);
  opt.learning_rate = 0.03;
  wf_node *train = wf_model_minimize(m, loss, &opt, st);
  if (!train)
    fail_msg("minimize: %s", wf_status_message(st));

  float xv[N * T];
  int32_t lv[N];
  unsigned r = 12345;
  for (int n = 0; n < N; n++) {
    for (int t = 0; t < T; t++) {
      r = r * 1103515245u + 12345u;
      xv[n * T + t] = (r >> 16) & 1 ? 1.0f : -1.0f;
    }
    xv[n * T] = n % 2 ? 1.0f : -1.0f; /* both classes, evenly */
    lv[n] = xv[n * T] > 0;
  }
  wf_tensor *in[2] = {tensor3(N, T, 1, xv), NULL};
  int64_t nd = N;
  in[1] = wf_tensor_new(WF_INT32, &nd, 1, st);
  assert_non_null(in[1]);
  memcpy(wf_tensor_data(in[1]), lv, sizeof lv);
  wf_output feeds[2] = {x, y};

  wf_session *s = wf_session_new(g, st);
  assert_non_null(s);
  init_model(s, m);
  float first = 0, last = 0;
  for (int step = 0; step < 60; step++) {
    wf_tensor *lt = NULL;
    OK(wf_session_run(s, NULL, feeds, in, 2, &loss, &lt, 1, &train, 1, NULL,
                      st));
    last = *(float *)wf_tensor_data(lt);
    if (step == 0)
      first = last;
    wf_tensor_release(lt);
  }
  assert_true(isfinite(last));
  /* Chance is log 2 = 0.69; learning the first value takes it far below. */
  assert_true(first > 0.5f);
  if (!(last < 0.25f * first))
    fail_msg("loss went from %g to %g in 60 Adam steps", first, last);
  wf_tensor_release(in[0]);
  wf_tensor_release(in[1]);
  wf_session_free(s);
  wf_model_free(m);
  wf_graph_free(g);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_recurrent_layers_name_and_shape_their_variables),
      cmocka_unit_test(test_recurrent_layers_refuse_a_matrix_input),
      cmocka_unit_test(test_stacked_gru_model_learns_a_sequence_task),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
