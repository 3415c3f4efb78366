/* tests/ops/array_nn_grad.h — what test_array_grad.c and test_nn_grad.c
 * share around the finite-difference checker of gradcheck.h: a builder
 * (ag_build, a gc_build_fn) for one op node whose inputs mix the checker's
 * float64 placeholders with Consts, and whose several outputs, when more
 * than one is differentiated, are flattened and joined into the one y the
 * checker takes; and a runtime loader. Static functions: each program
 * includes it once. */
#ifndef TESTS_OPS_ARRAY_NN_GRAD_H
#define TESTS_OPS_ARRAY_NN_GRAD_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
/* cmocka.h needs the four above first. */
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include <weft/weft.h>

#include "gradcheck.h"

#define AG_MAX_INPUTS 8
#define AG_MAX_CONSTS 6
#define AG_MAX_ATTRS 8

/* A Const input of the node. */
typedef struct ag_const {
  wf_dtype dtype;
  int rank;
  int64_t dims[WF_MAX_RANK];
  const void *data;
} ag_const;

/* One node of op. order says where each of its inputs comes from, one
 * character per input: 'x' the next placeholder of the checker, 'c' the
 * next of consts[]. With list_input they form the op's one list argument.
 * outputs: a bit mask of the outputs differentiated (0: output 0 alone);
 * with more than one, y = Concat of each flattened. */
typedef struct ag_case {
  const char *op;
  const char *order;
  ag_const consts[AG_MAX_CONSTS];
  gc_attr attrs[AG_MAX_ATTRS]; /* ends at the first entry without a name */
  int list_input;
  uint32_t outputs;
} ag_case;

/* Int64 data for ag_const: AG_I64(1, 2, 3). */
#define AG_I64(...) ((const int64_t[]){__VA_ARGS__})
#define AG_VEC(...)                                                            \
  {                                                                            \
    WF_INT64, 1, {sizeof AG_I64(__VA_ARGS__) / sizeof(int64_t)},               \
        AG_I64(__VA_ARGS__)                                                    \
  }
#define AG_STRING(v)                                                           \
  { .type = WF_ATTR_STRING, .count = 1, .u.s = (v) }

/* y = Reshape(t, [-1]). */
static inline int ag_flatten(wf_graph *g, wf_output t, wf_output *y,
                             wf_status *st) {
  static const int64_t minus_one = -1;
  wf_output in[2] = {t, {NULL, 0}};

  if (gc_const(g, WF_INT64, AG_I64(1), 1, &minus_one, &in[1], st))
    return wf_status_code(st);
  return gc_op(g, "Reshape", in, 2, NULL, y, st);
}

/* The gc_build_fn of an ag_case (its build_arg). */
static inline int ag_build(wf_graph *g, const wf_output *x, wf_output *y,
                           const void *arg, wf_status *st) {
  const ag_case *c = arg;
  wf_output in[AG_MAX_INPUTS], outs[4];
  wf_node_desc *d;
  wf_node *n;
  int nin = (int)strlen(c->order), xi = 0, ci = 0, nout = 0;

  assert_true(nin <= AG_MAX_INPUTS);
  for (int i = 0; i < nin; i++) {
    if (c->order[i] == 'x') {
      in[i] = x[xi++];
    } else {
      const ag_const *k = &c->consts[ci++];
      if (gc_const(g, k->dtype, k->dims, k->rank, k->data, &in[i], st))
        return wf_status_code(st);
    }
  }
  d = wf_node_desc_new(g, c->op, "op");
  if (c->list_input)
    wf_node_desc_add_input_list(d, in, nin);
  else
    for (int i = 0; i < nin; i++)
      wf_node_desc_add_input(d, in[i]);
  for (int i = 0; i < AG_MAX_ATTRS && c->attrs[i].name; i++)
    wf_node_desc_set_attr(d, c->attrs[i].name, &c->attrs[i].value);
  if (!(n = wf_node_desc_finish(d, st)))
    return wf_status_code(st);
  if (!c->outputs) {
    *y = (wf_output){n, 0};
    return 0;
  }
  for (int i = 0; i < wf_node_num_outputs(n) && nout < 4; i++)
    if (c->outputs >> i & 1)
      if (ag_flatten(g, (wf_output){n, i}, &outs[nout++], st))
        return wf_status_code(st);
  if (nout == 1) {
    *y = outs[0];
    return 0;
  }
  d = wf_node_desc_new(g, "Concat", NULL);
  wf_node_desc_add_input_list(d, outs, nout);
  wf_node_desc_set_attr_int(d, "axis", 0);
  if (!(n = wf_node_desc_finish(d, st)))
    return wf_status_code(st);
  *y = (wf_output){n, 0};
  return 0;
}

/* Checks an ag_case through gc_check: every float64 input against finite
 * differences (the spec's inputs, tolerances and options as given). */
static inline void ag_check(wf_runtime *rt, gc_spec spec, const ag_case *c) {
  spec.build = ag_build;
  spec.build_arg = c;
  if (gc_check(rt, &spec) != 0)
    fail_msg("%s: the gradient does not match finite differences (see "
             "above)",
             spec.name);
}

/* A runtime with the plugins of the given build directories (relative to
 * the build tree), strictly. */
static inline wf_runtime *ag_runtime(const char *const *dirs, int n) {
  wf_status *st = wf_status_new();
  wf_config *cfg = wf_config_new();
  wf_runtime *r;
  char paths[2048] = "";

  for (int i = 0; i < n; i++) {
    size_t used = strlen(paths);
    snprintf(paths + used, sizeof paths - used, "%s%s/%s", i ? "," : "",
             TEST_BUILDDIR, dirs[i]);
  }
  assert_int_equal(wf_config_set(cfg, "plugins", "paths", paths, st), 0);
  assert_int_equal(
      wf_config_set(cfg, "plugins", "use_default_dir", "false", st), 0);
  assert_int_equal(wf_config_set(cfg, "plugins", "use_env_path", "false", st),
                   0);
  assert_int_equal(wf_config_set(cfg, "plugins", "strict", "true", st), 0);
  r = wf_runtime_new(cfg, st);
  if (!r)
    fail_msg("loading %s: %s", paths, wf_status_message(st));
  wf_config_free(cfg);
  wf_status_free(st);
  return r;
}

/* Adds a node or fails the test with the status. */
static inline wf_node *ag_node(wf_node_desc *d, const char *what) {
  wf_status *st = wf_status_new();
  wf_node *n = wf_node_desc_finish(d, st);

  if (!n)
    fail_msg("adding %s: %s", what, wf_status_message(st));
  wf_status_free(st);
  return n;
}

/* A float64 tensor of the given dims holding vals (or zeros). */
static inline wf_tensor *ag_tensor(int rank, const int64_t *dims,
                                   const double *vals) {
  wf_status *st = wf_status_new();
  wf_tensor *t = wf_tensor_new(WF_FLOAT64, dims, rank, st);

  if (!t)
    fail_msg("making a tensor: %s", wf_status_message(st));
  if (wf_tensor_nbytes(t) > 0) {
    if (vals)
      memcpy(wf_tensor_data(t), vals, wf_tensor_nbytes(t));
    else
      memset(wf_tensor_data(t), 0, wf_tensor_nbytes(t));
  }
  wf_status_free(st);
  return t;
}

#endif /* TESTS_OPS_ARRAY_NN_GRAD_H */
