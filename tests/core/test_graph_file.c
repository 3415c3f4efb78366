/* tests/core/test_graph_file.c — graph files (core/io/graph_file.c): exact
 * round trips (a layers-API training graph that trains the same after
 * loading, every attribute kind bit for bit, list inputs, control edges to
 * later nodes), pruned and atomic saves, compatibility (a newer file with
 * unknown fields loads, one that needs a newer reader does not), every
 * refusal of a bad file naming the file, node and problem, and allocation
 * failures at every step. Uses the built-in plugins of the build tree and
 * a test plugin registered in-process. */
#include <config.h>

/* cmocka needs these first. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <weft/weft.h>

#include "base/alloc.h"
#include "graph/attr.h"
#include "graph/graph_internal.h"
#include "io/graph.pb-c.h"
#include "plugin/runtime_internal.h"

static wf_runtime *rt;
static wf_status *st;
static char dir[256];

#define OK(x)                                                                  \
  do {                                                                         \
    if (x)                                                                     \
      fail_msg("%s: %s", #x, wf_status_message(st));                           \
  } while (0)

/* ---- a test plugin: every attribute kind and two list arguments ---------- */

/* Every output gets input 0's shape. */
static int first_input_shape(wf_shape_ctx *ctx, wf_status *s) {
  wf_shape in;
  (void)s;
  if (wf__shape_input(ctx, 0, NULL, &in) == 0)
    for (int32_t i = 0; i < wf__shape_num_outputs(ctx); i++)
      wf__shape_set_output(ctx, i, &in);
  return 0;
}

#define ATTR(nm, ty)                                                           \
  { WF_STRUCT_INIT(wf_attr_def), .name = (nm), .type = (ty) }

static const wf_attr_def kinds_attrs[] = {
    ATTR("T", WF_ATTR_DTYPE),
    {WF_STRUCT_INIT(wf_attr_def), .name = "N", .type = WF_ATTR_INT,
     .has_minimum = 1, .minimum = 1},
    ATTR("i", WF_ATTR_INT),
    ATTR("f", WF_ATTR_FLOAT),
    ATTR("b", WF_ATTR_BOOL),
    ATTR("s", WF_ATTR_STRING),
    ATTR("dt", WF_ATTR_DTYPE),
    ATTR("sh", WF_ATTR_SHAPE),
    ATTR("t", WF_ATTR_TENSOR),
    ATTR("li", WF_ATTR_LIST | WF_ATTR_INT),
    ATTR("lf", WF_ATTR_LIST | WF_ATTR_FLOAT),
    ATTR("lb", WF_ATTR_LIST | WF_ATTR_BOOL),
    ATTR("ls", WF_ATTR_LIST | WF_ATTR_STRING),
    ATTR("ldt", WF_ATTR_LIST | WF_ATTR_DTYPE),
    ATTR("lsh", WF_ATTR_LIST | WF_ATTR_SHAPE),
    ATTR("lt", WF_ATTR_LIST | WF_ATTR_TENSOR),
    {WF_STRUCT_INIT(wf_attr_def), .name = "dflt", .type = WF_ATTR_INT,
     .has_default = 1,
     .default_value = {.type = WF_ATTR_INT, .count = 1, .u.i = 42}},
    WF_ATTR_END};
static const wf_arg_def kinds_in[] = {WF_ARG_LIST("xs", "T", "N", ""),
                                      WF_ARG_FIXED("y", WF_FLOAT32, ""),
                                      WF_ARG_END};
static const wf_arg_def kinds_out[] = {WF_ARG_LIST("outs", "T", "N", ""),
                                       WF_ARG_END};
static const wf_op_def kinds_op = {
    WF_STRUCT_INIT(wf_op_def), .name = "GfAllKinds",
    .inputs = kinds_in,        .outputs = kinds_out,
    .attrs = kinds_attrs,      .shape_fn = first_input_shape};

static const wf_attr_def two_lists_attrs[] = {
    ATTR("T", WF_ATTR_DTYPE),
    {WF_STRUCT_INIT(wf_attr_def), .name = "N", .type = WF_ATTR_INT,
     .has_minimum = 1, .minimum = 0},
    {WF_STRUCT_INIT(wf_attr_def), .name = "M", .type = WF_ATTR_INT,
     .has_minimum = 1, .minimum = 0},
    WF_ATTR_END};
static const wf_arg_def two_lists_in[] = {
    WF_ARG_LIST("a", "T", "N", ""), WF_ARG_LIST("b", "T", "M", ""), WF_ARG_END};
static const wf_arg_def two_lists_out[] = {WF_ARG_T("out", "T", ""),
                                           WF_ARG_END};
static const wf_op_def two_lists_op = {
    WF_STRUCT_INIT(wf_op_def), .name = "GfTwoLists", .inputs = two_lists_in,
    .outputs = two_lists_out, .attrs = two_lists_attrs};

static const wf_op_def *const test_ops[] = {&kinds_op, &two_lists_op, NULL};
static const wf_plugin_desc test_plugin = {WF_STRUCT_INIT(wf_plugin_desc),
                                           .name = "gf-test",
                                           .version = "1.2.3", .ops = test_ops};

/* ---- fixtures -------------------------------------------------------------
 */

static int setup(void **state) {
  (void)state;
  st = wf_status_new();
  rt = wf_runtime_new(NULL, st);
  if (!rt)
    fail_msg("runtime: %s", wf_status_message(st));
  if (wf__runtime_add_plugin(rt, &test_plugin, NULL, NULL, st))
    fail_msg("test plugin: %s", wf_status_message(st));
  snprintf(dir, sizeof dir, "%s/weft-gf-XXXXXX",
           getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
  if (!mkdtemp(dir))
    fail_msg("mkdtemp %s failed", dir);
  return 0;
}

/* Removes everything in dir (one level of subdirectories). */
static void empty_dir(const char *d, int remove_self) {
  DIR *h = opendir(d);
  struct dirent *e;
  char p[1024];
  if (!h)
    return;
  while ((e = readdir(h)) != NULL) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
      continue;
    snprintf(p, sizeof p, "%s/%s", d, e->d_name);
    if (unlink(p) != 0)
      empty_dir(p, 1);
  }
  closedir(h);
  if (remove_self)
    rmdir(d);
}

static int teardown(void **state) {
  (void)state;
  empty_dir(dir, 1);
  wf_runtime_free(rt);
  wf_status_free(st);
  return 0;
}

static const char *path_in(const char *name) {
  static char p[2][512];
  static int k;
  k ^= 1;
  snprintf(p[k], sizeof p[k], "%s/%s", dir, name);
  return p[k];
}

static int count_entries(const char *d) {
  DIR *h = opendir(d);
  struct dirent *e;
  int n = 0;
  assert_non_null(h);
  while ((e = readdir(h)) != NULL)
    n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
  closedir(h);
  return n;
}

static wf_output placeholder(wf_graph *g, const char *name, wf_dtype dt,
                             const int64_t *dims, int rank) {
  wf_node_desc *d = wf_node_desc_new(g, "Placeholder", name);
  wf_node_desc_set_attr_dtype(d, "dtype", dt);
  wf_node_desc_set_attr_shape(d, "shape", dims, rank);
  wf_node *n = wf_node_desc_finish(d, st);
  if (!n)
    fail_msg("placeholder %s: %s", name, wf_status_message(st));
  return (wf_output){n, 0};
}

static wf_tensor *tensor_of(wf_dtype dt, const int64_t *dims, int rank,
                            const void *data) {
  wf_tensor *t = wf_tensor_new(dt, dims, rank, st);
  if (!t)
    fail_msg("tensor: %s", wf_status_message(st));
  if (wf_tensor_nbytes(t))
    memcpy(wf_tensor_data(t), data, wf_tensor_nbytes(t));
  return t;
}

static wf_output constant(wf_graph *g, const char *name, wf_tensor *t) {
  wf_node_desc *d = wf_node_desc_new(g, "Const", name);
  wf_node_desc_set_attr_tensor(d, "value", t);
  wf_node_desc_set_attr_dtype(d, "dtype", wf_tensor_dtype(t));
  wf_node *n = wf_node_desc_finish(d, st);
  wf_tensor_release(t);
  if (!n)
    fail_msg("const %s: %s", name, wf_status_message(st));
  return (wf_output){n, 0};
}

static wf_output unary(wf_graph *g, const char *op, const char *name,
                       wf_output x) {
  wf_node_desc *d = wf_node_desc_new(g, op, name);
  wf_node_desc_add_input(d, x);
  wf_node *n = wf_node_desc_finish(d, st);
  if (!n)
    fail_msg("%s %s: %s", op, name, wf_status_message(st));
  return (wf_output){n, 0};
}

static wf_output binary(wf_graph *g, const char *op, const char *name,
                        wf_output x, wf_output y) {
  wf_node_desc *d = wf_node_desc_new(g, op, name);
  wf_node_desc_add_input(d, x);
  wf_node_desc_add_input(d, y);
  wf_node *n = wf_node_desc_finish(d, st);
  if (!n)
    fail_msg("%s %s: %s", op, name, wf_status_message(st));
  return (wf_output){n, 0};
}

/* x (Placeholder float32 (2, 3)), c (Const float32 (2, 3)), sum = Add(x,
 * c), out = Neg(sum) waiting for c. Node ids 0..3 in that order. */
static wf_graph *small_graph(void) {
  static const float cv[6] = {1, 2, 3, 4, 5, 6};
  const int64_t dims[2] = {2, 3};
  wf_graph *g = wf_graph_new(rt);
  wf_output x = placeholder(g, "x", WF_FLOAT32, dims, 2);
  wf_output c = constant(g, "c", tensor_of(WF_FLOAT32, dims, 2, cv));
  wf_output sum = binary(g, "Add", "sum", x, c);
  wf_output out = unary(g, "Neg", "out", sum);
  OK(wf_graph_add_control_edge(g, c.node, out.node, st));
  return g;
}

/* ---- comparing graphs bit for bit ------------------------------------------
 */

static int tensor_bits_equal(const wf_tensor *a, const wf_tensor *b) {
  wf_shape sa, sb;
  if (!a || !b)
    return a == b;
  wf_tensor_shape(a, &sa);
  wf_tensor_shape(b, &sb);
  return wf_tensor_dtype(a) == wf_tensor_dtype(b) && wf_shape_equal(&sa, &sb) &&
         wf_tensor_nbytes(a) == wf_tensor_nbytes(b) &&
         memcmp(wf_tensor_data(a), wf_tensor_data(b), wf_tensor_nbytes(a)) == 0;
}

/* Equal in type and value, floats and tensors compared bit for bit. */
static int attr_bits_equal(const wf_attr_value *a, const wf_attr_value *b) {
  int64_t n = a->count;
  if (a->type != b->type || a->count != b->count)
    return 0;
  switch (a->type) {
  case WF_ATTR_FLOAT:
    return memcmp(&a->u.f, &b->u.f, sizeof a->u.f) == 0;
  case WF_ATTR_LIST | WF_ATTR_FLOAT:
    return n == 0 || memcmp(a->u.floats, b->u.floats,
                            (size_t)n * sizeof *a->u.floats) == 0;
  case WF_ATTR_TENSOR:
    return tensor_bits_equal(a->u.tensor, b->u.tensor);
  case WF_ATTR_LIST | WF_ATTR_TENSOR:
    for (int64_t i = 0; i < n; i++)
      if (!tensor_bits_equal(a->u.tensors[i], b->u.tensors[i]))
        return 0;
    return 1;
  default:
    return wf__attr_equal(a, b);
  }
}

static void assert_graphs_equal(const wf_graph *a, const wf_graph *b) {
  assert_int_equal(wf_graph_num_nodes(a), wf_graph_num_nodes(b));
  for (int i = 0; i < wf_graph_num_nodes(a); i++) {
    const wf_node *x = wf_graph_node(a, i), *y = wf_graph_node(b, i);
    assert_string_equal(wf_node_name(x), wf_node_name(y));
    assert_string_equal(wf_node_op(x), wf_node_op(y));
    assert_string_equal(wf_node_device(x), wf_node_device(y));
    assert_int_equal(wf_node_num_inputs(x), wf_node_num_inputs(y));
    for (int k = 0; k < wf_node_num_inputs(x); k++) {
      wf_output ix = wf_node_input(x, k), iy = wf_node_input(y, k);
      assert_string_equal(wf_node_name(ix.node), wf_node_name(iy.node));
      assert_int_equal(ix.index, iy.index);
    }
    assert_int_equal(wf_node_num_control_inputs(x),
                     wf_node_num_control_inputs(y));
    for (int k = 0; k < wf_node_num_control_inputs(x); k++)
      assert_string_equal(wf_node_name(wf_node_control_input(x, k)),
                          wf_node_name(wf_node_control_input(y, k)));
    assert_int_equal(wf_node_num_attrs(x), wf_node_num_attrs(y));
    for (int k = 0; k < wf_node_num_attrs(x); k++) {
      wf_attr_value vx, vy;
      const char *nx = wf_node_attr_name(x, k, &vx);
      const char *ny = wf_node_attr_name(y, k, &vy);
      assert_string_equal(nx, ny);
      if (!attr_bits_equal(&vx, &vy))
        fail_msg("node '%s': attribute '%s' differs after the round trip",
                 wf_node_name(x), nx);
    }
    assert_int_equal(wf_node_num_outputs(x), wf_node_num_outputs(y));
    for (int k = 0; k < wf_node_num_outputs(x); k++) {
      wf_shape sx, sy;
      assert_int_equal(wf_node_output_dtype(x, k), wf_node_output_dtype(y, k));
      wf_node_output_shape(x, k, &sx);
      wf_node_output_shape(y, k, &sy);
      assert_true(wf_shape_equal(&sx, &sy));
    }
  }
}

/* g through a buffer and back. */
static wf_graph *through_buffer(const wf_graph *g) {
  void *buf;
  size_t len;
  OK(wf_graph_to_buffer(g, &buf, &len, st));
  wf_graph *back = wf_graph_from_buffer(rt, buf, len, "round trip", st);
  free(buf);
  if (!back)
    fail_msg("reload: %s", wf_status_message(st));
  return back;
}

/* ---- editing files at the protobuf level ------------------------------------
 */

typedef void edit_fn(Weft__GraphFile *f);

static void set_str(char **field, const char *v) {
  free(*field);
  *field = v ? strdup(v) : NULL;
}

/* g's bytes after edit: a malloc'd buffer of *len bytes. */
static void *edited(const wf_graph *g, edit_fn *edit, size_t *len) {
  void *buf, *out;
  size_t n;
  Weft__GraphFile *f;
  OK(wf_graph_to_buffer(g, &buf, &n, st));
  f = weft__graph_file__unpack(NULL, n, buf);
  free(buf);
  assert_non_null(f);
  edit(f);
  *len = protobuf_c_message_get_packed_size(&f->base);
  out = malloc(*len + 1);
  assert_non_null(out);
  protobuf_c_message_pack(&f->base, out);
  weft__graph_file__free_unpacked(f, NULL);
  return out;
}

/* Loads bytes that must be refused with code, the message naming the
 * source and every string in `needles` (NULL-terminated). */
static void expect_refusal_(const void *buf, size_t len, wf_code code,
                            const char *const *needles) {
  wf_graph *g = wf_graph_from_buffer(rt, buf, len, "crafted.wfg", st);
  if (g) {
    wf_graph_free(g);
    fail_msg("a bad file loaded (expected %s)", wf_code_name(code));
  }
  if (wf_status_code(st) != code)
    fail_msg("expected %s, got %s: %s", wf_code_name(code),
             wf_code_name(wf_status_code(st)), wf_status_message(st));
  if (!strstr(wf_status_message(st), "graph file 'crafted.wfg'"))
    fail_msg("the message does not name the file: %s", wf_status_message(st));
  for (int i = 0; needles[i]; i++)
    if (!strstr(wf_status_message(st), needles[i]))
      fail_msg("the message lacks \"%s\": %s", needles[i],
               wf_status_message(st));
}

#define expect_refusal(buf, len, code, ...)                                    \
  expect_refusal_(buf, len, code, (const char *const[]){__VA_ARGS__, NULL})

/* Refuses small_graph() after edit. */
static void refuse_edit_(edit_fn *edit, wf_code code,
                         const char *const *needles) {
  wf_graph *g = small_graph();
  size_t len;
  void *buf = edited(g, edit, &len);
  expect_refusal_(buf, len, code, needles);
  free(buf);
  wf_graph_free(g);
}

#define refuse_edit(edit, code, ...)                                           \
  refuse_edit_(edit, code, (const char *const[]){__VA_ARGS__, NULL})

static Weft__Attr *attr_of(Weft__Node *n, const char *name) {
  for (size_t i = 0; i < n->n_attrs; i++)
    if (strcmp(n->attrs[i]->name, name) == 0)
      return n->attrs[i];
  fail_msg("node '%s' has no attribute '%s' in the file", n->name, name);
  return NULL;
}

/* ---- round trips ------------------------------------------------------------
 */

typedef struct trainer {
  wf_graph *g;
  wf_output x, labels, loss;
  wf_node *train, *init;
} trainer;

/* A small classifier built with the layers API: dense 12 -> 16 (ReLU, on
 * a requested device), dropout, dense 16 -> 4, softmax cross-entropy,
 * Adam; seed 1234. */
static trainer training_graph(void) {
  const int64_t xd[2] = {8, 12}, yd[1] = {8};
  trainer t;
  wf_model *m;
  wf_optimizer opt = wf_optimizer_defaults(WF_OPT_ADAM);
  t.g = wf_graph_new(rt);
  t.x = placeholder(t.g, "x", WF_FLOAT32, xd, 2);
  t.labels = placeholder(t.g, "labels", WF_INT32, yd, 1);
  m = wf_model_new(t.g, 1234, st);
  assert_non_null(m);
  wf_model_begin(m, 1);
  OK(wf_graph_push_device(t.g, "cpu:0", st));
  wf_output h = wf_layer_dense(m, t.x, 16, WF_ACT_RELU, st);
  wf_graph_pop_device(t.g);
  h = wf_layer_dropout(m, h, 0.25, st);
  wf_output logits = wf_layer_dense(m, h, 4, WF_ACT_NONE, st);
  t.loss = wf_loss_sparse_softmax_cross_entropy(m, logits, t.labels, st);
  if (!t.loss.node)
    fail_msg("model: %s", wf_status_message(st));
  t.train = wf_model_minimize(m, t.loss, &opt, st);
  if (!t.train)
    fail_msg("minimize: %s", wf_status_message(st));
  t.init = wf_model_init_op(m, st);
  assert_non_null(t.init);
  wf_model_free(m);
  return t;
}

/* t's nodes, looked up by name in g. */
static trainer same_nodes_in(const trainer *t, wf_graph *g) {
  trainer u;
  u.g = g;
  u.x = (wf_output){wf_graph_find_node(g, wf_node_name(t->x.node)), 0};
  u.labels =
      (wf_output){wf_graph_find_node(g, wf_node_name(t->labels.node)), 0};
  u.loss = (wf_output){wf_graph_find_node(g, wf_node_name(t->loss.node)),
                       t->loss.index};
  u.train = wf_graph_find_node(g, wf_node_name(t->train));
  u.init = wf_graph_find_node(g, wf_node_name(t->init));
  assert_non_null(u.x.node);
  assert_non_null(u.labels.node);
  assert_non_null(u.loss.node);
  assert_non_null(u.train);
  assert_non_null(u.init);
  return u;
}

/* Initialises a new session on t and runs `steps` training steps on fixed
 * data, recording each step's loss. */
static void train(const trainer *t, float *losses, int steps) {
  const int64_t xd[2] = {8, 12}, yd[1] = {8};
  float xv[96];
  int32_t yv[8];
  for (int i = 0; i < 96; i++)
    xv[i] = (float)sin(0.7 * i + 0.1);
  for (int i = 0; i < 8; i++)
    yv[i] = (i * 3) % 4;
  wf_tensor *vals[2] = {tensor_of(WF_FLOAT32, xd, 2, xv),
                        tensor_of(WF_INT32, yd, 1, yv)};
  wf_output feeds[2] = {t->x, t->labels};
  wf_session *s = wf_session_new(t->g, st);
  if (!s)
    fail_msg("session: %s", wf_status_message(st));
  OK(wf_session_run(s, NULL, NULL, NULL, 0, NULL, NULL, 0, &t->init, 1, NULL,
                    st));
  for (int i = 0; i < steps; i++) {
    wf_tensor *l = NULL;
    OK(wf_session_run(s, NULL, feeds, vals, 2, &t->loss, &l, 1, &t->train, 1,
                      NULL, st));
    losses[i] = *(const float *)wf_tensor_data(l);
    wf_tensor_release(l);
  }
  wf_session_free(s);
  wf_tensor_release(vals[0]);
  wf_tensor_release(vals[1]);
}

static void test_training_graph_round_trips_and_trains_the_same(void **state) {
  (void)state;
  trainer t = training_graph();
  const char *path = path_in("train.wfg");
  float before[3], after[3];

  OK(wf_graph_save(t.g, path, st));
  wf_graph *g = wf_graph_load(rt, path, st);
  if (!g)
    fail_msg("load: %s", wf_status_message(st));
  assert_graphs_equal(t.g, g);
  /* The device request survived. */
  int requested = 0;
  for (int i = 0; i < wf_graph_num_nodes(g); i++)
    requested += strcmp(wf_node_device(wf_graph_node(g, i)), "cpu:0") == 0;
  assert_true(requested > 0);

  trainer u = same_nodes_in(&t, g);
  train(&t, before, 3);
  train(&u, after, 3);
  for (int i = 0; i < 3; i++)
    if (memcmp(&before[i], &after[i], sizeof before[i]) != 0)
      fail_msg("step %d: loss %.9g on the original, %.9g after loading", i,
               before[i], after[i]);
  assert_true(before[2] != before[0]); /* it did train */
  wf_graph_free(g);
  wf_graph_free(t.g);
}

/* s: Placeholder string (2,), words: Const string (2,), out = Identity(s). */
static wf_graph *string_graph(void) {
  const char *w[2] = {"monday", "a\0b"};
  const size_t lens[2] = {6, 3};
  const int64_t dims[1] = {2};
  wf_graph *g = wf_graph_new(rt);
  wf_output x = placeholder(g, "s", WF_STRING, dims, 1);
  wf_tensor *t = wf_tensor_new_strings(dims, 1, w, lens, st);
  assert_non_null(t);
  constant(g, "words", t);
  unary(g, "Identity", "out", x);
  return g;
}

static void test_string_tensors_round_trip_and_run(void **state) {
  (void)state;
  wf_graph *g = string_graph();
  wf_graph *back = through_buffer(g);
  assert_graphs_equal(g, back);
  const char *in[2] = {"x", "\xce\xa3"};
  const int64_t dims[1] = {2};
  wf_tensor *feed = wf_tensor_new_strings(dims, 1, in, NULL, st);
  wf_output x = {wf_graph_find_node(back, "s"), 0};
  wf_output fetch[2] = {{wf_graph_find_node(back, "words"), 0},
                        {wf_graph_find_node(back, "out"), 0}};
  wf_tensor *got[2] = {NULL, NULL};
  wf_session *s = wf_session_new(back, st);
  assert_non_null(s);
  OK(wf_session_run(s, NULL, &x, &feed, 1, fetch, got, 2, NULL, 0, NULL, st));
  size_t n;
  assert_memory_equal(wf_tensor_string(got[0], 1, &n), "a\0b", 3);
  assert_int_equal(n, 3);
  assert_string_equal(wf_tensor_string(got[1], 1, NULL), "\xce\xa3");
  wf_tensor_release(got[0]);
  wf_tensor_release(got[1]);
  wf_tensor_release(feed);
  wf_session_free(s);
  wf_graph_free(back);
  wf_graph_free(g);
}

/* The Const's strings are made to overlap: the second one starts inside
 * the first. */
static void overlapping_strings(Weft__GraphFile *f) {
  for (size_t i = 0; i < f->n_nodes; i++)
    if (strcmp(f->nodes[i]->name, "words") == 0) {
      Weft__Tensor *t = attr_of(f->nodes[i], "value")->value->tensor;
      uint64_t at = 26;
      memcpy(t->data.data + 8, &at, 8);
      t->has_crc32c = 0;
    }
}

static void test_damaged_string_tensor_is_refused(void **state) {
  (void)state;
  wf_graph *g = string_graph();
  size_t len;
  void *buf = edited(g, overlapping_strings, &len);
  expect_refusal(buf, len, WF_INVALID_ARGUMENT, "words", "string 0");
  free(buf);
  wf_graph_free(g);
}

static void test_saving_is_deterministic_and_matches_the_buffer(void **state) {
  (void)state;
  trainer t = training_graph();
  void *a, *b;
  size_t na, nb;
  OK(wf_graph_to_buffer(t.g, &a, &na, st));
  wf_graph *back = through_buffer(t.g);
  OK(wf_graph_to_buffer(back, &b, &nb, st));
  assert_int_equal(na, nb);
  assert_memory_equal(a, b, na);
  /* The file holds exactly the buffer's bytes. */
  const char *path = path_in("same.wfg");
  OK(wf_graph_save(t.g, path, st));
  FILE *f = fopen(path, "rb");
  assert_non_null(f);
  char *c = malloc(na + 1);
  assert_int_equal(fread(c, 1, na + 1, f), na);
  fclose(f);
  assert_memory_equal(a, c, na);
  free(c);
  free(a);
  free(b);
  wf_graph_free(back);
  wf_graph_free(t.g);
}

static void test_every_attribute_kind_round_trips_bit_for_bit(void **state) {
  (void)state;
  const int64_t d23[2] = {2, 3}, d2[1] = {2}, d0[1] = {0};
  wf_graph *g = wf_graph_new(rt);
  wf_output x0 = placeholder(g, "x0", WF_INT64, d23, 2);
  wf_output x1 = placeholder(g, "x1", WF_INT64, d23, 2);
  OK(wf_graph_push_scope(g, "scope", st));
  wf_output y = placeholder(g, "y", WF_FLOAT32, NULL, -1); /* "scope/y" */
  wf_graph_pop_scope(g);
  /* Floats whose bits matter: -0, a NaN with a payload, infinities, the
   * smallest subnormal. */
  uint64_t nan_bits = UINT64_C(0x7ff8000000c0ffee);
  double nan_payload, neg_zero = -0.0;
  memcpy(&nan_payload, &nan_bits, sizeof nan_payload);
  const double lf[5] = {neg_zero, nan_payload, INFINITY, -INFINITY,
                        4.9406564584124654e-324};
  const int64_t li[3] = {INT64_MIN, -1, INT64_MAX};
  const char *ls[3] = {"", "utf-8 \xc3\xa9t\xc3\xa9", "tab\tand \"quotes\""};
  const wf_dtype ldt[3] = {WF_BFLOAT16, WF_UINT8, WF_RESOURCE};
  wf_shape lsh[3];
  const int64_t shd[3] = {4, WF_UNKNOWN_DIM, 0};
  wf_shape_unknown(&lsh[0]);
  wf_shape_init(&lsh[1], NULL, 0);
  wf_shape_init(&lsh[2], shd, 3);
  const uint16_t halfs[3] = {0x3c00, 0x7e01, 0x8001}; /* 1, NaN, -tiny */
  const uint8_t bools[2] = {1, 0};
  const int8_t bytes[2] = {-128, 127};
  float f32 = -0.0f;
  wf_tensor *lt[4] = {
      tensor_of(WF_FLOAT16, (const int64_t[]){3}, 1, halfs),
      tensor_of(WF_BOOL, d2, 1, bools), tensor_of(WF_INT8, d2, 1, bytes),
      tensor_of(WF_FLOAT32, d0, 1, NULL), /* empty */
  };
  wf_tensor *scalar = tensor_of(WF_FLOAT32, NULL, 0, &f32);

  wf_node_desc *d = wf_node_desc_new(g, "GfAllKinds", "kinds");
  wf_output xs[2] = {x0, x1};
  wf_node_desc_add_input_list(d, xs, 2);
  wf_node_desc_add_input(d, y);
  wf_node_desc_set_attr_int(d, "i", INT64_MIN);
  wf_node_desc_set_attr_float(d, "f", nan_payload);
  wf_node_desc_set_attr_bool(d, "b", 1);
  wf_node_desc_set_attr_string(d, "s", "a/b:c \\ d");
  wf_node_desc_set_attr_dtype(d, "dt", WF_FLOAT64);
  wf_node_desc_set_attr_shape(d, "sh", shd, 3);
  wf_node_desc_set_attr_tensor(d, "t", scalar);
  wf_node_desc_set_attr_int_list(d, "li", li, 3);
  wf_node_desc_set_attr_float_list(d, "lf", lf, 5);
  wf_attr_value lb = {.type = WF_ATTR_LIST | WF_ATTR_BOOL,
                      .count = 3,
                      .u.bools = (const int32_t[]){1, 0, 1}};
  wf_node_desc_set_attr(d, "lb", &lb);
  wf_node_desc_set_attr_string_list(d, "ls", ls, 3);
  wf_node_desc_set_attr_dtype_list(d, "ldt", ldt, 3);
  wf_attr_value shapes = {
      .type = WF_ATTR_LIST | WF_ATTR_SHAPE, .count = 3, .u.shapes = lsh};
  wf_node_desc_set_attr(d, "lsh", &shapes);
  wf_attr_value tensors = {.type = WF_ATTR_LIST | WF_ATTR_TENSOR,
                           .count = 4,
                           .u.tensors = (const wf_tensor *const *)lt};
  wf_node_desc_set_attr(d, "lt", &tensors);
  wf_node *kinds = wf_node_desc_finish(d, st);
  if (!kinds)
    fail_msg("kinds: %s", wf_status_message(st));
  wf_tensor_release(scalar);
  for (int i = 0; i < 4; i++)
    wf_tensor_release(lt[i]);
  /* Empty lists are lists too; a tensor may be a scalar. */
  d = wf_node_desc_new(g, "GfAllKinds", "empty_lists");
  wf_node_desc_add_input_list(d, xs, 1);
  wf_node_desc_add_input(d, y);
  wf_node_desc_set_attr_int(d, "i", 0);
  wf_node_desc_set_attr_float(d, "f", 0);
  wf_node_desc_set_attr_bool(d, "b", 0);
  wf_node_desc_set_attr_string(d, "s", "");
  wf_node_desc_set_attr_dtype(d, "dt", WF_BOOL);
  wf_node_desc_set_attr_shape(d, "sh", NULL, -1);
  scalar = tensor_of(WF_INT64, NULL, 0, &li[2]);
  wf_node_desc_set_attr_tensor(d, "t", scalar);
  wf_tensor_release(scalar);
  static const char *const lists[] = {"li",  "lf",  "lb", "ls",
                                      "ldt", "lsh", "lt"};
  static const int kinds_of[] = {WF_ATTR_INT,    WF_ATTR_FLOAT, WF_ATTR_BOOL,
                                 WF_ATTR_STRING, WF_ATTR_DTYPE, WF_ATTR_SHAPE,
                                 WF_ATTR_TENSOR};
  for (int i = 0; i < 7; i++) {
    wf_attr_value e = {.type = WF_ATTR_LIST | kinds_of[i], .count = 0};
    wf_node_desc_set_attr(d, lists[i], &e);
  }
  wf_node_desc_set_attr_int(d, "dflt", -7);
  if (!wf_node_desc_finish(d, st))
    fail_msg("empty_lists: %s", wf_status_message(st));

  wf_graph *back = through_buffer(g);
  assert_graphs_equal(g, back);
  /* The default was stored and comes back as set. */
  wf_attr_value v;
  OK(wf_node_get_attr(wf_graph_find_node(back, "kinds"), "dflt", &v, st));
  assert_int_equal(v.u.i, 42);
  /* Outputs are inferred again: two int64 (2, 3) tensors. */
  const wf_node *k = wf_graph_find_node(back, "kinds");
  assert_int_equal(wf_node_num_outputs(k), 2);
  assert_int_equal(wf_node_output_dtype(k, 1), WF_INT64);
  wf_graph_free(back);
  wf_graph_free(g);
}

static void test_list_inputs_split_by_their_number_attributes(void **state) {
  (void)state;
  const int64_t d1[1] = {3};
  wf_graph *g = wf_graph_new(rt);
  wf_output p[5];
  char name[8];
  for (int i = 0; i < 5; i++) {
    snprintf(name, sizeof name, "p%d", i);
    p[i] = placeholder(g, name, WF_FLOAT32, d1, 1);
  }
  /* 2 + 3 and 0 + 5 and 5 + 0: the flat list alone cannot say. */
  const int splits[3][2] = {{2, 3}, {0, 5}, {5, 0}};
  for (int k = 0; k < 3; k++) {
    snprintf(name, sizeof name, "two%d", k);
    wf_node_desc *d = wf_node_desc_new(g, "GfTwoLists", name);
    wf_node_desc_set_attr_dtype(d, "T", WF_FLOAT32);
    wf_node_desc_add_input_list(d, p, splits[k][0]);
    wf_node_desc_add_input_list(d, p + splits[k][0], splits[k][1]);
    if (!wf_node_desc_finish(d, st))
      fail_msg("%s: %s", name, wf_status_message(st));
  }
  wf_graph *back = through_buffer(g);
  assert_graphs_equal(g, back);
  for (int k = 0; k < 3; k++) {
    wf_attr_value v;
    snprintf(name, sizeof name, "two%d", k);
    OK(wf_node_get_attr(wf_graph_find_node(back, name), "N", &v, st));
    assert_int_equal(v.u.i, splits[k][0]);
  }
  wf_graph_free(back);
  wf_graph_free(g);
}

static void test_control_edges_to_later_nodes_keep_their_order(void **state) {
  (void)state;
  const float one = 1;
  wf_graph *g = wf_graph_new(rt);
  wf_output a = constant(g, "a", tensor_of(WF_FLOAT32, NULL, 0, &one));
  wf_node_desc *d = wf_node_desc_new(g, "NoOp", "gate");
  wf_node *gate = wf_node_desc_finish(d, st);
  assert_non_null(gate);
  d = wf_node_desc_new(g, "Neg", "b");
  wf_node_desc_add_input(d, a);
  wf_node_desc_add_control_input(d, gate);
  wf_node *b = wf_node_desc_finish(d, st);
  assert_non_null(b);
  wf_output c = unary(g, "Neg", "c", a);
  /* b now waits for gate (earlier) and c (later), in that order. */
  OK(wf_graph_add_control_edge(g, c.node, b, st));
  wf_graph *back = through_buffer(g);
  assert_graphs_equal(g, back);
  const wf_node *bb = wf_graph_find_node(back, "b");
  assert_int_equal(wf_node_num_control_inputs(bb), 2);
  assert_string_equal(wf_node_name(wf_node_control_input(bb, 1)), "c");
  wf_graph_free(back);
  wf_graph_free(g);
}

/* ---- pruned and atomic saves ----------------------------------------------
 */

static void assert_node_names(const wf_graph *g, const char *const *names,
                              int n) {
  assert_int_equal(wf_graph_num_nodes(g), n);
  for (int i = 0; i < n; i++)
    assert_string_equal(wf_node_name(wf_graph_node(g, i)), names[i]);
}

static void test_pruned_save_keeps_what_outputs_and_targets_need(void **state) {
  (void)state;
  wf_graph *g = small_graph(); /* x, c, sum, out (waits for c) */
  wf_output c = {wf_graph_find_node(g, "c"), 0};
  wf_output sum = {wf_graph_find_node(g, "sum"), 0};
  wf_output out = {wf_graph_find_node(g, "out"), 0};
  wf_output other = unary(g, "Neg", "other", c);
  wf_node_desc *d = wf_node_desc_new(g, "NoOp", "effects");
  wf_node_desc_add_control_input(d, other.node);
  wf_node *effects = wf_node_desc_finish(d, st);
  assert_non_null(effects);
  wf_output lonely = unary(g, "Neg", "lonely", out);
  (void)lonely;
  const char *path = path_in("pruned.wfg");

  /* Through data and control inputs, in the original order. */
  OK(wf_graph_save_pruned(g, &out, 1, NULL, 0, path, st));
  wf_graph *p = wf_graph_load(rt, path, st);
  assert_non_null(p);
  assert_node_names(p, (const char *const[]){"x", "c", "sum", "out"}, 4);
  wf_graph_free(p);

  OK(wf_graph_save_pruned(g, &c, 1, &effects, 1, path, st));
  p = wf_graph_load(rt, path, st);
  assert_non_null(p);
  assert_node_names(p, (const char *const[]){"c", "other", "effects"}, 3);
  wf_graph_free(p);

  /* A placeholder the outputs need is kept (nothing is fed). */
  OK(wf_graph_save_pruned(g, &sum, 1, NULL, 0, path, st));
  p = wf_graph_load(rt, path, st);
  assert_non_null(p);
  assert_node_names(p, (const char *const[]){"x", "c", "sum"}, 3);
  wf_graph_free(p);

  /* Outputs must exist. */
  wf_output bad = {out.node, 4};
  assert_int_equal(wf_graph_save_pruned(g, &bad, 1, NULL, 0, path, st),
                   WF_INVALID_ARGUMENT);
  assert_non_null(strstr(wf_status_message(st), "'out'"));
  assert_non_null(strstr(wf_status_message(st), path));
  wf_graph *other_graph = small_graph();
  wf_node *foreign = wf_graph_find_node(other_graph, "out");
  assert_int_equal(wf_graph_save_pruned(g, NULL, 0, &foreign, 1, path, st),
                   WF_INVALID_ARGUMENT);
  assert_non_null(strstr(wf_status_message(st), "another graph"));
  wf_graph_free(other_graph);
  wf_graph_free(g);
}

static void
test_save_replaces_atomically_and_leaves_no_temporary(void **state) {
  (void)state;
  wf_graph *g = small_graph();
  trainer t = training_graph();
  char sub[512];
  snprintf(sub, sizeof sub, "%s/atomic", dir);
  assert_int_equal(mkdir(sub, 0777), 0);
  char path[600];
  snprintf(path, sizeof path, "%s/g.wfg", sub);

  OK(wf_graph_save(t.g, path, st));
  OK(wf_graph_save(g, path, st)); /* replaces the larger graph */
  assert_int_equal(count_entries(sub), 1);
  wf_graph *back = wf_graph_load(rt, path, st);
  assert_non_null(back);
  assert_graphs_equal(g, back);
  wf_graph_free(back);

  /* A failed save (the name is a directory) leaves nothing behind. */
  char blocked[700];
  snprintf(blocked, sizeof blocked, "%s/blocked", sub);
  assert_int_equal(mkdir(blocked, 0777), 0);
  assert_int_not_equal(wf_graph_save(g, blocked, st), WF_OK);
  assert_non_null(strstr(wf_status_message(st), blocked));
  assert_int_equal(count_entries(sub), 2);
  /* So does a save into a directory that does not exist. */
  snprintf(blocked, sizeof blocked, "%s/missing/g.wfg", sub);
  assert_int_equal(wf_graph_save(g, blocked, st), WF_NOT_FOUND);
  assert_non_null(strstr(wf_status_message(st), blocked));
  empty_dir(sub, 1);
  wf_graph_free(t.g);
  wf_graph_free(g);
}

/* ---- compatibility ----------------------------------------------------------
 */

static void newer_with_unknown_fields(Weft__GraphFile *f) {
  static const char note[] = "from a later weft";
  ProtobufCMessageUnknownField *u = calloc(1, sizeof *u);
  assert_non_null(u);
  f->format_version = 2;     /* a newer format... */
  f->min_reader_version = 1; /* ...that this reader still reads */
  /* A field this reader does not know, inside a node. */
  u->tag = 42;
  u->wire_type = PROTOBUF_C_WIRE_TYPE_LENGTH_PREFIXED;
  u->len = sizeof note; /* protobuf-c keeps the length prefix in data */
  u->data = malloc(u->len);
  assert_non_null(u->data);
  u->data[0] = sizeof note - 1;
  memcpy(u->data + 1, note, sizeof note - 1);
  f->nodes[1]->base.n_unknown_fields = 1;
  f->nodes[1]->base.unknown_fields = u;
}

static void test_newer_file_with_unknown_fields_loads(void **state) {
  (void)state;
  wf_graph *g = small_graph();
  size_t len;
  uint8_t *buf = edited(g, newer_with_unknown_fields, &len);
  /* And two top-level fields appended by hand: field 8 (a later version's
   * varint) and field 150 (the range reserved for private data). */
  uint8_t extra[] = {8 << 3 | 0, 0x96, 0x01, /* field 8 = 150 */
                     0xb2,       0x09, 3,
                     'a',        'b',  'c'}; /* field 150 = "abc" */
  buf = realloc(buf, len + sizeof extra);
  assert_non_null(buf);
  memcpy(buf + len, extra, sizeof extra);
  len += sizeof extra;
  wf_graph *back = wf_graph_from_buffer(rt, buf, len, "newer.wfg", st);
  if (!back)
    fail_msg("a newer file that only adds fields: %s", wf_status_message(st));
  assert_graphs_equal(g, back);

  /* Its header tells the newer format. */
  const char *path = path_in("newer.wfg");
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  assert_int_equal(fwrite(buf, 1, len, f), len);
  fclose(f);
  wf_graph_file_info info = {.struct_size = sizeof info};
  OK(wf_graph_file_read_info(path, &info, st));
  assert_int_equal(info.format_version, 2);
  assert_int_equal(info.min_reader_version, 1);
  assert_int_equal(info.num_nodes, 4);
  assert_int_equal(info.file_bytes, (int64_t)len);
  assert_true(strncmp(info.producer, "weft ", 5) == 0);
  wf_graph_free(back);
  free(buf);
  wf_graph_free(g);
}

static void too_new(Weft__GraphFile *f) {
  f->format_version = 7;
  f->min_reader_version = 5;
}

static void
test_file_needing_a_newer_reader_is_refused_with_both_versions(void **state) {
  (void)state;
  refuse_edit(too_new, WF_UNIMPLEMENTED, "version 5 or newer",
              "format version 7", "versions up to 1");
  /* Yet it can be described. */
  wf_graph *g = small_graph();
  size_t len;
  void *buf = edited(g, too_new, &len);
  const char *path = path_in("too_new.wfg");
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  assert_int_equal(fwrite(buf, 1, len, f), len);
  fclose(f);
  wf_graph_file_info info = {.struct_size = sizeof info};
  OK(wf_graph_file_read_info(path, &info, st));
  assert_int_equal(info.min_reader_version, 5);
  assert_null(wf_graph_load(rt, path, st));
  assert_non_null(strstr(wf_status_message(st), path));
  free(buf);
  wf_graph_free(g);
}

/* ---- refusals
 * ------------------------------------------------------------------- */

static void unknown_op_with_source(Weft__GraphFile *f) {
  set_str(&f->nodes[2]->op, "Frobnicate");
  for (size_t i = 0; i < f->n_op_sources; i++)
    if (strcmp(f->op_sources[i]->op, "Add") == 0)
      set_str(&f->op_sources[i]->op, "Frobnicate");
}

static void unknown_op_without_source(Weft__GraphFile *f) {
  set_str(&f->nodes[2]->op, "Frobnicate");
  for (size_t i = 0; i < f->n_op_sources; i++)
    protobuf_c_message_free_unpacked(&f->op_sources[i]->base, NULL);
  f->n_op_sources = 0;
}

static void test_unknown_op_names_node_op_and_plugin(void **state) {
  (void)state;
  refuse_edit(unknown_op_with_source, WF_NOT_FOUND, "node 'sum'",
              "'Frobnicate'", "plugin 'ops-math'");
  refuse_edit(unknown_op_without_source, WF_NOT_FOUND, "node 'sum'",
              "'Frobnicate'", "does not say which plugin");
}

static void input_from_later_node(Weft__GraphFile *f) {
  Weft__Node *c = f->nodes[1];
  f->nodes[1] = f->nodes[2]; /* sum before c */
  f->nodes[2] = c;
}

static void input_from_missing_node(Weft__GraphFile *f) {
  set_str(&f->nodes[2]->inputs[1]->node, "ghost");
}

static void input_from_itself(Weft__GraphFile *f) {
  set_str(&f->nodes[2]->inputs[0]->node, "sum");
}

static void input_without_node(Weft__GraphFile *f) {
  set_str(&f->nodes[3]->inputs[0]->node, NULL);
}

static void slot_out_of_range(Weft__GraphFile *f) {
  f->nodes[2]->inputs[0]->slot = 3;
}

static void negative_slot(Weft__GraphFile *f) {
  f->nodes[2]->inputs[1]->slot = -1;
}

static void missing_input(Weft__GraphFile *f) {
  f->nodes[2]->n_inputs = 1; /* the second one leaks into nothing: freed */
  protobuf_c_message_free_unpacked(&f->nodes[2]->inputs[1]->base, NULL);
}

static void
test_inputs_must_name_earlier_nodes_and_existing_outputs(void **state) {
  (void)state;
  refuse_edit(input_from_later_node, WF_INVALID_ARGUMENT, "node 'sum'",
              "input 1 names node 'c', which comes later in the file");
  refuse_edit(input_from_missing_node, WF_INVALID_ARGUMENT, "node 'sum'",
              "'ghost', which is not in the file");
  refuse_edit(input_from_itself, WF_INVALID_ARGUMENT, "node 'sum'",
              "the node itself");
  refuse_edit(input_without_node, WF_INVALID_ARGUMENT, "node 'out'",
              "input 0 names no node");
  refuse_edit(slot_out_of_range, WF_INVALID_ARGUMENT, "node 'sum'",
              "output 3 of node 'x'", "1 output");
  refuse_edit(negative_slot, WF_INVALID_ARGUMENT, "output -1 of node 'c'");
  refuse_edit(missing_input, WF_INVALID_ARGUMENT, "node 'sum'", "expects 2");
}

static void tensor_too_short(Weft__GraphFile *f) {
  Weft__Tensor *t = attr_of(f->nodes[1], "value")->value->tensor;
  t->data.len -= 4;
  t->has_crc32c = 0;
}

static void tensor_flipped_bit(Weft__GraphFile *f) {
  attr_of(f->nodes[1], "value")->value->tensor->data.data[5] ^= 0x10;
}

static void tensor_bad_dims(Weft__GraphFile *f) {
  attr_of(f->nodes[1], "value")->value->tensor->dims[1] = -3;
}

static void tensor_bad_bool(Weft__GraphFile *f) {
  Weft__Tensor *t = attr_of(f->nodes[1], "value")->value->tensor;
  t->dtype = WEFT__DTYPE__DT_BOOL;
  t->data.len = 6;
  t->data.data[0] = 2;
  t->has_crc32c = 0;
}

static void tensor_resource(Weft__GraphFile *f) {
  Weft__Tensor *t = attr_of(f->nodes[1], "value")->value->tensor;
  t->dtype = WEFT__DTYPE__DT_RESOURCE;
  t->n_dims = 0;
  t->data.len = sizeof(void *);
  t->has_crc32c = 0;
}

static void test_tensor_bytes_must_match_dtype_and_dims(void **state) {
  (void)state;
  refuse_edit(tensor_too_short, WF_INVALID_ARGUMENT, "node 'c' (op 'Const')",
              "attribute 'value'", "float32 (2, 3) needs 24 bytes", "holds 20");
  refuse_edit(tensor_flipped_bit, WF_DATA_LOSS, "node 'c'", "CRC-32C");
  refuse_edit(tensor_bad_dims, WF_INVALID_ARGUMENT, "node 'c'", "dim 1 is -3");
  refuse_edit(tensor_bad_bool, WF_INVALID_ARGUMENT, "node 'c'",
              "bool tensor element 0 is 2");
  refuse_edit(tensor_resource, WF_INVALID_ARGUMENT, "node 'c'",
              "resource is not one a tensor can be stored as");
}

static void duplicate_name(Weft__GraphFile *f) {
  set_str(&f->nodes[3]->name, "sum");
}

static void invalid_name(Weft__GraphFile *f) {
  set_str(&f->nodes[0]->name, "a//b");
}

static void test_duplicate_and_invalid_names_are_refused(void **state) {
  (void)state;
  refuse_edit(duplicate_name, WF_INVALID_ARGUMENT,
              "node name 'sum' is used twice (nodes 2 and 3)");
  refuse_edit(invalid_name, WF_INVALID_ARGUMENT, "node 0: name 'a//b'");
}

static void attr_wrong_kind(Weft__GraphFile *f) {
  Weft__AttrValue *v = attr_of(f->nodes[1], "dtype")->value;
  v->kind_case = WEFT__ATTR_VALUE__KIND_I;
  v->i = 1;
}

static void attr_unknown(Weft__GraphFile *f) {
  set_str(&attr_of(f->nodes[3], "T")->name, "colour");
}

static void attr_twice(Weft__GraphFile *f) {
  set_str(&attr_of(f->nodes[0], "shape")->name, "dtype");
}

static void attr_bad_dtype(Weft__GraphFile *f) {
  attr_of(f->nodes[2], "T")->value->dtype = 99;
}

static void attr_disallowed_dtype(Weft__GraphFile *f) {
  /* Neg takes numbers, not bool: the node-adding path says so. */
  attr_of(f->nodes[3], "T")->value->dtype = WEFT__DTYPE__DT_BOOL;
}

static void attr_without_value(Weft__GraphFile *f) {
  Weft__Attr *a = attr_of(f->nodes[0], "shape");
  protobuf_c_message_free_unpacked(&a->value->base, NULL);
  a->value = NULL;
}

static void attr_string_with_nul(Weft__GraphFile *f) {
  Weft__Node *n = f->nodes[2];
  set_str(&n->op, "GfTwoLists"); /* any op: the string fails first */
  Weft__AttrValue *v = attr_of(n, "T")->value;
  v->kind_case = WEFT__ATTR_VALUE__KIND_S;
  v->s.data = malloc(3);
  assert_non_null(v->s.data);
  memcpy(v->s.data, "a\0b", 3);
  v->s.len = 3;
}

static void shape_too_long(Weft__GraphFile *f) {
  Weft__Shape *s = attr_of(f->nodes[0], "shape")->value->shape;
  int64_t *dims = malloc(9 * sizeof *dims);
  assert_non_null(dims);
  for (int i = 0; i < 9; i++)
    dims[i] = 1;
  free(s->dims);
  s->dims = dims;
  s->n_dims = 9;
}

static void test_attributes_go_through_node_validation(void **state) {
  (void)state;
  refuse_edit(attr_wrong_kind, WF_INVALID_ARGUMENT, "node 'c'",
              "attribute 'dtype'", "int");
  refuse_edit(attr_unknown, WF_INVALID_ARGUMENT, "node 'out' (op 'Neg')",
              "attribute 'colour' is not one the op defines");
  refuse_edit(attr_twice, WF_INVALID_ARGUMENT, "node 'x'",
              "attribute 'dtype' is given twice");
  refuse_edit(attr_bad_dtype, WF_INVALID_ARGUMENT, "node 'sum'",
              "attribute 'T'", "99 is not a dtype");
  refuse_edit(attr_disallowed_dtype, WF_INVALID_ARGUMENT, "node 'out'", "bool");
  refuse_edit(attr_without_value, WF_INVALID_ARGUMENT, "node 'x'",
              "attribute 'shape' has no value");
  refuse_edit(attr_string_with_nul, WF_INVALID_ARGUMENT, "node 'sum'",
              "NUL byte at offset 1");
  refuse_edit(shape_too_long, WF_INVALID_ARGUMENT, "node 'x'",
              "attribute 'shape'", "9 dims");
}

static void control_cycle(Weft__GraphFile *f) {
  /* c waits for out, which waits for c. */
  Weft__Node *c = f->nodes[1];
  c->control_inputs = realloc(c->control_inputs, sizeof(char *));
  assert_non_null(c->control_inputs);
  c->control_inputs[0] = strdup("out");
  c->n_control_inputs = 1;
}

static void control_missing(Weft__GraphFile *f) {
  set_str(&f->nodes[3]->control_inputs[0], "nobody");
}

static void test_control_inputs_must_exist_and_not_cycle(void **state) {
  (void)state;
  refuse_edit(control_cycle, WF_INVALID_ARGUMENT, "node 'c'", "cycle");
  refuse_edit(control_missing, WF_INVALID_ARGUMENT, "node 'out'",
              "control input 0 names node 'nobody', which is not in the file");
}

static void wrong_magic(Weft__GraphFile *f) { set_str(&f->magic, "onnx"); }
static void no_version(Weft__GraphFile *f) { f->has_format_version = 0; }
static void node_count_off(Weft__GraphFile *f) { f->num_nodes = 5; }

static void test_frame_is_checked(void **state) {
  (void)state;
  refuse_edit(wrong_magic, WF_DATA_LOSS, "not a weft graph file");
  refuse_edit(no_version, WF_DATA_LOSS, "no format version");
  refuse_edit(node_count_off, WF_DATA_LOSS, "holds 5 nodes but 4");
  expect_refusal("", 0, WF_DATA_LOSS, "empty");
}

static void test_every_truncation_is_refused(void **state) {
  (void)state;
  wf_graph *g = small_graph();
  void *buf;
  size_t len;
  OK(wf_graph_to_buffer(g, &buf, &len, st));
  for (size_t cut = 0; cut < len; cut++) {
    wf_graph *back = wf_graph_from_buffer(rt, buf, cut, "cut.wfg", st);
    if (back)
      fail_msg("the first %zu of %zu bytes loaded", cut, len);
    assert_int_equal(wf_status_code(st), WF_DATA_LOSS);
    assert_non_null(strstr(wf_status_message(st), "graph file 'cut.wfg'"));
  }
  /* A file cut inside the nodes says where. */
  const char *path = path_in("cut.wfg");
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  assert_int_equal(fwrite(buf, 1, len - 3, f), len - 3);
  fclose(f);
  assert_null(wf_graph_load(rt, path, st));
  assert_int_equal(wf_status_code(st), WF_DATA_LOSS);
  assert_non_null(strstr(wf_status_message(st), path));
  assert_non_null(strstr(wf_status_message(st), "byte "));
  assert_non_null(strstr(wf_status_message(st), "nodes[3] says it is"));
  free(buf);
  wf_graph_free(g);
}

static uint64_t rng_state = 0x9e3779b97f4a7c15u;
static uint64_t rng(void) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return rng_state;
}

static void test_random_bytes_and_bit_flips_never_crash(void **state) {
  (void)state;
  uint8_t junk[512];
  for (int i = 0; i < 500; i++) {
    size_t n = (size_t)(rng() % sizeof junk);
    for (size_t k = 0; k < n; k++)
      junk[k] = (uint8_t)rng();
    wf_graph *g = wf_graph_from_buffer(rt, junk, n, "junk.bin", st);
    if (g)
      fail_msg("%zu random bytes loaded as a graph", n);
    assert_int_not_equal(wf_status_code(st), WF_OK);
    assert_non_null(strstr(wf_status_message(st), "graph file 'junk.bin'"));
  }
  /* Damage to a real file: it loads (the damage hit something harmless) or
   * is refused naming the file. */
  wf_graph *g = small_graph();
  void *buf;
  size_t len;
  OK(wf_graph_to_buffer(g, &buf, &len, st));
  uint8_t *copy = malloc(len);
  assert_non_null(copy);
  for (int i = 0; i < 2000; i++) {
    memcpy(copy, buf, len);
    for (int flips = 1 + (int)(rng() % 3); flips > 0; flips--)
      copy[rng() % len] ^= (uint8_t)(1u << (rng() % 8));
    wf_graph *back = wf_graph_from_buffer(rt, copy, len, "flipped.wfg", st);
    if (back)
      wf_graph_free(back);
    else
      assert_non_null(
          strstr(wf_status_message(st), "graph file 'flipped.wfg'"));
  }
  free(copy);
  free(buf);
  wf_graph_free(g);
}

static void test_missing_file_and_directory_are_named(void **state) {
  (void)state;
  const char *path = path_in("nothing-here.wfg");
  assert_null(wf_graph_load(rt, path, st));
  assert_int_equal(wf_status_code(st), WF_NOT_FOUND);
  assert_non_null(strstr(wf_status_message(st), path));
  assert_null(wf_graph_load(rt, dir, st));
  assert_non_null(strstr(wf_status_message(st), "directory"));
  wf_graph_file_info info = {.struct_size = sizeof info};
  assert_int_equal(wf_graph_file_read_info(path, &info, st), WF_NOT_FOUND);
}

/* ---- allocation failures
 * ----------------------------------------------------- */

static void test_allocation_failures_are_reported_at_every_step(void **state) {
  (void)state;
  wf_graph *g = small_graph();
  void *buf = NULL;
  size_t len;
  int failures = 0;
  /* Serialising: each allocation in turn fails. */
  for (long k = 1;; k++) {
    wf__alloc_fail_after(k, 1);
    int rc = wf_graph_to_buffer(g, &buf, &len, st);
    wf__alloc_fail_after(0, 0);
    if (rc == WF_OK)
      break;
    assert_int_equal(rc, WF_RESOURCE_EXHAUSTED);
    assert_null(buf);
    failures++;
  }
  assert_true(failures > 0);
  /* Loading: the same. */
  failures = 0;
  for (long k = 1;; k++) {
    wf__alloc_fail_after(k, 1);
    wf_graph *back = wf_graph_from_buffer(rt, buf, len, "oom.wfg", st);
    wf__alloc_fail_after(0, 0);
    if (back) {
      assert_graphs_equal(g, back);
      wf_graph_free(back);
      break;
    }
    if (wf_status_code(st) != WF_RESOURCE_EXHAUSTED)
      fail_msg("allocation %ld failing: %s", k, wf_status_message(st));
    failures++;
  }
  assert_true(failures > 10);
  free(buf);
  wf_graph_free(g);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_training_graph_round_trips_and_trains_the_same),
      cmocka_unit_test(test_saving_is_deterministic_and_matches_the_buffer),
      cmocka_unit_test(test_string_tensors_round_trip_and_run),
      cmocka_unit_test(test_damaged_string_tensor_is_refused),
      cmocka_unit_test(test_every_attribute_kind_round_trips_bit_for_bit),
      cmocka_unit_test(test_list_inputs_split_by_their_number_attributes),
      cmocka_unit_test(test_control_edges_to_later_nodes_keep_their_order),
      cmocka_unit_test(test_pruned_save_keeps_what_outputs_and_targets_need),
      cmocka_unit_test(test_save_replaces_atomically_and_leaves_no_temporary),
      cmocka_unit_test(test_newer_file_with_unknown_fields_loads),
      cmocka_unit_test(
          test_file_needing_a_newer_reader_is_refused_with_both_versions),
      cmocka_unit_test(test_unknown_op_names_node_op_and_plugin),
      cmocka_unit_test(
          test_inputs_must_name_earlier_nodes_and_existing_outputs),
      cmocka_unit_test(test_tensor_bytes_must_match_dtype_and_dims),
      cmocka_unit_test(test_duplicate_and_invalid_names_are_refused),
      cmocka_unit_test(test_attributes_go_through_node_validation),
      cmocka_unit_test(test_control_inputs_must_exist_and_not_cycle),
      cmocka_unit_test(test_frame_is_checked),
      cmocka_unit_test(test_every_truncation_is_refused),
      cmocka_unit_test(test_random_bytes_and_bit_flips_never_crash),
      cmocka_unit_test(test_missing_file_and_directory_are_named),
      cmocka_unit_test(test_allocation_failures_are_reported_at_every_step),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
