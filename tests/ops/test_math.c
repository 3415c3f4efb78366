/* tests/ops/test_math.c — the ops_math plugin through the real loader: every
 * op's reference CPU kernel against NumPy/mpmath reference values
 * (fixtures/math_cases.h, made by fixtures/gen_math.py), shape inference
 * (broadcasting with unknown dims, refusals at graph build) and run-time
 * errors. Input nodes are Placeholders from the ops_array plugin; kernels
 * are run one node at a time with wf__kernel_run, not through a session.
 *
 * Tolerances (got against the reference want):
 *   float32: |got - want| <= 1e-5  * max(|want|, floor)
 *   float64: |got - want| <= 1e-12 * max(|want|, floor)
 *   integers and bool: exact.
 * floor is 0 (purely relative) for elementwise ops and 1 for reductions,
 * matrix products and the backward ops (whose results may cancel to near
 * zero, e.g. 1 - y * y in TanhGrad). NaN must match
 * NaN, infinities must match exactly, and a reference 0 with floor 0 must
 * be exactly 0. */
#include <config.h>

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <weft/weft.h>

#include "graph/graph_internal.h"
#include "exec/kernel.h"
#include "plugin/registry.h"
#include "plugin/runtime_internal.h"

#define MATH_DIR TEST_BUILDDIR "/plugins/ops/math/.libs"
#define ARRAY_DIR TEST_BUILDDIR "/plugins/ops/array/.libs"

/* ---- fixture types (filled by math_cases.h) ---------------------------- */

typedef struct mt_tensor {
  int32_t dtype;
  int32_t rank;
  int64_t dims[WF_MAX_RANK];
  const void *data; /* NULL when the tensor has no elements */
} mt_tensor;

typedef struct mt_attr {
  const char *name;
  char kind; /* 'i' int, 'f' float, 'b' bool, 'd' dtype, 'l' list(int) */
  int64_t i;
  double f;
  const int64_t *ints;
  int n;
} mt_attr;

typedef struct mt_case {
  const char *name;
  const char *op;
  int num_inputs;
  mt_tensor inputs[4];
  int list_input; /* the inputs are one list argument (AddN) */
  int num_attrs;
  mt_attr attrs[4];
  mt_tensor out;
  double floor;
} mt_case;

#include "fixtures/math_cases.h"

#define NUM_CASES ((int)(sizeof math_cases / sizeof math_cases[0]))

/* ---- the runtime ------------------------------------------------------- */

static wf_runtime *rt;

/* Loads ops_math and ops_array from the build tree, strictly, and nothing
 * else. */
static int runtime_setup(void **state) {
  wf_status *st = wf_status_new();
  wf_config *cfg = wf_config_new();

  if (!st || !cfg || wf_config_set(cfg, "plugins", "strict", "true", st) ||
      wf_config_set(cfg, "plugins", "paths", MATH_DIR ", " ARRAY_DIR, st) ||
      wf_config_set(cfg, "plugins", "use_default_dir", "false", st) ||
      wf_config_set(cfg, "plugins", "use_env_path", "false", st))
    goto fail;
  rt = wf_runtime_new(cfg, st);
  if (!rt)
    goto fail;
  wf_config_free(cfg);
  wf_status_free(st);
  return 0;

fail:
  fprintf(stderr, "cannot load ops_math and ops_array: %s\n",
          st ? wf_status_message(st) : "out of memory");
  wf_config_free(cfg);
  wf_status_free(st);
  return -1;
}

static int runtime_teardown(void **state) {
  wf_runtime_free(rt);
  rt = NULL;
  return 0;
}

/* ---- building nodes ---------------------------------------------------- */

/* A Placeholder of that dtype and shape (rank -1: unknown; dims may be
 * -1). */
static wf_output placeholder(wf_graph *g, wf_dtype dt, const int64_t *dims,
                             int rank) {
  wf_status *st = wf_status_new();
  wf_node_desc *d = wf_node_desc_new(g, "Placeholder", NULL);
  wf_node *n;

  wf_node_desc_set_attr_dtype(d, "dtype", dt);
  wf_node_desc_set_attr_shape(d, "shape", dims, rank);
  n = wf_node_desc_finish(d, st);
  if (!n)
    fail_msg("Placeholder: %s", wf_status_message(st));
  wf_status_free(st);
  return (wf_output){n, 0};
}

#define SHAPE(...) ((const int64_t[]){__VA_ARGS__})
#define RANK(...)                                                              \
  ((int)(sizeof((const int64_t[]){__VA_ARGS__}) / sizeof(int64_t)))
/* placeholder(g, dt, dims..., ) for a known shape of rank >= 1 */
#define PH(g, dt, ...)                                                         \
  placeholder((g), (dt), SHAPE(__VA_ARGS__), RANK(__VA_ARGS__))
#define PH_SCALAR(g, dt) placeholder((g), (dt), NULL, 0)
#define PH_UNKNOWN(g, dt) placeholder((g), (dt), NULL, -1)

/* Adds an op node on the inputs; NULL with st set when refused. */
static wf_node *op2(wf_graph *g, const char *op, wf_output a, wf_output b,
                    wf_status *st) {
  wf_node_desc *d = wf_node_desc_new(g, op, NULL);
  wf_node_desc_add_input(d, a);
  wf_node_desc_add_input(d, b);
  return wf_node_desc_finish(d, st);
}

static wf_node *op1(wf_graph *g, const char *op, wf_output a, wf_status *st) {
  wf_node_desc *d = wf_node_desc_new(g, op, NULL);
  wf_node_desc_add_input(d, a);
  return wf_node_desc_finish(d, st);
}

static void expect_shape(const wf_node *n, const int64_t *dims, int rank) {
  wf_shape s;
  char got[128], want[128];
  wf_shape w;

  wf_node_output_shape(n, 0, &s);
  wf_shape_init(&w, dims, rank);
  if (rank < 0)
    wf_shape_unknown(&w);
  if (!wf_shape_equal(&s, &w))
    fail_msg("node %s: inferred shape %s, expected %s", wf_node_name(n),
             wf_shape_str(&s, got, sizeof got),
             wf_shape_str(&w, want, sizeof want));
}

static void expect_message(const wf_status *st, const char *part) {
  if (!strstr(wf_status_message(st), part))
    fail_msg("message \"%s\" does not mention \"%s\"", wf_status_message(st),
             part);
}

/* ---- running kernels --------------------------------------------------- */

static wf_tensor *tensor_from(const mt_tensor *t, wf_status *st) {
  wf_tensor *x = wf_tensor_new(t->dtype, t->dims, t->rank, st);

  if (x && t->data)
    memcpy(wf_tensor_data(x), t->data, wf_tensor_nbytes(x));
  return x;
}

/* Runs n's cpu kernel on inputs; returns the code; *out gets output 0 (a
 * new reference) on success. */
static int run_node(const wf_node *n, wf_tensor *const *inputs,
                    wf_tensor **out, wf_status *st) {
  const wf__kernel *k = wf__kernel_select(rt, n, "cpu", st);
  wf_tensor *outs[1] = {NULL};
  int rc;

  if (!k)
    return wf_status_code(st);
  assert_int_equal(wf_node_num_outputs(n), 1);
  rc = wf__kernel_run(k, n, (const wf_tensor *const *)inputs, outs, st);
  *out = outs[0];
  return rc;
}

static double element(const void *data, int32_t dt, int64_t i) {
  switch (dt) {
  case WF_FLOAT32: return ((const float *)data)[i];
  case WF_FLOAT64: return ((const double *)data)[i];
  default: break;
  }
  fail_msg("element() on a non-float dtype %d", (int)dt);
  return 0;
}

static int64_t int_element(const void *data, int32_t dt, int64_t i) {
  switch (dt) {
  case WF_INT8: return ((const int8_t *)data)[i];
  case WF_UINT8: return ((const uint8_t *)data)[i];
  case WF_BOOL: return ((const uint8_t *)data)[i];
  case WF_INT32: return ((const int32_t *)data)[i];
  case WF_INT64: return ((const int64_t *)data)[i];
  default: break;
  }
  fail_msg("int_element() on dtype %d", (int)dt);
  return 0;
}

/* Compares got with the case's reference under the file's tolerances. */
static void compare(const mt_case *c, const wf_tensor *got) {
  const mt_tensor *w = &c->out;
  wf_shape gs, ws;
  char a[128], b[128];
  int64_t n;

  assert_int_equal(wf_tensor_dtype(got), w->dtype);
  wf_tensor_shape(got, &gs);
  wf_shape_init(&ws, w->dims, w->rank);
  if (!wf_shape_equal(&gs, &ws))
    fail_msg("%s: output shape %s, expected %s", c->name,
             wf_shape_str(&gs, a, sizeof a), wf_shape_str(&ws, b, sizeof b));
  n = wf_tensor_count(got);
  for (int64_t i = 0; i < n; i++) {
    if (w->dtype == WF_FLOAT32 || w->dtype == WF_FLOAT64) {
      double g = element(wf_tensor_data(got), w->dtype, i);
      double r = element(w->data, w->dtype, i);
      double tol = w->dtype == WF_FLOAT32 ? 1e-5 : 1e-12;
      double scale = fabs(r) > c->floor ? fabs(r) : c->floor;
      int ok;

      if (isnan(r))
        ok = isnan(g);
      else if (isinf(r))
        ok = g == r;
      else
        ok = fabs(g - r) <= tol * scale;
      if (!ok)
        fail_msg("%s: element %lld is %.17g, expected %.17g (tolerance "
                 "%g x %g)",
                 c->name, (long long)i, g, r, tol, scale);
    } else {
      int64_t g = int_element(wf_tensor_data(got), w->dtype, i);
      int64_t r = int_element(w->data, w->dtype, i);
      if (g != r)
        fail_msg("%s: element %lld is %lld, expected %lld", c->name,
                 (long long)i, (long long)g, (long long)r);
    }
  }
}

static void set_attr(wf_node_desc *d, const mt_attr *a) {
  switch (a->kind) {
  case 'i': wf_node_desc_set_attr_int(d, a->name, a->i); break;
  case 'f': wf_node_desc_set_attr_float(d, a->name, a->f); break;
  case 'b': wf_node_desc_set_attr_bool(d, a->name, (int)a->i); break;
  case 'd': wf_node_desc_set_attr_dtype(d, a->name, (wf_dtype)a->i); break;
  case 'l': wf_node_desc_set_attr_int_list(d, a->name, a->ints, a->n); break;
  default: fail_msg("fixture attr kind '%c'", a->kind);
  }
}

/* One fixture case: builds Placeholder inputs of the case's shapes and the
 * op node (whose inferred shape must be the reference's), runs the cpu
 * kernel, and compares. */
static void test_fixture_case(void **state) {
  const mt_case *c = *state;
  wf_status *st = wf_status_new();
  wf_graph *g = wf_graph_new(rt);
  wf_output ins[4];
  wf_tensor *inputs[4] = {NULL};
  wf_tensor *out = NULL;
  wf_node_desc *d;
  wf_node *n;

  assert_non_null(g);
  for (int i = 0; i < c->num_inputs; i++)
    ins[i] = placeholder(g, c->inputs[i].dtype, c->inputs[i].dims,
                         c->inputs[i].rank);
  d = wf_node_desc_new(g, c->op, NULL);
  if (c->list_input)
    wf_node_desc_add_input_list(d, ins, c->num_inputs);
  else
    for (int i = 0; i < c->num_inputs; i++)
      wf_node_desc_add_input(d, ins[i]);
  for (int i = 0; i < c->num_attrs; i++)
    set_attr(d, &c->attrs[i]);
  n = wf_node_desc_finish(d, st);
  if (!n)
    fail_msg("%s: node refused: %s", c->name, wf_status_message(st));
  expect_shape(n, c->out.dims, c->out.rank);
  assert_int_equal(wf_node_output_dtype(n, 0), c->out.dtype);

  for (int i = 0; i < c->num_inputs; i++) {
    inputs[i] = tensor_from(&c->inputs[i], st);
    assert_non_null(inputs[i]);
  }
  if (run_node(n, inputs, &out, st))
    fail_msg("%s: kernel failed: %s", c->name, wf_status_message(st));
  compare(c, out);

  wf_tensor_release(out);
  for (int i = 0; i < c->num_inputs; i++)
    wf_tensor_release(inputs[i]);
  wf_graph_free(g);
  wf_status_free(st);
}

/* ---- shape inference --------------------------------------------------- */

static void test_add_refuses_incompatible_shapes_at_build(void **state) {
  wf_status *st = wf_status_new();
  wf_graph *g = wf_graph_new(rt);
  wf_output a = PH(g, WF_FLOAT32, 2, 3), b = PH(g, WF_FLOAT32, 4, 3);
  int before = wf_graph_num_nodes(g);

  assert_null(op2(g, "Add", a, b, st));
  assert_int_equal(wf_status_code(st), WF_INVALID_ARGUMENT);
  expect_message(st, "(2, 3)");
  expect_message(st, "(4, 3)");
  expect_message(st, "Add");
  assert_int_equal(wf_graph_num_nodes(g), before);
  wf_graph_free(g);
  wf_status_free(st);
}

static void test_broadcast_rank_mismatch_refused_when_trailing_dims_differ(
    void **state) {
  wf_status *st = wf_status_new();
  wf_graph *g = wf_graph_new(rt);

  assert_null(op2(g, "Mul", PH(g, WF_INT32, 3), PH(g, WF_INT32, 2, 4), st));
  expect_message(st, "(3)");
  expect_message(st, "(2, 4)");
  assert_null(
      op2(g, "Less", PH(g, WF_FLOAT64, 0, 3), PH(g, WF_FLOAT64, 2, 3), st));
  assert_int_equal(wf_status_code(st), WF_INVALID_ARGUMENT);
  wf_graph_free(g);
  wf_status_free(st);
}

static void test_broadcast_keeps_what_unknown_dims_allow(void **state) {
  wf_status *st = wf_status_new();
  wf_graph *g = wf_graph_new(rt);
  wf_node *n;

  n = op2(g, "Add", PH(g, WF_FLOAT32, -1, 3), PH(g, WF_FLOAT32, 4, 1), st);
  assert_non_null(n);
  expect_shape(n, SHAPE(4, 3), 2);
  n = op2(g, "Add", PH(g, WF_FLOAT32, -1, 3), PH(g, WF_FLOAT32, -1, 1), st);
  assert_non_null(n);
  expect_shape(n, SHAPE(-1, 3), 2);
  n = op2(g, "Sub", PH(g, WF_FLOAT32, -1), PH(g, WF_FLOAT32, 2, 1), st);
  assert_non_null(n);
  expect_shape(n, SHAPE(2, -1), 2);
  n = op2(g, "Maximum", PH_UNKNOWN(g, WF_FLOAT32), PH(g, WF_FLOAT32, 2), st);
  assert_non_null(n);
  expect_shape(n, NULL, -1);
  n = op2(g, "Equal", PH_SCALAR(g, WF_INT64), PH(g, WF_INT64, -1, 5), st);
  assert_non_null(n);
  expect_shape(n, SHAPE(-1, 5), 2);
  assert_int_equal(wf_node_output_dtype(n, 0), WF_BOOL);
  wf_graph_free(g);
  wf_status_free(st);
}

static void test_add_fails_at_run_on_incompatible_fed_shapes(void **state) {
  wf_status *st = wf_status_new();
  wf_graph *g = wf_graph_new(rt);
  wf_node *n =
      op2(g, "Add", PH(g, WF_FLOAT32, -1, 3), PH(g, WF_FLOAT32, -1, 3), st);
  wf_tensor *in[2], *out = NULL;

  assert_non_null(n);
  in[0] = wf_tensor_new(WF_FLOAT32, SHAPE(2, 3), 2, st);
  in[1] = wf_tensor_new(WF_FLOAT32, SHAPE(5, 3), 2, st);
  memset(wf_tensor_data(in[0]), 0, wf_tensor_nbytes(in[0]));
  memset(wf_tensor_data(in[1]), 0, wf_tensor_nbytes(in[1]));
  assert_int_equal(run_node(n, in, &out, st), WF_INVALID_ARGUMENT);
  assert_null(out);
  expect_message(st, "(2, 3)");
  expect_message(st, "(5, 3)");
  wf_tensor_release(in[0]);
  wf_tensor_release(in[1]);
  wf_graph_free(g);
  wf_status_free(st);
}

static void test_select_refuses_condition_that_does_not_broadcast(
    void **state) {
  wf_status *st = wf_status_new();
  wf_graph *g = wf_graph_new(rt);
  wf_node_desc *d = wf_node_desc_new(g, "Select", NULL);
  wf_node *n;

  wf_node_desc_add_input(d, PH(g, WF_BOOL, 3));
  wf_node_desc_add_input(d, PH(g, WF_FLOAT32, 2, 4));
  wf_node_desc_add_input(d, PH(g, WF_FLOAT32, 1));
  assert_null(wf_node_desc_finish(d, st));
  expect_message(st, "(3)");
  expect_message(st, "(2, 4)");

  d = wf_node_desc_new(g, "Select", NULL);
  wf_node_desc_add_input(d, PH(g, WF_BOOL, 2, 1));
  wf_node_desc_add_input(d, PH(g, WF_INT32, 4));
  wf_node_desc_add_input(d, PH_SCALAR(g, WF_INT32));
  n = wf_node_desc_finish(d, st);
  assert_non_null(n);
  expect_shape(n, SHAPE(2, 4), 2);

  /* the condition must be bool */
  d = wf_node_desc_new(g, "Select", NULL);
  wf_node_desc_add_input(d, PH(g, WF_INT32, 2));
  wf_node_desc_add_input(d, PH(g, WF_INT32, 2));
  wf_node_desc_add_input(d, PH(g, WF_INT32, 2));
  assert_null(wf_node_desc_finish(d, st));
  assert_int_equal(wf_status_code(st), WF_INVALID_ARGUMENT);
  wf_graph_free(g);
  wf_status_free(st);
}

static void test_add_n_refuses_inputs_of_different_shapes(void **state) {
  wf_status *st = wf_status_new();
  wf_graph *g = wf_graph_new(rt);
  wf_output in[3];
  wf_node_desc *d = wf_node_desc_new(g, "AddN", NULL);

  in[0] = PH(g, WF_FLOAT32, 2, 3);
  in[1] = PH(g, WF_FLOAT32, -1, 3);
  in[2] = PH(g, WF_FLOAT32, 2, 4);
  wf_node_desc_add_input_list(d, in, 3);
  assert_null(wf_node_desc_finish(d, st));
  expect_message(st, "(2, 3)");
  expect_message(st, "(2, 4)");

  d = wf_node_desc_new(g, "AddN", NULL);
  wf_node_desc_add_input_list(d, in, 2);
  assert_non_null(wf_node_desc_finish(d, st));
  wf_graph_free(g);
  wf_status_free(st);
}

static void test_matmul_checks_inner_dims_after_transposes(void **state) {
  wf_status *st = wf_status_new();
  wf_graph *g = wf_graph_new(rt);
  wf_output a = PH(g, WF_FLOAT32, 2, 3), b = PH(g, WF_FLOAT32, 4, 3);
  wf_node_desc *d;
  wf_node *n;

  assert_null(op2(g, "MatMul", a, b, st));
  assert_int_equal(wf_status_code(st), WF_INVALID_ARGUMENT);
  expect_message(st, "inner dimensions");
  expect_message(st, "(4, 3)");

  d = wf_node_desc_new(g, "MatMul", NULL);
  wf_node_desc_add_input(d, a);
  wf_node_desc_add_input(d, b);
  wf_node_desc_set_attr_bool(d, "transpose_b", 1);
  n = wf_node_desc_finish(d, st);
  assert_non_null(n);
  expect_shape(n, SHAPE(2, 4), 2);

  n = op2(g, "MatMul", PH(g, WF_FLOAT32, -1, -1), PH(g, WF_FLOAT32, 3, 5), st);
  assert_non_null(n);
  expect_shape(n, SHAPE(-1, 5), 2);

  assert_null(op2(g, "MatMul", PH(g, WF_FLOAT32, 2, 3, 4), b, st));
  expect_message(st, "rank 2");
  wf_graph_free(g);
  wf_status_free(st);
}

static void test_batch_matmul_broadcasts_batch_and_refuses_bad_ones(
    void **state) {
  wf_status *st = wf_status_new();
  wf_graph *g = wf_graph_new(rt);
  wf_node *n;

  n = op2(g, "BatchMatMul", PH(g, WF_FLOAT64, 5, 1, 2, 3),
          PH(g, WF_FLOAT64, 4, 3, 7), st);
  assert_non_null(n);
  expect_shape(n, SHAPE(5, 4, 2, 7), 4);
  assert_null(op2(g, "BatchMatMul", PH(g, WF_FLOAT64, 2, 2, 3),
                  PH(g, WF_FLOAT64, 3, 3, 2), st));
  expect_message(st, "batch");
  assert_null(op2(g, "BatchMatMul", PH(g, WF_FLOAT64, 3),
                  PH(g, WF_FLOAT64, 3, 2), st));
  expect_message(st, "rank 2 or more");
  assert_null(op2(g, "BatchMatMul", PH(g, WF_FLOAT64, 2, 3),
                  PH(g, WF_FLOAT64, 2, 2), st));
  expect_message(st, "inner dimensions");
  wf_graph_free(g);
  wf_status_free(st);
}

static wf_node *reduce_node(wf_graph *g, const char *op, wf_output x,
                            const int64_t *axes, int n, int keep,
                            wf_status *st) {
  wf_node_desc *d = wf_node_desc_new(g, op, NULL);
  wf_node_desc_add_input(d, x);
  wf_node_desc_set_attr_int_list(d, "axes", axes, n);
  wf_node_desc_set_attr_bool(d, "keep_dims", keep);
  return wf_node_desc_finish(d, st);
}

static void test_reductions_check_axes(void **state) {
  wf_status *st = wf_status_new();
  wf_graph *g = wf_graph_new(rt);
  wf_output x = PH(g, WF_FLOAT32, 2, 3, 4);
  wf_node *n;

  assert_null(reduce_node(g, "Sum", x, SHAPE(3), 1, 0, st));
  assert_int_equal(wf_status_code(st), WF_INVALID_ARGUMENT);
  expect_message(st, "axis 3 is out of range for rank 3");
  assert_null(reduce_node(g, "Mean", x, SHAPE(-4), 1, 0, st));
  expect_message(st, "axis -4");
  assert_null(reduce_node(g, "Max", x, SHAPE(1, -2), 2, 0, st));
  expect_message(st, "twice");

  n = reduce_node(g, "Prod", x, SHAPE(-1, 0), 2, 1, st);
  assert_non_null(n);
  expect_shape(n, SHAPE(1, 3, 1), 3);
  n = reduce_node(g, "Min", x, NULL, 0, 0, st);
  assert_non_null(n);
  expect_shape(n, NULL, 0);
  /* unknown rank: only "all axes, no kept dims" has a known shape */
  n = reduce_node(g, "Sum", PH_UNKNOWN(g, WF_FLOAT32), NULL, 0, 0, st);
  assert_non_null(n);
  expect_shape(n, NULL, 0);
  n = reduce_node(g, "Sum", PH_UNKNOWN(g, WF_FLOAT32), SHAPE(0), 1, 0, st);
  assert_non_null(n);
  expect_shape(n, NULL, -1);
  wf_graph_free(g);
  wf_status_free(st);
}

static void test_argmax_refuses_empty_or_missing_axis(void **state) {
  wf_status *st = wf_status_new();
  wf_graph *g = wf_graph_new(rt);
  wf_node_desc *d;
  wf_node *n;

  d = wf_node_desc_new(g, "ArgMax", NULL);
  wf_node_desc_add_input(d, PH(g, WF_FLOAT32, 4, 0));
  wf_node_desc_set_attr_int(d, "axis", 1);
  assert_null(wf_node_desc_finish(d, st));
  expect_message(st, "empty");

  d = wf_node_desc_new(g, "ArgMax", NULL);
  wf_node_desc_add_input(d, PH(g, WF_FLOAT32, 4, 2));
  wf_node_desc_set_attr_int(d, "axis", 2);
  assert_null(wf_node_desc_finish(d, st));
  expect_message(st, "axis 2 is out of range");

  d = wf_node_desc_new(g, "ArgMax", NULL);
  wf_node_desc_add_input(d, PH(g, WF_FLOAT32, 4, 2));
  wf_node_desc_set_attr_dtype(d, "output_type", WF_FLOAT32);
  assert_null(wf_node_desc_finish(d, st));

  n = op1(g, "ArgMax", PH(g, WF_INT8, 4, -1, 2), st);
  assert_non_null(n);
  expect_shape(n, SHAPE(-1, 2), 2);
  assert_int_equal(wf_node_output_dtype(n, 0), WF_INT64);
  wf_graph_free(g);
  wf_status_free(st);
}

static void test_ops_refuse_dtypes_outside_their_type_sets(void **state) {
  wf_status *st = wf_status_new();
  wf_graph *g = wf_graph_new(rt);

  assert_null(op1(g, "Exp", PH(g, WF_INT32, 2), st));
  assert_int_equal(wf_status_code(st), WF_INVALID_ARGUMENT);
  assert_null(op1(g, "Neg", PH(g, WF_UINT8, 2), st));
  assert_null(op2(g, "Add", PH(g, WF_BOOL, 2), PH(g, WF_BOOL, 2), st));
  assert_null(op2(g, "Add", PH(g, WF_FLOAT32, 2), PH(g, WF_FLOAT64, 2), st));
  assert_non_null(op2(g, "Equal", PH(g, WF_BOOL, 2), PH(g, WF_BOOL, 2), st));
  wf_graph_free(g);
  wf_status_free(st);
}

static void test_integer_pow_refuses_negative_exponent_at_run(void **state) {
  wf_status *st = wf_status_new();
  wf_graph *g = wf_graph_new(rt);
  wf_node *n = op2(g, "Pow", PH(g, WF_INT32, 3), PH(g, WF_INT32, 3), st);
  wf_tensor *in[2], *out = NULL;
  int32_t *x, *y;

  assert_non_null(n);
  in[0] = wf_tensor_new(WF_INT32, SHAPE(3), 1, st);
  in[1] = wf_tensor_new(WF_INT32, SHAPE(3), 1, st);
  x = wf_tensor_data(in[0]);
  y = wf_tensor_data(in[1]);
  x[0] = 2, x[1] = 3, x[2] = 4;
  y[0] = 1, y[1] = -1, y[2] = 2;
  assert_int_equal(run_node(n, in, &out, st), WF_INVALID_ARGUMENT);
  assert_null(out);
  expect_message(st, "negative exponent");
  expect_message(st, "Pow");
  wf_tensor_release(in[0]);
  wf_tensor_release(in[1]);
  wf_graph_free(g);
  wf_status_free(st);
}

static void test_integer_div_by_zero_gives_zero(void **state) {
  wf_status *st = wf_status_new();
  wf_graph *g = wf_graph_new(rt);
  wf_node *n = op2(g, "Div", PH(g, WF_INT64, 4), PH_SCALAR(g, WF_INT64), st);
  wf_tensor *in[2], *out = NULL;
  int64_t *x, *r;

  assert_non_null(n);
  in[0] = wf_tensor_new(WF_INT64, SHAPE(4), 1, st);
  in[1] = wf_tensor_new(WF_INT64, NULL, 0, st);
  x = wf_tensor_data(in[0]);
  x[0] = 7, x[1] = -7, x[2] = INT64_MIN, x[3] = 0;
  *(int64_t *)wf_tensor_data(in[1]) = 0;
  assert_int_equal(run_node(n, in, &out, st), WF_OK);
  r = wf_tensor_data(out);
  for (int i = 0; i < 4; i++)
    assert_int_equal(r[i], 0);
  wf_tensor_release(out);
  wf_tensor_release(in[0]);
  wf_tensor_release(in[1]);
  wf_graph_free(g);
  wf_status_free(st);
}

static void test_sum_to_like_refuses_like_that_does_not_broadcast_to_x(
    void **state) {
  wf_status *st = wf_status_new();
  wf_graph *g = wf_graph_new(rt);
  wf_output x = PH(g, WF_FLOAT32, 2, 3, 4);
  wf_tensor *in[2], *out = NULL;
  wf_node *n;

  /* larger rank, a dim that is neither 1 nor x's */
  assert_null(op2(g, "SumToLike", x, PH(g, WF_FLOAT32, 1, 2, 3, 4), st));
  expect_message(st, "does not broadcast to x's shape (2, 3, 4)");
  assert_null(op2(g, "SumToLike", x, PH(g, WF_FLOAT32, 2, 4), st));
  expect_message(st, "(2, 4)");
  n = op2(g, "SumToLike", x, PH(g, WF_INT64, -1, 1), st);
  assert_non_null(n);
  expect_shape(n, SHAPE(-1, 1), 2);
  assert_int_equal(wf_node_output_dtype(n, 0), WF_FLOAT32);

  /* and at run time, with shapes only known then */
  n = op2(g, "SumToLike", PH(g, WF_FLOAT32, -1, 3),
          PH(g, WF_FLOAT32, -1, 1), st);
  assert_non_null(n);
  in[0] = wf_tensor_new(WF_FLOAT32, SHAPE(2, 3), 2, st);
  in[1] = wf_tensor_new(WF_FLOAT32, SHAPE(3, 1), 2, st);
  memset(wf_tensor_data(in[0]), 0, wf_tensor_nbytes(in[0]));
  memset(wf_tensor_data(in[1]), 0, wf_tensor_nbytes(in[1]));
  assert_int_equal(run_node(n, in, &out, st), WF_INVALID_ARGUMENT);
  assert_null(out);
  expect_message(st, "(3, 1)");
  wf_tensor_release(in[0]);
  wf_tensor_release(in[1]);
  wf_graph_free(g);
  wf_status_free(st);
}

/* The reductions' backward ops check dy (and y) against x reduced. */
static void test_reduce_grad_ops_check_dy_against_reduced_x(void **state) {
  wf_status *st = wf_status_new();
  wf_graph *g = wf_graph_new(rt);
  wf_output x = PH(g, WF_FLOAT64, 2, 3, 4);
  wf_node_desc *d;
  wf_node *n;
  wf_tensor *in[2], *out = NULL;

  d = wf_node_desc_new(g, "SumGrad", NULL);
  wf_node_desc_add_input(d, PH(g, WF_FLOAT64, 2, 3));
  wf_node_desc_add_input(d, x);
  wf_node_desc_set_attr_int_list(d, "axes", SHAPE(1), 1);
  assert_null(wf_node_desc_finish(d, st));
  expect_message(st, "dy against the reduced shape of x");
  expect_message(st, "(2, 4)");

  d = wf_node_desc_new(g, "MaxMinGrad", NULL);
  wf_node_desc_add_input(d, PH(g, WF_FLOAT64, 2, 1, 4));
  wf_node_desc_add_input(d, x);
  wf_node_desc_add_input(d, PH(g, WF_FLOAT64, 2, 4));
  wf_node_desc_set_attr_int_list(d, "axes", SHAPE(-2), 1);
  wf_node_desc_set_attr_bool(d, "keep_dims", 1);
  assert_null(wf_node_desc_finish(d, st));
  expect_message(st, "y against the reduced shape of x");

  d = wf_node_desc_new(g, "ProdGrad", NULL);
  wf_node_desc_add_input(d, PH(g, WF_FLOAT64, 2, 4));
  wf_node_desc_add_input(d, x);
  wf_node_desc_set_attr_int_list(d, "axes", SHAPE(3), 1);
  assert_null(wf_node_desc_finish(d, st));
  expect_message(st, "axis 3 is out of range");

  /* unknown dims pass at build and are checked at run time */
  d = wf_node_desc_new(g, "MeanGrad", NULL);
  wf_node_desc_add_input(d, PH(g, WF_FLOAT64, -1));
  wf_node_desc_add_input(d, PH(g, WF_FLOAT64, 2, -1));
  wf_node_desc_set_attr_int_list(d, "axes", SHAPE(0), 1);
  n = wf_node_desc_finish(d, st);
  assert_non_null(n);
  expect_shape(n, SHAPE(2, -1), 2);
  in[0] = wf_tensor_new(WF_FLOAT64, SHAPE(4), 1, st);
  in[1] = wf_tensor_new(WF_FLOAT64, SHAPE(2, 3), 2, st);
  memset(wf_tensor_data(in[0]), 0, wf_tensor_nbytes(in[0]));
  memset(wf_tensor_data(in[1]), 0, wf_tensor_nbytes(in[1]));
  assert_int_equal(run_node(n, in, &out, st), WF_INVALID_ARGUMENT);
  assert_null(out);
  expect_message(st, "dy has shape (4), but x (2, 3) reduced has shape (3)");
  wf_tensor_release(in[0]);
  wf_tensor_release(in[1]);
  wf_graph_free(g);
  wf_status_free(st);
}

/* ---- registration ------------------------------------------------------ */

static const char *const math_ops[] = {
    "Add",      "Sub",       "Mul",         "Div",        "Maximum",
    "Minimum",  "Pow",       "Equal",       "Less",       "Greater",
    "Select",   "AddN",      "Neg",         "Abs",        "Square",
    "Relu",     "Exp",       "Log",         "Sqrt",       "Rsqrt",
    "Tanh",     "Sigmoid",   "LeakyRelu",   "Elu",        "Gelu",
    "Softplus", "Cast",      "Sum",         "Mean",       "Max",
    "Min",      "Prod",      "ArgMax",      "MatMul",     "BatchMatMul",
    "SumToLike", "ReluGrad", "LeakyReluGrad", "AbsGrad",  "EluGrad",
    "SigmoidGrad", "TanhGrad", "SqrtGrad",  "RsqrtGrad",  "SoftplusGrad",
    "GeluGrad", "SumGrad",   "MeanGrad",    "MaxMinGrad", "ProdGrad"};

static void test_every_op_has_doc_shape_fn_and_reference_cpu_kernel(
    void **state) {
  const wf__registry *r = rt->reg;
  int nk = wf__registry_kernel_count(r);

  for (size_t i = 0; i < sizeof math_ops / sizeof math_ops[0]; i++) {
    const wf__op *op = wf__registry_find_op(r, math_ops[i]);
    int found = 0;

    if (!op)
      fail_msg("op %s is not registered", math_ops[i]);
    assert_string_equal(op->plugin, "ops-math");
    assert_non_null(op->def.doc);
    assert_true(strlen(op->def.doc) > 20);
    assert_non_null(op->def.shape_fn);
    for (int a = 0; a < op->num_inputs; a++)
      assert_non_null(op->inputs[a].doc);
    for (int k = 0; k < nk; k++) {
      const wf__kernel *kd = wf__registry_kernel_at(r, k);
      if (strcmp(kd->def.op, math_ops[i]) != 0)
        continue;
      found = 1;
      assert_string_equal(kd->def.device_type, "cpu");
      assert_string_equal(kd->def.label, "reference");
      assert_int_equal(kd->def.priority, 0);
      assert_int_equal(kd->def.flags & WF_KERNEL_CHEAP, 0);
    }
    if (!found)
      fail_msg("op %s has no kernel", math_ops[i]);
  }
}

static void test_commutative_flags(void **state) {
  const char *yes[] = {"Add", "Mul", "Maximum", "Minimum", "Equal"};
  const char *no[] = {"Sub", "Div", "Pow", "Less", "Greater", "MatMul"};

  for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++)
    assert_true(wf__registry_find_op(rt->reg, yes[i])->def.flags &
                WF_OP_COMMUTATIVE);
  for (size_t i = 0; i < sizeof no / sizeof no[0]; i++)
    assert_false(wf__registry_find_op(rt->reg, no[i])->def.flags &
                 WF_OP_COMMUTATIVE);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_add_refuses_incompatible_shapes_at_build),
      cmocka_unit_test(
          test_broadcast_rank_mismatch_refused_when_trailing_dims_differ),
      cmocka_unit_test(test_broadcast_keeps_what_unknown_dims_allow),
      cmocka_unit_test(test_add_fails_at_run_on_incompatible_fed_shapes),
      cmocka_unit_test(test_select_refuses_condition_that_does_not_broadcast),
      cmocka_unit_test(test_add_n_refuses_inputs_of_different_shapes),
      cmocka_unit_test(test_matmul_checks_inner_dims_after_transposes),
      cmocka_unit_test(
          test_batch_matmul_broadcasts_batch_and_refuses_bad_ones),
      cmocka_unit_test(test_reductions_check_axes),
      cmocka_unit_test(test_argmax_refuses_empty_or_missing_axis),
      cmocka_unit_test(test_ops_refuse_dtypes_outside_their_type_sets),
      cmocka_unit_test(test_integer_pow_refuses_negative_exponent_at_run),
      cmocka_unit_test(test_integer_div_by_zero_gives_zero),
      cmocka_unit_test(
          test_sum_to_like_refuses_like_that_does_not_broadcast_to_x),
      cmocka_unit_test(test_reduce_grad_ops_check_dy_against_reduced_x),
      cmocka_unit_test(
          test_every_op_has_doc_shape_fn_and_reference_cpu_kernel),
      cmocka_unit_test(test_commutative_flags),
  };
  struct CMUnitTest *cases = calloc(NUM_CASES, sizeof *cases);
  int failed;

  if (!cases)
    return 1;
  for (int i = 0; i < NUM_CASES; i++) {
    cases[i].name = math_cases[i].name;
    cases[i].test_func = test_fixture_case;
    cases[i].initial_state = (void *)&math_cases[i];
  }
  failed = cmocka_run_group_tests_name("ops_math", tests, runtime_setup,
                                       runtime_teardown);
  failed += _cmocka_run_group_tests("ops_math_fixtures", cases, NUM_CASES,
                                    runtime_setup, runtime_teardown);
  free(cases);
  return failed ? 1 : 0;
}
