/* tests/transports/coll_ops.c — the collective ops of the MPI transport
 * plugin (AllReduce, Broadcast, AllGather, ReduceScatter) in graphs that
 * every task of the job builds and runs alike.
 *
 * Run as a job of 1 (no mpirun), 2 and 3 processes (coll_ops.sh). Each
 * task feeds values that depend on its rank, so every expectation below is
 * computed for the job's size: integers are compared exactly, floats
 * within REL_F32 / REL_F64 of the reference (sums of a few small integers
 * and their means: exact in practice, the tolerance covers the order of
 * summation). The rank and size come from Open MPI's environment
 * (OMPI_COMM_WORLD_RANK, OMPI_COMM_WORLD_SIZE; 0 and 1 without mpirun) and
 * the size is checked against the job's own (CollectiveSize).
 *
 * The tests run in the same order on every task: a failed check on one
 * task leaves the others waiting in a later collective, which the
 * wrapper's timeout turns into a failure. */
#include <config.h>

#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <weft/weft.h>

#define REL_F32 1e-6
#define REL_F64 1e-12

static wf_runtime *rt;
static wf_status *st;
static int rank_, size_;

static int env_int(const char *name, int dflt) {
  const char *v = getenv(name);
  return v && *v ? atoi(v) : dflt;
}

static int setup(void **state) {
  (void)state;
  st = wf_status_new();
  rank_ = env_int("OMPI_COMM_WORLD_RANK", 0);
  size_ = env_int("OMPI_COMM_WORLD_SIZE", 1);
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

/* ---- building graphs
 * --------------------------------------------------------- */

/* A tensor of dtype and shape whose element i is f(i). */
static wf_tensor *make_tensor(wf_dtype dt, const int64_t *dims, int rank,
                              double (*f)(int64_t i, void *arg), void *arg) {
  wf_tensor *t = wf_tensor_new(dt, dims, rank, st);
  if (!t)
    fail_msg("tensor: %s", wf_status_message(st));
  void *p = wf_tensor_data(t);
  for (int64_t i = 0; i < wf_tensor_count(t); i++) {
    double v = f(i, arg);
    switch (dt) {
    case WF_FLOAT32:
      ((float *)p)[i] = (float)v;
      break;
    case WF_FLOAT64:
      ((double *)p)[i] = v;
      break;
    case WF_INT32:
      ((int32_t *)p)[i] = (int32_t)v;
      break;
    case WF_INT64:
      ((int64_t *)p)[i] = (int64_t)v;
      break;
    case WF_INT8:
      ((int8_t *)p)[i] = (int8_t)v;
      break;
    default:
      fail_msg("make_tensor: dtype %s not handled", wf_dtype_name(dt));
    }
  }
  return t;
}

static wf_output node_const_t(wf_graph *g, const char *name, wf_tensor *t) {
  wf_node_desc *d = wf_node_desc_new(g, "Const", name);
  wf_node_desc_set_attr_tensor(d, "value", t);
  wf_node_desc_set_attr_dtype(d, "dtype", wf_tensor_dtype(t));
  wf_node *n = wf_node_desc_finish(d, st);
  wf_tensor_release(t);
  if (!n)
    fail_msg("Const %s: %s", name, wf_status_message(st));
  return (wf_output){n, 0};
}

static wf_output node_const(wf_graph *g, const char *name, wf_dtype dt,
                            const int64_t *dims, int rank,
                            double (*f)(int64_t i, void *arg), void *arg) {
  return node_const_t(g, name, make_tensor(dt, dims, rank, f, arg));
}

static double fill_value(int64_t i, void *arg) {
  (void)i;
  return *(double *)arg;
}

static wf_output scalar_f64(wf_graph *g, const char *name, double v) {
  return node_const(g, name, WF_FLOAT64, NULL, 0, fill_value, &v);
}

/* op over inputs in (a list for AllReduce, Broadcast and Reduce), attrs as
 * name/value pairs ending with NULL: "reduction" and strings, "root" ints. */
static wf_node *node_op(wf_graph *g, const char *op, const char *name,
                        const wf_output *in, int n, ...) {
  wf_node_desc *d = wf_node_desc_new(g, op, name);
  va_list ap;
  if (strcmp(op, "AllReduce") == 0 || strcmp(op, "Broadcast") == 0 ||
      strcmp(op, "Reduce") == 0)
    wf_node_desc_add_input_list(d, in, n);
  else
    wf_node_desc_add_input(d, in[0]);
  va_start(ap, n);
  for (const char *k; (k = va_arg(ap, const char *));) {
    if (strcmp(k, "root") == 0)
      wf_node_desc_set_attr_int(d, k, va_arg(ap, int));
    else
      wf_node_desc_set_attr_string(d, k, va_arg(ap, const char *));
  }
  va_end(ap);
  return wf_node_desc_finish(d, st);
}

static wf_node *must(wf_node *n) {
  if (!n)
    fail_msg("adding a node: %s", wf_status_message(st));
  return n;
}

static wf_output binary(wf_graph *g, const char *op, wf_output a, wf_output b) {
  wf_output in[2] = {a, b};
  wf_node_desc *d = wf_node_desc_new(g, op, NULL);
  wf_node_desc_add_input(d, in[0]);
  wf_node_desc_add_input(d, in[1]);
  return (wf_output){must(wf_node_desc_finish(d, st)), 0};
}

static wf_output unary(wf_graph *g, const char *op, wf_output a) {
  wf_node_desc *d = wf_node_desc_new(g, op, NULL);
  wf_node_desc_add_input(d, a);
  return (wf_output){must(wf_node_desc_finish(d, st)), 0};
}

/* Runs fetches once in a new session; out[i] are new references. */
static int run_once(wf_graph *g, const wf_output *fetches, int n,
                    wf_tensor **out) {
  wf_session *s = wf_session_new(g, st);
  if (!s)
    fail_msg("session: %s", wf_status_message(st));
  int rc = wf_session_run(s, NULL, NULL, NULL, 0, fetches, out, n, NULL, 0,
                          NULL, st);
  wf_session_free(s);
  return rc;
}

static void run_ok(wf_graph *g, const wf_output *fetches, int n,
                   wf_tensor **out) {
  if (run_once(g, fetches, n, out))
    fail_msg("task %d: run: %s", rank_, wf_status_message(st));
}

/* Checks t's dtype, shape and every element against want(i). */
static void check_tensor(const wf_tensor *t, wf_dtype dt, const int64_t *dims,
                         int rank, double (*want)(int64_t i, void *arg),
                         void *arg, const char *what) {
  assert_non_null(t);
  if (wf_tensor_dtype(t) != dt)
    fail_msg("%s: dtype %s, expected %s", what,
             wf_dtype_name(wf_tensor_dtype(t)), wf_dtype_name(dt));
  assert_int_equal(wf_tensor_rank(t), rank);
  for (int i = 0; i < rank; i++)
    if (wf_tensor_dim(t, i) != dims[i])
      fail_msg("%s: dim %d is %lld, expected %lld", what, i,
               (long long)wf_tensor_dim(t, i), (long long)dims[i]);
  double rel = dt == WF_FLOAT32 ? REL_F32 : dt == WF_FLOAT64 ? REL_F64 : 0;
  for (int64_t i = 0; i < wf_tensor_count(t); i++) {
    double got = wf_tensor_element(t, i), exp = want(i, arg);
    if (fabs(got - exp) > rel * fmax(1.0, fabs(exp)))
      fail_msg("task %d: %s: element %lld is %.17g, expected %.17g", rank_,
               what, (long long)i, got, exp);
  }
}

/* got == want exactly (sums of small integers in float64). */
#define assert_exactly(got, want)                                              \
  do {                                                                         \
    double g_ = (got), w_ = (want);                                            \
    if (g_ != w_)                                                              \
      fail_msg("task %d: %s is %.17g, expected %.17g", rank_, #got, g_, w_);   \
  } while (0)

static void release_all(wf_tensor **t, int n) {
  for (int i = 0; i < n; i++)
    wf_tensor_release(t[i]);
}

/* ---- values -----------------------------------------------------------------
 */

/* Task r's element i of list item k: (r + 1) * (i + 1) + 3 k. */
typedef struct item_arg {
  int rank, k;
} item_arg;

static double item_value(int64_t i, void *arg) {
  item_arg *a = arg;
  return (double)(a->rank + 1) * (double)(i + 1) + 3.0 * a->k;
}

/* The sum over the job's tasks of item_value. */
static double item_sum(int64_t i, void *arg) {
  item_arg *a = arg;
  double s = 0;
  for (int r = 0; r < size_; r++) {
    item_arg b = {r, a->k};
    s += item_value(i, &b);
  }
  return s;
}

static double item_mean(int64_t i, void *arg) {
  return item_sum(i, arg) / size_;
}

/* ---- tests
 * ------------------------------------------------------------------- */

/* The job's size as the op sees it is the launcher's. */
static void test_collective_size_matches_job(void **state) {
  (void)state;
  wf_graph *g = wf_graph_new(rt);
  wf_node_desc *d = wf_node_desc_new(g, "CollectiveSize", "size");
  wf_node_desc_set_attr_dtype(d, "T", WF_INT32);
  wf_output y = {must(wf_node_desc_finish(d, st)), 0};
  wf_tensor *out;
  run_ok(g, &y, 1, &out);
  assert_int_equal(wf_tensor_element(out, 0), size_);
  wf_tensor_release(out);
  wf_graph_free(g);
}

/* AllReduce of N = 1 and N = 3 tensors of different shapes, every
 * supported dtype, sum and (floats) mean. */
static void test_allreduce_lists_dtypes_reductions(void **state) {
  (void)state;
  static const wf_dtype dtypes[] = {WF_FLOAT32, WF_FLOAT64, WF_INT32, WF_INT64};
  static const int64_t dims[3][2] = {{2, 3}, {5, 0}, {0, 0}};
  static const int ranks[3] = {2, 1, 0}; /* (2, 3), (5,), () */
  for (size_t t = 0; t < sizeof dtypes / sizeof dtypes[0]; t++) {
    wf_dtype dt = dtypes[t];
    int floaty = dt == WF_FLOAT32 || dt == WF_FLOAT64;
    for (int n = 1; n <= 3; n += 2) {
      for (int mean = 0; mean <= floaty; mean++) {
        char what[96];
        wf_graph *g = wf_graph_new(rt);
        wf_output in[3], y[3];
        wf_tensor *out[3];
        for (int k = 0; k < n; k++) {
          item_arg a = {rank_, k};
          in[k] = node_const(g, NULL, dt, dims[k], ranks[k], item_value, &a);
        }
        wf_node *ar = must(node_op(g, "AllReduce", "ar", in, n, "reduction",
                                   mean ? "mean" : "sum", NULL));
        for (int k = 0; k < n; k++)
          y[k] = (wf_output){ar, k};
        run_ok(g, y, n, out);
        for (int k = 0; k < n; k++) {
          item_arg a = {rank_, k};
          snprintf(what, sizeof what, "AllReduce %s N=%d %s output %d",
                   wf_dtype_name(dt), n, mean ? "mean" : "sum", k);
          check_tensor(out[k], dt, dims[k], ranks[k],
                       mean ? item_mean : item_sum, &a, what);
        }
        release_all(out, n);
        wf_graph_free(g);
      }
    }
  }
}

/* Broadcast of a list of two float32 tensors ((3,) and (2, 2)) and of
 * one int64 (2, 2), from root 0 and, in a job of several, root 1. */
static double bcast_value(int64_t i, void *arg) {
  return *(int *)arg * 10.0 + (double)i;
}

static void test_broadcast_roots(void **state) {
  (void)state;
  static const int64_t d0[1] = {3}, d1[2] = {2, 2};
  for (int root = 0; root < (size_ > 1 ? 2 : 1); root++) {
    wf_graph *g = wf_graph_new(rt);
    int r = rank_, r10 = rank_ * 10;
    wf_output in[2] = {
        node_const(g, NULL, WF_FLOAT32, d0, 1, bcast_value, &r),
        node_const(g, NULL, WF_FLOAT32, d1, 2, bcast_value, &r10)};
    wf_output in64 = node_const(g, NULL, WF_INT64, d1, 2, bcast_value, &r10);
    wf_node *b =
        must(node_op(g, "Broadcast", "bcast", in, 2, "root", root, NULL));
    wf_node *b64 =
        must(node_op(g, "Broadcast", "bcast64", &in64, 1, "root", root, NULL));
    wf_output y[3] = {{b, 0}, {b, 1}, {b64, 0}};
    wf_tensor *out[3];
    run_ok(g, y, 3, out);
    int want = root, want10 = root * 10;
    check_tensor(out[0], WF_FLOAT32, d0, 1, bcast_value, &want,
                 "Broadcast output 0");
    check_tensor(out[1], WF_FLOAT32, d1, 2, bcast_value, &want10,
                 "Broadcast output 1");
    check_tensor(out[2], WF_INT64, d1, 2, bcast_value, &want10,
                 "Broadcast int64");
    release_all(out, 3);
    wf_graph_free(g);
  }
}

/* AllGather joins the tasks' (2, 3) tensors in task order, for 8-, 32- and
 * 64-bit elements. */
static double gather_value(int64_t i, void *arg) {
  return *(int *)arg * 20.0 + (double)i;
}
static double gathered_value(int64_t i, void *arg) {
  (void)arg;
  int r = (int)(i / 6);
  return r * 20.0 + (double)(i % 6);
}

static void test_allgather_joins_in_task_order(void **state) {
  (void)state;
  static const wf_dtype dtypes[] = {WF_FLOAT32, WF_INT8, WF_FLOAT64, WF_INT32};
  static const int64_t dims[2] = {2, 3};
  for (size_t t = 0; t < sizeof dtypes / sizeof dtypes[0]; t++) {
    wf_graph *g = wf_graph_new(rt);
    int r = rank_;
    wf_output x = node_const(g, NULL, dtypes[t], dims, 2, gather_value, &r);
    wf_output y = {must(node_op(g, "AllGather", "gather", &x, 1, NULL)), 0};
    wf_tensor *out;
    int64_t want_dims[2] = {2 * size_, 3};
    run_ok(g, &y, 1, &out);
    check_tensor(out, dtypes[t], want_dims, 2, gathered_value, NULL,
                 "AllGather");
    wf_tensor_release(out);
    wf_graph_free(g);
  }
}

/* ReduceScatter: each task gets its block of 2 rows of the sum (mean) of
 * the tasks' (2 * size, 2) tensors. */
static double scatter_sum(int64_t i, void *arg) {
  item_arg a = {0, 0};
  (void)arg;
  return item_sum(i + 4 * rank_, &a);
}
static double scatter_mean(int64_t i, void *arg) {
  return scatter_sum(i, arg) / size_;
}

static void test_reduce_scatter_blocks(void **state) {
  (void)state;
  static const wf_dtype dtypes[] = {WF_FLOAT32, WF_INT64, WF_FLOAT64};
  for (size_t t = 0; t < sizeof dtypes / sizeof dtypes[0]; t++) {
    int floaty = dtypes[t] != WF_INT64;
    for (int mean = 0; mean <= floaty; mean++) {
      wf_graph *g = wf_graph_new(rt);
      int64_t dims[2] = {2 * size_, 2}, want_dims[2] = {2, 2};
      item_arg a = {rank_, 0};
      wf_output x = node_const(g, NULL, dtypes[t], dims, 2, item_value, &a);
      wf_output y = {must(node_op(g, "ReduceScatter", "rs", &x, 1, "reduction",
                                  mean ? "mean" : "sum", NULL)),
                     0};
      wf_tensor *out;
      run_ok(g, &y, 1, &out);
      check_tensor(out, dtypes[t], want_dims, 2,
                   mean ? scatter_mean : scatter_sum, NULL,
                   mean ? "ReduceScatter mean" : "ReduceScatter sum");
      wf_tensor_release(out);
      wf_graph_free(g);
    }
  }
}

/* v + 0 * Sum(Tanh^40(w)): v, ready once the chain over w is done. */
static wf_output delayed(wf_graph *g, wf_output v, wf_output w) {
  for (int i = 0; i < 40; i++)
    w = unary(g, "Tanh", w);
  wf_output sum = unary(g, "Sum", w);
  return binary(g, "Add", v, binary(g, "Mul", scalar_f64(g, NULL, 0.0), sum));
}

/* v, ready late (a chain over 2^18 elements) when slow_here. */
static wf_output slow(wf_graph *g, wf_output v, int slow_here) {
  if (!slow_here)
    return v;
  static const int64_t dims[1] = {1 << 18};
  double one = 1.0;
  return delayed(g, v,
                 node_const(g, NULL, WF_FLOAT64, dims, 1, fill_value, &one));
}

/* Three AllReduce nodes whose inputs are ready in a different order on
 * each task (task 0 computes A's slowly, task 1 B's): no deadlock, and
 * each node adds its own values. */
static void test_readiness_order_differs_by_task(void **state) {
  (void)state;
  wf_graph *g = wf_graph_new(rt);
  double va = 1.0 + rank_, vb = 100.0 + 10.0 * rank_, vc = 7.0 * rank_;
  wf_output a = slow(g, scalar_f64(g, "a", va), rank_ == 0);
  wf_output b = slow(g, scalar_f64(g, "b", vb), rank_ == 1);
  wf_output c = scalar_f64(g, "c", vc);
  wf_output y[3] = {{must(node_op(g, "AllReduce", "ar_a", &a, 1, NULL)), 0},
                    {must(node_op(g, "AllReduce", "ar_b", &b, 1, NULL)), 0},
                    {must(node_op(g, "AllReduce", "ar_c", &c, 1, NULL)), 0}};
  wf_tensor *out[3];
  double wa = 0, wb = 0, wc = 0;
  for (int r = 0; r < size_; r++) {
    wa += 1.0 + r;
    wb += 100.0 + 10.0 * r;
    wc += 7.0 * r;
  }
  /* Two sessions in a row, two steps each: new executors, new
   * communicators, same results. */
  for (int s = 0; s < 2; s++) {
    wf_session *sess = wf_session_new(g, st);
    assert_non_null(sess);
    for (int step = 0; step < 2; step++) {
      if (wf_session_run(sess, NULL, NULL, NULL, 0, y, out, 3, NULL, 0, NULL,
                         st))
        fail_msg("session %d step %d: %s", s, step, wf_status_message(st));
      assert_exactly(wf_tensor_element(out[0], 0), wa);
      assert_exactly(wf_tensor_element(out[1], 0), wb);
      assert_exactly(wf_tensor_element(out[2], 0), wc);
      release_all(out, 3);
    }
    wf_session_free(sess);
  }
  wf_graph_free(g);
}

/* Steps of one callable run from two threads at once. Each step draws r,
 * a random number keyed by the step (the same on every task for the same
 * step); X adds r after a chain over the fed w (2^17 or 1 elements,
 * alternating) on task 0 only, so the steps reach X in another order on
 * task 0 than on the others; Y adds r at once. Both must pair the same
 * step of every task: X = Y = size * r. */
typedef struct step_thread {
  wf_callable *c;
  int id;
  int failures;
  char why[512];
} step_thread;

#define CONCURRENT_STEPS 8

static void *run_steps(void *arg) {
  step_thread *t = arg;
  wf_status *ts = wf_status_new();
  for (int k = 0; k < CONCURRENT_STEPS; k++) {
    double one = 1;
    int64_t n = (t->id + k) % 2 ? 1 : 1 << 17;
    wf_tensor *w = make_tensor(WF_FLOAT64, &n, 1, fill_value, &one);
    wf_tensor *out[3] = {NULL, NULL, NULL};
    if (wf_callable_run(t->c, NULL, &w, out, NULL, ts)) {
      snprintf(t->why, sizeof t->why, "%s", wf_status_message(ts));
      t->failures++;
    } else {
      double r = wf_tensor_element(out[2], 0), want = size_ * r;
      double x = wf_tensor_element(out[0], 0), y = wf_tensor_element(out[1], 0);
      if (x != want || y != want) {
        snprintf(t->why, sizeof t->why,
                 "X = %.17g and Y = %.17g, expected %d * %.17g = %.17g: a "
                 "node paired different steps of the tasks",
                 x, y, size_, r, want);
        t->failures++;
      }
    }
    wf_tensor_release(w);
    release_all(out, 3);
  }
  wf_status_free(ts);
  return NULL;
}

static void test_concurrent_steps_pair_alike(void **state) {
  (void)state;
  wf_graph *g = wf_graph_new(rt);
  int64_t unknown = -1;
  wf_node_desc *d = wf_node_desc_new(g, "Placeholder", "w");
  wf_node_desc_set_attr_dtype(d, "dtype", WF_FLOAT64);
  wf_node_desc_set_attr_shape(d, "shape", &unknown, 1);
  wf_output w = {must(wf_node_desc_finish(d, st)), 0};
  d = wf_node_desc_new(g, "RandomUniform", "r");
  wf_node_desc_set_attr_dtype(d, "dtype", WF_FLOAT64);
  wf_node_desc_set_attr_shape(d, "shape", NULL, 0);
  wf_node_desc_set_attr_int(d, "seed", 7);
  wf_output r = {must(wf_node_desc_finish(d, st)), 0};
  wf_output xin = rank_ == 0 ? delayed(g, r, w) : r;
  wf_output f[3] = {{must(node_op(g, "AllReduce", "x", &xin, 1, NULL)), 0},
                    {must(node_op(g, "AllReduce", "y", &r, 1, NULL)), 0},
                    r};
  wf_session *s = wf_session_new(g, st);
  assert_non_null(s);
  wf_callable *c = wf_session_prepare(s, &w, 1, f, 3, NULL, 0, st);
  if (!c)
    fail_msg("prepare: %s", wf_status_message(st));
  step_thread t[2] = {{c, 0, 0, ""}, {c, 1, 0, ""}};
  pthread_t th[2];
  for (int i = 0; i < 2; i++)
    assert_int_equal(pthread_create(&th[i], NULL, run_steps, &t[i]), 0);
  for (int i = 0; i < 2; i++)
    pthread_join(th[i], NULL);
  for (int i = 0; i < 2; i++)
    if (t[i].failures)
      fail_msg("task %d thread %d: %d failed steps: %s", rank_, i,
               t[i].failures, t[i].why);
  wf_callable_free(c);
  wf_session_free(s);
  wf_graph_free(g);
}

/* ---- gradients
 * ---------------------------------------------------------------- */

/* Task r's loss weights: element i is (r + 1) + 0.5 i. */
static double weight(int64_t i, void *arg) {
  return (double)(*(int *)arg + 1) + 0.5 * (double)i;
}

/* d(sum over tasks of Sum(op(x) * w_task)) / dx on this task, built with
 * wf_graph_add_gradients; returns the gradient's value. */
static wf_tensor *grad_of(const char *op, const char *reduction, int root,
                          const int64_t *xdims, int xrank, const int64_t *ydims,
                          int yrank) {
  wf_graph *g = wf_graph_new(rt);
  int r = rank_;
  double half = 0.5;
  wf_output x = node_const(g, "x", WF_FLOAT32, xdims, xrank, fill_value, &half);
  wf_node *n =
      reduction && root >= 0 ? node_op(g, op, "coll", &x, 1, "reduction",
                                       reduction, "root", root, NULL)
      : reduction ? node_op(g, op, "coll", &x, 1, "reduction", reduction, NULL)
      : root >= 0 ? node_op(g, op, "coll", &x, 1, "root", root, NULL)
                  : node_op(g, op, "coll", &x, 1, NULL);
  wf_output y = {must(n), 0};
  wf_output w = node_const(g, "w", WF_FLOAT32, ydims, yrank, weight, &r);
  wf_output loss = unary(g, "Sum", binary(g, "Mul", y, w));
  wf_gradient dx;
  if (wf_graph_add_gradients(g, &loss, 1, NULL, &x, 1, &dx, st))
    fail_msg("gradients of %s: %s", op, wf_status_message(st));
  assert_non_null(dx.dense.node);
  wf_tensor *out;
  run_ok(g, &dx.dense, 1, &out);
  wf_graph_free(g);
  return out;
}

/* The sum over tasks of weight(i). */
static double weight_sum(int64_t i, void *arg) {
  double s = 0;
  (void)arg;
  for (int r = 0; r < size_; r++)
    s += weight(i, &r);
  return s;
}
static double weight_mean(int64_t i, void *arg) {
  return weight_sum(i, arg) / size_;
}
static double zero(int64_t i, void *arg) {
  (void)i;
  (void)arg;
  return 0;
}
/* AllGather: this task's block (rows 2 rank, 2 rank + 1 of 3 columns) of
 * the summed weights. */
static double gather_grad(int64_t i, void *arg) {
  return weight_sum(i + 6 * rank_, arg);
}
/* ReduceScatter: element i of x meets the weights of task i / 4 (blocks
 * of 2 rows of 2), element i % 4 of them. */
static double scatter_grad(int64_t i, void *arg) {
  int r = (int)(i / 4);
  double s = weight(i % 4, &r);
  return arg ? s / size_ : s;
}

static double root_weight_mean(int64_t i, void *arg) {
  return weight(i, arg) / size_;
}

static void test_gradients_match_analytic(void **state) {
  (void)state;
  static const int64_t d6[2] = {2, 3};
  wf_tensor *g;

  g = grad_of("AllReduce", "sum", -1, d6, 2, d6, 2);
  check_tensor(g, WF_FLOAT32, d6, 2, weight_sum, NULL, "d AllReduce sum");
  wf_tensor_release(g);
  g = grad_of("AllReduce", "mean", -1, d6, 2, d6, 2);
  check_tensor(g, WF_FLOAT32, d6, 2, weight_mean, NULL, "d AllReduce mean");
  wf_tensor_release(g);

  for (int root = 0; root < (size_ > 1 ? 2 : 1); root++) {
    g = grad_of("Broadcast", NULL, root, d6, 2, d6, 2);
    check_tensor(g, WF_FLOAT32, d6, 2, rank_ == root ? weight_sum : zero, NULL,
                 "d Broadcast");
    wf_tensor_release(g);
  }

  int64_t gathered[2] = {2 * size_, 3};
  g = grad_of("AllGather", NULL, -1, d6, 2, gathered, 2);
  check_tensor(g, WF_FLOAT32, d6, 2, gather_grad, NULL, "d AllGather");
  wf_tensor_release(g);

  int64_t xs[2] = {2 * size_, 2}, ys[2] = {2, 2};
  int mean_flag = 1;
  g = grad_of("ReduceScatter", "sum", -1, xs, 2, ys, 2);
  check_tensor(g, WF_FLOAT32, xs, 2, scatter_grad, NULL, "d ReduceScatter sum");
  wf_tensor_release(g);
  g = grad_of("ReduceScatter", "mean", -1, xs, 2, ys, 2);
  check_tensor(g, WF_FLOAT32, xs, 2, scatter_grad, &mean_flag,
               "d ReduceScatter mean");
  wf_tensor_release(g);

  /* Reduce (Broadcast's gradient, an op of its own): only root's loss
   * sees x, so every task's x gets root's weights (divided by the size
   * for "mean"). */
  int root = size_ - 1;
  g = grad_of("Reduce", "sum", root, d6, 2, d6, 2);
  check_tensor(g, WF_FLOAT32, d6, 2, weight, &root, "d Reduce sum");
  wf_tensor_release(g);
  g = grad_of("Reduce", "mean", root, d6, 2, d6, 2);
  check_tensor(g, WF_FLOAT32, d6, 2, root_weight_mean, &root, "d Reduce mean");
  wf_tensor_release(g);
}

/* ---- errors
 * --------------------------------------------------------------------- */

/* "mean" of integers is refused while building, naming the node. */
static void test_mean_of_integers_refused(void **state) {
  (void)state;
  wf_graph *g = wf_graph_new(rt);
  item_arg a = {rank_, 0};
  int64_t dims[1] = {4};
  wf_output x = node_const(g, NULL, WF_INT32, dims, 1, item_value, &a);
  assert_null(
      node_op(g, "AllReduce", "int_mean", &x, 1, "reduction", "mean", NULL));
  const char *msg = wf_status_message(st);
  if (!strstr(msg, "int_mean") || !strstr(msg, "mean") || !strstr(msg, "int32"))
    fail_msg("message does not name the node and the cause: %s", msg);
  assert_null(node_op(g, "AllReduce", "bad_reduction", &x, 1, "reduction",
                      "max", NULL));
  if (!strstr(wf_status_message(st), "bad_reduction"))
    fail_msg("message does not name the node: %s", wf_status_message(st));
  wf_graph_free(g);
}

/* Tasks passing different shapes fail the run on every task with a
 * message saying so; so does a ReduceScatter whose rows do not divide on
 * one task only (that task refuses, the others say which task did). The
 * next runs with matching shapes work. */
static void test_shape_mismatch_fails_everywhere(void **state) {
  (void)state;
  if (size_ == 1)
    skip();
  wf_graph *g = wf_graph_new(rt);
  int64_t unknown[2] = {-1, 2};
  wf_node_desc *d = wf_node_desc_new(g, "Placeholder", "p");
  wf_node_desc_set_attr_dtype(d, "dtype", WF_FLOAT32);
  wf_node_desc_set_attr_shape(d, "shape", unknown, 2);
  wf_output p = {must(wf_node_desc_finish(d, st)), 0};
  wf_output y[2] = {
      {must(node_op(g, "AllReduce", "mismatch", &p, 1, NULL)), 0},
      {must(node_op(g, "ReduceScatter", "rows", &p, 1, NULL)), 0}};
  wf_session *s = wf_session_new(g, st);
  assert_non_null(s);
  for (int round = 0; round < 4; round++) {
    int which = round < 2 ? 0 : 1;
    /* Rounds 0 and 2: task 0 passes one row more than the others. */
    int64_t dims[2] = {2 * size_ + (round % 2 == 0 && rank_ == 0), 2};
    double one = 1.0;
    wf_tensor *feed = make_tensor(WF_FLOAT32, dims, 2, fill_value, &one);
    wf_tensor *out = NULL;
    int rc = wf_session_run(s, NULL, &p, &feed, 1, &y[which], &out, 1, NULL, 0,
                            NULL, st);
    wf_tensor_release(feed);
    const char *msg = wf_status_message(st);
    if (round == 0) {
      assert_int_not_equal(rc, 0);
      if (!strstr(msg, "mismatch") || !strstr(msg, "different sizes") ||
          !strstr(msg, "task"))
        fail_msg("unexpected message: %s", msg);
    } else if (round == 2) {
      assert_int_not_equal(rc, 0);
      if (!strstr(msg, "rows") ||
          !strstr(msg, rank_ == 0 ? "not divisible" : "task 0 could not"))
        fail_msg("task %d: unexpected message: %s", rank_, msg);
    } else {
      if (rc)
        fail_msg("after a failed run: %s", msg);
      assert_exactly(wf_tensor_element(out, 3), (double)size_);
      wf_tensor_release(out);
    }
  }
  wf_session_free(s);
  wf_graph_free(g);
}

/* A root outside the job and a dimension 0 that the tasks cannot share
 * are errors naming the node, at build or set-up time. */
static void test_bad_root_and_rows_refused(void **state) {
  (void)state;
  wf_graph *g = wf_graph_new(rt);
  double one = 1.0;
  int64_t dims[2] = {size_ + 1, 2};
  wf_output x = node_const(g, NULL, WF_FLOAT32, dims, 2, fill_value, &one);
  wf_node *b = node_op(g, "Broadcast", "far_root", &x, 1, "root", size_, NULL);
  if (b) {
    wf_output y = {b, 0};
    wf_tensor *out = NULL;
    assert_int_not_equal(run_once(g, &y, 1, &out), 0);
  }
  if (!strstr(wf_status_message(st), "far_root") ||
      !strstr(wf_status_message(st), "root"))
    fail_msg("unexpected message: %s", wf_status_message(st));
  if (size_ > 1) {
    wf_node *rs = node_op(g, "ReduceScatter", "uneven", &x, 1, NULL);
    if (rs) {
      wf_output y = {rs, 0};
      wf_tensor *out = NULL;
      assert_int_not_equal(run_once(g, &y, 1, &out), 0);
    }
    if (!strstr(wf_status_message(st), "uneven") ||
        !strstr(wf_status_message(st), "divisible"))
      fail_msg("unexpected message: %s", wf_status_message(st));
  }
  wf_graph_free(g);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_collective_size_matches_job),
      cmocka_unit_test(test_allreduce_lists_dtypes_reductions),
      cmocka_unit_test(test_broadcast_roots),
      cmocka_unit_test(test_allgather_joins_in_task_order),
      cmocka_unit_test(test_reduce_scatter_blocks),
      cmocka_unit_test(test_readiness_order_differs_by_task),
      cmocka_unit_test(test_concurrent_steps_pair_alike),
      cmocka_unit_test(test_gradients_match_analytic),
      cmocka_unit_test(test_mean_of_integers_refused),
      cmocka_unit_test(test_shape_mismatch_fails_everywhere),
      cmocka_unit_test(test_bad_root_and_rows_refused),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
