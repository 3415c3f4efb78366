/* tests/ops/test_opcommon.c — the helpers the op plugins share, now the
 * SDK's helper layer (<weft/plugin_aux.h>): broadcasting with unknown dims, the
 * broadcast walker against naive indexing, axes, shape text, dtype tables, and
 * typed attribute reads through real shape and kernel contexts of an in-process
 * probe op. The helpers reach the core only through its host table. */
#include <config.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include <weft/weft.h>

#include "graph/graph_internal.h"
#include "base/log.h"
#include "host/host.h"
#include "exec/kernel.h"
#include "opcommon.h"
#include "plugin/runtime_internal.h"

/* The layer's host table, for the helpers called here directly. */
WFX_HOST_DEFINE(1, 0);

static wf_shape shp(int rank, const int64_t *dims) {
  wf_shape s;
  if (rank < 0)
    wfx_shape_set_unknown(&s);
  else
    wfx_shape_make(&s, rank, dims);
  return s;
}
#define S(...)                                                                 \
  shp((int)(sizeof((const int64_t[]){__VA_ARGS__}) / sizeof(int64_t)),        \
      (const int64_t[]){__VA_ARGS__})
#define SCALAR shp(0, NULL)
#define UNKNOWN shp(-1, NULL)

static int setup(void **state) {
  wfx_host = wf__host();
  return 0;
}

static void assert_shape(wf_shape got, wf_shape want) {
  char a[WFX_SHAPE_STR_MAX], b[WFX_SHAPE_STR_MAX];
  int same = got.rank == want.rank;

  for (int i = 0; same && i < got.rank; i++)
    same = got.dims[i] == want.dims[i];
  if (!same)
    fail_msg("shape %s, expected %s", wfx_shape_str(&got, a, sizeof a),
             wfx_shape_str(&want, b, sizeof b));
}

static int64_t count_of(wf_shape s) { return wfx_shape_count(&s); }

/* ---- broadcasting ------------------------------------------------------ */

static void test_broadcast_follows_numpy_rules(void **state) {
  struct {
    wf_shape a, b, want;
  } cases[] = {
      {SCALAR, S(2, 3), S(2, 3)},
      {S(2, 3), SCALAR, S(2, 3)},
      {SCALAR, SCALAR, SCALAR},
      {S(3, 1), S(1, 4), S(3, 4)},
      {S(4), S(2, 3, 4), S(2, 3, 4)},
      {S(2, 1, 3), S(4, 1), S(2, 4, 3)},
      {S(0, 3), S(1, 3), S(0, 3)},
      {S(2, 1), S(0), S(2, 0)},
      {S(1), S(0), S(0)},
      {S(5, 1, 1, 1, 1, 1, 1, 2), S(3, 1), S(5, 1, 1, 1, 1, 1, 3, 2)},
  };
  wf_status *st = wf_status_new();

  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    wf_shape out;
    assert_int_equal(
        wfx_broadcast_shapes(&cases[i].a, &cases[i].b, &out, NULL, st), 0);
    assert_shape(out, cases[i].want);
    /* symmetric */
    assert_int_equal(
        wfx_broadcast_shapes(&cases[i].b, &cases[i].a, &out, NULL, st), 0);
    assert_shape(out, cases[i].want);
  }
  wf_status_free(st);
}

static void test_broadcast_keeps_what_unknown_dims_allow(void **state) {
  struct {
    wf_shape a, b, want;
  } cases[] = {
      {S(-1, 3), S(4, 1), S(4, 3)},
      {S(-1, 3), S(-1, 1), S(-1, 3)},
      {S(-1), S(1), S(-1)},
      {S(-1), S(5), S(5)},
      {S(-1), S(0), S(0)},
      {S(-1), S(-1), S(-1)},
      {S(-1), S(2, 1), S(2, -1)},
      {UNKNOWN, S(2, 3), UNKNOWN},
      {SCALAR, UNKNOWN, UNKNOWN},
  };
  wf_status *st = wf_status_new();

  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    wf_shape out;
    assert_int_equal(
        wfx_broadcast_shapes(&cases[i].a, &cases[i].b, &out, NULL, st), 0);
    assert_shape(out, cases[i].want);
  }
  wf_status_free(st);
}

static void test_broadcast_refusal_names_both_shapes(void **state) {
  wf_status *st = wf_status_new();
  wf_shape a = S(2, 3), b = S(7, 4), out = S(9);
  wf_shape keep = out;

  assert_int_equal(wfx_broadcast_shapes(&a, &b, &out, "x and y", st),
                   WF_INVALID_ARGUMENT);
  assert_int_equal(wf_status_code(st), WF_INVALID_ARGUMENT);
  assert_non_null(strstr(wf_status_message(st), "x and y: "));
  assert_non_null(strstr(wf_status_message(st), "(2, 3)"));
  assert_non_null(strstr(wf_status_message(st), "(7, 4)"));
  assert_non_null(strstr(wf_status_message(st), "is 3 in the first and 4"));
  assert_shape(out, keep);

  /* a known dim other than 1 still conflicts past an unknown one */
  a = S(-1, 2);
  b = S(3, 5);
  assert_int_equal(wfx_broadcast_shapes(&a, &b, &out, NULL, st),
                   WF_INVALID_ARGUMENT);
  assert_non_null(strstr(wf_status_message(st), "(?, 2)"));
  wf_status_free(st);
}

static void test_shape_merge_fills_unknowns_and_refuses_conflicts(
    void **state) {
  wf_status *st = wf_status_new();
  wf_shape a = S(-1, 3), b = S(2, -1), out;

  assert_int_equal(wfx_shape_merge(&a, &b, &out, NULL, st), 0);
  assert_shape(out, S(2, 3));
  b = UNKNOWN;
  assert_int_equal(wfx_shape_merge(&a, &b, &out, NULL, st), 0);
  assert_shape(out, a);
  b = S(2, 4);
  assert_int_equal(wfx_shape_merge(&a, &b, &out, "inputs 0 and 1", st),
                   WF_INVALID_ARGUMENT);
  assert_non_null(strstr(wf_status_message(st), "inputs 0 and 1"));
  assert_non_null(strstr(wf_status_message(st), "(2, 4)"));
  b = S(3);
  assert_int_equal(wfx_shape_merge(&a, &b, &out, NULL, st),
                   WF_INVALID_ARGUMENT);
  wf_status_free(st);
}

/* ---- the broadcast walker ---------------------------------------------- */

/* Offset of output element `flat` in operand `in` by the textbook rule. */
static int64_t naive_offset(const wf_shape *out, const wf_shape *in,
                            int64_t flat) {
  int64_t idx[WF_MAX_RANK], strides[WF_MAX_RANK], off = 0;

  for (int d = out->rank - 1; d >= 0; d--) {
    idx[d] = flat % out->dims[d];
    flat /= out->dims[d];
  }
  wfx_shape_strides(in, strides);
  for (int j = 0; j < in->rank; j++) {
    int d = j + out->rank - in->rank;
    if (in->dims[j] != 1)
      off += idx[d] * strides[j];
  }
  return off;
}

static void check_walk(wf_shape a, wf_shape b, wf_shape c) {
  wf_status *st = wf_status_new();
  wf_shape in[3] = {a, b, c}, ab = {0}, out = {0};
  wfx_bcast w;
  int64_t seen = 0;

  assert_int_equal(wfx_broadcast_shapes(&a, &b, &ab, NULL, st), 0);
  assert_int_equal(wfx_broadcast_shapes(&ab, &c, &out, NULL, st), 0);
  wfx_bcast_init(&w, &out, 3, in);
  assert_int_equal(w.count, wfx_shape_count(&out));
  for (int64_t r = 0; r < w.rows; r++, wfx_bcast_next(&w))
    for (int64_t j = 0; j < w.inner; j++) {
      int64_t flat = r * w.inner + j;
      for (int k = 0; k < 3; k++)
        assert_int_equal(w.off[k] + j * w.step[k],
                         naive_offset(&out, &in[k], flat));
      seen++;
    }
  assert_int_equal(seen, w.count);
  wf_status_free(st);
}

static void test_bcast_walk_matches_naive_indexing(void **state) {
  check_walk(S(2, 3, 4), S(2, 3, 4), S(2, 3, 4));
  check_walk(S(3, 1), S(1, 4), SCALAR);
  check_walk(S(4), S(2, 3, 4), S(3, 1));
  check_walk(S(2, 1, 3), S(4, 1), S(1, 1, 1));
  check_walk(S(5, 1, 2, 1, 3), S(1, 4, 1), S(2, 4, 3));
  check_walk(S(1, 1), S(1), SCALAR);
  check_walk(S(2, 2, 2, 2, 2, 2, 2, 2), S(2, 1, 2, 1, 2, 1, 2, 1), S(2));
  check_walk(S(0, 3), S(1, 3), S(3));
}

static void test_bcast_merges_dims_that_move_together(void **state) {
  wf_shape out = S(2, 3, 4), in[2] = {S(2, 3, 4), S(2, 3, 4)};
  wfx_bcast w;

  wfx_bcast_init(&w, &out, 2, in);
  assert_int_equal(w.rank, 1);
  assert_int_equal(w.inner, 24);
  assert_int_equal(w.rows, 1);

  out = S(3, 4);
  in[0] = S(3, 1);
  in[1] = S(1, 4);
  wfx_bcast_init(&w, &out, 2, in);
  assert_int_equal(w.rank, 2);
  assert_int_equal(w.inner, 4);
  assert_int_equal(w.rows, 3);
  assert_int_equal(w.step[0], 0);
  assert_int_equal(w.step[1], 1);

  /* a scalar operand with a 6-element output: one row, step 0 */
  out = S(2, 3);
  in[0] = SCALAR;
  in[1] = S(2, 3);
  wfx_bcast_init(&w, &out, 2, in);
  assert_int_equal(w.rows, 1);
  assert_int_equal(w.inner, 6);
  assert_int_equal(w.step[0], 0);
}

static void test_bcast_of_empty_output_has_no_rows(void **state) {
  wf_shape out = S(2, 0, 3), in[1] = {S(1, 0, 1)};
  wfx_bcast w;

  wfx_bcast_init(&w, &out, 1, in);
  assert_int_equal(w.count, 0);
  assert_int_equal(w.rows, 0);
}

/* ---- axes, text, dtypes ------------------------------------------------ */

static void test_axes_normalise_and_refuse_out_of_range(void **state) {
  wf_status *st = wf_status_new();
  int a;
  uint32_t m;

  assert_int_equal(wfx_axis_normalize(-1, 3, &a, NULL, st), 0);
  assert_int_equal(a, 2);
  assert_int_equal(wfx_axis_normalize(-3, 3, &a, NULL, st), 0);
  assert_int_equal(a, 0);
  assert_int_equal(wfx_axis_normalize(3, 3, &a, "ExpandDims", st),
                   WF_INVALID_ARGUMENT);
  assert_non_null(strstr(wf_status_message(st), "ExpandDims: axis 3 is out "
                                                "of range for rank 3 (valid: "
                                                "-3 to 2)"));
  assert_int_equal(wfx_axis_normalize(-4, 3, &a, NULL, st),
                   WF_INVALID_ARGUMENT);
  assert_int_equal(wfx_axis_normalize(0, 0, &a, NULL, st), WF_INVALID_ARGUMENT);
  assert_non_null(strstr(wf_status_message(st), "scalar"));

  assert_int_equal(wfx_axes_mask((const int64_t[]){0, -1}, 2, 4, &m, NULL, st),
                   0);
  assert_int_equal(m, 0x9);
  assert_int_equal(wfx_axes_mask(NULL, 0, 4, &m, NULL, st), 0);
  assert_int_equal(m, 0);
  assert_int_equal(wfx_axes_mask((const int64_t[]){1, -3}, 2, 4, &m, NULL, st),
                   WF_INVALID_ARGUMENT);
  assert_non_null(strstr(wf_status_message(st), "twice"));
  assert_int_equal(wfx_axes_mask((const int64_t[]){7}, 1, 4, &m, NULL, st),
                   WF_INVALID_ARGUMENT);
  wf_status_free(st);
}

static void test_shape_text(void **state) {
  char buf[WFX_SHAPE_STR_MAX], small[6];
  wf_shape s = S(2, -1, 3), big = S(INT64_MAX, INT64_MIN + 1, 1, 2, 3, 4, 5, 6);

  assert_string_equal(wfx_shape_str(&s, buf, sizeof buf), "(2, ?, 3)");
  s = SCALAR;
  assert_string_equal(wfx_shape_str(&s, buf, sizeof buf), "()");
  s = UNKNOWN;
  assert_string_equal(wfx_shape_str(&s, buf, sizeof buf), "<unknown>");
  s = S(123, 456);
  assert_string_equal(wfx_shape_str(&s, small, sizeof small), "(123,");
  /* the widest shape fits WFX_SHAPE_STR_MAX */
  big.dims[1] = 9223372036854775807;
  wfx_shape_str(&big, buf, sizeof buf);
  assert_true(strlen(buf) < sizeof buf - 1);
  assert_int_equal(buf[strlen(buf) - 1], ')');
  assert_int_equal(count_of(S(2, 0, 3)), 0);
  assert_int_equal(count_of(S(2, -1)), -1);
  assert_int_equal(count_of(SCALAR), 1);
}

#define CHECK_TYPE(T, sfx, dt, u)                                              \
  assert_int_equal(wfx_dtype_size(dt), sizeof(T));                             \
  assert_true((u)&WF_DTYPE_BIT(dt));                                           \
  n++;

static void test_dtype_lists_agree_with_masks_and_sizes(void **state) {
  int n = 0;

  WFX_TYPES_FLOAT(CHECK_TYPE, WFX_DTYPES_FLOAT)
  assert_int_equal(n, __builtin_popcount(WFX_DTYPES_FLOAT));
  n = 0;
  WFX_TYPES_INT(CHECK_TYPE, WFX_DTYPES_INT)
  assert_int_equal(n, __builtin_popcount(WFX_DTYPES_INT));
  n = 0;
  WFX_TYPES_ALL(CHECK_TYPE, WFX_DTYPES_ALL)
  assert_int_equal(n, __builtin_popcount(WFX_DTYPES_ALL));
  n = 0;
  WFX_TYPES_SIGNED_INT(CHECK_TYPE, WFX_DTYPES_SIGNED)
  assert_int_equal(n + 2, __builtin_popcount(WFX_DTYPES_SIGNED));
  for (int d = 1; d < WF_DTYPE_COUNT; d++) {
    assert_int_equal(wfx_dtype_size(d), wf_dtype_size((wf_dtype)d));
    assert_string_equal(wfx_dtype_name(d), wf_dtype_name((wf_dtype)d));
  }
  assert_string_equal(wfx_dtype_name(99), "invalid");
  assert_int_equal(wfx_dtype_size(99), 0);
  assert_true(wfx_dtype_is_float(WF_FLOAT64));
  assert_false(wfx_dtype_is_float(WF_INT64));
}

/* ---- attributes through real contexts ---------------------------------- */

/* What the probe op's shape function read. */
static struct {
  int64_t i, nints;
  double f;
  int b;
  int32_t dt;
  const int64_t *ints;
  char missing[256], wrong[256], input[256];
  int calls;
} seen;

static int probe_shape(wf_shape_ctx *ctx, wf_status *st) {
  const wf_host *h = wfx_host;
  int64_t dummy;
  wf_shape s;

  seen.calls++;
  if (wfx_shape_attr_int(ctx, "i", &seen.i, st) ||
      wfx_shape_attr_float(ctx, "f", &seen.f, st) ||
      wfx_shape_attr_bool(ctx, "b", &seen.b, st) ||
      wfx_shape_attr_dtype(ctx, "dt", &seen.dt, st) ||
      wfx_shape_attr_ints(ctx, "axes", &seen.ints, &seen.nints, st))
    return h->status_code(st);
  if (wfx_shape_attr_int(ctx, "nope", &dummy, st) != WF_INVALID_ARGUMENT)
    return wfx_fail(st, WF_INTERNAL, "a missing attribute was read");
  snprintf(seen.missing, sizeof seen.missing, "%s", h->status_message(st));
  if (wfx_shape_attr_int(ctx, "f", &dummy, st) != WF_INVALID_ARGUMENT)
    return wfx_fail(st, WF_INTERNAL, "a float attribute was read as int");
  snprintf(seen.wrong, sizeof seen.wrong, "%s", h->status_message(st));
  if (wfx_shape_input(ctx, 0, NULL, &s, st) != WF_INTERNAL)
    return wfx_fail(st, WF_INTERNAL, "a missing input was read");
  snprintf(seen.input, sizeof seen.input, "%s", h->status_message(st));
  wfx_shape_set_scalar(&s);
  h->shape_set_output(ctx, 0, &s);
  return 0;
}

static const int64_t default_axes[] = {1, 2};
static const wf_arg_def probe_out[] = {WF_ARG_FIXED("y", WF_FLOAT32, "()"),
                                       WF_ARG_END};
static const wf_attr_def probe_attrs[] = {
    {WF_STRUCT_INIT(wf_attr_def), .name = "i", .type = WF_ATTR_INT,
     .has_default = 1, .default_value = {.type = WF_ATTR_INT, .count = 1,
                                         .u = {.i = 3}}},
    {WF_STRUCT_INIT(wf_attr_def), .name = "f", .type = WF_ATTR_FLOAT,
     .has_default = 1, .default_value = {.type = WF_ATTR_FLOAT, .count = 1,
                                         .u = {.f = 0.5}}},
    {WF_STRUCT_INIT(wf_attr_def), .name = "b", .type = WF_ATTR_BOOL,
     .has_default = 1, .default_value = {.type = WF_ATTR_BOOL, .count = 1,
                                         .u = {.b = 1}}},
    {WF_STRUCT_INIT(wf_attr_def), .name = "dt", .type = WF_ATTR_DTYPE,
     .has_default = 1, .default_value = {.type = WF_ATTR_DTYPE, .count = 1,
                                         .u = {.dtype = WF_INT32}}},
    {WF_STRUCT_INIT(wf_attr_def), .name = "axes",
     .type = WF_ATTR_LIST | WF_ATTR_INT, .has_default = 1,
     .default_value = {.type = WF_ATTR_LIST | WF_ATTR_INT, .count = 2,
                       .u = {.ints = default_axes}}},
    WF_ATTR_END};
static const wf_op_def probe_op = {WF_STRUCT_INIT(wf_op_def),
                                   .name = "AttrProbe",
                                   .outputs = probe_out,
                                   .attrs = probe_attrs,
                                   .shape_fn = probe_shape,
                                   .doc = "reads its attributes"};
static const wf_op_def *const probe_ops[] = {&probe_op, NULL};

static int probe_init(const wf_host *host, void **state, wf_status *st) {
  return WFX_HOST_INIT(host, "opcommon-probe", st);
}

static const wf_plugin_desc probe_desc = {WF_STRUCT_INIT(wf_plugin_desc),
                                          .name = "opcommon-probe",
                                          .version = "1",
                                          .license = "MIT",
                                          .ops = probe_ops,
                                          .init = probe_init};

static void test_attr_reads_through_shape_and_kernel_contexts(void **state) {
  wf_status *st = wf_status_new();
  wf_runtime *rt = wf__runtime_new_empty(NULL, st);
  wf_graph *g;
  wf_node_desc *d;
  wf_node *n;
  struct wf_kernel_ctx kctx;
  const int64_t *ints;
  int64_t count, i;
  double f;
  int b;
  int32_t dt;

  assert_non_null(rt);
  assert_int_equal(
      wf__runtime_add_plugin(rt, &probe_desc, "(test)", NULL, st), WF_OK);
  g = wf_graph_new(rt);
  d = wf_node_desc_new(g, "AttrProbe", "probe");
  wf_node_desc_set_attr_int(d, "i", -7);
  wf_node_desc_set_attr_dtype(d, "dt", WF_UINT8);
  n = wf_node_desc_finish(d, st);
  if (!n)
    fail_msg("%s", wf_status_message(st));
  assert_int_equal(seen.calls, 1);
  assert_int_equal(seen.i, -7);
  assert_true(seen.f == 0.5);
  assert_int_equal(seen.b, 1);
  assert_int_equal(seen.dt, WF_UINT8);
  assert_int_equal(seen.nints, 2);
  assert_int_equal(seen.ints[1], 2);
  assert_string_equal(seen.missing, "attribute 'nope' (int) is missing");
  assert_string_equal(seen.wrong,
                      "attribute 'f' has type float; expected int");
  assert_non_null(strstr(seen.input, "input 0"));

  /* The kernel side reads the node's attributes the same way. */
  memset(&kctx, 0, sizeof kctx);
  kctx.node = n;
  kctx.num_outputs = 1;
  assert_int_equal(wfx_kernel_attr_int(&kctx, "i", &i, st), 0);
  assert_int_equal(i, -7);
  assert_int_equal(wfx_kernel_attr_float(&kctx, "f", &f, st), 0);
  assert_true(f == 0.5);
  assert_int_equal(wfx_kernel_attr_bool(&kctx, "b", &b, st), 0);
  assert_int_equal(b, 1);
  assert_int_equal(wfx_kernel_attr_dtype(&kctx, "dt", &dt, st), 0);
  assert_int_equal(dt, WF_UINT8);
  assert_int_equal(wfx_kernel_attr_ints(&kctx, "axes", &ints, &count, st), 0);
  assert_int_equal(count, 2);
  assert_int_equal(ints[0], 1);
  assert_int_equal(wfx_kernel_attr_ints(&kctx, "i", &ints, &count, st),
                   WF_INVALID_ARGUMENT);
  assert_string_equal(wf_status_message(st),
                      "attribute 'i' has type int; expected list(int)");
  assert_int_equal(wfx_kernel_attr_bool(&kctx, "zzz", &b, st),
                   WF_INVALID_ARGUMENT);

  wf_graph_free(g);
  wf_runtime_free(rt);
  wf_status_free(st);
}

static void test_fail_formats_long_messages(void **state) {
  wf_status *st = wf_status_new();
  char big[600];

  memset(big, 'x', sizeof big - 1);
  big[sizeof big - 1] = '\0';
  assert_int_equal(wfx_fail(st, WF_OUT_OF_RANGE, "%s|%d", big, 42),
                   WF_OUT_OF_RANGE);
  assert_int_equal(wf_status_code(st), WF_OUT_OF_RANGE);
  assert_int_equal(strlen(wf_status_message(st)), sizeof big - 1 + 3);
  wf_status_free(st);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_broadcast_follows_numpy_rules),
      cmocka_unit_test(test_broadcast_keeps_what_unknown_dims_allow),
      cmocka_unit_test(test_broadcast_refusal_names_both_shapes),
      cmocka_unit_test(test_shape_merge_fills_unknowns_and_refuses_conflicts),
      cmocka_unit_test(test_bcast_walk_matches_naive_indexing),
      cmocka_unit_test(test_bcast_merges_dims_that_move_together),
      cmocka_unit_test(test_bcast_of_empty_output_has_no_rows),
      cmocka_unit_test(test_axes_normalise_and_refuse_out_of_range),
      cmocka_unit_test(test_shape_text),
      cmocka_unit_test(test_dtype_lists_agree_with_masks_and_sizes),
      cmocka_unit_test(test_attr_reads_through_shape_and_kernel_contexts),
      cmocka_unit_test(test_fail_formats_long_messages),
  };
  return cmocka_run_group_tests_name("opcommon", tests, setup, NULL);
}
