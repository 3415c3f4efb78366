/* tests/transports/dp_graph.c — the graphs that data parallelism builds
 * (lib/train/data_parallel.c, weft/parallel.h), in one process: gradients fused
 * into AllReduce buckets from the last layer backwards, bucket sizes, sparse gradients made dense, the broadcast that ends the init op,
 * errors naming what is missing; and, run as a job of one task (MPI
 * without mpirun), data-parallel training equal to training alone bit for
 * bit and the collectives as identities. The jobs of several processes are
 * dp_equivalence.sh's and dp_shard.sh's. */
#include <config.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <weft/weft.h>

static wf_runtime *rt;
static wf_status *st;

#define OK(x)                                                                  \
  do {                                                                         \
    if (x)                                                                     \
      fail_msg("%s: %s", #x, wf_status_message(st));                           \
  } while (0)

static wf_runtime *runtime(const char *deny) {
  wf_config *cfg = wf_config_new();
  OK(wf_config_set(cfg, "threads", "inter_op", "1", st));
  OK(wf_config_set(cfg, "threads", "intra_op", "1", st));
  OK(wf_config_set(cfg, "threads", "pin", "false", st));
  if (deny)
    OK(wf_config_set(cfg, "plugins", "deny", deny, st));
  wf_runtime *r = wf_runtime_new(cfg, st);
  wf_config_free(cfg);
  if (!r)
    fail_msg("runtime: %s", wf_status_message(st));
  return r;
}

static int setup(void **state) {
  (void)state;
  st = wf_status_new();
  rt = runtime(NULL);
  return 0;
}

static int teardown(void **state) {
  (void)state;
  wf_runtime_free(rt);
  wf_status_free(st);
  return 0;
}

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

typedef struct mlp {
  wf_graph *g;
  wf_model *m;
  wf_output x, y, loss;
  wf_node *step, *init;
} mlp;

/* An optimizer, and whether the model trains data-parallel (and with
 * which bucket size). */
typedef struct opt {
  wf_optimizer o;
  int dp;
  int64_t bucket;
} opt;

static opt adam(void) {
  opt x = {wf_optimizer_defaults(WF_OPT_ADAM), 0, 0};
  return x;
}

/* The mlp of DESIGN.md on fed batches of `batch`: x (batch, 784), labels
 * (batch,) int32; minimize built with opt. */
static int build_mlp(wf_runtime *r, mlp *p, const opt *o,
                     uint64_t seed, int64_t batch) {
  int64_t xd[2] = {batch, 784}, yd[1] = {batch};
  p->g = wf_graph_new(r);
  p->x = placeholder(p->g, "x", WF_FLOAT32, xd, 2);
  p->y = placeholder(p->g, "y", WF_INT32, yd, 1);
  p->m = wf_model_new(p->g, seed, st);
  assert_non_null(p->m);
  wf_model_begin(p->m, 1);
  wf_output h = wf_layer_dense(p->m, p->x, 256, WF_ACT_RELU, st);
  h = wf_layer_dense(p->m, h, 128, WF_ACT_RELU, st);
  h = wf_layer_dense(p->m, h, 10, WF_ACT_NONE, st);
  p->loss = wf_loss_sparse_softmax_cross_entropy(p->m, h, p->y, st);
  assert_non_null(p->loss.node);
  if (o->dp && wf_model_set_data_parallel(p->m, o->bucket, st))
    return wf_status_code(st);
  p->step = wf_model_minimize(p->m, p->loss, &o->o, st);
  p->init = p->step ? wf_model_init_op(p->m, st) : NULL;
  return p->init ? 0 : wf_status_code(st);
}

static void free_mlp(mlp *p) {
  wf_model_free(p->m);
  wf_graph_free(p->g);
}

/* The graph's nodes of op, in insertion order (at most max). */
static int nodes_of(wf_graph *g, const char *op, wf_node **out, int max) {
  int n = 0;
  for (int i = 0; i < wf_graph_num_nodes(g); i++) {
    wf_node *nd = wf_graph_node(g, i);
    if (strcmp(wf_node_op(nd), op) == 0) {
      if (n < max)
        out[n] = nd;
      n++;
    }
  }
  return n;
}

static int64_t input_elements(wf_node *n, int i) {
  wf_output in = wf_node_input(n, i);
  wf_shape s;
  wf_node_output_shape(in.node, in.index, &s);
  return wf_shape_count(&s);
}

static int has_control_input(wf_node *n, wf_node *from) {
  for (int i = 0; i < wf_node_num_control_inputs(n); i++)
    if (wf_node_control_input(n, i) == from)
      return 1;
  return 0;
}

static opt dp_adam(int64_t bucket_bytes) {
  opt o = adam();
  o.dp = 1;
  o.bucket = bucket_bytes;
  return o;
}

/* Gradient sizes in elements, last variable first: dense_2/bias (10),
 * dense_2/kernel (1280), dense_1/bias (128), dense_1/kernel (32768),
 * dense/bias (256), dense/kernel (200704). */
static const int64_t reverse_sizes[6] = {10, 1280, 128, 32768, 256, 200704};

static void test_one_bucket_by_default_from_the_last_layer(void **state) {
  (void)state;
  mlp p;
  opt o = dp_adam(0);
  OK(build_mlp(rt, &p, &o, 1, 8));
  wf_node *ar[8];
  assert_int_equal(nodes_of(p.g, "AllReduce", ar, 8), 1);
  assert_int_equal(wf_node_num_inputs(ar[0]), 6);
  for (int i = 0; i < 6; i++)
    assert_int_equal(input_elements(ar[0], i), reverse_sizes[i]);
  wf_attr_value v;
  OK(wf_node_get_attr(ar[0], "reduction", &v, st));
  assert_string_equal(v.u.s, "mean");
  /* The updates read the averaged gradients. */
  wf_node *apply[8];
  assert_int_equal(nodes_of(p.g, "ApplyAdam", apply, 8), 6);
  for (int i = 0; i < 6; i++) {
    int reads_mean = 0;
    for (int k = 0; k < wf_node_num_inputs(apply[i]); k++)
      reads_mean |= wf_node_input(apply[i], k).node == ar[0];
    assert_true(reads_mean);
  }
  free_mlp(&p);
}

static void test_buckets_hold_at_most_bucket_bytes(void **state) {
  (void)state;
  mlp p;
  /* 1 byte: every gradient is a bucket of its own, in reverse order. */
  opt o = dp_adam(1);
  OK(build_mlp(rt, &p, &o, 1, 8));
  wf_node *ar[8];
  assert_int_equal(nodes_of(p.g, "AllReduce", ar, 8), 6);
  for (int i = 0; i < 6; i++) {
    assert_int_equal(wf_node_num_inputs(ar[i]), 1);
    assert_int_equal(input_elements(ar[i], 0), reverse_sizes[i]);
  }
  free_mlp(&p);

  /* 140000 bytes: the first five (136744 + 1024 bytes) fit, dense/kernel
   * (802816 bytes) is alone. */
  o = dp_adam(140000);
  OK(build_mlp(rt, &p, &o, 1, 8));
  assert_int_equal(nodes_of(p.g, "AllReduce", ar, 8), 2);
  assert_int_equal(wf_node_num_inputs(ar[0]), 5);
  assert_int_equal(wf_node_num_inputs(ar[1]), 1);
  assert_int_equal(input_elements(ar[1], 0), 200704);
  free_mlp(&p);
}

static void test_sparse_gradient_is_made_dense(void **state) {
  (void)state;
  wf_graph *g = wf_graph_new(rt);
  int64_t idd[1] = {5};
  wf_output ids = placeholder(g, "ids", WF_INT32, idd, 1);
  wf_model *m = wf_model_new(g, 3, st);
  wf_model_begin(m, 1);
  int64_t ed[2] = {10, 4};
  wf_output table = wf_model_variable(m, "embedding", WF_FLOAT32, ed, 2,
                                      WF_INIT_UNIFORM, 0.1, 1, st);
  assert_non_null(table.node);
  wf_node_desc *d = wf_node_desc_new(g, "Gather", NULL);
  wf_node_desc_add_input(d, table);
  wf_node_desc_add_input(d, ids);
  wf_output rows = {wf_node_desc_finish(d, st), 0};
  assert_non_null(rows.node);
  wf_node_desc *sq = wf_node_desc_new(g, "Square", NULL);
  wf_node_desc_add_input(sq, rows);
  wf_output sqo = {wf_node_desc_finish(sq, st), 0};
  assert_non_null(sqo.node);
  wf_node_desc *mean = wf_node_desc_new(g, "Mean", NULL);
  wf_node_desc_add_input(mean, sqo);
  wf_node_desc_set_attr_int_list(mean, "axes", NULL, 0);
  wf_output loss = {wf_node_desc_finish(mean, st), 0};
  assert_non_null(loss.node);

  /* Alone, the gradient is sparse and so is the update. */
  wf_gradient gr;
  OK(wf_graph_add_gradients(g, &loss, 1, NULL, &table, 1, &gr, st));
  assert_non_null(gr.indices.node);
  assert_null(gr.dense.node);
  OK(wf_graph_add_gradient_mean(g, &gr, 1, 0, st));
  assert_non_null(gr.dense.node);
  assert_null(gr.indices.node);
  assert_null(gr.values.node);
  assert_string_equal(wf_node_op(gr.dense.node), "AllReduce");
  assert_string_equal(wf_node_op(wf_node_input(gr.dense.node, 0).node),
                      "UnsortedSegmentSumToShape");

  opt o = dp_adam(0);
  OK(wf_model_set_data_parallel(m, o.bucket, st));
  assert_non_null(wf_model_minimize(m, loss, &o.o, st));
  wf_node *n[4];
  assert_int_equal(nodes_of(g, "SparseApplyAdam", n, 4), 0);
  assert_int_equal(nodes_of(g, "ApplyAdam", n, 4), 1);
  wf_model_free(m);
  wf_graph_free(g);
}

static void test_init_op_ends_with_a_broadcast_per_dtype(void **state) {
  (void)state;
  mlp p;
  opt o = dp_adam(0);
  OK(build_mlp(rt, &p, &o, 1, 8));
  /* float32: weights and Adam's slots; int64: the global step. */
  wf_node *b[4];
  assert_int_equal(nodes_of(p.g, "Broadcast", b, 4), 2);
  assert_int_equal(wf_node_num_inputs(b[0]) + wf_node_num_inputs(b[1]),
                   wf_model_num_variables(p.m));
  /* The init op waits for the group of assignments. */
  wf_node *group = NULL;
  for (int i = 0; !group && i < wf_node_num_control_inputs(p.init); i++) {
    wf_node *c = wf_node_control_input(p.init, i);
    if (strstr(wf_node_name(c), "broadcast_variables"))
      group = c;
  }
  assert_non_null(group);
  assert_true(has_control_input(p.init, group));
  assert_int_equal(wf_node_num_control_inputs(group),
                   wf_model_num_variables(p.m));
  free_mlp(&p);

  /* Without data parallelism there is none. */
  o = adam();
  OK(build_mlp(rt, &p, &o, 1, 8));
  assert_int_equal(nodes_of(p.g, "Broadcast", b, 4), 0);
  assert_int_equal(nodes_of(p.g, "AllReduce", b, 4), 0);
  free_mlp(&p);
}

static void test_missing_transport_plugin_is_named(void **state) {
  (void)state;
  wf_runtime *r = runtime("transport-mpi");
  mlp p;
  opt o = dp_adam(0);
  assert_int_equal(build_mlp(r, &p, &o, 1, 8), WF_NOT_FOUND);
  assert_non_null(strstr(wf_status_message(st), "'AllReduce'"));
  assert_non_null(strstr(wf_status_message(st), "transport"));
  assert_null(wf_graph_add_broadcast_variables(p.g, NULL, 0, NULL, 0, 0, NULL,
                                               st));
  assert_non_null(strstr(wf_status_message(st), "'Broadcast'"));
  free_mlp(&p);
  wf_runtime_free(r);
}

static void test_broadcast_refuses_what_is_not_a_variable(void **state) {
  (void)state;
  wf_graph *g = wf_graph_new(rt);
  int64_t d[1] = {3};
  wf_output x = placeholder(g, "x", WF_FLOAT32, d, 1);
  assert_null(wf_graph_add_broadcast_variables(g, &x, 1, NULL, 0, 0, NULL, st));
  assert_int_equal(wf_status_code(st), WF_INVALID_ARGUMENT);
  assert_non_null(strstr(wf_status_message(st), "handle 0 ('x')"));
  wf_graph_free(g);
}

/* ---- run as a job of one task ------------------------------------------ */

static wf_tensor *filled(wf_dtype dt, const int64_t *dims, int rank,
                         uint32_t seed) {
  wf_tensor *t = wf_tensor_new(dt, dims, rank, st);
  assert_non_null(t);
  for (int64_t i = 0; i < wf_tensor_count(t); i++) {
    seed = seed * 1664525u + 1013904223u;
    if (dt == WF_FLOAT32)
      ((float *)wf_tensor_data(t))[i] = (float)(seed >> 8) / 16777216.0f;
    else
      ((int32_t *)wf_tensor_data(t))[i] = (int32_t)((seed >> 8) % 10);
  }
  return t;
}

/* Trains p 5 steps on fixed batches; returns the losses' sum and stores
 * the first kernel's values in *kernel (a new reference). */
static double train5(mlp *p, wf_tensor **kernel) {
  wf_session *s = wf_session_new(p->g, st);
  assert_non_null(s);
  OK(wf_session_run(s, NULL, NULL, NULL, 0, NULL, NULL, 0, &p->init, 1, NULL,
                    st));
  int64_t xd[2] = {8, 784}, yd[1] = {8};
  double total = 0;
  for (int k = 0; k < 5; k++) {
    wf_tensor *in[2] = {filled(WF_FLOAT32, xd, 2, 7u + (uint32_t)k),
                        filled(WF_INT32, yd, 1, 11u + (uint32_t)k)};
    wf_output feeds[2] = {p->x, p->y};
    wf_tensor *l = NULL;
    OK(wf_session_run(s, NULL, feeds, in, 2, &p->loss, &l, 1, &p->step, 1,
                      NULL, st));
    total += *(float *)wf_tensor_data(l);
    wf_tensor_release(l);
    wf_tensor_release(in[0]);
    wf_tensor_release(in[1]);
  }
  wf_output h;
  wf_model_variable_name(p->m, 0, &h, NULL);
  wf_node_desc *d = wf_node_desc_new(p->g, "ReadVariable", NULL);
  wf_node_desc_add_input(d, h);
  wf_node_desc_set_attr_dtype(d, "dtype", WF_FLOAT32);
  int64_t kd[2] = {784, 256};
  wf_node_desc_set_attr_shape(d, "shape", kd, 2);
  wf_output r = {wf_node_desc_finish(d, st), 0};
  assert_non_null(r.node);
  OK(wf_session_run(s, NULL, NULL, NULL, 0, &r, kernel, 1, NULL, 0, NULL, st));
  wf_session_free(s);
  return total;
}

static void test_job_of_one_trains_as_alone(void **state) {
  (void)state;
  int32_t task = -1, size = -1;
  OK(wf_runtime_cluster(rt, &task, &size, st));
  if (size != 1)
    skip(); /* started by mpirun with more tasks */
  assert_int_equal(task, 0);
  mlp a, b;
  opt plain = adam();
  opt dp = dp_adam(1);
  OK(build_mlp(rt, &a, &plain, 5, 8));
  OK(build_mlp(rt, &b, &dp, 5, 8));
  wf_tensor *ka = NULL, *kb = NULL;
  double la = train5(&a, &ka), lb = train5(&b, &kb);
  /* The mean over one task divides by 1: nothing changes, to the bit. */
  assert_true(la == lb);
  assert_memory_equal(wf_tensor_data(ka), wf_tensor_data(kb),
                      wf_tensor_nbytes(ka));
  wf_tensor_release(ka);
  wf_tensor_release(kb);
  free_mlp(&a);
  free_mlp(&b);
}

static void test_task_mean_of_one_task_is_identity(void **state) {
  (void)state;
  wf_graph *g = wf_graph_new(rt);
  int64_t d[1] = {4};
  wf_output x[2] = {placeholder(g, "a", WF_FLOAT32, d, 1),
                    placeholder(g, "b", WF_FLOAT32, d, 1)};
  wf_output y[2];
  OK(wf_graph_add_task_mean(g, x, 2, y, st));
  wf_session *s = wf_session_new(g, st);
  wf_tensor *in[2] = {filled(WF_FLOAT32, d, 1, 1), filled(WF_FLOAT32, d, 1, 2)};
  wf_tensor *out[2] = {NULL, NULL};
  OK(wf_session_run(s, NULL, x, in, 2, y, out, 2, NULL, 0, NULL, st));
  for (int i = 0; i < 2; i++) {
    assert_memory_equal(wf_tensor_data(in[i]), wf_tensor_data(out[i]), 16);
    wf_tensor_release(in[i]);
    wf_tensor_release(out[i]);
  }
  wf_session_free(s);
  wf_graph_free(g);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_one_bucket_by_default_from_the_last_layer),
      cmocka_unit_test(test_buckets_hold_at_most_bucket_bytes),
      cmocka_unit_test(test_sparse_gradient_is_made_dense),
      cmocka_unit_test(test_init_op_ends_with_a_broadcast_per_dtype),
      cmocka_unit_test(test_missing_transport_plugin_is_named),
      cmocka_unit_test(test_broadcast_refuses_what_is_not_a_variable),
      cmocka_unit_test(test_job_of_one_trains_as_alone),
      cmocka_unit_test(test_task_mean_of_one_task_is_identity),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
