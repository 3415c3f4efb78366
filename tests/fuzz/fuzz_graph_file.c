/* tests/fuzz/fuzz_graph_file.c — fuzz target for graph files
 * (core/io/graph_file.c): the input is a graph file, loaded from memory with
 * wf_graph_from_buffer. A file that loads is serialised again and must
 * load again and serialise to the same bytes (saving is canonical); a file
 * that does not load must be refused with a status that names the source.
 * Beyond those contracts, findings are crashes and sanitizer reports.
 *
 * The runtime holds no plugins from disk: a small op set registered here
 * (a source with a tensor, a placeholder, a binary op, lists in and out,
 * an op with an attribute of every kind, a no-op) covers what the loader
 * handles, with shape functions that check their inputs the way real ones
 * must.
 *
 * With WEFT_FUZZ_PLUGINS=1, the built-in plugins of the build tree are
 * loaded as well, so that files using their ops reach the plugins' shape
 * functions with hostile attributes (seed such a run with files written by
 * tests/tools/test_graph_cli_fixture). The op set here is prefixed "Fz"
 * so the two never clash.
 *
 * With WEFT_FUZZ_WRITE_SEEDS=DIR set, the program writes its seed graphs
 * (tests/fuzz/corpus/graph_file/seed-*) into DIR and exits. */
#include <config.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <weft/weft.h>

#include "graph/graph_internal.h"
#include "plugin/registry.h"
#include "host/host.h"
#include "plugin/runtime_internal.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(c)                                                               \
  do {                                                                         \
    if (!(c)) {                                                                \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #c);    \
      abort();                                                                 \
    }                                                                          \
  } while (0)

static wf_runtime *fuzz_rt;

/* ---- the op set ------------------------------------------------------------
 */

/* Const: the shape of its value. */
static int const_shape(wf_shape_ctx *ctx, wf_status *st) {
  wf_attr_value v, dt;
  wf_shape s;
  if (wf__shape_attr(ctx, "value", &v) || !v.u.tensor)
    return 0;
  if (wf__shape_attr(ctx, "dtype", &dt) == 0 &&
      dt.u.dtype != (int32_t)wf_tensor_dtype(v.u.tensor))
    return wf_status_set(st, WF_INVALID_ARGUMENT,
                         "dtype and the value's dtype differ");
  wf_tensor_shape(v.u.tensor, &s);
  wf__shape_set_output(ctx, 0, &s);
  return 0;
}

static int placeholder_shape(wf_shape_ctx *ctx, wf_status *st) {
  wf_attr_value v;
  (void)st;
  if (wf__shape_attr(ctx, "shape", &v) == 0)
    wf__shape_set_output(ctx, 0, &v.u.shape);
  return 0;
}

/* Elementwise over every input (compatible shapes); every output gets the
 * first known shape. */
static int same_shape(wf_shape_ctx *ctx, wf_status *st) {
  wf_shape s, in;
  wf_shape_unknown(&s);
  for (int32_t i = 0; i < wf__shape_num_inputs(ctx); i++) {
    CHECK(wf__shape_input(ctx, i, NULL, &in) == 0);
    if (!wf_shape_compatible(&s, &in))
      return wf_status_set(st, WF_INVALID_ARGUMENT,
                           "input %d's shape does not match", (int)i);
    if (s.rank < 0)
      s = in;
  }
  CHECK(wf__shape_input(ctx, wf__shape_num_inputs(ctx), NULL, &in) == -1);
  for (int32_t i = 0; i < wf__shape_num_outputs(ctx); i++)
    wf__shape_set_output(ctx, i, &s);
  return 0;
}

/* Kinds: reads every attribute, as a kernel would, and touches every
 * tensor byte. */
static int kinds_shape(wf_shape_ctx *ctx, wf_status *st) {
  static const char *const names[] = {"i",  "f",   "b",   "s",  "dt",
                                      "sh", "t",   "li",  "lf", "lb",
                                      "ls", "ldt", "lsh", "lt"};
  volatile unsigned sink = 0;
  for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
    wf_attr_value v;
    CHECK(wf__shape_attr(ctx, names[k], &v) == 0);
    int64_t n = WF_ATTR_IS_LIST(v.type) ? v.count : 1;
    CHECK(n >= 0);
    for (int64_t i = 0; i < n; i++) {
      const wf_tensor *t = NULL;
      switch (WF_ATTR_BASE(v.type)) {
      case WF_ATTR_STRING:
        sink +=
            (unsigned)strlen(WF_ATTR_IS_LIST(v.type) ? v.u.strings[i] : v.u.s);
        break;
      case WF_ATTR_SHAPE: {
        const wf_shape *s =
            WF_ATTR_IS_LIST(v.type) ? &v.u.shapes[i] : &v.u.shape;
        CHECK(s->rank >= -1 && s->rank <= WF_MAX_RANK);
        break;
      }
      case WF_ATTR_TENSOR:
        t = WF_ATTR_IS_LIST(v.type) ? v.u.tensors[i] : v.u.tensor;
        CHECK(t != NULL);
        for (size_t b = 0; b < wf_tensor_nbytes(t); b++)
          sink += ((const unsigned char *)wf_tensor_data(t))[b];
        break;
      case WF_ATTR_INT:
        sink += (unsigned)(WF_ATTR_IS_LIST(v.type) ? v.u.ints[i] : v.u.i);
        break;
      default:
        break;
      }
    }
  }
  (void)sink;
  return same_shape(ctx, st);
}

#define ATTR(nm, ty)                                                           \
  { WF_STRUCT_INIT(wf_attr_def), .name = (nm), .type = (ty) }
#define ATTR_DEFAULT(nm, ty, ...)                                              \
  {                                                                            \
    WF_STRUCT_INIT(wf_attr_def), .name = (nm), .type = (ty), .has_default = 1, \
                                 .default_value = {                            \
                                   .type = (ty),                               \
                                   .count = 1,                                 \
                                   __VA_ARGS__                                 \
                                 }                                             \
  }

static const wf_arg_def out_dtype[] = {WF_ARG_T("output", "dtype", ""),
                                       WF_ARG_END};
static const wf_attr_def const_attrs[] = {
    ATTR("value", WF_ATTR_TENSOR), ATTR("dtype", WF_ATTR_DTYPE), WF_ATTR_END};
static const wf_attr_def placeholder_attrs[] = {
    ATTR("dtype", WF_ATTR_DTYPE),
    ATTR_DEFAULT("shape", WF_ATTR_SHAPE, .u.shape = {.rank = -1}), WF_ATTR_END};
static const wf_op_def const_op = {WF_STRUCT_INIT(wf_op_def), .name = "FzConst",
                                   .outputs = out_dtype, .attrs = const_attrs,
                                   .shape_fn = const_shape};
static const wf_op_def placeholder_op = {
    WF_STRUCT_INIT(wf_op_def), .name = "FzPlaceholder",
    .outputs = out_dtype,      .attrs = placeholder_attrs,
    .flags = WF_OP_SOURCE_FED, .shape_fn = placeholder_shape};

static const wf_attr_def t_attrs[] = {{WF_STRUCT_INIT(wf_attr_def), .name = "T",
                                       .type = WF_ATTR_DTYPE,
                                       .allowed_dtypes = WF_DTYPES_NUMBER},
                                      WF_ATTR_END};
static const wf_arg_def in_xy[] = {WF_ARG_T("x", "T", ""),
                                   WF_ARG_T("y", "T", ""), WF_ARG_END};
static const wf_arg_def out_z[] = {WF_ARG_T("z", "T", ""), WF_ARG_END};
static const wf_op_def add_op = {
    WF_STRUCT_INIT(wf_op_def), .name = "FzAdd",  .inputs = in_xy,
    .outputs = out_z,          .attrs = t_attrs, .shape_fn = same_shape};

/* AddN: a list in; Unpack: a list out. */
static const wf_attr_def tn_attrs[] = {ATTR("T", WF_ATTR_DTYPE),
                                       {WF_STRUCT_INIT(wf_attr_def),
                                        .name = "N", .type = WF_ATTR_INT,
                                        .has_minimum = 1, .minimum = 1},
                                       WF_ATTR_END};
static const wf_arg_def in_list[] = {WF_ARG_LIST("inputs", "T", "N", ""),
                                     WF_ARG_END};
static const wf_arg_def in_x[] = {WF_ARG_T("x", "T", ""), WF_ARG_END};
static const wf_arg_def out_list[] = {WF_ARG_LIST("outputs", "T", "N", ""),
                                      WF_ARG_END};
static const wf_op_def add_n_op = {
    WF_STRUCT_INIT(wf_op_def), .name = "FzAddN",  .inputs = in_list,
    .outputs = out_z,          .attrs = tn_attrs, .shape_fn = same_shape};
static const wf_op_def unpack_op = {
    WF_STRUCT_INIT(wf_op_def), .name = "FzUnpack", .inputs = in_x,
    .outputs = out_list,       .attrs = tn_attrs,  .shape_fn = same_shape};

/* Two list arguments and a fixed-type one. */
static const wf_attr_def concat_attrs[] = {
    ATTR("T", WF_ATTR_DTYPE),
    {WF_STRUCT_INIT(wf_attr_def), .name = "N", .type = WF_ATTR_INT,
     .has_minimum = 1, .minimum = 0},
    {WF_STRUCT_INIT(wf_attr_def), .name = "M", .type = WF_ATTR_INT,
     .has_minimum = 1, .minimum = 0},
    WF_ATTR_END};
static const wf_arg_def concat_in[] = {
    WF_ARG_FIXED("axis", WF_INT32, ""), WF_ARG_LIST("a", "T", "N", ""),
    WF_ARG_LIST("b", "T", "M", ""), WF_ARG_END};
static const wf_arg_def concat_out[] = {WF_ARG_T("out", "T", ""), WF_ARG_END};
static const wf_op_def concat_op = {
    WF_STRUCT_INIT(wf_op_def), .name = "FzConcat2", .inputs = concat_in,
    .outputs = concat_out, .attrs = concat_attrs};

static const wf_attr_def kinds_attrs[] = {
    ATTR("T", WF_ATTR_DTYPE),
    ATTR_DEFAULT("i", WF_ATTR_INT, .u.i = 3),
    ATTR_DEFAULT("f", WF_ATTR_FLOAT, .u.f = 0.5),
    ATTR_DEFAULT("b", WF_ATTR_BOOL, .u.b = 1),
    ATTR_DEFAULT("s", WF_ATTR_STRING, .u.s = "default"),
    ATTR_DEFAULT("dt", WF_ATTR_DTYPE, .u.dtype = WF_FLOAT32),
    ATTR_DEFAULT("sh", WF_ATTR_SHAPE, .u.shape = {.rank = -1}),
    ATTR("t", WF_ATTR_TENSOR),
    {WF_STRUCT_INIT(wf_attr_def), .name = "li",
     .type = WF_ATTR_LIST | WF_ATTR_INT, .has_minimum = 1, .minimum = 1},
    ATTR("lf", WF_ATTR_LIST | WF_ATTR_FLOAT),
    ATTR("lb", WF_ATTR_LIST | WF_ATTR_BOOL),
    ATTR("ls", WF_ATTR_LIST | WF_ATTR_STRING),
    {WF_STRUCT_INIT(wf_attr_def), .name = "ldt",
     .type = WF_ATTR_LIST | WF_ATTR_DTYPE, .allowed_dtypes = WF_DTYPES_ALL},
    ATTR("lsh", WF_ATTR_LIST | WF_ATTR_SHAPE),
    ATTR("lt", WF_ATTR_LIST | WF_ATTR_TENSOR),
    WF_ATTR_END};
static const wf_op_def kinds_op = {
    WF_STRUCT_INIT(wf_op_def), .name = "FzKinds",    .inputs = in_x,
    .outputs = out_z,          .attrs = kinds_attrs, .shape_fn = kinds_shape};
static const wf_op_def no_op = {WF_STRUCT_INIT(wf_op_def), .name = "FzNoOp",
                                .flags = WF_OP_STATEFUL};

static const wf_op_def *const fuzz_ops[] = {
    &const_op,  &placeholder_op, &add_op, &add_n_op, &unpack_op,
    &concat_op, &kinds_op,       &no_op,  NULL};
static const wf_plugin_desc fuzz_plugin = {WF_STRUCT_INIT(wf_plugin_desc),
                                           .name = "fuzz-ops", .version = "1",
                                           .ops = fuzz_ops};

/* ---- seeds
 * ------------------------------------------------------------------- */

static wf_node *add(wf_graph *g, const char *op, const char *name,
                    const wf_output *in, int nin, int list, wf_status *st) {
  wf_node_desc *d = wf_node_desc_new(g, op, name);
  if (list)
    wf_node_desc_add_input_list(d, in, nin);
  else
    for (int i = 0; i < nin; i++)
      wf_node_desc_add_input(d, in[i]);
  return wf_node_desc_finish(d, st);
}

static wf_output constant(wf_graph *g, const char *name, wf_dtype dt,
                          const int64_t *dims, int rank, const void *data,
                          wf_status *st) {
  wf_tensor *t = wf_tensor_new(dt, dims, rank, st);
  wf_node_desc *d;
  CHECK(t != NULL);
  if (wf_tensor_nbytes(t))
    memcpy(wf_tensor_data(t), data, wf_tensor_nbytes(t));
  d = wf_node_desc_new(g, "FzConst", name);
  wf_node_desc_set_attr_tensor(d, "value", t);
  wf_node_desc_set_attr_dtype(d, "dtype", dt);
  wf_tensor_release(t);
  return (wf_output){wf_node_desc_finish(d, st), 0};
}

static void write_seed(const char *dir, const char *name, wf_graph *g,
                       wf_status *st) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  if (wf_graph_save(g, path, st)) {
    fprintf(stderr, "fuzz: %s\n", wf_status_message(st));
    exit(1);
  }
}

/* The seed corpus: a small dataflow graph (lists in and out, control edges
 * to earlier and later nodes, device requests, scopes), a node with every
 * attribute kind, and an empty graph. */
static void write_seeds(const char *dir, wf_status *st) {
  static const float fv[4] = {1, -2, 3.5f, -0.0f};
  static const int32_t axis = 0;
  const int64_t d4[1] = {4};
  wf_graph *g = wf_graph_new(fuzz_rt);
  wf_node_desc *d;

  d = wf_node_desc_new(g, "FzPlaceholder", "x");
  wf_node_desc_set_attr_dtype(d, "dtype", WF_FLOAT32);
  wf_node_desc_set_attr_shape(d, "shape", d4, 1);
  wf_output x = {wf_node_desc_finish(d, st), 0};
  wf_output c = constant(g, "c", WF_FLOAT32, d4, 1, fv, st);
  CHECK(x.node && c.node);
  CHECK(wf_graph_push_scope(g, "block", st) == 0);
  CHECK(wf_graph_push_device(g, "cpu:0", st) == 0);
  wf_output xc[2] = {x, c};
  wf_output sum = {add(g, "FzAdd", "sum", xc, 2, 0, st), 0};
  CHECK(sum.node);
  wf_graph_pop_device(g);
  wf_output three[3] = {x, sum, c};
  wf_output total = {add(g, "FzAddN", "total", three, 3, 1, st), 0};
  CHECK(total.node);
  wf_graph_pop_scope(g);
  d = wf_node_desc_new(g, "FzUnpack", "parts");
  wf_node_desc_add_input(d, total);
  wf_node_desc_set_attr_int(d, "N", 2);
  wf_node_desc_add_control_input(d, c.node);
  wf_node *parts = wf_node_desc_finish(d, st);
  CHECK(parts);
  wf_output ax = constant(g, "axis", WF_INT32, NULL, 0, &axis, st);
  d = wf_node_desc_new(g, "FzConcat2", "joined");
  wf_node_desc_add_input(d, ax);
  wf_output pa[2] = {{parts, 0}, {parts, 1}};
  wf_node_desc_add_input_list(d, pa, 2);
  wf_node_desc_add_input_list(d, &x, 1);
  CHECK(wf_node_desc_finish(d, st));
  d = wf_node_desc_new(g, "FzNoOp", "done");
  wf_node *done = wf_node_desc_finish(d, st);
  CHECK(done);
  CHECK(wf_graph_add_control_edge(g, done, parts, st) == 0);
  write_seed(dir, "seed-dataflow", g, st);
  wf_graph_free(g);

  g = wf_graph_new(fuzz_rt);
  x = constant(g, "x", WF_INT64, d4, 1, (const int64_t[]){1, 2, 3, 4}, st);
  CHECK(x.node);
  static const uint16_t halfs[2] = {0x3c00, 0xfc00};
  static const uint8_t bools[3] = {1, 0, 1};
  static const double dv[2] = {1e300, -1e-300};
  wf_tensor *lt[3] = {wf_tensor_new(WF_FLOAT16, (const int64_t[]){2}, 1, st),
                      wf_tensor_new(WF_BOOL, (const int64_t[]){3}, 1, st),
                      wf_tensor_new(WF_FLOAT64, (const int64_t[]){2}, 1, st)};
  CHECK(lt[0] && lt[1] && lt[2]);
  memcpy(wf_tensor_data(lt[0]), halfs, sizeof halfs);
  memcpy(wf_tensor_data(lt[1]), bools, sizeof bools);
  memcpy(wf_tensor_data(lt[2]), dv, sizeof dv);
  d = wf_node_desc_new(g, "FzKinds", "kinds");
  wf_node_desc_add_input(d, x);
  wf_node_desc_set_attr_int(d, "i", -5);
  wf_node_desc_set_attr_float(d, "f", 2.25);
  wf_node_desc_set_attr_bool(d, "b", 0);
  wf_node_desc_set_attr_string(d, "s", "text");
  wf_node_desc_set_attr_dtype(d, "dt", WF_BFLOAT16);
  wf_node_desc_set_attr_shape(d, "sh", (const int64_t[]){2, -1}, 2);
  wf_node_desc_set_attr_tensor(d, "t", lt[2]);
  wf_node_desc_set_attr_int_list(d, "li", (const int64_t[]){7, -7}, 2);
  wf_node_desc_set_attr_float_list(d, "lf", dv, 2);
  wf_attr_value lb = {.type = WF_ATTR_LIST | WF_ATTR_BOOL,
                      .count = 2,
                      .u.bools = (const int32_t[]){0, 1}};
  wf_node_desc_set_attr(d, "lb", &lb);
  wf_node_desc_set_attr_string_list(d, "ls", (const char *const[]){"a", ""}, 2);
  wf_node_desc_set_attr_dtype_list(d, "ldt",
                                   (const wf_dtype[]){WF_INT8, WF_UINT8}, 2);
  wf_shape shapes[2];
  wf_shape_unknown(&shapes[0]);
  wf_shape_init(&shapes[1], d4, 1);
  wf_attr_value lsh = {
      .type = WF_ATTR_LIST | WF_ATTR_SHAPE, .count = 2, .u.shapes = shapes};
  wf_node_desc_set_attr(d, "lsh", &lsh);
  wf_attr_value ltv = {.type = WF_ATTR_LIST | WF_ATTR_TENSOR,
                       .count = 3,
                       .u.tensors = (const wf_tensor *const *)lt};
  wf_node_desc_set_attr(d, "lt", &ltv);
  CHECK(wf_node_desc_finish(d, st));
  for (int i = 0; i < 3; i++)
    wf_tensor_release(lt[i]);
  write_seed(dir, "seed-kinds", g, st);
  wf_graph_free(g);

  g = wf_graph_new(fuzz_rt);
  write_seed(dir, "seed-empty", g, st);
  wf_graph_free(g);
}

/* ---- the target
 * ----------------------------------------------------------------- */

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  wf_status *st = wf_status_new();
  const char *seeds = getenv("WEFT_FUZZ_WRITE_SEEDS"), *plugins;
  (void)argc, (void)argv;
  setenv("WEFT_LOG_LEVEL", "error", 0);
  plugins = getenv("WEFT_FUZZ_PLUGINS");
  fuzz_rt = plugins && strcmp(plugins, "1") == 0
                ? wf_runtime_new(NULL, st)
                : wf__runtime_new_empty(NULL, st);
  if (!fuzz_rt ||
      wf__runtime_add_plugin(fuzz_rt, &fuzz_plugin, NULL, NULL, st)) {
    fprintf(stderr, "fuzz: cannot register the ops: %s\n",
            wf_status_message(st));
    abort();
  }
  if (seeds && *seeds) {
    write_seeds(seeds, st);
    exit(0);
  }
  wf_status_free(st);
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  wf_status *st = wf_status_new();
  void *a = NULL, *b = NULL;
  size_t na = 0, nb = 0;
  wf_graph *g, *again;

  CHECK(st != NULL);
  g = wf_graph_from_buffer(fuzz_rt, data, size, "fuzz input", st);
  if (!g) {
    /* Refused: with a code, and a message that names the source. */
    CHECK(wf_status_code(st) != WF_OK);
    CHECK(strstr(wf_status_message(st), "graph file 'fuzz input'") != NULL);
    goto done;
  }
  CHECK(wf_status_code(st) == WF_OK);
  /* What loads saves, loads again and saves to the same bytes. */
  CHECK(wf_graph_to_buffer(g, &a, &na, st) == WF_OK);
  again = wf_graph_from_buffer(fuzz_rt, a, na, "saved again", st);
  if (!again) {
    fprintf(stderr, "fuzz: a loaded graph did not load after saving: %s\n",
            wf_status_message(st));
    abort();
  }
  CHECK(wf_graph_num_nodes(again) == wf_graph_num_nodes(g));
  CHECK(wf_graph_to_buffer(again, &b, &nb, st) == WF_OK);
  CHECK(na == nb && memcmp(a, b, na) == 0);
  wf_graph_free(again);
  wf_graph_free(g);
done:
  free(a);
  free(b);
  wf_status_free(st);
  return 0;
}
