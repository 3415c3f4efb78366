/* tests/core/test_registry.c — the registry: normalising structs of other
 * sizes, checking definitions, conflicts between plugins (named both),
 * identical re-definitions, all-or-nothing registration and look-ups
 * (core/plugin/registry.c). */
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
#include "plugin/registry.h"
#include "base/status_internal.h"

/* ---- definitions used by several tests ----------------------------------- */

static int dummy_compute(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  (void)ctx, (void)state, (void)st;
  return 0;
}

static int dummy_grad(wf_grad_ctx *ctx, wf_status *st) {
  (void)ctx, (void)st;
  return 0;
}

static int dummy_enumerate(void *ps, wf_device_desc *out, int max,
                           wf_status *st) {
  (void)ps, (void)out, (void)max, (void)st;
  return 0;
}

static void *dummy_alloc(void *ds, size_t bytes, size_t align) {
  (void)ds, (void)bytes, (void)align;
  return NULL;
}

static void dummy_free(void *ds, void *p, size_t bytes) {
  (void)ds, (void)p, (void)bytes;
}

static int dummy_pass(wf_pass_ctx *ctx, wf_status *st) {
  (void)ctx, (void)st;
  return 0;
}

static const wf_arg_def binary_in[] = {WF_ARG_T("x", "T", "(N)"),
                                       WF_ARG_T("y", "T", "(N)"), WF_ARG_END};
static const wf_arg_def unary_in[] = {WF_ARG_T("x", "T", "(N)"), WF_ARG_END};
static const wf_arg_def one_out[] = {WF_ARG_T("z", "T", "(N)"), WF_ARG_END};
static const wf_attr_def t_attr[] = {{WF_STRUCT_INIT(wf_attr_def), .name = "T",
                                      .type = WF_ATTR_DTYPE,
                                      .allowed_dtypes = WF_DTYPES_NUMBER},
                                     WF_ATTR_END};

static const wf_op_def add_op = {
    WF_STRUCT_INIT(wf_op_def), .name = "Add",   .inputs = binary_in,
    .outputs = one_out,        .attrs = t_attr, .flags = WF_OP_COMMUTATIVE,
    .doc = "z = x + y"};
/* Same definition as add_op, other documentation. */
static const wf_op_def add_op_same = {WF_STRUCT_INIT(wf_op_def),
                                      .name = "Add",
                                      .inputs = binary_in,
                                      .outputs = one_out,
                                      .attrs = t_attr,
                                      .flags = WF_OP_COMMUTATIVE,
                                      .doc = "adds"};
/* Add with one input: a different definition. */
static const wf_op_def add_op_unary = {WF_STRUCT_INIT(wf_op_def), .name = "Add",
                                       .inputs = unary_in, .outputs = one_out,
                                       .attrs = t_attr};
static const wf_op_def neg_op = {WF_STRUCT_INIT(wf_op_def), .name = "Neg",
                                 .inputs = unary_in, .outputs = one_out,
                                 .attrs = t_attr};
static const wf_op_def abs_op = {WF_STRUCT_INIT(wf_op_def), .name = "Abs",
                                 .inputs = unary_in, .outputs = one_out,
                                 .attrs = t_attr};

static const wf_kernel_def add_cpu_float = {
    WF_STRUCT_INIT(wf_kernel_def), .op = "Add",
    .device_type = "cpu",          .type_attr = "T",
    .dtypes = WF_DTYPES_FLOAT,     .label = "reference",
    .compute = dummy_compute};
static const wf_kernel_def add_cpu_f32_fast = {WF_STRUCT_INIT(wf_kernel_def),
                                               .op = "Add",
                                               .device_type = "cpu",
                                               .type_attr = "T",
                                               .dtypes =
                                                   WF_DTYPE_BIT(WF_FLOAT32),
                                               .priority = 10,
                                               .label = "fast",
                                               .compute = dummy_compute};
static const wf_kernel_def add_cpu_int = {
    WF_STRUCT_INIT(wf_kernel_def), .op = "Add",
    .device_type = "cpu",          .type_attr = "T",
    .dtypes = WF_DTYPES_INT,       .label = "int",
    .compute = dummy_compute};
static const wf_kernel_def add_cpu_f64_clash = {WF_STRUCT_INIT(wf_kernel_def),
                                                .op = "Add",
                                                .device_type = "cpu",
                                                .type_attr = "T",
                                                .dtypes =
                                                    WF_DTYPE_BIT(WF_FLOAT64),
                                                .compute = dummy_compute};
static const wf_kernel_def neg_cpu_any = {WF_STRUCT_INIT(wf_kernel_def),
                                          .op = "Neg", .device_type = "cpu",
                                          .compute = dummy_compute};
static const wf_kernel_def kernel_no_compute = {
    WF_STRUCT_INIT(wf_kernel_def), .op = "Abs", .device_type = "cpu"};

static const wf_gradient_def add_grad = {WF_STRUCT_INIT(wf_gradient_def),
                                         .op = "Add", .fn = dummy_grad};
static const wf_gradient_def neg_not_diff = {
    WF_STRUCT_INIT(wf_gradient_def), .op = "Neg",
    .flags = WF_GRAD_NOT_DIFFERENTIABLE};
static const wf_gradient_def grad_no_fn = {WF_STRUCT_INIT(wf_gradient_def),
                                           .op = "Abs"};

static const wf_device_def cpu_dev = {
    WF_STRUCT_INIT(wf_device_def), .type = "cpu", .enumerate = dummy_enumerate,
    .alloc = dummy_alloc, .free = dummy_free};
static const wf_reader_def idx_reader = {WF_STRUCT_INIT(wf_reader_def),
                                         .name = "idx", .formats = "idx"};
static const wf_pass_def late_pass = {WF_STRUCT_INIT(wf_pass_def),
                                      .name = "late", .order = 20,
                                      .run = dummy_pass};
static const wf_pass_def early_pass = {WF_STRUCT_INIT(wf_pass_def),
                                       .name = "early", .order = 10,
                                       .run = dummy_pass};

#define DESC(...)                                                              \
  { WF_STRUCT_INIT(wf_plugin_desc), __VA_ARGS__ }
#define LIST(T, ...) ((const T *const[]){__VA_ARGS__, NULL})

typedef struct fixture {
  wf__registry *r;
  wf_status *st;
} fixture;

static int setup(void **state) {
  fixture *f = wf__calloc(1, sizeof *f);
  f->r = wf__registry_new();
  f->st = wf_status_new();
  *state = f;
  return f->r && f->st ? 0 : -1;
}

static int teardown(void **state) {
  fixture *f = *state;
  wf__registry_free(f->r);
  wf_status_free(f->st);
  wf__free(f);
  return 0;
}

/* Asserts that the status message contains every given string. */
static void assert_message_has(const wf_status *st, const char *a,
                               const char *b, const char *c) {
  const char *m = wf_status_message(st);
  if ((a && !strstr(m, a)) || (b && !strstr(m, b)) || (c && !strstr(m, c)))
    fail_msg("message \"%s\" lacks \"%s\", \"%s\" or \"%s\"", m, a ? a : "",
             b ? b : "", c ? c : "");
}

/* ---- ops ----------------------------------------------------------------- */

static void test_registry_keeps_ops_sorted_by_name(void **state) {
  fixture *f = *state;
  wf_plugin_desc d =
      DESC(.name = "p", .ops = LIST(wf_op_def, &neg_op, &add_op, &abs_op));
  assert_int_equal(wf__registry_add(f->r, "p", NULL, &d, f->st), WF_OK);
  assert_int_equal(wf__registry_op_count(f->r), 3);
  assert_string_equal(wf__registry_op_at(f->r, 0)->def.name, "Abs");
  assert_string_equal(wf__registry_op_at(f->r, 1)->def.name, "Add");
  assert_string_equal(wf__registry_op_at(f->r, 2)->def.name, "Neg");
  assert_ptr_equal(wf__registry_find_op(f->r, "Neg"),
                   wf__registry_op_at(f->r, 2));
  assert_null(wf__registry_find_op(f->r, "Sub"));
  assert_string_equal(wf__registry_find_op(f->r, "Add")->plugin, "p");
}

static void test_registry_copies_arrays_with_terminators(void **state) {
  fixture *f = *state;
  wf_plugin_desc d = DESC(.name = "p", .ops = LIST(wf_op_def, &add_op));
  const wf__op *op;
  assert_int_equal(wf__registry_add(f->r, "p", NULL, &d, f->st), WF_OK);
  op = wf__registry_find_op(f->r, "Add");
  assert_int_equal(op->num_inputs, 2);
  assert_int_equal(op->num_outputs, 1);
  assert_int_equal(op->num_attrs, 1);
  assert_ptr_equal(op->def.inputs, op->inputs);
  assert_ptr_not_equal(op->inputs, binary_in); /* a copy */
  assert_string_equal(op->inputs[1].name, "y");
  assert_int_equal(op->inputs[2].struct_size, 0);
  assert_int_equal(op->attrs[1].struct_size, 0);
  assert_int_equal(wf__op_attr_index(op, "T"), 0);
  assert_int_equal(wf__op_attr_index(op, "N"), -1);
}

/* An op struct from an older minor: only the members up to attrs. */
static void test_registry_normalises_older_smaller_structs(void **state) {
  fixture *f = *state;
  /* Elements of an older arg layout: no number_attr, no doc. */
  typedef struct old_arg {
    WF_STRUCT_HEADER;
    const char *name;
    int32_t dtype;
    int32_t reserved_;
    const char *type_attr;
  } old_arg;
  static const old_arg old_inputs[] = {
      {sizeof(old_arg), WF_ABI_MAJOR, 0, "a", WF_FLOAT32, 0, NULL},
      {sizeof(old_arg), WF_ABI_MAJOR, 0, "b", WF_INT64, 0, NULL},
      {0, 0, 0, NULL, 0, 0, NULL}};
  /* The flags, shape_fn and doc members hold values the plugin's struct
   * size does not cover: they must read as zero. */
  wf_op_def old = {WF_STRUCT_INIT(wf_op_def), .name = "Old",
                   .inputs = (const wf_arg_def *)(const void *)old_inputs,
                   .flags = WF_OP_STATEFUL, .doc = "not covered"};
  wf_plugin_desc d = DESC(.name = "old", .ops = LIST(wf_op_def, &old));
  const wf__op *op;
  old.struct_size = (uint32_t)offsetof(wf_op_def, flags);
  assert_int_equal(wf__registry_add(f->r, "old", NULL, &d, f->st), WF_OK);
  op = wf__registry_find_op(f->r, "Old");
  assert_non_null(op);
  assert_int_equal(op->def.struct_size, sizeof(wf_op_def));
  assert_int_equal(op->def.flags, 0);
  assert_null(op->def.doc);
  assert_null(op->def.shape_fn);
  assert_int_equal(op->num_inputs, 2);
  assert_string_equal(op->inputs[1].name, "b");
  assert_int_equal(op->inputs[1].dtype, WF_INT64);
  assert_int_equal(op->inputs[1].struct_size, sizeof(wf_arg_def));
  assert_null(op->inputs[0].number_attr);
  assert_null(op->inputs[1].doc);
}

static void test_registry_ignores_members_of_newer_structs(void **state) {
  fixture *f = *state;
  typedef struct new_arg {
    wf_arg_def base;
    const char *future;
  } new_arg;
  static const new_arg new_inputs[] = {
      {{sizeof(new_arg), WF_ABI_MAJOR, WF_ABI_MINOR + 1, "x", WF_FLOAT32, 0,
        NULL, NULL, NULL},
       "ignored"},
      {{0, 0, 0, NULL, 0, 0, NULL, NULL, NULL}, NULL}};
  struct {
    wf_op_def base;
    int64_t future[4];
  } newer = {
      {WF_STRUCT_INIT(wf_op_def), .name = "New", .inputs = &new_inputs[0].base},
      {1, 2, 3, 4}};
  wf_plugin_desc d = DESC(.name = "new", .ops = LIST(wf_op_def, &newer.base));
  const wf__op *op;
  newer.base.struct_size = sizeof newer;
  newer.base.abi_minor = WF_ABI_MINOR + 1;
  assert_int_equal(wf__registry_add(f->r, "new", NULL, &d, f->st), WF_OK);
  op = wf__registry_find_op(f->r, "New");
  assert_int_equal(op->num_inputs, 1);
  assert_string_equal(op->inputs[0].name, "x");
  assert_int_equal(op->def.struct_size, sizeof(wf_op_def));
  assert_int_equal(op->def.abi_minor, WF_ABI_MINOR);
}

/* WF_KERNEL_IN_PLACE came with 1.7: a kernel built for an older minor
 * with that bit set (garbage in a member it did not know) does not get
 * its inputs written over; one of 1.7 keeps it, other flags stay. */
static void test_registry_masks_kernel_flags_newer_than_the_kernel(
    void **state) {
  fixture *f = *state;
  wf_kernel_def old_k = add_cpu_float, new_k = add_cpu_int;
  old_k.abi_minor = 6;
  old_k.flags = WF_KERNEL_CHEAP | WF_KERNEL_IN_PLACE;
  new_k.abi_minor = 7;
  new_k.flags = WF_KERNEL_CHEAP | WF_KERNEL_IN_PLACE;
  wf_plugin_desc d =
      DESC(.name = "p", .ops = LIST(wf_op_def, &add_op),
           .kernels = LIST(wf_kernel_def, &old_k, &new_k));
  assert_int_equal(wf__registry_add(f->r, "p", NULL, &d, f->st), WF_OK);
  int seen = 0;
  for (int i = 0; i < wf__registry_kernel_count(f->r); i++) {
    const wf__kernel *k = wf__registry_kernel_at(f->r, i);
    if (strcmp(k->def.label, "reference") == 0) {
      assert_int_equal(k->def.flags, WF_KERNEL_CHEAP);
      seen |= 1;
    } else if (strcmp(k->def.label, "int") == 0) {
      assert_int_equal(k->def.flags, WF_KERNEL_CHEAP | WF_KERNEL_IN_PLACE);
      seen |= 2;
    }
  }
  assert_int_equal(seen, 3);
}

static void test_registry_refuses_other_abi_major(void **state) {
  fixture *f = *state;
  wf_op_def op = add_op;
  wf_plugin_desc d = DESC(.name = "p", .ops = LIST(wf_op_def, &op));
  op.abi_major = WF_ABI_MAJOR + 1;
  assert_int_equal(wf__registry_add(f->r, "p", NULL, &d, f->st),
                   WF_INVALID_ARGUMENT);
  char other[32], ours[32];
  snprintf(other, sizeof other, "ABI %d.%d", WF_ABI_MAJOR + 1, WF_ABI_MINOR);
  snprintf(ours, sizeof ours, "ABI %d.%d", WF_ABI_MAJOR, WF_ABI_MINOR);
  assert_message_has(f->st, "plugin 'p'", other, ours);
  assert_int_equal(wf__registry_op_count(f->r), 0);
}

static void test_registry_refuses_tiny_struct_size(void **state) {
  fixture *f = *state;
  wf_op_def op = add_op;
  wf_plugin_desc d = DESC(.name = "p", .ops = LIST(wf_op_def, &op));
  op.struct_size = 8;
  assert_int_equal(wf__registry_add(f->r, "p", NULL, &d, f->st),
                   WF_INVALID_ARGUMENT);
  assert_message_has(f->st, "plugin 'p'", "struct_size 8", NULL);
}

static void test_registry_refuses_malformed_op_definitions(void **state) {
  fixture *f = *state;
  static const wf_arg_def both[] = {{WF_STRUCT_INIT(wf_arg_def), .name = "x",
                                     .dtype = WF_FLOAT32, .type_attr = "T"},
                                    WF_ARG_END};
  static const wf_arg_def neither[] = {
      {WF_STRUCT_INIT(wf_arg_def), .name = "x"}, WF_ARG_END};
  static const wf_arg_def unnamed[] = {
      {WF_STRUCT_INIT(wf_arg_def), .dtype = WF_FLOAT32}, WF_ARG_END};
  static const wf_arg_def by_missing_attr[] = {WF_ARG_T("x", "U", ""),
                                               WF_ARG_END};
  static const wf_arg_def typed_by_int[] = {WF_ARG_T("x", "N", ""), WF_ARG_END};
  static const wf_arg_def counted_by_dtype[] = {WF_ARG_LIST("x", "T", "T", ""),
                                                WF_ARG_END};
  static const wf_attr_def n_and_t[] = {
      {WF_STRUCT_INIT(wf_attr_def), .name = "T", .type = WF_ATTR_DTYPE},
      {WF_STRUCT_INIT(wf_attr_def), .name = "N", .type = WF_ATTR_INT},
      WF_ATTR_END};
  static const wf_attr_def bad_default[] = {
      {WF_STRUCT_INIT(wf_attr_def), .name = "k", .type = WF_ATTR_INT,
       .has_default = 1, .default_value = {.type = WF_ATTR_FLOAT, .u.f = 1.5}},
      WF_ATTR_END};
  static const wf_attr_def default_below_min[] = {
      {WF_STRUCT_INIT(wf_attr_def), .name = "k", .type = WF_ATTR_INT,
       .has_default = 1, .default_value = {.type = WF_ATTR_INT, .u.i = 0},
       .has_minimum = 1, .minimum = 1},
      WF_ATTR_END};
  static const wf_attr_def twice[] = {
      {WF_STRUCT_INIT(wf_attr_def), .name = "k", .type = WF_ATTR_INT},
      {WF_STRUCT_INIT(wf_attr_def), .name = "k", .type = WF_ATTR_FLOAT},
      WF_ATTR_END};
  static const wf_attr_def bad_type[] = {
      {WF_STRUCT_INIT(wf_attr_def), .name = "k", .type = 42}, WF_ATTR_END};
  static const struct {
    wf_op_def op;
    const char *expect;
  } cases[] = {
      {{WF_STRUCT_INIT(wf_op_def), .name = ""}, "op 0 has name ''"},
      {{WF_STRUCT_INIT(wf_op_def), .name = "a/b"}, "op 0 has name 'a/b'"},
      {{WF_STRUCT_INIT(wf_op_def), .name = "Both", .inputs = both,
        .attrs = n_and_t},
       "input 'x' must have exactly one of a fixed dtype and a type_attr"},
      {{WF_STRUCT_INIT(wf_op_def), .name = "Neither", .inputs = neither},
       "input 'x' must have exactly one"},
      {{WF_STRUCT_INIT(wf_op_def), .name = "Unnamed", .outputs = unnamed},
       "output 0 has no name"},
      {{WF_STRUCT_INIT(wf_op_def), .name = "Missing", .inputs = by_missing_attr,
        .attrs = n_and_t},
       "attr 'U', which does not exist"},
      {{WF_STRUCT_INIT(wf_op_def), .name = "ByInt", .inputs = typed_by_int,
        .attrs = n_and_t},
       "attr 'N', which is not of type dtype"},
      {{WF_STRUCT_INIT(wf_op_def), .name = "CountDtype",
        .inputs = counted_by_dtype, .attrs = n_and_t},
       "attr 'T', which is not of type int"},
      {{WF_STRUCT_INIT(wf_op_def), .name = "BadDefault", .attrs = bad_default},
       "attr 'k' is int but its default is float"},
      {{WF_STRUCT_INIT(wf_op_def), .name = "LowDefault",
        .attrs = default_below_min},
       "default 0 is below its minimum 1"},
      {{WF_STRUCT_INIT(wf_op_def), .name = "Twice", .attrs = twice},
       "attr 'k' is defined twice"},
      {{WF_STRUCT_INIT(wf_op_def), .name = "BadType", .attrs = bad_type},
       "attr 'k' has invalid type 42"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    wf_plugin_desc d =
        DESC(.name = "bad", .ops = LIST(wf_op_def, &cases[i].op));
    assert_int_not_equal(wf__registry_add(f->r, "bad", NULL, &d, f->st), WF_OK);
    assert_int_equal(wf_status_code(f->st), WF_INVALID_ARGUMENT);
    assert_message_has(f->st, "plugin 'bad'", cases[i].expect, NULL);
  }
  assert_int_equal(wf__registry_op_count(f->r), 0);
}

static void test_registry_conflicting_op_names_both_plugins(void **state) {
  fixture *f = *state;
  wf_plugin_desc a = DESC(.name = "a", .ops = LIST(wf_op_def, &add_op));
  wf_plugin_desc b = DESC(.name = "b", .ops = LIST(wf_op_def, &add_op_unary));
  assert_int_equal(wf__registry_add(f->r, "a", NULL, &a, f->st), WF_OK);
  assert_int_equal(wf__registry_add(f->r, "b", NULL, &b, f->st),
                   WF_ALREADY_EXISTS);
  assert_message_has(f->st, "op 'Add' is defined by plugin 'a'",
                     "differently by plugin 'b'", "2 inputs vs 1");
  assert_string_equal(wf__registry_find_op(f->r, "Add")->plugin, "a");
}

static void test_registry_conflicting_attr_is_described(void **state) {
  fixture *f = *state;
  static const wf_attr_def t_float_only[] = {
      {WF_STRUCT_INIT(wf_attr_def), .name = "T", .type = WF_ATTR_DTYPE,
       .allowed_dtypes = WF_DTYPES_FLOAT},
      WF_ATTR_END};
  wf_op_def other = add_op;
  wf_plugin_desc a = DESC(.name = "a", .ops = LIST(wf_op_def, &add_op));
  wf_plugin_desc b = DESC(.name = "b", .ops = LIST(wf_op_def, &other));
  other.attrs = t_float_only;
  assert_int_equal(wf__registry_add(f->r, "a", NULL, &a, f->st), WF_OK);
  assert_int_equal(wf__registry_add(f->r, "b", NULL, &b, f->st),
                   WF_ALREADY_EXISTS);
  assert_message_has(f->st, "'a'", "'b'", "attr 'T': allowed dtypes");
}

static void test_registry_identical_op_is_accepted_once(void **state) {
  fixture *f = *state;
  wf_plugin_desc a = DESC(.name = "a", .ops = LIST(wf_op_def, &add_op));
  wf_plugin_desc b =
      DESC(.name = "b", .ops = LIST(wf_op_def, &add_op_same, &neg_op));
  assert_int_equal(wf__registry_add(f->r, "a", NULL, &a, f->st), WF_OK);
  assert_int_equal(wf__registry_add(f->r, "b", NULL, &b, f->st), WF_OK);
  assert_int_equal(wf__registry_op_count(f->r), 2);
  assert_string_equal(wf__registry_find_op(f->r, "Add")->plugin, "a");
  assert_string_equal(wf__registry_find_op(f->r, "Neg")->plugin, "b");
}

static void test_registry_op_defined_twice_in_one_plugin(void **state) {
  fixture *f = *state;
  wf_plugin_desc same =
      DESC(.name = "p", .ops = LIST(wf_op_def, &add_op, &add_op_same));
  wf_plugin_desc differ =
      DESC(.name = "q",
           .ops = LIST(wf_op_def, &neg_op, &add_op_unary, &add_op));
  assert_int_equal(wf__registry_add(f->r, "p", NULL, &same, f->st), WF_OK);
  assert_int_equal(wf__registry_op_count(f->r), 1);
  wf__registry_free(f->r);
  f->r = wf__registry_new();
  assert_int_equal(wf__registry_add(f->r, "q", NULL, &differ, f->st),
                   WF_ALREADY_EXISTS);
  assert_message_has(f->st, "op 'Add' is defined twice", "plugin 'q'", NULL);
  assert_int_equal(wf__registry_op_count(f->r), 0);
}

/* ---- kernels ------------------------------------------------------------- */

static void test_registry_kernel_clash_names_both_plugins(void **state) {
  fixture *f = *state;
  wf_plugin_desc a = DESC(.name = "a", .ops = LIST(wf_op_def, &add_op),
                          .kernels = LIST(wf_kernel_def, &add_cpu_float));
  wf_plugin_desc b =
      DESC(.name = "b", .kernels = LIST(wf_kernel_def, &add_cpu_f64_clash));
  assert_int_equal(wf__registry_add(f->r, "a", NULL, &a, f->st), WF_OK);
  assert_int_equal(wf__registry_add(f->r, "b", NULL, &b, f->st),
                   WF_ALREADY_EXISTS);
  assert_message_has(f->st, "op 'Add' on 'cpu'", "plugin 'a'", "plugin 'b'");
  assert_int_equal(wf__registry_kernel_count(f->r), 1);
}

static void
test_registry_kernels_with_other_priority_or_dtypes_coexist(void **state) {
  fixture *f = *state;
  wf_plugin_desc a =
      DESC(.name = "a", .ops = LIST(wf_op_def, &add_op),
           .kernels = LIST(wf_kernel_def, &add_cpu_float, &add_cpu_int));
  wf_plugin_desc b =
      DESC(.name = "b", .kernels = LIST(wf_kernel_def, &add_cpu_f32_fast));
  const wf__kernel *k;
  assert_int_equal(wf__registry_add(f->r, "a", NULL, &a, f->st), WF_OK);
  assert_int_equal(wf__registry_add(f->r, "b", NULL, &b, f->st), WF_OK);
  assert_int_equal(wf__registry_kernel_count(f->r), 3);
  /* Sorted with the highest priority first. */
  assert_string_equal(wf__registry_kernel_at(f->r, 0)->def.label, "fast");
  k = wf__registry_find_kernel(f->r, "Add", "cpu", WF_FLOAT32);
  assert_string_equal(k->def.label, "fast");
  assert_string_equal(k->plugin, "b");
  k = wf__registry_find_kernel(f->r, "Add", "cpu", WF_FLOAT64);
  assert_string_equal(k->def.label, "reference");
  k = wf__registry_find_kernel(f->r, "Add", "cpu", WF_INT32);
  assert_string_equal(k->def.label, "int");
  assert_null(wf__registry_find_kernel(f->r, "Add", "cpu", WF_BOOL));
  assert_null(wf__registry_find_kernel(f->r, "Add", "cpu", WF_DTYPE_INVALID));
  assert_null(wf__registry_find_kernel(f->r, "Add", "cuda", WF_FLOAT32));
}

static void test_registry_unconstrained_kernel_matches_any_dtype(void **state) {
  fixture *f = *state;
  wf_plugin_desc a = DESC(.name = "a", .ops = LIST(wf_op_def, &neg_op),
                          .kernels = LIST(wf_kernel_def, &neg_cpu_any));
  assert_int_equal(wf__registry_add(f->r, "a", NULL, &a, f->st), WF_OK);
  assert_non_null(wf__registry_find_kernel(f->r, "Neg", "cpu", WF_INT8));
  assert_non_null(
      wf__registry_find_kernel(f->r, "Neg", "cpu", WF_DTYPE_INVALID));
}

static void test_registry_kernel_waits_for_its_op(void **state) {
  fixture *f = *state;
  wf_plugin_desc k =
      DESC(.name = "kernels", .kernels = LIST(wf_kernel_def, &add_cpu_float));
  wf_plugin_desc o = DESC(.name = "ops", .ops = LIST(wf_op_def, &add_op));
  assert_int_equal(wf__registry_add(f->r, "kernels", NULL, &k, f->st), WF_OK);
  assert_int_equal(wf__registry_kernel_count(f->r), 1);
  assert_null(wf__registry_find_kernel(f->r, "Add", "cpu", WF_FLOAT32));
  assert_int_equal(wf__registry_add(f->r, "ops", NULL, &o, f->st), WF_OK);
  assert_non_null(wf__registry_find_kernel(f->r, "Add", "cpu", WF_FLOAT32));
}

static void test_registry_refuses_kernel_without_compute(void **state) {
  fixture *f = *state;
  wf_plugin_desc d = DESC(.name = "p", .ops = LIST(wf_op_def, &abs_op),
                          .kernels = LIST(wf_kernel_def, &kernel_no_compute));
  assert_int_equal(wf__registry_add(f->r, "p", NULL, &d, f->st),
                   WF_INVALID_ARGUMENT);
  assert_message_has(f->st, "plugin 'p'", "op 'Abs' on 'cpu'",
                     "no compute function");
}

static void test_registry_refuses_kernel_on_wrong_type_attr(void **state) {
  fixture *f = *state;
  wf_kernel_def k = add_cpu_float;
  wf_plugin_desc d = DESC(.name = "p", .ops = LIST(wf_op_def, &add_op),
                          .kernels = LIST(wf_kernel_def, &k));
  k.type_attr = "U";
  assert_int_equal(wf__registry_add(f->r, "p", NULL, &d, f->st),
                   WF_INVALID_ARGUMENT);
  assert_message_has(f->st, "constrains attr 'U'", "does not have", NULL);
}

/* ---- gradients, devices, readers, passes --------------------------------- */

static void test_registry_second_gradient_names_both_plugins(void **state) {
  fixture *f = *state;
  wf_plugin_desc a =
      DESC(.name = "a", .gradients = LIST(wf_gradient_def, &add_grad));
  wf_plugin_desc b =
      DESC(.name = "b", .gradients = LIST(wf_gradient_def, &add_grad));
  assert_int_equal(wf__registry_add(f->r, "a", NULL, &a, f->st), WF_OK);
  assert_int_equal(wf__registry_add(f->r, "b", NULL, &b, f->st),
                   WF_ALREADY_EXISTS);
  assert_message_has(f->st, "gradient of op 'Add'", "plugin 'a'", "plugin 'b'");
  assert_string_equal(wf__registry_find_gradient(f->r, "Add")->plugin, "a");
}

static void
test_registry_gradient_needs_fn_unless_not_differentiable(void **state) {
  fixture *f = *state;
  wf_plugin_desc bad =
      DESC(.name = "p", .gradients = LIST(wf_gradient_def, &grad_no_fn));
  wf_plugin_desc good =
      DESC(.name = "q", .gradients = LIST(wf_gradient_def, &neg_not_diff));
  assert_int_equal(wf__registry_add(f->r, "p", NULL, &bad, f->st),
                   WF_INVALID_ARGUMENT);
  assert_message_has(f->st, "gradient of op 'Abs'", "no function", NULL);
  assert_int_equal(wf__registry_add(f->r, "q", NULL, &good, f->st), WF_OK);
  assert_true(wf__registry_find_gradient(f->r, "Neg")->def.flags &
              WF_GRAD_NOT_DIFFERENTIABLE);
  assert_null(wf__registry_find_gradient(f->r, "Abs"));
}

static void test_registry_duplicate_device_reader_pass_name_both(void **state) {
  fixture *f = *state;
  int plugin_state;
  wf_plugin_desc a = DESC(.name = "a", .devices = LIST(wf_device_def, &cpu_dev),
                          .readers = LIST(wf_reader_def, &idx_reader),
                          .passes = LIST(wf_pass_def, &late_pass));
  wf_plugin_desc dev =
      DESC(.name = "b", .devices = LIST(wf_device_def, &cpu_dev));
  wf_plugin_desc rd =
      DESC(.name = "c", .readers = LIST(wf_reader_def, &idx_reader));
  wf_plugin_desc ps =
      DESC(.name = "d", .passes = LIST(wf_pass_def, &late_pass));
  assert_int_equal(wf__registry_add(f->r, "a", &plugin_state, &a, f->st),
                   WF_OK);
  assert_ptr_equal(wf__registry_device_type_at(f->r, 0)->plugin_state,
                   &plugin_state);
  assert_int_equal(wf__registry_add(f->r, "b", NULL, &dev, f->st),
                   WF_ALREADY_EXISTS);
  assert_message_has(f->st, "device type 'cpu'", "plugin 'a'", "plugin 'b'");
  assert_int_equal(wf__registry_add(f->r, "c", NULL, &rd, f->st),
                   WF_ALREADY_EXISTS);
  assert_message_has(f->st, "reader 'idx'", "plugin 'a'", "plugin 'c'");
  assert_int_equal(wf__registry_add(f->r, "d", NULL, &ps, f->st),
                   WF_ALREADY_EXISTS);
  assert_message_has(f->st, "pass 'late'", "plugin 'a'", "plugin 'd'");
  assert_int_equal(wf__registry_device_type_count(f->r), 1);
  assert_int_equal(wf__registry_reader_count(f->r), 1);
  assert_int_equal(wf__registry_pass_count(f->r), 1);
}

static void
test_registry_device_type_needs_enumerate_and_paired_alloc(void **state) {
  fixture *f = *state;
  wf_device_def dev = cpu_dev;
  wf_plugin_desc d = DESC(.name = "p", .devices = LIST(wf_device_def, &dev));
  dev.alloc = NULL;
  assert_int_equal(wf__registry_add(f->r, "p", NULL, &d, f->st),
                   WF_INVALID_ARGUMENT);
  assert_message_has(f->st, "device type 'cpu'",
                     "lacks an alloc function to go with its free", NULL);
  dev.free = NULL; /* neither: host memory */
  dev.enumerate = NULL;
  assert_int_equal(wf__registry_add(f->r, "p", NULL, &d, f->st),
                   WF_INVALID_ARGUMENT);
  assert_message_has(f->st, "device type 'cpu'", "lacks an enumerate function",
                     NULL);
  dev.enumerate = dummy_enumerate;
  assert_int_equal(wf__registry_add(f->r, "p", NULL, &d, f->st), WF_OK);
  assert_null(wf__registry_device_type_at(f->r, 0)->def.alloc);
}

static void test_registry_sorts_passes_by_order(void **state) {
  fixture *f = *state;
  wf_plugin_desc d =
      DESC(.name = "p", .passes = LIST(wf_pass_def, &late_pass, &early_pass));
  assert_int_equal(wf__registry_add(f->r, "p", NULL, &d, f->st), WF_OK);
  assert_string_equal(wf__registry_pass_at(f->r, 0)->def.name, "early");
  assert_string_equal(wf__registry_pass_at(f->r, 1)->def.name, "late");
}

/* ---- all or nothing ------------------------------------------------------ */

static void assert_registry_counts(const wf__registry *r, int ops, int kernels,
                                   int grads, int devs) {
  assert_int_equal(wf__registry_op_count(r), ops);
  assert_int_equal(wf__registry_kernel_count(r), kernels);
  if (grads)
    assert_non_null(wf__registry_find_gradient(r, "Add"));
  else
    assert_null(wf__registry_find_gradient(r, "Add"));
  assert_int_equal(wf__registry_device_type_count(r), devs);
}

static void test_registry_failed_plugin_adds_nothing(void **state) {
  fixture *f = *state;
  /* Everything valid except the last kernel. */
  wf_plugin_desc d =
      DESC(.name = "p", .ops = LIST(wf_op_def, &add_op, &abs_op),
           .kernels = LIST(wf_kernel_def, &add_cpu_float, &kernel_no_compute),
           .gradients = LIST(wf_gradient_def, &add_grad),
           .devices = LIST(wf_device_def, &cpu_dev));
  assert_int_not_equal(wf__registry_add(f->r, "p", NULL, &d, f->st), WF_OK);
  assert_registry_counts(f->r, 0, 0, 0, 0);
  /* A plugin that is fine afterwards registers normally. */
  d.kernels = LIST(wf_kernel_def, &add_cpu_float);
  assert_int_equal(wf__registry_add(f->r, "p", NULL, &d, f->st), WF_OK);
  assert_registry_counts(f->r, 2, 1, 1, 1);
}

static void test_registry_refuses_without_a_status_object(void **state) {
  fixture *f = *state;
  wf_plugin_desc d = DESC(.name = "p", .ops = LIST(wf_op_def, &abs_op),
                          .kernels = LIST(wf_kernel_def, &kernel_no_compute));
  assert_int_equal(wf__registry_add(f->r, "p", NULL, &d, NULL),
                   WF_INVALID_ARGUMENT);
  assert_int_equal(wf__registry_op_count(f->r), 0);
}

static void test_registry_out_of_memory_adds_nothing(void **state) {
  fixture *f = *state;
  wf_plugin_desc base = DESC(.name = "base", .ops = LIST(wf_op_def, &neg_op),
                             .kernels = LIST(wf_kernel_def, &neg_cpu_any));
  wf_plugin_desc d =
      DESC(.name = "p", .ops = LIST(wf_op_def, &add_op, &abs_op),
           .kernels = LIST(wf_kernel_def, &add_cpu_float, &add_cpu_int),
           .gradients = LIST(wf_gradient_def, &add_grad),
           .devices = LIST(wf_device_def, &cpu_dev),
           .readers = LIST(wf_reader_def, &idx_reader),
           .passes = LIST(wf_pass_def, &late_pass, &early_pass));
  int failures = 0, rc;
  assert_int_equal(wf__registry_add(f->r, "base", NULL, &base, f->st), WF_OK);
  /* Fail the 1st, 2nd, ... allocation until registration gets through;
   * every failure must leave exactly the base plugin's entries. */
  for (long k = 1;; k++) {
    wf__alloc_fail_after(k, 0);
    rc = wf__registry_add(f->r, "p", NULL, &d, f->st);
    wf__alloc_fail_after(0, 0);
    if (rc == WF_OK)
      break;
    failures++;
    assert_int_equal(rc, WF_RESOURCE_EXHAUSTED);
    assert_message_has(f->st, "plugin 'p'", "out of memory", NULL);
    assert_registry_counts(f->r, 1, 1, 0, 0);
    assert_int_equal(wf__registry_reader_count(f->r), 0);
    assert_int_equal(wf__registry_pass_count(f->r), 0);
  }
  assert_true(failures > 5);
  assert_registry_counts(f->r, 3, 3, 1, 1);
  assert_int_equal(wf__registry_pass_count(f->r), 2);
}

int main(void) {
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
  const struct CMUnitTest tests[] = {
      T(test_registry_keeps_ops_sorted_by_name),
      T(test_registry_copies_arrays_with_terminators),
      T(test_registry_normalises_older_smaller_structs),
      T(test_registry_ignores_members_of_newer_structs),
      T(test_registry_masks_kernel_flags_newer_than_the_kernel),
      T(test_registry_refuses_other_abi_major),
      T(test_registry_refuses_tiny_struct_size),
      T(test_registry_refuses_malformed_op_definitions),
      T(test_registry_conflicting_op_names_both_plugins),
      T(test_registry_conflicting_attr_is_described),
      T(test_registry_identical_op_is_accepted_once),
      T(test_registry_op_defined_twice_in_one_plugin),
      T(test_registry_kernel_clash_names_both_plugins),
      T(test_registry_kernels_with_other_priority_or_dtypes_coexist),
      T(test_registry_unconstrained_kernel_matches_any_dtype),
      T(test_registry_kernel_waits_for_its_op),
      T(test_registry_refuses_kernel_without_compute),
      T(test_registry_refuses_kernel_on_wrong_type_attr),
      T(test_registry_second_gradient_names_both_plugins),
      T(test_registry_gradient_needs_fn_unless_not_differentiable),
      T(test_registry_duplicate_device_reader_pass_name_both),
      T(test_registry_device_type_needs_enumerate_and_paired_alloc),
      T(test_registry_sorts_passes_by_order),
      T(test_registry_failed_plugin_adds_nothing),
      T(test_registry_refuses_without_a_status_object),
      T(test_registry_out_of_memory_adds_nothing),
  };
#undef T
  return cmocka_run_group_tests(tests, NULL, NULL);
}
