/* tests/ops/array_nn_harness.h — runs one op's reference CPU kernel on
 * fixture tensors and compares with reference outputs; shared by
 * test_array.c and test_nn.c (static functions: each test program includes
 * it once). The fixtures come from tests/ops/fixtures/gen_array_nn.py.
 *
 * Tolerances (|got - want| <= tol * max(|want|, 1e-3); NaN must meet NaN,
 * infinities must be equal):
 *   float32  tol = 1e-5
 *   float64  tol = 1e-12
 *   integers, bool, float16, bfloat16: bit-exact. */
#ifndef TESTS_OPS_ARRAY_NN_HARNESS_H
#define TESTS_OPS_ARRAY_NN_HARNESS_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#include <weft/weft.h>

#include "graph/graph_internal.h"
#include "exec/kernel.h"

#define FX_TOL_FLOAT32 1e-5
#define FX_TOL_FLOAT64 1e-12
#define FX_TOL_FLOOR 1e-3

#define FX_MAX_IO 8
#define FX_MAX_ATTRS 10

/* A tensor of the fixtures: data NULL when it has no elements. */
typedef struct fx_tensor {
  int32_t dtype;
  int rank;
  int64_t dims[WF_MAX_RANK];
  const void *data;
} fx_tensor;

/* An attribute: kind 'i' int, 'f' float, 'b' bool, 's' string, 'd' dtype
 * (in i), 'I' list(int) (ints, n), 'S' shape (ints, n; n = -1 unknown). */
typedef struct fx_attr {
  const char *name;
  char kind;
  int64_t i;
  double f;
  const char *s;
  const int64_t *ints;
  int n;
} fx_attr;

/* One run of an op: its inputs (as Placeholders, or those flagged in
 * value_inputs also as Consts), attributes and reference outputs. With
 * list_input the inputs form the op's one list argument; with
 * unknown_shapes the Placeholders leave their shape unknown, so that only
 * the kernel sees the inputs' shapes. */
typedef struct fx_case {
  const char *name;
  const char *op;
  int num_inputs;
  fx_tensor inputs[FX_MAX_IO];
  int list_input;
  uint32_t value_inputs;
  int num_attrs;
  fx_attr attrs[FX_MAX_ATTRS];
  int num_outputs;
  fx_tensor outputs[FX_MAX_IO];
  int unknown_shapes;
} fx_case;

static size_t fx_dtype_size(int32_t dt) {
  return wf_dtype_size((wf_dtype)dt);
}

static int64_t fx_count(const fx_tensor *t) {
  int64_t n = 1;
  for (int i = 0; i < t->rank; i++)
    n *= t->dims[i];
  return n;
}

/* A new tensor holding a copy of t's data (caller releases). */
static wf_tensor *fx_tensor_new(const fx_tensor *t) {
  wf_status *st = wf_status_new();
  wf_tensor *x = wf_tensor_new((wf_dtype)t->dtype, t->dims, t->rank, st);

  if (!x)
    fail_msg("making a fixture tensor: %s", wf_status_message(st));
  if (t->data && wf_tensor_nbytes(x) > 0)
    memcpy(wf_tensor_data(x), t->data, wf_tensor_nbytes(x));
  wf_status_free(st);
  return x;
}

/* A runtime that loads only the plugins in the given build directories
 * (relative to the build tree, ':'-free), strictly. */
static wf_runtime *fx_runtime(const char *const *dirs, int n) {
  wf_status *st = wf_status_new();
  wf_config *cfg = wf_config_new();
  wf_runtime *rt;
  char paths[2048] = "";

  for (int i = 0; i < n; i++) {
    size_t used = strlen(paths);
    snprintf(paths + used, sizeof paths - used, "%s%s/%s", i ? "," : "",
             TEST_BUILDDIR, dirs[i]);
  }
  assert_non_null(cfg);
  assert_int_equal(wf_config_set(cfg, "plugins", "paths", paths, st), 0);
  assert_int_equal(
      wf_config_set(cfg, "plugins", "use_default_dir", "false", st), 0);
  assert_int_equal(wf_config_set(cfg, "plugins", "use_env_path", "false", st),
                   0);
  assert_int_equal(wf_config_set(cfg, "plugins", "strict", "true", st), 0);
  rt = wf_runtime_new(cfg, st);
  if (!rt)
    fail_msg("loading %s: %s", paths, wf_status_message(st));
  wf_config_free(cfg);
  wf_status_free(st);
  return rt;
}

static void fx_set_attr(wf_node_desc *d, const fx_attr *a) {
  switch (a->kind) {
  case 'i': wf_node_desc_set_attr_int(d, a->name, a->i); break;
  case 'f': wf_node_desc_set_attr_float(d, a->name, a->f); break;
  case 'b': wf_node_desc_set_attr_bool(d, a->name, (int)a->i); break;
  case 's': wf_node_desc_set_attr_string(d, a->name, a->s); break;
  case 'd': wf_node_desc_set_attr_dtype(d, a->name, (wf_dtype)a->i); break;
  case 'I': wf_node_desc_set_attr_int_list(d, a->name, a->ints, a->n); break;
  case 'S': wf_node_desc_set_attr_shape(d, a->name, a->ints, a->n); break;
  default: fail_msg("fixture attribute '%s' has kind '%c'", a->name, a->kind);
  }
}

/* A source node for input t: a Const holding it (as_const) or a
 * Placeholder of its dtype and shape (of unknown shape with
 * unknown_shape). */
static wf_node *fx_source(wf_graph *g, const fx_tensor *t, int as_const,
                          int unknown_shape, int i) {
  wf_status *st = wf_status_new();
  char name[32];
  wf_node_desc *d;
  wf_node *n;

  snprintf(name, sizeof name, "in%d", i);
  d = wf_node_desc_new(g, as_const ? "Const" : "Placeholder", name);
  wf_node_desc_set_attr_dtype(d, "dtype", (wf_dtype)t->dtype);
  if (as_const) {
    wf_tensor *x = fx_tensor_new(t);
    wf_node_desc_set_attr_tensor(d, "value", x);
    wf_tensor_release(x);
  } else if (!unknown_shape) {
    wf_node_desc_set_attr_shape(d, "shape", t->dims, t->rank);
  }
  n = wf_node_desc_finish(d, st);
  if (!n)
    fail_msg("making input %d: %s", i, wf_status_message(st));
  wf_status_free(st);
  return n;
}

/* Adds c's op node to g (inputs flagged in value_inputs as Consts when
 * as_const). Returns the node, or NULL with st set. */
static wf_node *fx_build(wf_graph *g, const fx_case *c, int as_const,
                         wf_status *st) {
  wf_output in[FX_MAX_IO];
  wf_node_desc *d;

  for (int i = 0; i < c->num_inputs; i++) {
    int k = as_const && (c->value_inputs >> i & 1);
    in[i].node = fx_source(g, &c->inputs[i], k, c->unknown_shapes, i);
    in[i].index = 0;
  }
  d = wf_node_desc_new(g, c->op, "op");
  if (c->list_input)
    wf_node_desc_add_input_list(d, in, c->num_inputs);
  else
    for (int i = 0; i < c->num_inputs; i++)
      wf_node_desc_add_input(d, in[i]);
  for (int i = 0; i < c->num_attrs; i++)
    fx_set_attr(d, &c->attrs[i]);
  return wf_node_desc_finish(d, st);
}

/* Runs node n's CPU kernel on c's inputs; outs gets n's outputs (caller
 * releases). Returns the code, st says why. */
static int fx_run_node(wf_runtime *rt, const wf_node *n, const fx_case *c,
                       wf_tensor **outs, wf_status *st) {
  wf_tensor *ins[FX_MAX_IO];
  const wf__kernel *k;
  int rc;

  for (int i = 0; i < FX_MAX_IO; i++)
    outs[i] = NULL;
  k = wf__kernel_select(rt, n, "cpu", st);
  if (!k)
    return wf_status_code(st);
  for (int i = 0; i < c->num_inputs; i++)
    ins[i] = fx_tensor_new(&c->inputs[i]);
  rc = wf__kernel_run(k, n, (const wf_tensor *const *)ins, outs, st);
  for (int i = 0; i < c->num_inputs; i++)
    wf_tensor_release(ins[i]);
  return rc;
}

static double fx_load(const void *data, int32_t dt, int64_t i) {
  switch (dt) {
  case WF_FLOAT32: return ((const float *)data)[i];
  default: return ((const double *)data)[i];
  }
}

/* Compares got with want under the file's tolerances; fails naming the
 * case, the output and the first bad element. */
static void fx_expect(const char *cname, int out, const fx_tensor *want,
                      const wf_tensor *got) {
  wf_shape gs;
  char a[128], b[128];
  wf_shape ws;
  int64_t n = fx_count(want);

  wf_tensor_shape(got, &gs);
  wf_shape_init(&ws, want->dims, want->rank);
  if ((int32_t)wf_tensor_dtype(got) != want->dtype ||
      !wf_shape_equal(&gs, &ws))
    fail_msg("%s: output %d is %s %s, want %s %s", cname, out,
             wf_dtype_name(wf_tensor_dtype(got)),
             wf_shape_str(&gs, a, sizeof a),
             wf_dtype_name((wf_dtype)want->dtype),
             wf_shape_str(&ws, b, sizeof b));
  if (n == 0)
    return;
  if (want->dtype == WF_FLOAT32 || want->dtype == WF_FLOAT64) {
    double tol = want->dtype == WF_FLOAT32 ? FX_TOL_FLOAT32 : FX_TOL_FLOAT64;
    for (int64_t i = 0; i < n; i++) {
      double w = fx_load(want->data, want->dtype, i);
      double g = fx_load(wf_tensor_data(got), want->dtype, i);
      int ok;
      if (isnan(w) || isnan(g))
        ok = isnan(w) && isnan(g);
      else if (isinf(w) || isinf(g))
        ok = w == g;
      else
        ok = fabs(g - w) <= tol * fmax(fabs(w), FX_TOL_FLOOR);
      if (!ok)
        fail_msg("%s: output %d element %lld is %.17g, want %.17g (tol %g)",
                 cname, out, (long long)i, g, w, tol);
    }
    return;
  }
  if (memcmp(wf_tensor_data(got), want->data,
             (size_t)n * fx_dtype_size(want->dtype)) != 0) {
    size_t es = fx_dtype_size(want->dtype);
    for (int64_t i = 0; i < n; i++)
      if (memcmp((const char *)wf_tensor_data(got) + i * es,
                 (const char *)want->data + i * es, es) != 0)
        fail_msg("%s: output %d differs at element %lld", cname, out,
                 (long long)i);
  }
}

/* Runs c once in the given mode and checks shape inference and outputs.
 * Without Const inputs (or with every value input a Const) every input
 * shape is known, so inference must give exactly the reference shapes;
 * otherwise it must at least be compatible with them. */
static void fx_check_mode(wf_runtime *rt, const fx_case *c, int as_const) {
  wf_status *st = wf_status_new();
  wf_graph *g = wf_graph_new(rt);
  wf_tensor *outs[FX_MAX_IO];
  wf_node *n;
  int exact = as_const || c->value_inputs == 0;

  assert_non_null(g);
  n = fx_build(g, c, as_const, st);
  if (!n)
    fail_msg("%s (%s inputs): building: %s", c->name,
             as_const ? "Const" : "fed", wf_status_message(st));
  assert_int_equal(wf_node_num_outputs(n), c->num_outputs);
  for (int i = 0; i < c->num_outputs; i++) {
    wf_shape inferred, ref;
    char a[128], b[128];
    wf_node_output_shape(n, i, &inferred);
    wf_shape_init(&ref, c->outputs[i].dims, c->outputs[i].rank);
    if (exact ? !wf_shape_equal(&inferred, &ref)
              : !wf_shape_compatible(&inferred, &ref))
      fail_msg("%s (%s inputs): output %d inferred as %s, the kernel makes %s",
               c->name, as_const ? "Const" : "fed", i,
               wf_shape_str(&inferred, a, sizeof a),
               wf_shape_str(&ref, b, sizeof b));
  }
  if (fx_run_node(rt, n, c, outs, st))
    fail_msg("%s: running: %s", c->name, wf_status_message(st));
  for (int i = 0; i < c->num_outputs; i++) {
    fx_expect(c->name, i, &c->outputs[i], outs[i]);
    wf_tensor_release(outs[i]);
  }
  wf_graph_free(g);
  wf_status_free(st);
}

/* Checks every case of op in cases[0..n-1]; fails if there is none. */
static void fx_check_op(wf_runtime *rt, const fx_case *cases, size_t n,
                        const char *op) {
  int found = 0;

  for (size_t i = 0; i < n; i++) {
    if (strcmp(cases[i].op, op) != 0)
      continue;
    fx_check_mode(rt, &cases[i], 0);
    if (cases[i].value_inputs)
      fx_check_mode(rt, &cases[i], 1);
    found++;
  }
  if (!found)
    fail_msg("no fixture case for op %s", op);
}

/* Expects c to fail with code, at build time (at_build; inputs flagged in
 * value_inputs as Consts) or when run (inputs fed), with a message that
 * contains each of the NULL-terminated strings in parts. */
static void fx_expect_error(wf_runtime *rt, const fx_case *c, int at_build,
                            int code, const char *const *parts) {
  wf_status *st = wf_status_new();
  wf_graph *g = wf_graph_new(rt);
  wf_tensor *outs[FX_MAX_IO];
  wf_node *n = fx_build(g, c, at_build, st);

  if (at_build) {
    if (n)
      fail_msg("%s: building should fail", c->name);
  } else {
    if (!n)
      fail_msg("%s: building: %s", c->name, wf_status_message(st));
    if (fx_run_node(rt, n, c, outs, st) == 0)
      fail_msg("%s: running should fail", c->name);
    for (int i = 0; i < FX_MAX_IO; i++)
      assert_null(outs[i]);
  }
  if ((int)wf_status_code(st) != code)
    fail_msg("%s: code %s, want %s: %s", c->name,
             wf_code_name(wf_status_code(st)), wf_code_name((wf_code)code),
             wf_status_message(st));
  for (int i = 0; parts[i]; i++)
    if (!strstr(wf_status_message(st), parts[i]))
      fail_msg("%s: message \"%s\" lacks \"%s\"", c->name,
               wf_status_message(st), parts[i]);
  wf_graph_free(g);
  wf_status_free(st);
}

#endif /* TESTS_OPS_ARRAY_NN_HARNESS_H */
