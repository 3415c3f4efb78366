/* tests/core/test_graph.c — building graphs: every reason a node is refused
 * (and that the graph is then unchanged), type and number inference, list
 * inputs and outputs, defaults, scopes and unique names, control edges and
 * shape inference (core/graph/graph.c). */
#include <config.h>

/* cmocka needs these first. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "base/alloc.h"
#include "graph/graph_internal.h"
#include "host/host.h"
#include "plugin/runtime_internal.h"
#include "base/status_internal.h"
#include "graph/tensor_internal.h"

/* ---- the test ops -------------------------------------------------------- */

/* Output 0 gets the shape of the "shape" attribute. */
static int shape_from_attr(wf_shape_ctx *ctx, wf_status *st) {
  wf_attr_value v;
  (void)st;
  if (wf__shape_attr(ctx, "shape", &v) == 0)
    wf__shape_set_output(ctx, 0, &v.u.shape);
  return 0;
}

/* Const: the value's shape. */
static int const_shape(wf_shape_ctx *ctx, wf_status *st) {
  wf_attr_value v;
  wf_shape s;
  (void)st;
  if (wf__shape_attr(ctx, "value", &v) == 0) {
    wf_tensor_shape(v.u.tensor, &s);
    wf__shape_set_output(ctx, 0, &s);
  }
  return 0;
}

/* Elementwise: both shapes must be compatible; the known one wins. */
static int binary_shape(wf_shape_ctx *ctx, wf_status *st) {
  wf_shape a, b;
  char sa[64], sb[64];
  wf__shape_input(ctx, 0, NULL, &a);
  wf__shape_input(ctx, 1, NULL, &b);
  if (!wf_shape_compatible(&a, &b))
    return wf_status_set(
        st, WF_INVALID_ARGUMENT, "incompatible shapes %s and %s",
        wf_shape_str(&a, sa, sizeof sa), wf_shape_str(&b, sb, sizeof sb));
  wf__shape_set_output(ctx, 0, a.rank >= 0 ? &a : &b);
  return 0;
}

/* First input's shape to every output. */
static int first_input_shape(wf_shape_ctx *ctx, wf_status *st) {
  wf_shape s;
  (void)st;
  if (wf__shape_input(ctx, 0, NULL, &s) == 0)
    for (int32_t i = 0; i < wf__shape_num_outputs(ctx); i++)
      wf__shape_set_output(ctx, i, &s);
  return 0;
}

/* Reshape: the new shape when the "shape" input is a Const. */
static int reshape_shape(wf_shape_ctx *ctx, wf_status *st) {
  const wf_tensor *v = wf__shape_input_value(ctx, 1);
  wf_shape s;
  (void)st;
  if (!v)
    return 0;
  wf_shape_init(&s, wf_tensor_data(v), (int)wf_tensor_count(v));
  wf__shape_set_output(ctx, 0, &s);
  return 0;
}

static int bad_index_shape(wf_shape_ctx *ctx, wf_status *st) {
  wf_shape s;
  (void)st;
  wf_shape_unknown(&s);
  wf__shape_set_output(ctx, 5, &s);
  return 0;
}

/* Probe: records what its shape context says. */
static struct probe_seen {
  int32_t num_inputs, num_outputs, dtype0;
  char name[64];
  int64_t k;
  int missing_attr, bad_input;
  const wf_tensor *value0;
} probe_seen;

static int probe_shape(wf_shape_ctx *ctx, wf_status *st) {
  wf_attr_value v;
  wf_shape s;
  (void)st;
  memset(&probe_seen, 0, sizeof probe_seen);
  probe_seen.num_inputs = wf__shape_num_inputs(ctx);
  probe_seen.num_outputs = wf__shape_num_outputs(ctx);
  wf__shape_input(ctx, 0, &probe_seen.dtype0, &s);
  probe_seen.bad_input = wf__shape_input(ctx, 7, NULL, &s);
  snprintf(probe_seen.name, sizeof probe_seen.name, "%s",
           wf__shape_node_name(ctx));
  if (wf__shape_attr(ctx, "k", &v) == 0)
    probe_seen.k = v.u.i;
  probe_seen.missing_attr = wf__shape_attr(ctx, "nope", &v);
  probe_seen.value0 = wf__shape_input_value(ctx, 0);
  return 0;
}

static const wf_attr_def placeholder_attrs[] = {
    {WF_STRUCT_INIT(wf_attr_def), .name = "dtype", .type = WF_ATTR_DTYPE},
    {WF_STRUCT_INIT(wf_attr_def), .name = "shape", .type = WF_ATTR_SHAPE,
     .has_default = 1,
     .default_value = {.type = WF_ATTR_SHAPE,
                       .count = 1,
                       .u.shape = {.rank = WF_UNKNOWN_RANK}}},
    WF_ATTR_END};
static const wf_arg_def out_dtype[] = {WF_ARG_T("output", "dtype", ""),
                                       WF_ARG_END};
static const wf_op_def placeholder_op = {
    WF_STRUCT_INIT(wf_op_def), .name = "Placeholder",
    .outputs = out_dtype,      .attrs = placeholder_attrs,
    .flags = WF_OP_SOURCE_FED, .shape_fn = shape_from_attr};

static const wf_attr_def const_attrs[] = {
    {WF_STRUCT_INIT(wf_attr_def), .name = "value", .type = WF_ATTR_TENSOR},
    {WF_STRUCT_INIT(wf_attr_def), .name = "dtype", .type = WF_ATTR_DTYPE},
    WF_ATTR_END};
static const wf_op_def const_op = {WF_STRUCT_INIT(wf_op_def), .name = "Const",
                                   .outputs = out_dtype, .attrs = const_attrs,
                                   .flags = WF_OP_CONSTANT,
                                   .shape_fn = const_shape};

static const wf_arg_def xy_t[] = {WF_ARG_T("x", "T", ""),
                                  WF_ARG_T("y", "T", ""), WF_ARG_END};
static const wf_arg_def x_t[] = {WF_ARG_T("x", "T", ""), WF_ARG_END};
static const wf_arg_def z_t[] = {WF_ARG_T("z", "T", ""), WF_ARG_END};
static const wf_attr_def t_number[] = {{WF_STRUCT_INIT(wf_attr_def),
                                        .name = "T", .type = WF_ATTR_DTYPE,
                                        .allowed_dtypes = WF_DTYPES_NUMBER},
                                       WF_ATTR_END};
static const wf_op_def add_op = {WF_STRUCT_INIT(wf_op_def),
                                 .name = "Add",
                                 .inputs = xy_t,
                                 .outputs = z_t,
                                 .attrs = t_number,
                                 .flags = WF_OP_COMMUTATIVE,
                                 .shape_fn = binary_shape};
static const wf_op_def identity_op = {WF_STRUCT_INIT(wf_op_def),
                                      .name = "Identity",
                                      .inputs = x_t,
                                      .outputs = z_t,
                                      .attrs = t_number,
                                      .shape_fn = first_input_shape};

static const wf_arg_def values_list[] = {WF_ARG_LIST("values", "T", "N", ""),
                                         WF_ARG_END};
static const wf_attr_def n_min1_t[] = {
    {WF_STRUCT_INIT(wf_attr_def), .name = "N", .type = WF_ATTR_INT,
     .has_minimum = 1, .minimum = 1},
    {WF_STRUCT_INIT(wf_attr_def), .name = "T", .type = WF_ATTR_DTYPE},
    WF_ATTR_END};
static const wf_op_def addn_op = {
    WF_STRUCT_INIT(wf_op_def), .name = "AddN",
    .inputs = values_list,     .outputs = z_t,
    .attrs = n_min1_t,         .shape_fn = first_input_shape};

static const wf_arg_def outs_list[] = {
    WF_ARG_LIST("outputs", "T", "num_split", ""), WF_ARG_END};
static const wf_attr_def split_attrs[] = {
    {WF_STRUCT_INIT(wf_attr_def), .name = "T", .type = WF_ATTR_DTYPE},
    {WF_STRUCT_INIT(wf_attr_def), .name = "num_split", .type = WF_ATTR_INT,
     .has_minimum = 1, .minimum = 1},
    WF_ATTR_END};
static const wf_op_def split_op = {WF_STRUCT_INIT(wf_op_def),
                                   .name = "Split",
                                   .inputs = x_t,
                                   .outputs = outs_list,
                                   .attrs = split_attrs,
                                   .shape_fn = first_input_shape};

static const wf_arg_def cast_in[] = {WF_ARG_T("x", "SrcT", ""), WF_ARG_END};
static const wf_arg_def cast_out[] = {WF_ARG_T("y", "DstT", ""), WF_ARG_END};
static const wf_attr_def cast_attrs[] = {
    {WF_STRUCT_INIT(wf_attr_def), .name = "SrcT", .type = WF_ATTR_DTYPE},
    {WF_STRUCT_INIT(wf_attr_def), .name = "DstT", .type = WF_ATTR_DTYPE},
    WF_ATTR_END};
static const wf_op_def cast_op = {
    WF_STRUCT_INIT(wf_op_def), .name = "Cast",
    .inputs = cast_in,         .outputs = cast_out,
    .attrs = cast_attrs,       .shape_fn = first_input_shape};

static const wf_arg_def reshape_in[] = {WF_ARG_T("tensor", "T", ""),
                                        WF_ARG_FIXED("shape", WF_INT64, "(R)"),
                                        WF_ARG_END};
static const wf_attr_def t_any[] = {
    {WF_STRUCT_INIT(wf_attr_def), .name = "T", .type = WF_ATTR_DTYPE},
    WF_ATTR_END};
static const wf_op_def reshape_op = {WF_STRUCT_INIT(wf_op_def),
                                     .name = "Reshape",
                                     .inputs = reshape_in,
                                     .outputs = z_t,
                                     .attrs = t_any,
                                     .shape_fn = reshape_shape};

static const wf_arg_def f32_in[] = {WF_ARG_FIXED("x", WF_FLOAT32, ""),
                                    WF_ARG_END};
static const wf_arg_def f32_out[] = {WF_ARG_FIXED("y", WF_FLOAT32, ""),
                                     WF_ARG_END};
static const double no_weights[1] = {0};
static const wf_attr_def scale_attrs[] = {
    {WF_STRUCT_INIT(wf_attr_def), .name = "factor", .type = WF_ATTR_FLOAT,
     .has_default = 1,
     .default_value = {.type = WF_ATTR_FLOAT, .count = 1, .u.f = 1.0}},
    {WF_STRUCT_INIT(wf_attr_def), .name = "mode", .type = WF_ATTR_STRING,
     .has_default = 1,
     .default_value = {.type = WF_ATTR_STRING, .count = 1, .u.s = "linear"}},
    {WF_STRUCT_INIT(wf_attr_def), .name = "weights",
     .type = WF_ATTR_LIST | WF_ATTR_FLOAT, .has_default = 1,
     .default_value = {.type = WF_ATTR_LIST | WF_ATTR_FLOAT,
                       .count = 0,
                       .u.floats = no_weights}},
    {WF_STRUCT_INIT(wf_attr_def), .name = "steps", .type = WF_ATTR_INT,
     .has_default = 1,
     .default_value = {.type = WF_ATTR_INT, .count = 1, .u.i = 1},
     .has_minimum = 1, .minimum = 1},
    WF_ATTR_END};
static const wf_op_def scale_op = {WF_STRUCT_INIT(wf_op_def), .name = "Scale",
                                   .inputs = f32_in, .outputs = f32_out,
                                   .attrs = scale_attrs};

static const wf_op_def noop_op = {WF_STRUCT_INIT(wf_op_def), .name = "NoOp",
                                  .flags = WF_OP_STATEFUL};

static const wf_op_def bad_shape_op = {WF_STRUCT_INIT(wf_op_def),
                                       .name = "BadShape",
                                       .inputs = x_t,
                                       .outputs = z_t,
                                       .attrs = t_any,
                                       .shape_fn = bad_index_shape};

static const wf_attr_def probe_attrs[] = {
    {WF_STRUCT_INIT(wf_attr_def), .name = "T", .type = WF_ATTR_DTYPE},
    {WF_STRUCT_INIT(wf_attr_def), .name = "k", .type = WF_ATTR_INT,
     .has_default = 1, .default_value = {.type = WF_ATTR_INT, .u.i = 42}},
    WF_ATTR_END};
static const wf_arg_def probe_out[] = {
    WF_ARG_T("a", "T", ""), WF_ARG_FIXED("b", WF_BOOL, ""), WF_ARG_END};
static const wf_op_def probe_op = {
    WF_STRUCT_INIT(wf_op_def), .name = "Probe",      .inputs = x_t,
    .outputs = probe_out,      .attrs = probe_attrs, .shape_fn = probe_shape};

static const wf_op_def *const test_ops[] = {
    &placeholder_op, &const_op, &add_op,     &identity_op, &addn_op,
    &split_op,       &cast_op,  &reshape_op, &scale_op,    &noop_op,
    &bad_shape_op,   &probe_op, NULL};
static const wf_plugin_desc test_plugin = {WF_STRUCT_INIT(wf_plugin_desc),
                                           .name = "graph-test-ops",
                                           .version = "1", .ops = test_ops};

/* ---- fixture and helpers ------------------------------------------------- */

static wf_runtime *rt;

static int group_setup(void **state) {
  wf_status *st = wf_status_new();
  (void)state;
  rt = wf__runtime_new_empty(NULL, st);
  if (!rt || wf__runtime_add_plugin(rt, &test_plugin, "(test)", NULL, st)) {
    fprintf(stderr, "setup: %s\n", wf_status_message(st));
    wf_status_free(st);
    return -1;
  }
  wf_status_free(st);
  return 0;
}

static int group_teardown(void **state) {
  (void)state;
  wf_runtime_free(rt);
  return 0;
}

typedef struct fixture {
  wf_graph *g;
  wf_status *st;
} fixture;

static int setup(void **state) {
  static fixture f;
  f.g = wf_graph_new(rt);
  f.st = wf_status_new();
  *state = &f;
  return f.g && f.st ? 0 : -1;
}

static int teardown(void **state) {
  fixture *f = *state;
  wf_graph_free(f->g);
  wf_status_free(f->st);
  return 0;
}

static wf_node *placeholder(wf_graph *g, const char *name, wf_dtype dt,
                            const int64_t *dims, int rank) {
  wf_status *st = wf_status_new();
  wf_node_desc *d = wf_node_desc_new(g, "Placeholder", name);
  wf_node *n;
  wf_node_desc_set_attr_dtype(d, "dtype", dt);
  if (rank >= 0)
    wf_node_desc_set_attr_shape(d, "shape", dims, rank);
  n = wf_node_desc_finish(d, st);
  if (!n)
    fail_msg("placeholder %s: %s", name, wf_status_message(st));
  wf_status_free(st);
  return n;
}

static wf_output out0(wf_node *n) { return (wf_output){n, 0}; }

static wf_node *binary(wf_graph *g, const char *op, const char *name,
                       wf_node *a, wf_node *b, wf_status *st) {
  wf_node_desc *d = wf_node_desc_new(g, op, name);
  wf_node_desc_add_input(d, out0(a));
  wf_node_desc_add_input(d, out0(b));
  return wf_node_desc_finish(d, st);
}

static void assert_message_has(const wf_status *st, const char *want) {
  if (!strstr(wf_status_message(st), want))
    fail_msg("message \"%s\" lacks \"%s\"", wf_status_message(st), want);
}

/* What a refusal must leave alone: nodes, names and consumer lists. */
typedef struct snapshot {
  int n;
  char names[32][64];
  int data_consumers[32], control_consumers[32], control_inputs[32];
} snapshot;

static void take_snapshot(const wf_graph *g, snapshot *s) {
  memset(s, 0, sizeof *s);
  s->n = wf_graph_num_nodes(g);
  assert_true(s->n <= 32);
  for (int i = 0; i < s->n; i++) {
    wf_node *n = wf_graph_node(g, i);
    snprintf(s->names[i], sizeof s->names[i], "%s", wf_node_name(n));
    s->data_consumers[i] = n->num_data_consumers;
    s->control_consumers[i] = n->num_control_consumers;
    s->control_inputs[i] = n->num_control_inputs;
  }
}

static void assert_unchanged(const wf_graph *g, const snapshot *before) {
  snapshot now;
  take_snapshot(g, &now);
  assert_int_equal(now.n, before->n);
  for (int i = 0; i < now.n; i++) {
    assert_string_equal(now.names[i], before->names[i]);
    assert_ptr_equal(wf_graph_find_node(g, now.names[i]), wf_graph_node(g, i));
    assert_int_equal(now.data_consumers[i], before->data_consumers[i]);
    assert_int_equal(now.control_consumers[i], before->control_consumers[i]);
    assert_int_equal(now.control_inputs[i], before->control_inputs[i]);
  }
}

/* Finishes d expecting a refusal with code and a message holding want;
 * checks that the graph did not change. */
static void expect_refusal(fixture *f, wf_node_desc *d, wf_code code,
                           const char *want) {
  snapshot before;
  take_snapshot(f->g, &before);
  assert_null(wf_node_desc_finish(d, f->st));
  if (wf_status_code(f->st) != code)
    fail_msg("code %s (%s), expected %s", wf_code_name(wf_status_code(f->st)),
             wf_status_message(f->st), wf_code_name(code));
  assert_message_has(f->st, want);
  assert_unchanged(f->g, &before);
}

/* ---- refusals ------------------------------------------------------------ */

static void test_graph_refuses_unknown_op(void **state) {
  fixture *f = *state;
  placeholder(f->g, "x", WF_FLOAT32, NULL, -1);
  expect_refusal(f, wf_node_desc_new(f->g, "Foo", "n"), WF_NOT_FOUND,
                 "node 'n': op 'Foo' is not registered by any loaded plugin");
  expect_refusal(f, wf_node_desc_new(f->g, "Foo", NULL), WF_NOT_FOUND,
                 "node 'Foo': op 'Foo'");
}

static void test_graph_refuses_invalid_names(void **state) {
  fixture *f = *state;
  static const char *const bad[] = {"", "a/b", "has space", "x\n", "/"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    wf_node_desc *d = wf_node_desc_new(f->g, "NoOp", bad[i]);
    expect_refusal(f, d, WF_INVALID_ARGUMENT, "invalid name");
  }
  /* Letters, digits, '_', '.', '-' are fine. */
  assert_non_null(
      wf_node_desc_finish(wf_node_desc_new(f->g, "NoOp", "a-b_c.1"), f->st));
}

static void test_graph_refuses_taken_name(void **state) {
  fixture *f = *state;
  placeholder(f->g, "x", WF_FLOAT32, NULL, -1);
  expect_refusal(f, wf_node_desc_new(f->g, "NoOp", "x"), WF_ALREADY_EXISTS,
                 "node 'x' (op 'NoOp'): the name is already used by another "
                 "node");
}

static void test_graph_refuses_wrong_number_of_inputs(void **state) {
  fixture *f = *state;
  wf_node *x = placeholder(f->g, "x", WF_FLOAT32, NULL, -1);
  wf_node_desc *d = wf_node_desc_new(f->g, "Add", "add");
  wf_node_desc_add_input(d, out0(x));
  expect_refusal(f, d, WF_INVALID_ARGUMENT,
                 "node 'add' (op 'Add'): expects 2 inputs (x, y), got 1");
  d = wf_node_desc_new(f->g, "NoOp", "n");
  wf_node_desc_add_input(d, out0(x));
  expect_refusal(f, d, WF_INVALID_ARGUMENT, "expects 0 inputs, got 1");
}

static void test_graph_refuses_list_and_single_mixed_up(void **state) {
  fixture *f = *state;
  wf_node *x = placeholder(f->g, "x", WF_FLOAT32, NULL, -1);
  wf_output two[2] = {out0(x), out0(x)};
  wf_node_desc *d = wf_node_desc_new(f->g, "AddN", "sum");
  wf_node_desc_add_input(d, out0(x));
  expect_refusal(f, d, WF_INVALID_ARGUMENT,
                 "input 'values' is a list of tensors: add it with "
                 "wf_node_desc_add_input_list");
  d = wf_node_desc_new(f->g, "Identity", "id");
  wf_node_desc_add_input_list(d, two, 2);
  expect_refusal(f, d, WF_INVALID_ARGUMENT,
                 "input 'x' is one tensor, got a list of 2");
}

static void test_graph_refuses_bad_output_index(void **state) {
  fixture *f = *state;
  wf_node *x = placeholder(f->g, "x", WF_FLOAT32, NULL, -1);
  wf_node_desc *d = wf_node_desc_new(f->g, "Identity", "id");
  wf_node_desc_add_input(d, (wf_output){x, 1});
  expect_refusal(f, d, WF_INVALID_ARGUMENT,
                 "input 'x' is output 1 of node 'x', which has 1 output");
  d = wf_node_desc_new(f->g, "Identity", "id");
  wf_node_desc_add_input(d, (wf_output){x, -1});
  expect_refusal(f, d, WF_INVALID_ARGUMENT, "output -1 of node 'x'");
  d = wf_node_desc_new(f->g, "Identity", "id");
  wf_node_desc_add_input(d, (wf_output){NULL, 0});
  expect_refusal(f, d, WF_INVALID_ARGUMENT, "input 'x' has no node");
}

static void test_graph_refuses_nodes_of_another_graph(void **state) {
  fixture *f = *state;
  wf_graph *other = wf_graph_new(rt);
  wf_node *y = placeholder(other, "y", WF_FLOAT32, NULL, -1);
  wf_node_desc *d = wf_node_desc_new(f->g, "Identity", "id");
  wf_node_desc_add_input(d, out0(y));
  expect_refusal(f, d, WF_INVALID_ARGUMENT,
                 "input 'x' comes from node 'y' of another graph");
  d = wf_node_desc_new(f->g, "NoOp", "n");
  wf_node_desc_add_control_input(d, y);
  expect_refusal(f, d, WF_INVALID_ARGUMENT,
                 "control input 'y' belongs to another graph");
  assert_int_equal(y->num_data_consumers, 0);
  assert_int_equal(y->num_control_consumers, 0);
  wf_graph_free(other);
}

static void test_graph_refuses_mismatched_input_dtypes(void **state) {
  fixture *f = *state;
  wf_node *x = placeholder(f->g, "x", WF_FLOAT32, NULL, -1);
  wf_node *y = placeholder(f->g, "y", WF_INT32, NULL, -1);
  assert_null(binary(f->g, "Add", "add", x, y, f->st));
  assert_int_equal(wf_status_code(f->st), WF_INVALID_ARGUMENT);
  assert_message_has(f->st, "node 'add' (op 'Add'): input 'y' is int32 but "
                            "'T' is float32 from input 'x'");
  assert_int_equal(wf_graph_num_nodes(f->g), 2);
  assert_int_equal(x->num_data_consumers, 0);
}

static void test_graph_refuses_without_a_status_object(void **state) {
  fixture *f = *state;
  wf_node *x = placeholder(f->g, "x", WF_FLOAT32, NULL, -1);
  wf_node *y = placeholder(f->g, "y", WF_INT32, NULL, -1);
  assert_null(binary(f->g, "Add", "add", x, y, NULL));
  assert_null(binary(f->g, "Foo", "foo", x, y, NULL));
  assert_int_equal(wf_graph_num_nodes(f->g), 2);
  assert_non_null(binary(f->g, "Add", "add", x, x, NULL));
}

static void test_graph_checks_explicit_type_attr_against_inputs(void **state) {
  fixture *f = *state;
  wf_node *x = placeholder(f->g, "x", WF_FLOAT32, NULL, -1);
  wf_node_desc *d = wf_node_desc_new(f->g, "Add", "add");
  wf_node *n;
  wf_node_desc_add_input(d, out0(x));
  wf_node_desc_add_input(d, out0(x));
  wf_node_desc_set_attr_dtype(d, "T", WF_FLOAT64);
  expect_refusal(f, d, WF_INVALID_ARGUMENT,
                 "input 'x' is float32 but 'T' is float64 set on the node");
  d = wf_node_desc_new(f->g, "Add", "add");
  wf_node_desc_add_input(d, out0(x));
  wf_node_desc_add_input(d, out0(x));
  wf_node_desc_set_attr_dtype(d, "T", WF_FLOAT32);
  n = wf_node_desc_finish(d, f->st);
  assert_non_null(n);
}

static void test_graph_refuses_wrong_fixed_dtype(void **state) {
  fixture *f = *state;
  wf_node *x = placeholder(f->g, "x", WF_FLOAT32, NULL, -1);
  wf_node *s = placeholder(f->g, "s", WF_INT32, NULL, -1);
  assert_null(binary(f->g, "Reshape", "r", x, s, f->st));
  assert_message_has(f->st, "node 'r' (op 'Reshape'): input 'shape' is int32 "
                            "but must be int64");
}

static void test_graph_enforces_allowed_dtypes(void **state) {
  fixture *f = *state;
  wf_node *b = placeholder(f->g, "b", WF_BOOL, NULL, -1);
  assert_null(binary(f->g, "Add", "add", b, b, f->st));
  assert_int_equal(wf_status_code(f->st), WF_INVALID_ARGUMENT);
  assert_message_has(f->st, "attribute 'T' is bool (from input 'x'), not one "
                            "of the allowed dtypes (float32, float64, "
                            "float16, bfloat16, int8, uint8, int32, int64)");
}

static void test_graph_refuses_unknown_attribute(void **state) {
  fixture *f = *state;
  wf_node *x = placeholder(f->g, "x", WF_FLOAT32, NULL, -1);
  wf_node_desc *d = wf_node_desc_new(f->g, "Scale", "s");
  wf_node_desc_add_input(d, out0(x));
  wf_node_desc_set_attr_int(d, "colour", 3);
  expect_refusal(f, d, WF_INVALID_ARGUMENT,
                 "unknown attribute 'colour' (the op has factor, mode, "
                 "weights, steps)");
  d = wf_node_desc_new(f->g, "NoOp", NULL);
  wf_node_desc_set_attr_int(d, "k", 1);
  expect_refusal(f, d, WF_INVALID_ARGUMENT,
                 "unknown attribute 'k' (the op has none)");
}

static void test_graph_refuses_attribute_of_wrong_type(void **state) {
  fixture *f = *state;
  wf_node *x = placeholder(f->g, "x", WF_FLOAT32, NULL, -1);
  wf_node_desc *d = wf_node_desc_new(f->g, "Scale", "s");
  wf_node_desc_add_input(d, out0(x));
  wf_node_desc_set_attr_int(d, "mode", 2);
  expect_refusal(f, d, WF_INVALID_ARGUMENT,
                 "attribute 'mode' is int but the op defines it as string");
  /* A float for an int would lose the fraction: refused. */
  d = wf_node_desc_new(f->g, "Scale", "s");
  wf_node_desc_add_input(d, out0(x));
  wf_node_desc_set_attr_float(d, "steps", 2.5);
  expect_refusal(f, d, WF_INVALID_ARGUMENT,
                 "attribute 'steps' is float but the op defines it as int");
}

static void test_graph_refuses_missing_attribute(void **state) {
  fixture *f = *state;
  wf_node *x = placeholder(f->g, "x", WF_FLOAT32, NULL, -1);
  wf_node_desc *d = wf_node_desc_new(f->g, "Placeholder", "p");
  expect_refusal(f, d, WF_INVALID_ARGUMENT,
                 "node 'p' (op 'Placeholder'): attribute 'dtype' (dtype) is "
                 "not set and has no default");
  d = wf_node_desc_new(f->g, "Cast", "c");
  wf_node_desc_add_input(d, out0(x));
  expect_refusal(f, d, WF_INVALID_ARGUMENT, "attribute 'DstT'");
}

static void test_graph_enforces_attribute_minimum(void **state) {
  fixture *f = *state;
  wf_node *x = placeholder(f->g, "x", WF_FLOAT32, NULL, -1);
  wf_node_desc *d = wf_node_desc_new(f->g, "Scale", "s");
  wf_node_desc_add_input(d, out0(x));
  wf_node_desc_set_attr_int(d, "steps", 0);
  expect_refusal(f, d, WF_INVALID_ARGUMENT,
                 "attribute 'steps' is 0, below its minimum 1");
  d = wf_node_desc_new(f->g, "AddN", "sum");
  wf_node_desc_add_input_list(d, NULL, 0);
  wf_node_desc_set_attr_dtype(d, "T", WF_FLOAT32);
  expect_refusal(f, d, WF_INVALID_ARGUMENT,
                 "attribute 'N' is 0, below its minimum 1");
}

static void test_graph_refuses_invalid_dtype_value(void **state) {
  fixture *f = *state;
  wf_node_desc *d = wf_node_desc_new(f->g, "Placeholder", "p");
  wf_node_desc_set_attr_dtype(d, "dtype", (wf_dtype)77);
  expect_refusal(f, d, WF_INVALID_ARGUMENT,
                 "attribute 'dtype' holds 77, which is not a dtype");
}

/* ---- inference, lists, defaults ------------------------------------------ */

static void test_graph_infers_type_attr_from_inputs(void **state) {
  fixture *f = *state;
  wf_node *x = placeholder(f->g, "x", WF_FLOAT64, NULL, -1);
  wf_node *n = binary(f->g, "Add", NULL, x, x, f->st);
  wf_attr_value v;
  assert_non_null(n);
  assert_int_equal(wf_status_code(f->st), WF_OK);
  assert_int_equal(wf_node_num_outputs(n), 1);
  assert_int_equal(wf_node_output_dtype(n, 0), WF_FLOAT64);
  assert_int_equal(wf_node_get_attr(n, "T", &v, f->st), WF_OK);
  assert_int_equal(v.type, WF_ATTR_DTYPE);
  assert_int_equal(v.u.dtype, WF_FLOAT64);
  assert_int_equal(wf_node_op_flags(n), WF_OP_COMMUTATIVE);
  assert_string_equal(wf_node_op(n), "Add");
  assert_int_equal(wf_node_num_inputs(n), 2);
  assert_ptr_equal(wf_node_input(n, 1).node, x);
}

static void
test_graph_cast_infers_source_and_takes_explicit_target(void **state) {
  fixture *f = *state;
  wf_node *x = placeholder(f->g, "x", WF_INT32, NULL, -1);
  wf_node_desc *d = wf_node_desc_new(f->g, "Cast", NULL);
  wf_node *n;
  wf_node_desc_add_input(d, out0(x));
  wf_node_desc_set_attr_dtype(d, "DstT", WF_FLOAT16);
  n = wf_node_desc_finish(d, f->st);
  assert_non_null(n);
  assert_int_equal(wf__node_attr(n, "SrcT")->u.dtype, WF_INT32);
  assert_int_equal(wf_node_output_dtype(n, 0), WF_FLOAT16);
}

static void test_graph_list_inputs_set_number_attr(void **state) {
  fixture *f = *state;
  wf_node *a = placeholder(f->g, "a", WF_INT64, NULL, -1);
  wf_node *b = placeholder(f->g, "b", WF_INT64, NULL, -1);
  wf_output ins[3] = {out0(a), out0(b), out0(a)};
  wf_node_desc *d = wf_node_desc_new(f->g, "AddN", NULL);
  wf_node *n;
  wf_node_desc_add_input_list(d, ins, 3);
  n = wf_node_desc_finish(d, f->st);
  assert_non_null(n);
  assert_int_equal(wf__node_attr(n, "N")->u.i, 3);
  assert_int_equal(wf__node_attr(n, "T")->u.dtype, WF_INT64);
  assert_int_equal(wf_node_num_inputs(n), 3);
  assert_ptr_equal(wf_node_input(n, 1).node, b);
  assert_int_equal(a->num_data_consumers, 2); /* one per input slot */
  assert_int_equal(b->num_data_consumers, 1);
}

static void test_graph_list_inputs_are_checked(void **state) {
  fixture *f = *state;
  wf_node *a = placeholder(f->g, "a", WF_INT64, NULL, -1);
  wf_node *b = placeholder(f->g, "b", WF_INT8, NULL, -1);
  wf_output ins[2] = {out0(a), out0(b)};
  wf_node_desc *d = wf_node_desc_new(f->g, "AddN", "sum");
  wf_node_desc_add_input_list(d, ins, 2);
  expect_refusal(f, d, WF_INVALID_ARGUMENT,
                 "input 'values' item 1 is int8 but 'T' is int64 from input "
                 "'values' item 0");
  d = wf_node_desc_new(f->g, "AddN", "sum");
  wf_node_desc_add_input_list(d, ins, 1);
  wf_node_desc_set_attr_int(d, "N", 2);
  expect_refusal(f, d, WF_INVALID_ARGUMENT,
                 "input 'values' has 1 tensor but 'N' is 2 set on the node");
}

static void test_graph_number_attr_expands_outputs(void **state) {
  fixture *f = *state;
  int64_t dims[] = {6, 2};
  wf_node *x = placeholder(f->g, "x", WF_UINT8, dims, 2);
  wf_node_desc *d = wf_node_desc_new(f->g, "Split", NULL);
  wf_node *n;
  wf_shape s;
  wf_node_desc_add_input(d, out0(x));
  wf_node_desc_set_attr_int(d, "num_split", 3);
  n = wf_node_desc_finish(d, f->st);
  assert_non_null(n);
  assert_int_equal(wf_node_num_outputs(n), 3);
  for (int i = 0; i < 3; i++) {
    assert_int_equal(wf_node_output_dtype(n, i), WF_UINT8);
    wf_node_output_shape(n, i, &s);
    assert_int_equal(s.rank, 2);
  }
  /* Output 2 exists and can be consumed. */
  d = wf_node_desc_new(f->g, "Identity", NULL);
  wf_node_desc_add_input(d, (wf_output){n, 2});
  assert_non_null(wf_node_desc_finish(d, f->st));
}

static void test_graph_fills_in_defaults(void **state) {
  fixture *f = *state;
  wf_node *x = placeholder(f->g, "x", WF_FLOAT32, NULL, -1);
  wf_node_desc *d = wf_node_desc_new(f->g, "Scale", NULL);
  wf_node *n;
  wf_attr_value v;
  wf_node_desc_add_input(d, out0(x));
  n = wf_node_desc_finish(d, f->st);
  assert_non_null(n);
  assert_int_equal(wf_node_num_attrs(n), 4);
  assert_string_equal(wf_node_attr_name(n, 0, &v), "factor");
  assert_true(v.u.f == 1.0);
  assert_string_equal(wf__node_attr(n, "mode")->u.s, "linear");
  assert_int_equal(wf__node_attr(n, "weights")->count, 0);
  assert_int_equal(wf__node_attr(n, "steps")->u.i, 1);
  assert_int_equal(wf_node_get_attr(n, "missing", &v, f->st), WF_NOT_FOUND);
  assert_message_has(f->st, "node 'Scale' (op 'Scale') has no attribute "
                            "'missing'");
}

static void test_graph_converts_int_to_float_attributes(void **state) {
  fixture *f = *state;
  wf_node *x = placeholder(f->g, "x", WF_FLOAT32, NULL, -1);
  wf_node_desc *d = wf_node_desc_new(f->g, "Scale", NULL);
  const int64_t w[] = {1, -2, 3};
  const wf_attr_value *v;
  wf_node *n;
  wf_node_desc_add_input(d, out0(x));
  wf_node_desc_set_attr_int(d, "factor", 2);
  wf_node_desc_set_attr_int_list(d, "weights", w, 3);
  wf_node_desc_set_attr_string(d, "mode", "log");
  n = wf_node_desc_finish(d, f->st);
  assert_non_null(n);
  v = wf__node_attr(n, "factor");
  assert_int_equal(v->type, WF_ATTR_FLOAT);
  assert_true(v->u.f == 2.0);
  v = wf__node_attr(n, "weights");
  assert_int_equal(v->type, WF_ATTR_LIST | WF_ATTR_FLOAT);
  assert_int_equal(v->count, 3);
  assert_true(v->u.floats[1] == -2.0);
  assert_string_equal(wf__node_attr(n, "mode")->u.s, "log");
}

static void test_graph_attribute_set_twice_keeps_the_last(void **state) {
  fixture *f = *state;
  wf_node_desc *d = wf_node_desc_new(f->g, "Placeholder", NULL);
  wf_node *n;
  wf_node_desc_set_attr_dtype(d, "dtype", WF_INT8);
  wf_node_desc_set_attr_dtype(d, "dtype", WF_BOOL);
  n = wf_node_desc_finish(d, f->st);
  assert_non_null(n);
  assert_int_equal(wf_node_output_dtype(n, 0), WF_BOOL);
}

static void test_graph_records_device_and_control_inputs(void **state) {
  fixture *f = *state;
  wf_node *a = placeholder(f->g, "a", WF_FLOAT32, NULL, -1);
  wf_node *b = placeholder(f->g, "b", WF_FLOAT32, NULL, -1);
  wf_node_desc *d = wf_node_desc_new(f->g, "NoOp", "n");
  wf_node *n;
  wf_node_desc_add_control_input(d, a);
  wf_node_desc_add_control_input(d, b);
  wf_node_desc_add_control_input(d, a); /* duplicate: kept once */
  wf_node_desc_set_device(d, "cpu:0");
  n = wf_node_desc_finish(d, f->st);
  assert_non_null(n);
  assert_string_equal(wf_node_device(n), "cpu:0");
  assert_string_equal(wf_node_device(a), "");
  assert_int_equal(wf_node_num_control_inputs(n), 2);
  assert_ptr_equal(wf_node_control_input(n, 0), a);
  assert_ptr_equal(wf_node_control_input(n, 1), b);
  assert_int_equal(a->num_control_consumers, 1);
  assert_ptr_equal(a->control_consumers[0], n);
  assert_int_equal(wf_node_num_outputs(n), 0);
  assert_int_equal(wf_node_id(n), 2);
}

static void test_graph_keeps_tensor_attribute_alive(void **state) {
  fixture *f = *state;
  int64_t dims[] = {2};
  wf_tensor *t = wf_tensor_new(WF_FLOAT32, dims, 1, f->st);
  wf_node_desc *d = wf_node_desc_new(f->g, "Const", "c");
  wf_node *n;
  wf_shape s;
  ((float *)wf_tensor_data(t))[1] = 5;
  wf_node_desc_set_attr_tensor(d, "value", t);
  wf_node_desc_set_attr_dtype(d, "dtype", WF_FLOAT32);
  wf_tensor_release(t); /* the graph holds its own reference */
  n = wf_node_desc_finish(d, f->st);
  assert_non_null(n);
  assert_true(((const float *)wf_tensor_data(
                  wf__node_attr(n, "value")->u.tensor))[1] == 5);
  wf_node_output_shape(n, 0, &s);
  assert_int_equal(s.rank, 1);
  assert_int_equal(s.dims[0], 2);
}

/* A tensor attribute of the core's own (a Const's value) has a version
 * while nodes hold it: nobody may write it then, so kernels keeping
 * something made from it check the version instead of the bytes. It stays
 * the same while any node holds the tensor (copies of a graph made while
 * compiling come and go) and is taken back when the last goes, after
 * which its last holder may write it again. A wrapped buffer (the
 * caller's) never gets one. */
static void test_node_versions_its_tensor_attributes(void **state) {
  fixture *f = *state;
  int64_t dims[] = {2};
  float mine[2] = {1, 2};
  wf_tensor *t = wf_tensor_new(WF_FLOAT32, dims, 1, f->st);
  wf_tensor *w = wf_tensor_wrap(WF_FLOAT32, dims, 1, mine, sizeof mine, NULL,
                                NULL, f->st);
  wf_graph *g[2] = {wf_graph_new(rt), wf_graph_new(rt)};
  uint64_t first = 0;

  assert_non_null(t);
  assert_non_null(w);
  assert_true(g[0] && g[1]);
  assert_int_equal(wf__tensor_version(t), 0);
  for (int i = 0; i < 3; i++) {
    wf_node_desc *d = wf_node_desc_new(g[i / 2], "Const", NULL);
    wf_node_desc_set_attr_tensor(d, "value", i == 1 ? w : t);
    wf_node_desc_set_attr_dtype(d, "dtype", WF_FLOAT32);
    assert_non_null(wf_node_desc_finish(d, f->st));
    if (i == 0) {
      first = wf__tensor_version(t);
      assert_true(first != 0);
    }
  }
  assert_int_equal(wf__tensor_version(w), 0);
  /* another node (of another graph) taking it keeps the version */
  assert_true(wf__tensor_version(t) == first);
  wf_graph_free(g[0]);
  assert_true(wf__tensor_version(t) == first);
  /* the last node going takes it back */
  wf_graph_free(g[1]);
  assert_int_equal(wf__tensor_version(t), 0);
  wf_tensor_release(t);
  wf_tensor_release(w);
}

/* ---- names and scopes ---------------------------------------------------- */

static void test_graph_makes_unique_names_from_the_op(void **state) {
  fixture *f = *state;
  wf_node *x = placeholder(f->g, NULL, WF_FLOAT32, NULL, -1);
  wf_node *a, *b, *c, *e;
  char buf[64];
  assert_string_equal(wf_node_name(x), "Placeholder");
  a = binary(f->g, "Add", NULL, x, x, f->st);
  b = binary(f->g, "Add", NULL, x, x, f->st);
  c = binary(f->g, "Add", "Add_3", x, x, f->st);
  e = binary(f->g, "Add", NULL, x, x, f->st);
  assert_string_equal(wf_node_name(a), "Add");
  assert_string_equal(wf_node_name(b), "Add_1");
  assert_string_equal(wf_node_name(c), "Add_3");
  assert_string_equal(wf_node_name(e), "Add_2"); /* the first free one */
  assert_string_equal(wf_graph_unique_name(f->g, "Add", buf, sizeof buf),
                      "Add_4");
  assert_string_equal(wf_graph_unique_name(f->g, "Mul", buf, sizeof buf),
                      "Mul");
  assert_ptr_equal(wf_graph_find_node(f->g, "Add_1"), b);
  assert_null(wf_graph_find_node(f->g, "Add_4"));
  /* Asking does not take the name; the next node gets it. */
  e = binary(f->g, "Add", NULL, x, x, f->st);
  assert_string_equal(wf_node_name(e), "Add_4");
  /* A name taken by hand above the search's resume point is skipped. */
  c = binary(f->g, "Add", "Add_6", x, x, f->st);
  assert_string_equal(wf_node_name(binary(f->g, "Add", NULL, x, x, f->st)),
                      "Add_5");
  assert_string_equal(wf_node_name(binary(f->g, "Add", NULL, x, x, f->st)),
                      "Add_7");
  /* Many nodes of one op (named in constant time each; bench/dispatch
   * builds 10,000): every name distinct and in sequence. */
  for (int i = 8; i < 2000; i++) {
    char want[32];
    snprintf(want, sizeof want, "Add_%d", i);
    e = binary(f->g, "Add", NULL, x, x, f->st);
    assert_non_null(e);
    assert_string_equal(wf_node_name(e), want);
  }
}

static void test_graph_scopes_prefix_names(void **state) {
  fixture *f = *state;
  wf_node *n, *m;
  char buf[64];
  assert_int_equal(wf_graph_push_scope(f->g, "layer", f->st), WF_OK);
  n = placeholder(f->g, "x", WF_FLOAT32, NULL, -1);
  assert_string_equal(wf_node_name(n), "layer/x");
  assert_int_equal(wf_graph_push_scope(f->g, "inner", f->st), WF_OK);
  m = placeholder(f->g, NULL, WF_FLOAT32, NULL, -1);
  assert_string_equal(wf_node_name(m), "layer/inner/Placeholder");
  assert_string_equal(
      wf_graph_unique_name(f->g, "Placeholder", buf, sizeof buf),
      "layer/inner/Placeholder_1");
  wf_graph_pop_scope(f->g);
  wf_graph_pop_scope(f->g);
  assert_ptr_equal(wf_graph_find_node(f->g, "layer/inner/Placeholder"), m);
  /* The scope name is taken now: a node cannot have it, and pushing the
   * same scope again makes a new one. */
  assert_null(wf_graph_find_node(f->g, "layer"));
  expect_refusal(f, wf_node_desc_new(f->g, "NoOp", "layer"), WF_ALREADY_EXISTS,
                 "already used by a scope");
  assert_int_equal(wf_graph_push_scope(f->g, "layer", f->st), WF_OK);
  n = placeholder(f->g, "x", WF_FLOAT32, NULL, -1);
  assert_string_equal(wf_node_name(n), "layer_1/x");
  wf_graph_pop_scope(f->g);
  /* A scope cannot take a node's name either. */
  placeholder(f->g, "taken", WF_FLOAT32, NULL, -1);
  assert_int_equal(wf_graph_push_scope(f->g, "taken", f->st), WF_OK);
  n = placeholder(f->g, NULL, WF_FLOAT32, NULL, -1);
  assert_string_equal(wf_node_name(n), "taken_1/Placeholder");
  wf_graph_pop_scope(f->g);
}

static void test_graph_refuses_bad_scope_names(void **state) {
  fixture *f = *state;
  assert_int_equal(wf_graph_push_scope(f->g, "a/b", f->st),
                   WF_INVALID_ARGUMENT);
  assert_message_has(f->st, "scope name 'a/b' is invalid");
  assert_int_equal(wf_graph_push_scope(f->g, "", f->st), WF_INVALID_ARGUMENT);
  assert_int_equal(f->g->num_scopes, 0);
}

static void test_graph_scope_is_taken_when_the_node_is_described(void **state) {
  fixture *f = *state;
  wf_node_desc *d;
  wf_node *n;
  assert_int_equal(wf_graph_push_scope(f->g, "s", f->st), WF_OK);
  d = wf_node_desc_new(f->g, "NoOp", "n");
  wf_graph_pop_scope(f->g);
  n = wf_node_desc_finish(d, f->st);
  assert_non_null(n);
  assert_string_equal(wf_node_name(n), "s/n");
}

/* ---- control edges ------------------------------------------------------- */

static void test_graph_control_edges_refuse_cycles(void **state) {
  fixture *f = *state;
  wf_node *x = placeholder(f->g, "x", WF_FLOAT32, NULL, -1);
  wf_node_desc *d = wf_node_desc_new(f->g, "Identity", "y");
  wf_node *y, *a, *b, *c;
  snapshot before;
  wf_node_desc_add_input(d, out0(x));
  y = wf_node_desc_finish(d, f->st);
  assert_non_null(y);
  a = wf_node_desc_finish(wf_node_desc_new(f->g, "NoOp", "a"), f->st);
  b = wf_node_desc_finish(wf_node_desc_new(f->g, "NoOp", "b"), f->st);
  c = wf_node_desc_finish(wf_node_desc_new(f->g, "NoOp", "c"), f->st);
  assert_int_equal(wf_graph_add_control_edge(f->g, y, a, f->st), WF_OK);
  assert_int_equal(wf_graph_add_control_edge(f->g, a, b, f->st), WF_OK);
  assert_int_equal(wf_graph_add_control_edge(f->g, b, c, f->st), WF_OK);
  /* Duplicates are ignored. */
  assert_int_equal(wf_graph_add_control_edge(f->g, a, b, f->st), WF_OK);
  assert_int_equal(wf_node_num_control_inputs(b), 1);
  assert_int_equal(a->num_control_consumers, 1);

  take_snapshot(f->g, &before);
  /* c -> x closes x -data-> y -> a -> b -> c. */
  assert_int_equal(wf_graph_add_control_edge(f->g, c, x, f->st),
                   WF_INVALID_ARGUMENT);
  assert_message_has(f->st, "control edge 'c' -> 'x' would create a cycle");
  assert_int_equal(wf_graph_add_control_edge(f->g, b, a, f->st),
                   WF_INVALID_ARGUMENT);
  assert_int_equal(wf_graph_add_control_edge(f->g, a, a, f->st),
                   WF_INVALID_ARGUMENT);
  assert_message_has(f->st, "a node cannot wait for itself");
  assert_unchanged(f->g, &before);
  /* A forward edge that skips ahead is fine. */
  assert_int_equal(wf_graph_add_control_edge(f->g, x, c, f->st), WF_OK);
  assert_int_equal(wf_node_num_control_inputs(c), 2);
}

static void test_graph_control_edge_refuses_other_graph(void **state) {
  fixture *f = *state;
  wf_graph *other = wf_graph_new(rt);
  wf_node *a = wf_node_desc_finish(wf_node_desc_new(f->g, "NoOp", "a"), f->st);
  wf_node *b = wf_node_desc_finish(wf_node_desc_new(other, "NoOp", "b"), f->st);
  assert_int_equal(wf_graph_add_control_edge(f->g, a, b, f->st),
                   WF_INVALID_ARGUMENT);
  assert_message_has(f->st, "node 'b' belongs to another graph");
  assert_int_equal(a->num_control_consumers, 0);
  assert_int_equal(b->num_control_inputs, 0);
  wf_graph_free(other);
}

/* ---- shape inference ----------------------------------------------------- */

static void test_graph_runs_shape_inference(void **state) {
  fixture *f = *state;
  int64_t dims[] = {2, 3}, part[] = {-1, 3};
  wf_node *x = placeholder(f->g, "x", WF_FLOAT32, dims, 2);
  wf_node *y = placeholder(f->g, "y", WF_FLOAT32, part, 2);
  wf_node *u = placeholder(f->g, "u", WF_FLOAT32, NULL, -1);
  wf_node *n;
  wf_shape s;
  wf_node_output_shape(y, 0, &s);
  assert_int_equal(s.dims[0], WF_UNKNOWN_DIM);
  n = binary(f->g, "Add", NULL, y, x, f->st);
  assert_non_null(n);
  wf_node_output_shape(n, 0, &s);
  assert_int_equal(s.rank, 2);
  assert_int_equal(s.dims[1], 3);
  n = binary(f->g, "Add", NULL, u, x, f->st);
  wf_node_output_shape(n, 0, &s);
  assert_true(wf_shape_equal(&s, &x->output_shapes[0]));
  /* An op without shape function leaves its outputs unknown. */
  {
    wf_node_desc *d = wf_node_desc_new(f->g, "Scale", NULL);
    wf_node_desc_add_input(d, out0(x));
    n = wf_node_desc_finish(d, f->st);
    wf_node_output_shape(n, 0, &s);
    assert_int_equal(s.rank, WF_UNKNOWN_RANK);
  }
}

static void test_graph_shape_function_reads_const_inputs(void **state) {
  fixture *f = *state;
  int64_t two = 2;
  int64_t dims[] = {6};
  wf_tensor *t = wf_tensor_new(WF_INT64, &two, 1, f->st);
  wf_node *x = placeholder(f->g, "x", WF_FLOAT32, dims, 1);
  wf_node_desc *d = wf_node_desc_new(f->g, "Const", "shape");
  wf_node *c, *r;
  wf_shape s;
  ((int64_t *)wf_tensor_data(t))[0] = 3;
  ((int64_t *)wf_tensor_data(t))[1] = 2;
  wf_node_desc_set_attr_tensor(d, "value", t);
  wf_node_desc_set_attr_dtype(d, "dtype", WF_INT64);
  c = wf_node_desc_finish(d, f->st);
  assert_non_null(c);
  r = binary(f->g, "Reshape", NULL, x, c, f->st);
  assert_non_null(r);
  wf_node_output_shape(r, 0, &s);
  assert_int_equal(s.rank, 2);
  assert_int_equal(s.dims[0], 3);
  assert_int_equal(s.dims[1], 2);
  wf_tensor_release(t);
}

static void test_graph_reports_shape_function_errors(void **state) {
  fixture *f = *state;
  int64_t a[] = {2, 3}, b[] = {4};
  wf_node *x = placeholder(f->g, "x", WF_FLOAT32, a, 2);
  wf_node *y = placeholder(f->g, "y", WF_FLOAT32, b, 1);
  snapshot before;
  take_snapshot(f->g, &before);
  assert_null(binary(f->g, "Add", "sum", x, y, f->st));
  assert_int_equal(wf_status_code(f->st), WF_INVALID_ARGUMENT);
  assert_string_equal(wf_status_message(f->st),
                      "node 'sum' (op 'Add'): incompatible shapes (2, 3) and "
                      "(4)");
  assert_unchanged(f->g, &before);
  assert_null(wf_graph_find_node(f->g, "sum"));
}

static void test_graph_reports_shape_function_bad_output_index(void **state) {
  fixture *f = *state;
  wf_node *x = placeholder(f->g, "x", WF_FLOAT32, NULL, -1);
  wf_node_desc *d = wf_node_desc_new(f->g, "BadShape", "bad");
  wf_node_desc_add_input(d, out0(x));
  expect_refusal(f, d, WF_INTERNAL,
                 "node 'bad' (op 'BadShape'): the op's shape function set "
                 "output 5, but the node has 1 output");
}

static void test_graph_shape_context_answers(void **state) {
  fixture *f = *state;
  wf_node *x = placeholder(f->g, "x", WF_INT8, NULL, -1);
  wf_node_desc *d = wf_node_desc_new(f->g, "Probe", "probe");
  wf_node *n;
  wf_node_desc_add_input(d, out0(x));
  n = wf_node_desc_finish(d, f->st);
  assert_non_null(n);
  assert_int_equal(probe_seen.num_inputs, 1);
  assert_int_equal(probe_seen.num_outputs, 2);
  assert_int_equal(probe_seen.dtype0, WF_INT8);
  assert_int_equal(probe_seen.bad_input, -1);
  assert_string_equal(probe_seen.name, "probe");
  assert_int_equal(probe_seen.k, 42); /* the default */
  assert_int_equal(probe_seen.missing_attr, -1);
  assert_null(probe_seen.value0); /* x is no Const */
  assert_int_equal(wf_node_output_dtype(n, 0), WF_INT8);
  assert_int_equal(wf_node_output_dtype(n, 1), WF_BOOL);
}

static void test_graph_infer_shapes_uses_given_input_shapes(void **state) {
  fixture *f = *state;
  wf_node *x = placeholder(f->g, "x", WF_FLOAT32, NULL, -1);
  wf_node *n = binary(f->g, "Add", NULL, x, x, f->st);
  int64_t a[] = {5, 7}, b[] = {5};
  wf_shape in[2], out[1];
  wf_shape_init(&in[0], a, 2);
  wf_shape_init(&in[1], a, 2);
  assert_int_equal(wf__node_infer_shapes(n, in, out, f->st), WF_OK);
  assert_true(wf_shape_equal(&out[0], &in[0]));
  wf_shape_init(&in[1], b, 1);
  assert_int_equal(wf__node_infer_shapes(n, in, out, f->st),
                   WF_INVALID_ARGUMENT);
  assert_message_has(f->st, "node 'Add' (op 'Add'): incompatible shapes");
}

/* ---- out of memory ------------------------------------------------------- */

static void test_graph_out_of_memory_leaves_graph_unchanged(void **state) {
  fixture *f = *state;
  wf_node *x = placeholder(f->g, "x", WF_FLOAT32, NULL, -1);
  wf_node *c = wf_node_desc_finish(wf_node_desc_new(f->g, "NoOp", "c"), f->st);
  wf_output ins[3] = {out0(x), out0(x), out0(x)};
  snapshot before;
  wf_node *n = NULL;
  int failures = 0;
  take_snapshot(f->g, &before);
  /* Fail the 1st, 2nd, ... allocation from describing the node on. */
  for (long k = 1; !n; k++) {
    wf_node_desc *d;
    wf__alloc_fail_after(k, 0);
    d = wf_node_desc_new(f->g, "AddN", NULL);
    wf_node_desc_add_input_list(d, ins, 3);
    wf_node_desc_add_control_input(d, c);
    wf_node_desc_set_device(d, "cpu:0");
    n = wf_node_desc_finish(d, f->st);
    wf__alloc_fail_after(0, 0);
    if (n)
      break;
    failures++;
    assert_int_equal(wf_status_code(f->st), WF_RESOURCE_EXHAUSTED);
    assert_unchanged(f->g, &before);
  }
  assert_true(failures > 5);
  assert_int_equal(wf_graph_num_nodes(f->g), before.n + 1);
  assert_int_equal(x->num_data_consumers, 3);
  assert_int_equal(c->num_control_consumers, 1);
}

int main(void) {
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
  const struct CMUnitTest tests[] = {
      T(test_graph_refuses_unknown_op),
      T(test_node_versions_its_tensor_attributes),
      T(test_graph_refuses_invalid_names),
      T(test_graph_refuses_taken_name),
      T(test_graph_refuses_wrong_number_of_inputs),
      T(test_graph_refuses_list_and_single_mixed_up),
      T(test_graph_refuses_bad_output_index),
      T(test_graph_refuses_nodes_of_another_graph),
      T(test_graph_refuses_mismatched_input_dtypes),
      T(test_graph_refuses_without_a_status_object),
      T(test_graph_checks_explicit_type_attr_against_inputs),
      T(test_graph_refuses_wrong_fixed_dtype),
      T(test_graph_enforces_allowed_dtypes),
      T(test_graph_refuses_unknown_attribute),
      T(test_graph_refuses_attribute_of_wrong_type),
      T(test_graph_refuses_missing_attribute),
      T(test_graph_enforces_attribute_minimum),
      T(test_graph_refuses_invalid_dtype_value),
      T(test_graph_infers_type_attr_from_inputs),
      T(test_graph_cast_infers_source_and_takes_explicit_target),
      T(test_graph_list_inputs_set_number_attr),
      T(test_graph_list_inputs_are_checked),
      T(test_graph_number_attr_expands_outputs),
      T(test_graph_fills_in_defaults),
      T(test_graph_converts_int_to_float_attributes),
      T(test_graph_attribute_set_twice_keeps_the_last),
      T(test_graph_records_device_and_control_inputs),
      T(test_graph_keeps_tensor_attribute_alive),
      T(test_graph_makes_unique_names_from_the_op),
      T(test_graph_scopes_prefix_names),
      T(test_graph_refuses_bad_scope_names),
      T(test_graph_scope_is_taken_when_the_node_is_described),
      T(test_graph_control_edges_refuse_cycles),
      T(test_graph_control_edge_refuses_other_graph),
      T(test_graph_runs_shape_inference),
      T(test_graph_shape_function_reads_const_inputs),
      T(test_graph_reports_shape_function_errors),
      T(test_graph_reports_shape_function_bad_output_index),
      T(test_graph_shape_context_answers),
      T(test_graph_infer_shapes_uses_given_input_shapes),
      T(test_graph_out_of_memory_leaves_graph_unchanged),
  };
#undef T
  return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
