/* tests/core/test_layers.c — the layers API: variables and their names,
 * initialisation, training and inference passes sharing weights, losses and
 * metrics against hand-computed values, every optimizer kind reducing a
 * loss, schedules, clipping and the global step. Uses the built-in plugins
 * found in the build tree. */
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
                             int64_t d0, int64_t d1) {
  int64_t dims[2] = {d0, d1};
  wf_node_desc *d = wf_node_desc_new(g, "Placeholder", name);
  wf_node_desc_set_attr_dtype(d, "dtype", dt);
  wf_node_desc_set_attr_shape(d, "shape", dims, d1 < 0 ? 1 : 2);
  wf_node *n = wf_node_desc_finish(d, st);
  if (!n)
    fail_msg("placeholder: %s", wf_status_message(st));
  return (wf_output){n, 0};
}

static wf_tensor *matrix(int64_t r, int64_t c, const float *v) {
  int64_t dims[2] = {r, c};
  wf_tensor *t = wf_tensor_new(WF_FLOAT32, dims, c < 0 ? 1 : 2, st);
  assert_non_null(t);
  memcpy(wf_tensor_data(t), v, wf_tensor_nbytes(t));
  return t;
}

static float run1(wf_session *s, wf_output *feeds, wf_tensor **vals, int nf,
                  wf_output fetch, wf_node *target) {
  wf_tensor *v = NULL;
  OK(wf_session_run(s, NULL, feeds, vals, nf, &fetch, &v, fetch.node ? 1 : 0,
                    target ? &target : NULL, target ? 1 : 0, NULL, st));
  float f = v ? *(float *)wf_tensor_data(v) : 0;
  wf_tensor_release(v);
  return f;
}

static void init_model(wf_session *s, wf_model *m) {
  wf_node *init = wf_model_init_op(m, st);
  assert_non_null(init);
  OK(wf_session_run(s, NULL, NULL, NULL, 0, NULL, NULL, 0, &init, 1, NULL, st));
}

static void test_variables_are_named_and_need_initialising(void **state) {
  (void)state;
  wf_graph *g = wf_graph_new(rt);
  wf_output x = placeholder(g, "x", WF_FLOAT32, -1, 3);
  wf_model *m = wf_model_new(g, 7, st);
  wf_model_begin(m, 1);
  wf_output h = wf_layer_dense(m, x, 4, WF_ACT_RELU, st);
  h = wf_layer_dense(m, h, 2, WF_ACT_NONE, st);
  assert_non_null(h.node);
  assert_int_equal(wf_model_num_variables(m), 4);
  assert_string_equal(wf_model_variable_name(m, 0, NULL, NULL), "dense/kernel");
  assert_string_equal(wf_model_variable_name(m, 1, NULL, NULL), "dense/bias");
  assert_string_equal(wf_model_variable_name(m, 2, NULL, NULL),
                      "dense_1/kernel");
  /* A second pass reuses the variables. */
  wf_model_begin(m, 0);
  wf_output h2 = wf_layer_dense(m, x, 4, WF_ACT_RELU, st);
  h2 = wf_layer_dense(m, h2, 2, WF_ACT_NONE, st);
  assert_non_null(h2.node);
  assert_int_equal(wf_model_num_variables(m), 4);
  /* ... and refuses another shape. */
  wf_model_begin(m, 0);
  wf_output bad = wf_layer_dense(m, x, 5, WF_ACT_RELU, st);
  assert_null(bad.node);
  assert_non_null(strstr(wf_status_message(st), "dense/kernel"));

  wf_session *s = wf_session_new(g, st);
  float xv[3] = {1, 2, 3};
  wf_tensor *xt = matrix(1, 3, xv);
  wf_tensor *out = NULL;
  assert_int_equal(
      wf_session_run(s, NULL, &x, &xt, 1, &h, &out, 1, NULL, 0, NULL, st),
      WF_FAILED_PRECONDITION);
  /* Whichever variable is read first is named. */
  assert_non_null(strstr(wf_status_message(st), "variable 'dense"));
  assert_non_null(strstr(wf_status_message(st), "initialised"));
  init_model(s, m);
  OK(wf_session_run(s, NULL, &x, &xt, 1, &h, &out, 1, NULL, 0, NULL, st));
  wf_tensor *out2 = NULL;
  OK(wf_session_run(s, NULL, &x, &xt, 1, &h2, &out2, 1, NULL, 0, NULL, st));
  /* Both passes compute the same function of the same weights. */
  assert_memory_equal(wf_tensor_data(out), wf_tensor_data(out2), 8);
  wf_tensor_release(out);
  wf_tensor_release(out2);
  wf_tensor_release(xt);
  wf_session_free(s);
  wf_model_free(m);
  wf_graph_free(g);
}

static void test_losses_and_metrics_match_hand_values(void **state) {
  (void)state;
  wf_graph *g = wf_graph_new(rt);
  wf_output logits = placeholder(g, "logits", WF_FLOAT32, 2, 3);
  wf_output labels = placeholder(g, "labels", WF_INT32, 2, -1);
  wf_output target = placeholder(g, "target", WF_FLOAT32, 2, 3);
  wf_model *m = wf_model_new(g, 1, st);
  wf_output ce = wf_loss_sparse_softmax_cross_entropy(m, logits, labels, st);
  wf_output acc = wf_metric_accuracy(m, logits, labels, st);
  wf_output mse = wf_loss_mean_squared_error(m, logits, target, st);
  assert_non_null(ce.node);
  assert_non_null(acc.node);
  assert_non_null(mse.node);
  wf_session *s = wf_session_new(g, st);
  float lv[6] = {2, 1, 0, 0, 0, 3}, tv[6] = {1, 1, 1, 1, 1, 1};
  int64_t ld[1] = {2};
  wf_tensor *lt = matrix(2, 3, lv), *tt = matrix(2, 3, tv);
  wf_tensor *yt = wf_tensor_new(WF_INT32, ld, 1, st);
  ((int32_t *)wf_tensor_data(yt))[0] = 0; /* right */
  ((int32_t *)wf_tensor_data(yt))[1] = 1; /* wrong: argmax is 2 */
  wf_output feeds[3] = {logits, labels, target};
  wf_tensor *vals[3] = {lt, yt, tt};
  double l0 = log(exp(2.0) + exp(1.0) + 1.0) - 2.0;
  double l1 = log(2.0 + exp(3.0)) - 0.0;
  assert_float_equal(run1(s, feeds, vals, 3, ce, NULL), (l0 + l1) / 2, 1e-5);
  assert_float_equal(run1(s, feeds, vals, 3, acc, NULL), 0.5, 0);
  /* (1+0+1+1+1+4)/6 */
  assert_float_equal(run1(s, feeds, vals, 3, mse, NULL), 8.0 / 6.0, 1e-6);
  wf_tensor_release(lt);
  wf_tensor_release(tt);
  wf_tensor_release(yt);
  wf_session_free(s);
  wf_model_free(m);
  wf_graph_free(g);
}

/* A regression y = x W* with a dense layer; returns the loss ratio
 * (after / before) of `steps` steps with optimizer o. */
static double train_ratio(wf_optimizer o, int steps, int64_t *global_step) {
  wf_graph *g = wf_graph_new(rt);
  wf_output x = placeholder(g, "x", WF_FLOAT32, 8, 3);
  wf_output y = placeholder(g, "y", WF_FLOAT32, 8, 2);
  wf_model *m = wf_model_new(g, 3, st);
  wf_model_begin(m, 1);
  wf_output pred = wf_layer_dense(m, x, 2, WF_ACT_NONE, st);
  wf_output loss = wf_loss_mean_squared_error(m, pred, y, st);
  wf_output l2 = wf_loss_l2(m, 1e-4, st);
  wf_output total = {NULL, 0};
  if (loss.node && l2.node) {
    wf_node_desc *d = wf_node_desc_new(g, "Add", "total");
    wf_node_desc_add_input(d, loss);
    wf_node_desc_add_input(d, l2);
    total = (wf_output){wf_node_desc_finish(d, st), 0};
  }
  assert_non_null(total.node);
  wf_node *step = wf_model_minimize(m, total, &o, st);
  if (!step)
    fail_msg("minimize: %s", wf_status_message(st));
  wf_output gs = wf_model_global_step(m, st);
  assert_non_null(gs.node);
  wf_session *s = wf_session_new(g, st);
  init_model(s, m);
  float xv[24], yv[16];
  for (int i = 0; i < 8; i++) {
    for (int k = 0; k < 3; k++)
      xv[i * 3 + k] = (float)sin(i * 3 + k + 1.0);
    yv[i * 2] = xv[i * 3] - 2 * xv[i * 3 + 1] + 0.5f;
    yv[i * 2 + 1] = 0.3f * xv[i * 3 + 2] - 1;
  }
  wf_tensor *vals[2] = {matrix(8, 3, xv), matrix(8, 2, yv)};
  wf_output feeds[2] = {x, y};
  double before = run1(s, feeds, vals, 2, loss, NULL);
  for (int i = 0; i < steps; i++)
    run1(s, feeds, vals, 2, (wf_output){NULL, 0}, step);
  double after = run1(s, feeds, vals, 2, loss, NULL);
  wf_tensor *gv = NULL;
  OK(wf_session_run(s, NULL, NULL, NULL, 0, &gs, &gv, 1, NULL, 0, NULL, st));
  *global_step = *(int64_t *)wf_tensor_data(gv);
  wf_tensor_release(gv);
  wf_tensor_release(vals[0]);
  wf_tensor_release(vals[1]);
  wf_session_free(s);
  wf_model_free(m);
  wf_graph_free(g);
  return after / before;
}

static void test_every_optimizer_reduces_the_loss(void **state) {
  (void)state;
  const wf_optimizer_kind kinds[] = {WF_OPT_SGD,  WF_OPT_MOMENTUM,
                                     WF_OPT_ADAM, WF_OPT_ADAMW,
                                     WF_OPT_RMSPROP, WF_OPT_ADAGRAD};
  for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
    wf_optimizer o = wf_optimizer_defaults(kinds[i]);
    o.learning_rate = kinds[i] == WF_OPT_SGD || kinds[i] == WF_OPT_MOMENTUM
                          ? 0.05
                          : 0.05;
    if (kinds[i] == WF_OPT_MOMENTUM)
      o.nesterov = 1;
    if (kinds[i] == WF_OPT_RMSPROP)
      o.centered = 1;
    if (kinds[i] == WF_OPT_ADAM)
      o.amsgrad = 1;
    int64_t gs = -1;
    double r = train_ratio(o, 60, &gs);
    if (!(r < 0.5))
      fail_msg("optimizer %d: loss ratio %g after 60 steps", (int)kinds[i], r);
    assert_int_equal(gs, 60);
  }
}

static void test_schedules_and_clipping_train(void **state) {
  (void)state;
  wf_optimizer o = wf_optimizer_defaults(WF_OPT_ADAM);
  o.learning_rate = 0.05;
  o.schedule = WF_LR_EXPONENTIAL;
  o.decay_steps = 20;
  o.decay_rate = 0.5;
  o.warmup_steps = 5;
  o.clip_norm = 1.0;
  int64_t gs;
  assert_true(train_ratio(o, 60, &gs) < 0.5);
  assert_int_equal(gs, 60);
  static const int64_t bounds[2] = {10, 30};
  static const double values[3] = {0.05, 0.02, 0.01};
  o = wf_optimizer_defaults(WF_OPT_MOMENTUM);
  o.schedule = WF_LR_PIECEWISE;
  o.boundaries = bounds;
  o.values = values;
  o.num_boundaries = 2;
  assert_true(train_ratio(o, 60, &gs) < 0.5);
  o = wf_optimizer_defaults(WF_OPT_SGD);
  o.learning_rate = 0.1;
  o.schedule = WF_LR_COSINE;
  o.decay_steps = 60;
  assert_true(train_ratio(o, 60, &gs) < 0.5);
}

static void test_dropout_and_batch_norm_follow_the_mode(void **state) {
  (void)state;
  wf_graph *g = wf_graph_new(rt);
  wf_output x = placeholder(g, "x", WF_FLOAT32, 4, 3);
  wf_model *m = wf_model_new(g, 11, st);
  wf_model_begin(m, 1);
  wf_output t = wf_layer_batch_norm(m, x, 0.5, 1e-3, st);
  wf_output td = wf_layer_dropout(m, t, 0.5, st);
  assert_non_null(td.node);
  assert_string_equal(wf_node_op(td.node), "Dropout");
  wf_output loss = wf_loss_mean_squared_error(m, td, x, st);
  wf_optimizer o = wf_optimizer_defaults(WF_OPT_SGD);
  wf_node *step = wf_model_minimize(m, loss, &o, st);
  assert_non_null(step);
  wf_model_begin(m, 0);
  wf_output e = wf_layer_batch_norm(m, x, 0.5, 1e-3, st);
  wf_output ed = wf_layer_dropout(m, e, 0.5, st);
  assert_true(ed.node == e.node); /* identity in inference */
  wf_session *s = wf_session_new(g, st);
  init_model(s, m);
  float xv[12];
  for (int i = 0; i < 12; i++)
    xv[i] = (float)(i % 5) + 1;
  wf_tensor *xt = matrix(4, 3, xv);
  /* Before any step, inference uses mean 0, variance 1: y ~ x. */
  wf_tensor *v = NULL;
  OK(wf_session_run(s, NULL, &x, &xt, 1, &e, &v, 1, NULL, 0, NULL, st));
  assert_float_equal(((float *)wf_tensor_data(v))[0], xv[0] / sqrt(1 + 1e-3),
                     1e-5);
  wf_tensor_release(v);
  run1(s, &x, &xt, 1, (wf_output){NULL, 0}, step);
  /* One step moved the averages halfway to the batch statistics, so the
   * inference output is no longer ~x. */
  OK(wf_session_run(s, NULL, &x, &xt, 1, &e, &v, 1, NULL, 0, NULL, st));
  assert_true(fabs(((float *)wf_tensor_data(v))[0] - xv[0]) > 1e-3);
  wf_tensor_release(v);
  wf_tensor_release(xt);
  wf_session_free(s);
  wf_model_free(m);
  wf_graph_free(g);
}

static void test_conv_layers_shape_the_cnn(void **state) {
  (void)state;
  wf_graph *g = wf_graph_new(rt);
  int64_t dims[4] = {-1, 28, 28, 1};
  wf_node_desc *d = wf_node_desc_new(g, "Placeholder", "images");
  wf_node_desc_set_attr_dtype(d, "dtype", WF_FLOAT32);
  wf_node_desc_set_attr_shape(d, "shape", dims, 4);
  wf_output x = {wf_node_desc_finish(d, st), 0};
  wf_model *m = wf_model_new(g, 5, st);
  wf_model_begin(m, 1);
  wf_output h = wf_layer_conv2d(m, x, 16, 3, 3, 1, "SAME", WF_ACT_RELU, st);
  h = wf_layer_max_pool(m, h, 2, 2, "VALID", st);
  h = wf_layer_conv2d(m, h, 32, 3, 3, 1, "SAME", WF_ACT_RELU, st);
  h = wf_layer_avg_pool(m, h, 2, 2, "VALID", st);
  h = wf_layer_flatten(m, h, st);
  assert_non_null(h.node);
  wf_shape s;
  wf_node_output_shape(h.node, h.index, &s);
  assert_int_equal(s.rank, 2);
  assert_int_equal(s.dims[1], 7 * 7 * 32);
  h = wf_layer_dense(m, h, 10, WF_ACT_SOFTMAX, st);
  assert_non_null(h.node);
  /* A dense layer on an image is refused with the reason. */
  wf_output bad = wf_layer_dense(m, x, 3, WF_ACT_NONE, st);
  assert_null(bad.node);
  assert_non_null(strstr(wf_status_message(st), "(N, D)"));
  wf_model_free(m);
  wf_graph_free(g);
}

/* An embedding table read through Gather gets a sparse gradient, which the
 * optimizer applies with a sparse op: rows that were not gathered keep
 * their values exactly. */
static void test_gather_gradient_is_applied_sparsely(void **state) {
  (void)state;
  wf_graph *g = wf_graph_new(rt);
  int64_t ids_dims[1] = {3};
  wf_node_desc *d = wf_node_desc_new(g, "Placeholder", "ids");
  wf_node_desc_set_attr_dtype(d, "dtype", WF_INT32);
  wf_node_desc_set_attr_shape(d, "shape", ids_dims, 1);
  wf_output ids = {wf_node_desc_finish(d, st), 0};
  wf_model *m = wf_model_new(g, 9, st);
  wf_model_begin(m, 1);
  int64_t tdims[2] = {10, 4};
  wf_output table = wf_model_variable(m, "embedding", WF_FLOAT32, tdims, 2,
                                      WF_INIT_UNIFORM, 0.5, 1, st);
  assert_non_null(table.node);
  d = wf_node_desc_new(g, "Gather", "lookup");
  wf_node_desc_add_input(d, table);
  wf_node_desc_add_input(d, ids);
  wf_output rows = {wf_node_desc_finish(d, st), 0};
  assert_non_null(rows.node);
  wf_node_desc *sq = wf_node_desc_new(g, "Square", NULL);
  wf_node_desc_add_input(sq, rows);
  wf_output sqo = {wf_node_desc_finish(sq, st), 0};
  wf_node_desc *sum = wf_node_desc_new(g, "Sum", NULL);
  wf_node_desc_add_input(sum, sqo);
  wf_output loss = {wf_node_desc_finish(sum, st), 0};
  assert_non_null(loss.node);
  wf_optimizer o = wf_optimizer_defaults(WF_OPT_ADAM);
  wf_node *step = wf_model_minimize(m, loss, &o, st);
  if (!step)
    fail_msg("minimize: %s", wf_status_message(st));
  int sparse_ops = 0, dense_ops = 0;
  for (int i = 0; i < wf_graph_num_nodes(g); i++) {
    const char *op = wf_node_op(wf_graph_node(g, i));
    sparse_ops += strcmp(op, "SparseApplyAdam") == 0;
    dense_ops += strcmp(op, "ApplyAdam") == 0;
    assert_string_not_equal(op, "UnsortedSegmentSumToShape");
  }
  assert_int_equal(sparse_ops, 1);
  assert_int_equal(dense_ops, 0);

  wf_session *s = wf_session_new(g, st);
  init_model(s, m);
  wf_output handle;
  wf_model_variable_name(m, 0, &handle, NULL);
  wf_tensor *before = NULL, *after = NULL;
  OK(wf_session_run(s, NULL, NULL, NULL, 0, &table, &before, 1, NULL, 0, NULL,
                    st));
  wf_tensor *idt = wf_tensor_new(WF_INT32, ids_dims, 1, st);
  int32_t *iv = wf_tensor_data(idt);
  iv[0] = 2;
  iv[1] = 7;
  iv[2] = 2;
  OK(wf_session_run(s, NULL, &ids, &idt, 1, NULL, NULL, 0, &step, 1, NULL, st));
  OK(wf_session_run(s, NULL, NULL, NULL, 0, &table, &after, 1, NULL, 0, NULL,
                    st));
  const float *b = wf_tensor_data(before), *a = wf_tensor_data(after);
  for (int r = 0; r < 10; r++)
    for (int c = 0; c < 4; c++) {
      int touched = r == 2 || r == 7;
      if (touched)
        assert_true(a[r * 4 + c] != b[r * 4 + c]);
      else
        assert_true(a[r * 4 + c] == b[r * 4 + c]);
    }
  wf_tensor_release(idt);
  wf_tensor_release(before);
  wf_tensor_release(after);
  wf_session_free(s);
  wf_model_free(m);
  wf_graph_free(g);
}

/* Five mlp training steps give the same losses on one device and spread
 * over cpu:0 and cpu:1 (the CPU plugin splits the cores when
 * WEFT_CPU_DEVICES=2); the second run must really use both devices. */
static void mlp_losses(wf_runtime *r, int split, double *losses,
                       int *transfers) {
  wf_graph *g = wf_graph_new(r);
  wf_output x = placeholder(g, "x", WF_FLOAT32, 16, 6);
  int64_t ld[1] = {16};
  wf_node_desc *d = wf_node_desc_new(g, "Placeholder", "y");
  wf_node_desc_set_attr_dtype(d, "dtype", WF_INT32);
  wf_node_desc_set_attr_shape(d, "shape", ld, 1);
  wf_output y = {wf_node_desc_finish(d, st), 0};
  wf_model *m = wf_model_new(g, 21, st);
  wf_model_begin(m, 1);
  if (split)
    OK(wf_graph_push_device(g, "cpu:0", st));
  wf_output h = wf_layer_dense(m, x, 8, WF_ACT_RELU, st);
  if (split) {
    wf_graph_pop_device(g);
    OK(wf_graph_push_device(g, "cpu:1", st));
  }
  wf_output logits = wf_layer_dense(m, h, 3, WF_ACT_NONE, st);
  wf_output loss = wf_loss_sparse_softmax_cross_entropy(m, logits, y, st);
  if (split)
    wf_graph_pop_device(g);
  wf_optimizer o = wf_optimizer_defaults(WF_OPT_ADAM);
  o.learning_rate = 0.05;
  wf_node *step = wf_model_minimize(m, loss, &o, st);
  if (!step)
    fail_msg("minimize: %s", wf_status_message(st));
  wf_session *s = wf_session_new(g, st);
  init_model(s, m);
  float xv[96];
  for (int i = 0; i < 96; i++)
    xv[i] = (float)cos(i * 0.37);
  wf_tensor *vals[2] = {matrix(16, 6, xv), wf_tensor_new(WF_INT32, ld, 1, st)};
  for (int i = 0; i < 16; i++)
    ((int32_t *)wf_tensor_data(vals[1]))[i] = i % 3;
  wf_output feeds[2] = {x, y};
  wf_run_options opt = WF_RUN_OPTIONS_INIT;
  opt.trace_level = WF_TRACE_NODES;
  wf_run_metadata *md = wf_run_metadata_new();
  for (int k = 0; k < 5; k++) {
    wf_tensor *lv = NULL;
    OK(wf_session_run(s, &opt, feeds, vals, 2, &loss, &lv, 1, &step, 1, md,
                      st));
    losses[k] = *(float *)wf_tensor_data(lv);
    wf_tensor_release(lv);
  }
  *transfers = 0;
  for (int i = 0; i < wf_run_metadata_num_nodes(md); i++) {
    wf_node_stats ns;
    wf_run_metadata_node(md, i, &ns);
    *transfers += strcmp(ns.op, "_Send") == 0;
  }
  wf_run_metadata_free(md);
  wf_tensor_release(vals[0]);
  wf_tensor_release(vals[1]);
  wf_session_free(s);
  wf_model_free(m);
  wf_graph_free(g);
}

static void test_mlp_step_is_the_same_on_two_devices(void **state) {
  (void)state;
  double one[5], two[5];
  int t1, t2;
  mlp_losses(rt, 0, one, &t1);
  wf_config *split = wf_config_new();
  OK(wf_config_set(split, "devices", "cpu_devices", "2", st));
  wf_runtime *r2 = wf_runtime_new(split, st);
  wf_config_free(split);
  if (!r2)
    fail_msg("runtime: %s", wf_status_message(st));
  if (wf_runtime_device_count(r2) < 2) {
    wf_runtime_free(r2);
    skip(); /* one core: nothing to split */
  }
  mlp_losses(r2, 1, two, &t2);
  wf_runtime_free(r2);
  assert_int_equal(t1, 0);
  assert_true(t2 > 0);
  for (int k = 0; k < 5; k++)
    assert_float_equal(one[k], two[k], 1e-6);
  assert_true(one[4] < one[0]);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_variables_are_named_and_need_initialising),
      cmocka_unit_test(test_losses_and_metrics_match_hand_values),
      cmocka_unit_test(test_every_optimizer_reduces_the_loss),
      cmocka_unit_test(test_schedules_and_clipping_train),
      cmocka_unit_test(test_dropout_and_batch_norm_follow_the_mode),
      cmocka_unit_test(test_conv_layers_shape_the_cnn),
      cmocka_unit_test(test_gather_gradient_is_applied_sparsely),
      cmocka_unit_test(test_mlp_step_is_the_same_on_two_devices),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
