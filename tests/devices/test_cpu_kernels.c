/* tests/devices/test_cpu_kernels.c — the CPU plugin's fast kernels (oneDNN,
 * OpenBLAS) against the reference kernels of the op plugins, on random
 * shapes with odd sizes and every stride, padding, dilation and format
 * combination the ops define; the first-layer convolution oneDNN gets
 * under other layout names; the cnn's inference layers at batch 1 (plans
 * on one thread) and 64 (on every intra-op thread); empty tensors and bad
 * inputs (the op's own error); a node the LSTM kernel declines; plan reuse across runs, shapes and threads;
 * weights changed in place; and the thread layout the device reports.
 *
 * Both kernels of a case run through the core's kernel contexts
 * (wf__kernel_run) on the same node and inputs. Tolerance for float32:
 *   |fast - ref| <= 1e-4 |ref| + 1e-5 max(1, max |ref| of the output).
 * The reference accumulates in double and rounds once; oneDNN and OpenBLAS
 * accumulate in float32 in their own order (and use their own exp, tanh
 * and erf), so each result carries a few float32 ulps (6e-8) per term
 * summed: 1e-4 relative leaves a wide margin for the sums here (at most a
 * few hundred terms). Results that cancel to near zero have no meaningful
 * relative error, hence the absolute floor, scaled by the output's
 * magnitude. float64 (OpenBLAS dgemm): 1e-10 relative, floor 1e-12 of the
 * magnitude. */
#include <config.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <weft/weft.h>

#include "graph/graph_internal.h"
#include "exec/kernel.h"
#include "plugin/registry.h"
#include "plugin/runtime_internal.h"

#ifdef HAVE_DNNL
#define HAVE_NN_KERNELS 1
#endif
#if defined(HAVE_DNNL) || defined(HAVE_OPENBLAS)
#define HAVE_GEMM_KERNELS 1
#endif
/* float64 products go to OpenBLAS's dgemm (oneDNN has none). */
#ifdef HAVE_OPENBLAS
#define HAVE_F64 1
#else
#define HAVE_F64 0
#endif

static wf_runtime *rt;

#ifdef HAVE_GEMM_KERNELS
/* ---- random numbers --------------------------------------------------------- */

typedef struct rng {
  uint64_t s;
} rng;

static uint64_t next(rng *r) {
  uint64_t z = (r->s += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

/* Uniform integer in [lo, hi]. */
static int64_t irand(rng *r, int64_t lo, int64_t hi) {
  return lo + (int64_t)(next(r) % (uint64_t)(hi - lo + 1));
}

static double urand(rng *r, double lo, double hi) {
  return lo + (hi - lo) * (double)(next(r) >> 11) * (1.0 / 9007199254740992.0);
}

/* ---- cases ------------------------------------------------------------------ */

#define MAX_IN 9
#define MAX_ATTRS 12

/* One node to run with both kernels: its op, inputs (owned) and
 * attributes; name says what was drawn, for messages. */
typedef struct kcase {
  char name[256];
  const char *op;
  wf_dtype dtype; /* the node's T */
  int nin;
  wf_tensor *in[MAX_IN];
  int unknown_shapes; /* placeholders of unknown shape */
  int input_list;     /* the inputs are one list argument (AddN) */
  int must_fail;      /* inputs the op refuses: both kernels must fail */
  int nattrs;
  const char *attr_names[MAX_ATTRS];
  wf_attr_value attrs[MAX_ATTRS];
  int64_t ints[MAX_ATTRS][8]; /* storage of list attributes */
} kcase;

static void case_init(kcase *c, const char *op, wf_dtype dt) {
  memset(c, 0, sizeof *c);
  c->op = op;
  c->dtype = dt;
  snprintf(c->name, sizeof c->name, "%s", op);
}

static void case_free(kcase *c) {
  for (int i = 0; i < c->nin; i++)
    wf_tensor_release(c->in[i]);
  c->nin = 0;
}

/* Appends to the case's name. */
static void case_note(kcase *c, const char *fmt, ...) {
  size_t used = strlen(c->name);
  va_list ap;

  va_start(ap, fmt);
  vsnprintf(c->name + used, sizeof c->name - used, fmt, ap);
  va_end(ap);
}

/* A new input of dtype and dims, uniform in [lo, hi). */
static wf_tensor *add_input(kcase *c, rng *r, wf_dtype dt, const int64_t *dims,
                            int rank, double lo, double hi) {
  wf_status *st = wf_status_new();
  wf_tensor *t = wf_tensor_new(dt, dims, rank, st);
  int64_t n;

  if (!t)
    fail_msg("%s: making input %d: %s", c->name, c->nin,
             wf_status_message(st));
  wf_status_free(st);
  n = wf_tensor_count(t);
  for (int64_t i = 0; i < n; i++) {
    double v = urand(r, lo, hi);
    if (dt == WF_FLOAT32)
      ((float *)wf_tensor_data(t))[i] = (float)v;
    else
      ((double *)wf_tensor_data(t))[i] = v;
  }
  assert_true(c->nin < MAX_IN);
  c->in[c->nin++] = t;
  return t;
}

/* A shape-vector input (int32, (n,)). */
static void add_sizes(kcase *c, const int64_t *v, int n) {
  wf_status *st = wf_status_new();
  int64_t len = n;
  wf_tensor *t = wf_tensor_new(WF_INT32, &len, 1, st);

  assert_non_null(t);
  for (int i = 0; i < n; i++)
    ((int32_t *)wf_tensor_data(t))[i] = (int32_t)v[i];
  wf_status_free(st);
  c->in[c->nin++] = t;
}

static void attr_ints(kcase *c, const char *name, const int64_t *v, int n) {
  int i = c->nattrs++;

  assert_true(i < MAX_ATTRS && n <= 8);
  memcpy(c->ints[i], v, (size_t)n * sizeof *v);
  c->attr_names[i] = name;
  c->attrs[i] = (wf_attr_value){.type = WF_ATTR_LIST | WF_ATTR_INT,
                                .count = n,
                                .u.ints = c->ints[i]};
}

static void attr_string(kcase *c, const char *name, const char *v) {
  int i = c->nattrs++;

  assert_true(i < MAX_ATTRS);
  c->attr_names[i] = name;
  c->attrs[i] = (wf_attr_value){.type = WF_ATTR_STRING, .count = 1, .u.s = v};
}

static void attr_bool(kcase *c, const char *name, int v) {
  int i = c->nattrs++;

  assert_true(i < MAX_ATTRS);
  c->attr_names[i] = name;
  c->attrs[i] = (wf_attr_value){.type = WF_ATTR_BOOL, .count = 1, .u.b = v};
}

static void attr_float(kcase *c, const char *name, double v) {
  int i = c->nattrs++;

  assert_true(i < MAX_ATTRS);
  c->attr_names[i] = name;
  c->attrs[i] = (wf_attr_value){.type = WF_ATTR_FLOAT, .count = 1, .u.f = v};
}

/* A list(string) attribute; v is borrowed (static storage). */
static void attr_strings(kcase *c, const char *name, const char *const *v,
                         int n) {
  int i = c->nattrs++;

  assert_true(i < MAX_ATTRS);
  c->attr_names[i] = name;
  c->attrs[i] = (wf_attr_value){.type = WF_ATTR_LIST | WF_ATTR_STRING,
                                .count = n,
                                .u.strings = v};
}

/* The fused ops' epilogues: fused_ops lists and their names. */
static const char *const fused_lists[][2] = {
    {"BiasAdd", NULL},  {"BiasAdd", "Relu"}, {"BiasAdd", "Sigmoid"},
    {"BiasAdd", "Tanh"}, {"BiasAdd", "Elu"},  {"BiasAdd", "Gelu"},
    {"BiasAdd", "LeakyRelu"}};
#define NFUSED (int)(sizeof fused_lists / sizeof *fused_lists)

/* Sets fused_ops (list f of fused_lists) and, for LeakyRelu, alpha. */
static void fused_attrs(kcase *c, int f) {
  int n = fused_lists[f][1] ? 2 : 1;

  attr_strings(c, "fused_ops", fused_lists[f], n);
  if (n == 2 && strcmp(fused_lists[f][1], "LeakyRelu") == 0)
    attr_float(c, "alpha", 0.15);
  case_note(c, " fused_ops=%s%s%s", fused_lists[f][0], n == 2 ? "," : "",
            n == 2 ? fused_lists[f][1] : "");
}

/* The case's node in g, on placeholders. NULL with st set when refused. */
static wf_node *build(wf_graph *g, const kcase *c, wf_status *st) {
  wf_output in[MAX_IN];
  wf_node_desc *d;

  for (int i = 0; i < c->nin; i++) {
    char name[16];
    wf_shape s;
    wf_node *p;

    snprintf(name, sizeof name, "in%d", i);
    d = wf_node_desc_new(g, "Placeholder", name);
    wf_node_desc_set_attr_dtype(d, "dtype", wf_tensor_dtype(c->in[i]));
    wf_tensor_shape(c->in[i], &s);
    if (!c->unknown_shapes)
      wf_node_desc_set_attr_shape(d, "shape", s.dims, s.rank);
    if (!(p = wf_node_desc_finish(d, st)))
      return NULL;
    in[i] = (wf_output){p, 0};
  }
  d = wf_node_desc_new(g, c->op, "op");
  if (c->input_list)
    wf_node_desc_add_input_list(d, in, c->nin);
  else
    for (int i = 0; i < c->nin; i++)
      wf_node_desc_add_input(d, in[i]);
  for (int i = 0; i < c->nattrs; i++)
    wf_node_desc_set_attr(d, c->attr_names[i], &c->attrs[i]);
  return wf_node_desc_finish(d, st);
}

/* The reference (priority 0) CPU kernel of op for dtype. */
static const wf__kernel *reference_kernel(const char *op, wf_dtype dt) {
  const wf__registry *r = rt->reg;

  for (int i = 0; i < wf__registry_kernel_count(r); i++) {
    const wf__kernel *k = wf__registry_kernel_at(r, i);
    if (strcmp(k->def.op, op) == 0 && strcmp(k->def.device_type, "cpu") == 0 &&
        k->def.priority == 0 && (k->def.dtypes & WF_DTYPE_BIT(dt)))
      return k;
  }
  return NULL;
}

/* max |x| over t's finite elements (float types). */
static double max_abs(const wf_tensor *t) {
  double m = 0;
  int64_t n = wf_tensor_count(t);

  for (int64_t i = 0; i < n; i++) {
    double v = wf_tensor_dtype(t) == WF_FLOAT32
                   ? ((const float *)wf_tensor_data(t))[i]
                   : ((const double *)wf_tensor_data(t))[i];
    if (isfinite(v))
      m = fmax(m, fabs(v));
  }
  return m;
}

/* Set while the cases must equal the reference bit for bit. */
static int exact;

/* Elements the fast kernels computed that differ in any bit from the
 * reference's, over the whole program: proof that another implementation
 * ran (the reference rounds a double sum once; oneDNN sums floats). */
static int64_t bits_differ;
/* The label of the kernel the last check_case ran (the plugin's static
 * string). */
static const char *picked_label;

/* Fails unless got matches want (same dtype and shape, values within the
 * file's tolerance). */
static void expect_close(const char *name, int out, const wf_tensor *want,
                         const wf_tensor *got) {
  wf_shape ws, gs;
  char a[128], b[128];
  wf_dtype dt = wf_tensor_dtype(want);
  double rtol = dt == WF_FLOAT32 ? 1e-4 : 1e-10;
  double floor = (dt == WF_FLOAT32 ? 1e-5 : 1e-12) * fmax(1.0, max_abs(want));

  /* NaN compares as equal to NaN only (below); max_abs skips it. */
  int64_t n;

  wf_tensor_shape(want, &ws);
  wf_tensor_shape(got, &gs);
  if (wf_tensor_dtype(got) != dt || !wf_shape_equal(&ws, &gs))
    fail_msg("%s: output %d is %s %s, the reference gives %s %s", name, out,
             wf_dtype_name(wf_tensor_dtype(got)),
             wf_shape_str(&gs, a, sizeof a), wf_dtype_name(dt),
             wf_shape_str(&ws, b, sizeof b));
  n = wf_tensor_count(want);
  for (int64_t i = 0; i < n; i++) {
    double w, g;
    if (dt == WF_FLOAT32) {
      w = ((const float *)wf_tensor_data(want))[i];
      g = ((const float *)wf_tensor_data(got))[i];
    } else {
      w = ((const double *)wf_tensor_data(want))[i];
      g = ((const double *)wf_tensor_data(got))[i];
    }
    if (isnan(w) && isnan(g))
      continue; /* statistics of an empty batch */
    bits_differ += g != w;
    if (exact && (g != w || signbit(g) != signbit(w)))
      fail_msg("%s: output %d element %lld is %a, the reference gives %a "
               "(bit for bit expected)",
               name, out, (long long)i, g, w);
    if (g == w)
      continue; /* infinities too */
    if (!(fabs(g - w) <= rtol * fabs(w) + floor))
      fail_msg("%s: output %d element %lld is %.9g, the reference gives "
               "%.9g (tolerance %.3g)",
               name, out, (long long)i, g, w, rtol * fabs(w) + floor);
  }
}

/* An error's message without the prefix the core puts before it, which
 * names the kernel that ran ("... kernel 'onednn' of plugin 'x': "). */
static const char *reason(const wf_status *st) {
  const char *m = wf_status_message(st), *k = strstr(m, "' of plugin '");
  const char *end = k ? strstr(k, "': ") : NULL;

  return end ? end + 3 : m;
}

/* 1 when st's reason is, word for word, the error the op's shape function
 * gives for the case's inputs: what the fast kernels report for inputs the
 * op refuses (they take their output shapes from it), where the reference
 * kernel may word the same refusal its own way. */
static int shape_error_is(const kcase *c, const wf_node *n,
                          const wf_status *st) {
  wf_status *sst = wf_status_new();
  wf_shape in[MAX_IN], out[8];
  int same;

  for (int i = 0; i < c->nin; i++)
    wf_tensor_shape(c->in[i], &in[i]);
  same = wf__node_infer_shapes_values(n, in, (const wf_tensor *const *)c->in,
                                      out, sst) != 0 &&
         strcmp(reason(st), wf_status_message(sst)) == 0;
  wf_status_free(sst);
  return same;
}

/* Runs the case's node with the fast kernel (which must be the one the
 * registry picks, above the reference) and with the reference kernel, and
 * compares: equal outputs within tolerance, or the same error. */
static void check_case(const kcase *c) {
  wf_status *st = wf_status_new(), *rst = wf_status_new();
  wf_graph *g = wf_graph_new(rt);
  const wf__kernel *fast, *ref;
  wf_tensor *fo[8] = {NULL}, *ro[8] = {NULL};
  wf_node *n;
  int frc, rrc;

  assert_non_null(g);
  if (!(n = build(g, c, st)))
    fail_msg("%s: building: %s", c->name, wf_status_message(st));
  if (!(fast = wf__kernel_select(rt, n, "cpu", st)))
    fail_msg("%s: no kernel: %s", c->name, wf_status_message(st));
  if (fast->def.priority <= 0 || strcmp(fast->plugin, "device-cpu") != 0)
    fail_msg("%s: the registry picks %s's '%s' kernel (priority %d), not "
             "device-cpu's",
             c->name, fast->plugin, fast->def.label, (int)fast->def.priority);
  picked_label = fast->def.label;
  if (!(ref = reference_kernel(c->op, c->dtype)))
    fail_msg("%s: no reference kernel for %s", c->name,
             wf_dtype_name(c->dtype));
  frc = wf__kernel_run(fast, n, (const wf_tensor *const *)c->in, fo, st);
  rrc = wf__kernel_run(ref, n, (const wf_tensor *const *)c->in, ro, rst);
  if (c->must_fail && (!frc || !rrc))
    fail_msg("%s: the fast kernel gives %d, the reference %d; both should "
             "refuse the inputs",
             c->name, frc, rrc);
  if (frc || rrc) {
    if (frc != rrc ||
        (strcmp(reason(st), reason(rst)) && !shape_error_is(c, n, st)))
      fail_msg("%s: the fast kernel gives %d (%s), the reference %d (%s)",
               c->name, frc, wf_status_message(st), rrc,
               wf_status_message(rst));
  } else {
    for (int i = 0; i < wf_node_num_outputs(n); i++)
      expect_close(c->name, i, ro[i], fo[i]);
  }
  for (int i = 0; i < 8; i++) {
    wf_tensor_release(fo[i]);
    wf_tensor_release(ro[i]);
  }
  wf_graph_free(g);
  wf_status_free(st);
  wf_status_free(rst);
}

/* Fails unless some result since `before` (a bits_differ reading)
 * differed in its last bits from the reference: the fast path, not a
 * fallback, computed it. */
static void expect_fast_path(const char *what, int64_t before) {
  if (bits_differ == before)
    fail_msg("%s: every result equals the reference's bit for bit; the "
             "fast path never ran",
             what);
}

#endif /* HAVE_GEMM_KERNELS: the helpers of the kernel cases */

/* ---- setup ------------------------------------------------------------------- */

/* A runtime of the plugins this file tests; intra_op and deny (the
 * config's [kernels] deny) when not NULL. */
static wf_runtime *new_runtime_denying(const char *intra_op,
                                       const char *deny) {
  static const char *const dirs[] = {
      "plugins/ops/math/.libs", "plugins/ops/array/.libs",
      "plugins/ops/nn/.libs",   "plugins/ops/rnn/.libs",
      "plugins/ops/state/.libs", "plugins/devices/cpu/.libs"};
  wf_status *st = wf_status_new();
  wf_config *cfg = wf_config_new();
  wf_runtime *r;
  char paths[2048] = "";

  for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
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
  if (intra_op)
    assert_int_equal(
        wf_config_set(cfg, "threads", "intra_op", intra_op, st), 0);
  if (deny)
    assert_int_equal(wf_config_set(cfg, "kernels", "deny", deny, st), 0);
  r = wf_runtime_new(cfg, st);
  if (!r)
    fail_msg("loading %s: %s", paths, wf_status_message(st));
  wf_config_free(cfg);
  wf_status_free(st);
  return r;
}

static wf_runtime *new_runtime(const char *intra_op) {
  return new_runtime_denying(intra_op, NULL);
}

static int group_setup(void **state) {
  rt = new_runtime(NULL);
  return rt ? 0 : -1;
}

static int group_teardown(void **state) {
  wf_runtime_free(rt);
  rt = NULL;
  return 0;
}

#ifdef HAVE_GEMM_KERNELS
/* ---- matrix products ---------------------------------------------------------- */

/* MatMul on random sizes (odd ones, and some past blocking boundaries),
 * every transpose pair, float32 and float64. */
static void test_matmul_matches_reference_on_random_shapes(void **state) {
  static const int64_t sizes[] = {1, 2, 3, 7, 16, 31, 64, 65, 129};
  rng r = {1};
  int64_t before = bits_differ;

  for (int i = 0; i < 48; i++) {
    wf_dtype dt = i % 3 == 2 && HAVE_F64 ? WF_FLOAT64 : WF_FLOAT32;
    int64_t m = sizes[irand(&r, 0, 8)], n = sizes[irand(&r, 0, 8)];
    int64_t k = sizes[irand(&r, 0, 8)];
    int ta = i & 1, tb = (i >> 1) & 1;
    int64_t ad[2] = {ta ? k : m, ta ? m : k}, bd[2] = {tb ? n : k, tb ? k : n};
    kcase c;

    case_init(&c, "MatMul", dt);
    case_note(&c, " %s m=%lld n=%lld k=%lld ta=%d tb=%d", wf_dtype_name(dt),
              (long long)m, (long long)n, (long long)k, ta, tb);
    add_input(&c, &r, dt, ad, 2, -1, 1);
    add_input(&c, &r, dt, bd, 2, -1, 1);
    attr_bool(&c, "transpose_a", ta);
    attr_bool(&c, "transpose_b", tb);
    check_case(&c);
    case_free(&c);
  }
  expect_fast_path("MatMul", before);
}

/* _FusedMatMul (bias and each activation as oneDNN post-ops, or the
 * reference epilogue after OpenBLAS) against the reference fused kernel:
 * random sizes, every transpose pair, float32 and float64. */
static void test_fused_matmul_matches_reference(void **state) {
  static const int64_t sizes[] = {1, 2, 3, 7, 16, 31, 64, 65, 129};
  rng r = {21};
  int64_t before = bits_differ;

  for (int i = 0; i < 4 * NFUSED; i++) {
    wf_dtype dt = i % 5 == 4 && HAVE_F64 ? WF_FLOAT64 : WF_FLOAT32;
    int64_t m = sizes[irand(&r, 0, 8)], n = sizes[irand(&r, 0, 8)];
    int64_t k = sizes[irand(&r, 0, 8)];
    int ta = i & 1, tb = (i >> 1) & 1;
    int64_t ad[2] = {ta ? k : m, ta ? m : k}, bd[2] = {tb ? n : k, tb ? k : n};
    kcase c;

    case_init(&c, "_FusedMatMul", dt);
    case_note(&c, " %s m=%lld n=%lld k=%lld ta=%d tb=%d", wf_dtype_name(dt),
              (long long)m, (long long)n, (long long)k, ta, tb);
    add_input(&c, &r, dt, ad, 2, -1, 1);
    add_input(&c, &r, dt, bd, 2, -1, 1);
    add_input(&c, &r, dt, &n, 1, -1, 1);
    attr_bool(&c, "transpose_a", ta);
    attr_bool(&c, "transpose_b", tb);
    fused_attrs(&c, i % NFUSED);
    check_case(&c);
    case_free(&c);
  }
  expect_fast_path("_FusedMatMul", before);
}

/* Products of at most 16 columns, which cpu_gemm.c computes in its own
 * loops on CPUs with AVX2 and no AVX-512 (elsewhere the libraries do, and
 * this checks those): column counts around one vector (8) and two (16),
 * inner sizes from 1 (every row of b read masked) to the cnn's 1568, row
 * counts around the four-row block, A transposed or not, the cnn's dense
 * layer at batch 64 (shared by the threads), plain and fused with every
 * epilogue. */
static void test_narrow_matmul_matches_reference(void **state) {
  static const int64_t ns[] = {1, 5, 8, 9, 10, 16};
  static const int64_t ks[] = {1, 2, 3, 5, 17, 130, 1568};
  static const int64_t ms[] = {1, 3, 4, 5, 8, 67};
  rng r = {27};
  int64_t before = bits_differ;

  for (int i = 0; i < 36; i++) {
    int fused = i % 3 == 2, ta = (i / 2) % 2;
    int64_t n = ns[i % 6], k = ks[(i * 5) % 7], m = ms[(i * 7) % 6];
    int64_t ad[2], bd[2];
    kcase c;

    if (i == 0)
      m = 64, n = 10, k = 1568, ta = 0;
    ad[0] = ta ? k : m, ad[1] = ta ? m : k;
    bd[0] = k, bd[1] = n;
    case_init(&c, fused ? "_FusedMatMul" : "MatMul", WF_FLOAT32);
    case_note(&c, " m=%lld n=%lld k=%lld ta=%d", (long long)m, (long long)n,
              (long long)k, ta);
    add_input(&c, &r, WF_FLOAT32, ad, 2, -1, 1);
    add_input(&c, &r, WF_FLOAT32, bd, 2, -1, 1);
    if (fused)
      add_input(&c, &r, WF_FLOAT32, &n, 1, -1, 1);
    attr_bool(&c, "transpose_a", ta);
    attr_bool(&c, "transpose_b", 0);
    if (fused)
      fused_attrs(&c, (i / 3) % NFUSED);
    check_case(&c);
    case_free(&c);
  }
  expect_fast_path("narrow MatMul", before);
}

/* _FusedMatMul of 2^27 multiply-adds, where a plain product goes to
 * dnnl_sgemm on two threads: the fused one keeps the matmul primitive with
 * its post-ops (bias alone, and bias with GELU). */
static void test_large_fused_matmul_matches_reference(void **state) {
  int64_t ad[2] = {1024, 256}, bd[2] = {256, 512}, n = 512;
  static const int lists[2] = {0, 5}; /* BiasAdd; BiasAdd, Gelu */
  rng r = {26};
  int64_t before = bits_differ;

  for (int i = 0; i < 2; i++) {
    kcase c;
    case_init(&c, "_FusedMatMul", WF_FLOAT32);
    case_note(&c, " 1024x256 by 256x512");
    add_input(&c, &r, WF_FLOAT32, ad, 2, -1, 1);
    add_input(&c, &r, WF_FLOAT32, bd, 2, -1, 1);
    add_input(&c, &r, WF_FLOAT32, &n, 1, -1, 1);
    attr_bool(&c, "transpose_a", 0);
    attr_bool(&c, "transpose_b", 0);
    fused_attrs(&c, lists[i]);
    check_case(&c);
    case_free(&c);
  }
  expect_fast_path("large _FusedMatMul", before);
}

/* One product of 2^30 multiply-adds: the size from which cpu_gemm.c calls
 * dnnl_sgemm instead of the matmul primitive. */
static void test_large_matmul_matches_reference(void **state) {
  int64_t d[2] = {1024, 1024};
  rng r = {15};
  int64_t before = bits_differ;
  kcase c;

  case_init(&c, "MatMul", WF_FLOAT32);
  case_note(&c, " 1024^3, B transposed");
  add_input(&c, &r, WF_FLOAT32, d, 2, -1, 1);
  add_input(&c, &r, WF_FLOAT32, d, 2, -1, 1);
  attr_bool(&c, "transpose_b", 1);
  check_case(&c);
  case_free(&c);
  expect_fast_path("MatMul 1024^3", before);
}

/* Products whose output is small beside their operands, which cpu_gemm.c
 * splits along k over the intra-op threads (ksplit_parts) and sums after
 * the join: the transformer's weight gradients (64 x 64 and 64 x 128 over
 * 1,792 rows, A transposed) with every transpose pair, its embedding's
 * (28 x 64), the mlp's first layer at batch 64 (64 x 256 x 784), and an
 * odd k (8,191: parts of unequal length); MatMul and
 * _FusedMatMul (the epilogue applied by the team after the sum) with each
 * epilogue. Run on the shared runtime (the machine's threads) and on
 * three intra-op threads (three parts, on two cores more parts than
 * cores). */
static void test_matmul_split_along_k_matches_reference(void **state) {
  static const int64_t shapes[][3] = {
      {64, 64, 1792}, {64, 128, 1792}, {128, 64, 1792}, {28, 64, 1792},
      {8, 24, 8191},  {3, 5, 70001},   {64, 256, 784}};
  rng r = {28};
  int64_t before = bits_differ;

  for (int i = 0; i < 14 + NFUSED; i++) {
    int64_t m = shapes[i % 7][0], n = shapes[i % 7][1], k = shapes[i % 7][2];
    int ta = i < 4 ? i & 1 : i % 7 != 6, tb = i < 4 ? (i >> 1) & 1 : i % 4 == 1;
    int fused = i >= 14;
    int64_t ad[2] = {ta ? k : m, ta ? m : k}, bd[2] = {tb ? n : k, tb ? k : n};
    kcase c;

    case_init(&c, fused ? "_FusedMatMul" : "MatMul", WF_FLOAT32);
    case_note(&c, " m=%lld n=%lld k=%lld ta=%d tb=%d", (long long)m,
              (long long)n, (long long)k, ta, tb);
    add_input(&c, &r, WF_FLOAT32, ad, 2, -1, 1);
    add_input(&c, &r, WF_FLOAT32, bd, 2, -1, 1);
    if (fused)
      add_input(&c, &r, WF_FLOAT32, &n, 1, -1, 1);
    attr_bool(&c, "transpose_a", ta);
    attr_bool(&c, "transpose_b", tb);
    if (fused)
      fused_attrs(&c, (i - 14) % NFUSED);
    check_case(&c);
    case_free(&c);
  }
  expect_fast_path("MatMul split along k", before);
}

/* Weight gradients over a small batch (A transposed), which cpu_gemm.c
 * splits along m over the intra-op threads (msplit_parts): the mlp's
 * 784 x 256 and 256 x 128 over 64 samples, an odd row count (parts of
 * unequal length), B transposed or not, MatMul and _FusedMatMul with each
 * epilogue (applied by each part to its rows). Run on the shared runtime
 * and on three intra-op threads. */
static void test_matmul_split_along_m_matches_reference(void **state) {
  static const int64_t shapes[][3] = {
      {784, 256, 64}, {256, 128, 64}, {131, 96, 170}, {200, 33, 300}};
  rng r = {29};
  int64_t before = bits_differ;

  for (int i = 0; i < 8 + NFUSED; i++) {
    int64_t m = shapes[i % 4][0], n = shapes[i % 4][1], k = shapes[i % 4][2];
    int tb = (i / 4) % 2, fused = i >= 8;
    int64_t ad[2] = {k, m}, bd[2] = {tb ? n : k, tb ? k : n};
    kcase c;

    case_init(&c, fused ? "_FusedMatMul" : "MatMul", WF_FLOAT32);
    case_note(&c, " m=%lld n=%lld k=%lld ta=1 tb=%d", (long long)m,
              (long long)n, (long long)k, tb);
    add_input(&c, &r, WF_FLOAT32, ad, 2, -1, 1);
    add_input(&c, &r, WF_FLOAT32, bd, 2, -1, 1);
    if (fused)
      add_input(&c, &r, WF_FLOAT32, &n, 1, -1, 1);
    attr_bool(&c, "transpose_a", 1);
    attr_bool(&c, "transpose_b", tb);
    if (fused)
      fused_attrs(&c, (i - 8) % NFUSED);
    check_case(&c);
    case_free(&c);
  }
  expect_fast_path("MatMul split along m", before);
}

/* BatchMatMul with broadcast batch dims of different ranks, adjoint
 * flags, float32 and float64. */
static void test_batch_matmul_matches_reference_with_broadcasting(
    void **state) {
  /* batch dims of x and y (rank, dims) */
  static const int64_t bx[][4] = {{1, 3}, {2, 2, 3}, {2, 2, 1}, {1, 1},
                                  {0},    {3, 2, 1, 2}};
  static const int64_t by[][4] = {{1, 3}, {1, 3}, {2, 1, 4}, {2, 5, 1},
                                  {2, 2, 3}, {2, 3, 1}};
  rng r = {2};

  for (int i = 0; i < 24; i++) {
    int s = i % 6;
    wf_dtype dt = i >= 18 && HAVE_F64 ? WF_FLOAT64 : WF_FLOAT32;
    int64_t m = irand(&r, 1, 9), n = irand(&r, 1, 9), k = irand(&r, 1, 9);
    int ax = (i / 6) & 1, ay = (i / 12) & 1;
    int64_t xd[6], yd[6];
    int xr = (int)bx[s][0], yr = (int)by[s][0];
    kcase c;

    for (int j = 0; j < xr; j++)
      xd[j] = bx[s][j + 1];
    for (int j = 0; j < yr; j++)
      yd[j] = by[s][j + 1];
    xd[xr] = ax ? k : m, xd[xr + 1] = ax ? m : k;
    yd[yr] = ay ? n : k, yd[yr + 1] = ay ? k : n;
    case_init(&c, "BatchMatMul", dt);
    case_note(&c, " %s case %d m=%lld n=%lld k=%lld adj=%d%d",
              wf_dtype_name(dt), s, (long long)m, (long long)n, (long long)k,
              ax, ay);
    add_input(&c, &r, dt, xd, xr + 2, -1, 1);
    add_input(&c, &r, dt, yd, yr + 2, -1, 1);
    attr_bool(&c, "adj_x", ax);
    attr_bool(&c, "adj_y", ay);
    check_case(&c);
    case_free(&c);
  }
}

/* Batches of small matrices (cpu_gemm.c's loops for them on CPUs with
 * AVX2 and FMA, sixteen lanes to a vector with AVX-512; the matmul
 * primitive elsewhere): the transformer's attention shapes, odd sizes
 * that leave partial row blocks and vectors, two chunks of columns (n
 * over 32), three vectors of 16 (n = 48), the largest n and sizes just
 * past the loops' limits, an op(b) that fits the scratch in vectors of
 * 8 but not of 16 (8 x 1024: the AVX2 loops then), every adjoint pair,
 * and broadcast batch dims. */
static void test_small_batch_matmul_matches_reference(void **state) {
  static const int64_t mnk[][3] = {
      {28, 28, 16}, {28, 16, 28}, {1, 1, 1},     {5, 3, 7},
      {13, 40, 9},  {9, 64, 17},  {7, 65, 3},    {64, 64, 17},
      {33, 20, 50}, {15, 48, 20}, {8, 8, 1024}};
  rng r = {27};
  int64_t before = bits_differ;

  for (int i = 0; i < 11; i++)
    for (int adj = 0; adj < 4; adj++) {
      int64_t m = mnk[i][0], n = mnk[i][1], k = mnk[i][2];
      int ax = adj & 1, ay = adj >> 1, bcast = (i + adj) % 3 == 0;
      int64_t xd[4] = {bcast ? 3 : 6, bcast ? 1 : 2, ax ? k : m, ax ? m : k};
      int64_t yd[4] = {bcast ? 1 : 6, 2, ay ? n : k, ay ? k : n};
      kcase c;
      case_init(&c, "BatchMatMul", WF_FLOAT32);
      case_note(&c, " m=%lld n=%lld k=%lld adj=%d%d%s", (long long)m,
                (long long)n, (long long)k, ax, ay,
                bcast ? " broadcast" : "");
      add_input(&c, &r, WF_FLOAT32, xd, 4, -1, 1);
      add_input(&c, &r, WF_FLOAT32, yd, 4, -1, 1);
      attr_bool(&c, "adj_x", ax);
      attr_bool(&c, "adj_y", ay);
      check_case(&c);
      case_free(&c);
    }
  expect_fast_path("small BatchMatMul", before);
}

#endif /* HAVE_GEMM_KERNELS */

#ifdef HAVE_NN_KERNELS
/* ---- convolutions and pools ---------------------------------------------------- */

/* A drawn 2-D window over an (N, H, W, C) input. */
typedef struct win {
  int nchw, padding; /* 0 SAME, 1 VALID, 2 EXPLICIT */
  int64_t n, h, w, c, co, kh, kw, sh, sw, dh, dw;
  int64_t pad[4]; /* EXPLICIT: top, bottom, left, right */
  int64_t oh, ow;
} win;

static const char *const pad_names[] = {"SAME", "VALID", "EXPLICIT"};

/* Output size of one dimension, or -1 when the window does not fit. */
static int64_t out_dim(int padding, int64_t in, int64_t k, int64_t s,
                       int64_t d, int64_t lo, int64_t hi) {
  int64_t eff = (k - 1) * d + 1, avail = in;

  if (padding == 0)
    return (in + s - 1) / s;
  if (padding == 2)
    avail = in + lo + hi;
  return avail < eff ? -1 : (avail - eff) / s + 1;
}

/* Draws a window until it fits (pools: no dilation, no EXPLICIT). */
static void draw_window(rng *r, win *w, int conv) {
  do {
    w->nchw = (int)irand(r, 0, 1);
    w->padding = (int)irand(r, 0, 2);
    w->n = irand(r, 1, 3);
    w->h = irand(r, 1, 11);
    w->w = irand(r, 1, 11);
    w->c = irand(r, 1, 5);
    w->co = irand(r, 1, 6);
    w->kh = irand(r, 1, 4);
    w->kw = irand(r, 1, 4);
    w->sh = irand(r, 1, 3);
    w->sw = irand(r, 1, 3);
    w->dh = conv ? irand(r, 1, 2) : 1;
    w->dw = conv ? irand(r, 1, 2) : 1;
    /* a pool's padding stays below its window */
    for (int i = 0; i < 4; i++)
      w->pad[i] = w->padding != 2 ? 0
                  : conv      ? irand(r, 0, 2)
                              : irand(r, 0, (i < 2 ? w->kh : w->kw) - 1);
    w->oh = out_dim(w->padding, w->h, w->kh, w->sh, w->dh, w->pad[0],
                    w->pad[1]);
    w->ow = out_dim(w->padding, w->w, w->kw, w->sw, w->dw, w->pad[2],
                    w->pad[3]);
  } while (w->oh <= 0 || w->ow <= 0);
}

/* (N, H, W, C) in the window's format into d. */
static void act_dims(const win *w, int64_t h, int64_t wd, int64_t c,
                     int64_t *d) {
  d[0] = w->n;
  d[1] = w->nchw ? c : h;
  d[2] = w->nchw ? h : wd;
  d[3] = w->nchw ? wd : c;
}

/* The window's attributes: strides, padding, data_format, and for Conv2D
 * dilations and explicit_paddings, for pools ksize. */
static void window_attrs(kcase *c, const win *w, int conv) {
  int64_t v[8];

  act_dims(w, w->sh, w->sw, 1, v);
  v[0] = 1;
  attr_ints(c, "strides", v, 4);
  attr_string(c, "padding", pad_names[w->padding]);
  attr_string(c, "data_format", w->nchw ? "NCHW" : "NHWC");
  if (conv) {
    act_dims(w, w->dh, w->dw, 1, v);
    v[0] = 1;
    attr_ints(c, "dilations", v, 4);
  } else {
    act_dims(w, w->kh, w->kw, 1, v);
    v[0] = 1;
    attr_ints(c, "ksize", v, 4);
  }
  if (w->padding == 2) {
    int ih = w->nchw ? 2 : 1, iw = w->nchw ? 3 : 2;
    memset(v, 0, sizeof v);
    v[2 * ih] = w->pad[0], v[2 * ih + 1] = w->pad[1];
    v[2 * iw] = w->pad[2], v[2 * iw + 1] = w->pad[3];
    attr_ints(c, "explicit_paddings", v, 8);
  }
  case_note(c, " %s n=%lld h=%lld w=%lld c=%lld k=%lldx%lld s=%lldx%lld",
            w->nchw ? "NCHW" : "NHWC", (long long)w->n, (long long)w->h,
            (long long)w->w, (long long)w->c, (long long)w->kh,
            (long long)w->kw, (long long)w->sh, (long long)w->sw);
  if (conv)
    case_note(c, " co=%lld d=%lldx%lld %s [%lld %lld %lld %lld]",
              (long long)w->co, (long long)w->dh, (long long)w->dw,
              pad_names[w->padding], (long long)w->pad[0],
              (long long)w->pad[1], (long long)w->pad[2],
              (long long)w->pad[3]);
  else
    case_note(c, " %s", pad_names[w->padding]);
}

enum { FWD, BWD_DATA, BWD_FILTER };

static void conv_case(rng *r, int kind) {
  static const char *const ops[] = {"Conv2D", "Conv2DBackpropInput",
                                    "Conv2DBackpropFilter"};
  int64_t xd[4], yd[4], fd[4];
  win w;
  kcase c;

  draw_window(r, &w, 1);
  act_dims(&w, w.h, w.w, w.c, xd);
  act_dims(&w, w.oh, w.ow, w.co, yd);
  fd[0] = w.kh, fd[1] = w.kw, fd[2] = w.c, fd[3] = w.co;
  case_init(&c, ops[kind], WF_FLOAT32);
  if (kind == BWD_DATA)
    add_sizes(&c, xd, 4);
  else
    add_input(&c, r, WF_FLOAT32, xd, 4, -1, 1);
  if (kind == BWD_FILTER)
    add_sizes(&c, fd, 4);
  else
    add_input(&c, r, WF_FLOAT32, fd, 4, -1, 1);
  if (kind != FWD)
    add_input(&c, r, WF_FLOAT32, yd, 4, -1, 1);
  window_attrs(&c, &w, 1);
  check_case(&c);
  case_free(&c);
}

static void test_conv2d_matches_reference_on_random_windows(void **state) {
  rng r = {3};
  int64_t before = bits_differ;

  for (int i = 0; i < 80; i++)
    conv_case(&r, FWD);
  expect_fast_path("Conv2D", before);
}

/* _FusedConv2D (bias input and eltwise post-op) against the reference
 * fused kernel, on random windows in both formats, each epilogue. */
static void test_fused_conv2d_matches_reference(void **state) {
  rng r = {22};
  int64_t before = bits_differ;

  for (int i = 0; i < 6 * NFUSED; i++) {
    int64_t xd[4], fd[4];
    win w;
    kcase c;

    draw_window(&r, &w, 1);
    act_dims(&w, w.h, w.w, w.c, xd);
    fd[0] = w.kh, fd[1] = w.kw, fd[2] = w.c, fd[3] = w.co;
    case_init(&c, "_FusedConv2D", WF_FLOAT32);
    add_input(&c, &r, WF_FLOAT32, xd, 4, -1, 1);
    add_input(&c, &r, WF_FLOAT32, fd, 4, -1, 1);
    add_input(&c, &r, WF_FLOAT32, &fd[3], 1, -1, 1);
    window_attrs(&c, &w, 1);
    fused_attrs(&c, i % NFUSED);
    check_case(&c);
    case_free(&c);
  }
  expect_fast_path("_FusedConv2D", before);
}

static void test_conv2d_backprop_input_matches_reference(void **state) {
  rng r = {4};
  int64_t before = bits_differ;

  for (int i = 0; i < 60; i++)
    conv_case(&r, BWD_DATA);
  expect_fast_path("Conv2DBackpropInput", before);
}

static void test_conv2d_backprop_filter_matches_reference(void **state) {
  rng r = {5};
  int64_t before = bits_differ;

  for (int i = 0; i < 60; i++)
    conv_case(&r, BWD_FILTER);
  expect_fast_path("Conv2DBackpropFilter", before);
}

/* The cnn model's own layers: NHWC, 3x3, SAME, batch 64. */
static void test_conv2d_matches_reference_on_the_cnn_layers(void **state) {
  static const int64_t layers[2][4] = {{28, 28, 1, 16}, {14, 14, 16, 32}};
  rng r = {6};

  for (int l = 0; l < 2; l++)
    for (int kind = FWD; kind <= BWD_FILTER; kind++) {
      win w = {.padding = 0, .n = 64, .h = layers[l][0], .w = layers[l][1],
               .c = layers[l][2], .co = layers[l][3], .kh = 3, .kw = 3,
               .sh = 1, .sw = 1, .dh = 1, .dw = 1};
      int64_t xd[4], yd[4], fd[4] = {3, 3, w.c, w.co};
      kcase c;

      w.oh = w.h, w.ow = w.w;
      act_dims(&w, w.h, w.w, w.c, xd);
      act_dims(&w, w.oh, w.ow, w.co, yd);
      case_init(&c, kind == FWD        ? "Conv2D"
                    : kind == BWD_DATA ? "Conv2DBackpropInput"
                                       : "Conv2DBackpropFilter",
                WF_FLOAT32);
      if (kind == BWD_DATA)
        add_sizes(&c, xd, 4);
      else
        add_input(&c, &r, WF_FLOAT32, xd, 4, 0, 1);
      if (kind == BWD_FILTER)
        add_sizes(&c, fd, 4);
      else
        add_input(&c, &r, WF_FLOAT32, fd, 4, -0.3, 0.3);
      if (kind != FWD)
        add_input(&c, &r, WF_FLOAT32, yd, 4, -1, 1);
      window_attrs(&c, &w, 1);
      check_case(&c);
      case_free(&c);
    }
}

/* The CPU kernel of op labelled label. */
static const wf__kernel *cpu_kernel(const char *op, const char *label) {
  const wf__registry *r = rt->reg;

  for (int i = 0; i < wf__registry_kernel_count(r); i++) {
    const wf__kernel *k = wf__registry_kernel_at(r, i);
    if (strcmp(k->def.op, op) == 0 && strcmp(k->def.device_type, "cpu") == 0 &&
        k->def.label && strcmp(k->def.label, label) == 0)
      return k;
  }
  fail_msg("no cpu kernel '%s' for %s", label, op);
  return NULL;
}

/* The CPUs the plugin's shallow loops serve unpooled (Conv2D,
 * _FusedConv2D, the filter's gradient): AVX2 and FMA without AVX-512,
 * where oneDNN's kernels are faster (the rule cpu_kernels.h documents,
 * repeated here). */
static int shallow_isa(void) {
#if defined(__GNUC__) && defined(__x86_64__)
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
         !__builtin_cpu_supports("avx512f");
#else
  return 0;
#endif
}

/* The CPUs the plugin's softmax, cross-entropy and ReluGrad loops, its
 * small matrices' loops, its Winograd loops and _FusedConv2DMaxPool's
 * shallow loops serve: AVX2 and FMA, AVX-512 or not. */
static int avx2_fma(void) {
#if defined(__GNUC__) && defined(__x86_64__)
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
  return 0;
#endif
}

/* The CPUs the plugin's GELU loops serve: AVX-512 (with AVX2 and FMA). */
static int avx512f(void) {
#if defined(__GNUC__) && defined(__x86_64__)
  return avx2_fma() && __builtin_cpu_supports("avx512f");
#else
  return 0;
#endif
}

/* The plugin's own Winograd loops (cpu_winograd.c) take NHWC 3x3
 * convolutions moved one element at a time (dilation 1) with input
 * channels a multiple of 8 up to 64 and output channels a multiple of 16
 * up to 64, on CPUs with AVX2 and FMA. */
static int own_winograd_takes(const win *w) {
  return avx2_fma() && !w->nchw && w->kh == 3 && w->kw == 3 &&
         w->sh == 1 && w->sw == 1 && w->dh == 1 && w->dw == 1 &&
         w->c >= 8 && w->c <= 64 && w->c % 8 == 0 && w->co >= 16 &&
         w->co <= 64 && w->co % 16 == 0;
}

/* 3x3 convolutions moved one element at a time between 32 or more
 * channels (64 on one side), plain and fused, random sizes, paddings and formats: the
 * registry gives them to onednn/winograd (or, for the shapes they take,
 * to the plugin's own loops/winograd, checked below), whose results match the
 * reference within the file's tolerance and, where oneDNN's Winograd
 * kernels serve the window, differ from the direct kernel's in their
 * last bits (the algorithm ran, not the fallback). Windows it does not
 * serve go to the direct kernel. oneDNN 2.6 has Winograd kernels for
 * AVX-512 (avx512_core) only: on other CPUs every call runs the direct
 * kernel, which is then all this checks. */
static void test_winograd_conv2d_matches_reference(void **state) {
  rng r = {25};
  int ncases = 6 * NFUSED, winograd_ran = 0;
#if defined(__GNUC__) && defined(__x86_64__)
  int winograd_isa = __builtin_cpu_supports("avx512f") &&
                     __builtin_cpu_supports("avx512bw") &&
                     __builtin_cpu_supports("avx512vl") &&
                     __builtin_cpu_supports("avx512dq");
#else
  int winograd_isa = 0;
#endif

  for (int i = 0; i < ncases; i++) {
    int fused = i % 2;
    const char *op = fused ? "_FusedConv2D" : "Conv2D";
    wf_status *st = wf_status_new();
    wf_graph *g = wf_graph_new(rt);
    const wf__kernel *k, *direct = cpu_kernel(op, "onednn");
    const char *picked;
    wf_tensor *ref = NULL, *wino = NULL, *dir = NULL;
    int64_t xd[4], fd[4];
    win w = {.nchw = (int)irand(&r, 0, 1), .padding = (int)irand(&r, 0, 2),
             .n = irand(&r, 1, 3), .h = irand(&r, 1, 15),
             .w = irand(&r, 1, 15), .c = irand(&r, 32, 72),
             .co = irand(&r, 32, 72), .kh = 3, .kw = 3, .sh = 1, .sw = 1,
             .dh = 1, .dw = 1};
    kcase c;
    wf_node *n;
    int must_run;

    if (w.c * w.co < 32 * 64)
      w.co = 64;
    for (int j = 0; j < 4; j++)
      w.pad[j] = w.padding == 2 ? irand(&r, 0, 2) : 0;
    w.oh = out_dim(w.padding, w.h, 3, 1, 1, w.pad[0], w.pad[1]);
    w.ow = out_dim(w.padding, w.w, 3, 1, 1, w.pad[2], w.pad[3]);
    if (w.oh <= 0 || w.ow <= 0)
      w.padding = 0, w.oh = w.h, w.ow = w.w, w.pad[0] = w.pad[1] = 0,
      w.pad[2] = w.pad[3] = 0;
    act_dims(&w, w.h, w.w, w.c, xd);
    fd[0] = 3, fd[1] = 3, fd[2] = w.c, fd[3] = w.co;
    case_init(&c, op, WF_FLOAT32);
    add_input(&c, &r, WF_FLOAT32, xd, 4, 0, 1);
    add_input(&c, &r, WF_FLOAT32, fd, 4, -0.1, 0.1);
    if (fused)
      add_input(&c, &r, WF_FLOAT32, &fd[3], 1, -1, 1);
    window_attrs(&c, &w, 1);
    if (fused)
      fused_attrs(&c, (i / 2) % NFUSED);
    /* oneDNN's Winograd kernels pad by at most one and take a ReLU (or
     * no activation) as their epilogue; the rest runs the direct kernel
     * (within the same tolerance, checked all the same). */
    must_run = winograd_isa && w.pad[0] <= 1 && w.pad[1] <= 1 &&
               w.pad[2] <= 1 &&
               w.pad[3] <= 1 &&
               (!fused || !fused_lists[(i / 2) % NFUSED][1] ||
                strcmp(fused_lists[(i / 2) % NFUSED][1], "Relu") == 0);
    if (!(n = build(g, &c, st)))
      fail_msg("%s: building: %s", c.name, wf_status_message(st));
    if (!(k = wf__kernel_select(rt, n, "cpu", st)))
      fail_msg("%s: no kernel: %s", c.name, wf_status_message(st));
    picked = own_winograd_takes(&w) ? "loops/winograd" : "onednn/winograd";
    if (strcmp(k->def.label, picked) != 0)
      fail_msg("%s: the registry picks '%s', not %s", c.name, k->def.label,
               picked);
    k = cpu_kernel(op, "onednn/winograd");
    if (wf__kernel_run(reference_kernel(op, WF_FLOAT32), n,
                       (const wf_tensor *const *)c.in, &ref, st) ||
        wf__kernel_run(k, n, (const wf_tensor *const *)c.in, &wino, st) ||
        wf__kernel_run(direct, n, (const wf_tensor *const *)c.in, &dir, st))
      fail_msg("%s: %s", c.name, wf_status_message(st));
    expect_close(c.name, 0, ref, wino);
    if (memcmp(wf_tensor_data(wino), wf_tensor_data(dir),
               wf_tensor_nbytes(dir)) != 0)
      winograd_ran++;
    else if (must_run)
      fail_msg("%s: the result is the direct kernel's bit for bit: "
               "Winograd's algorithm did not run",
               c.name);
    wf_tensor_release(ref);
    wf_tensor_release(wino);
    wf_tensor_release(dir);
    case_free(&c);
    wf_graph_free(g);
    wf_status_free(st);
  }
  if (!winograd_isa)
    print_message("oneDNN has no Winograd kernels for this CPU (no "
                  "AVX-512): the fallback to the direct kernel was "
                  "checked\n");
  else if (winograd_ran < ncases / 3)
    fail_msg("only %d of %d cases differ from the direct kernel: Winograd's "
             "algorithm hardly ran",
             winograd_ran, ncases);
  /* What it does not serve is left to the direct kernel: strides,
   * dilations, other windows, too few channels. */
  {
    static const int64_t other[][6] = {
        /* kh, kw, stride, dilation, c, co */
        {3, 3, 2, 1, 64, 64}, {3, 3, 1, 2, 64, 64}, {5, 5, 1, 1, 64, 64},
        {1, 1, 1, 1, 64, 64}, {3, 3, 1, 1, 16, 64}, {3, 3, 1, 1, 64, 16},
        {3, 3, 1, 1, 32, 32}};
    for (size_t i = 0; i < sizeof other / sizeof *other; i++) {
      wf_status *st = wf_status_new();
      wf_graph *g = wf_graph_new(rt);
      win w = {.padding = 0, .n = 1, .h = 9, .w = 9, .c = other[i][4],
               .co = other[i][5], .kh = other[i][0], .kw = other[i][1],
               .sh = other[i][2], .sw = other[i][2], .dh = other[i][3],
               .dw = other[i][3]};
      int64_t xd[4], fd[4] = {w.kh, w.kw, w.c, w.co};
      const wf__kernel *k = NULL;
      kcase c;
      wf_node *n;

      act_dims(&w, w.h, w.w, w.c, xd);
      case_init(&c, "Conv2D", WF_FLOAT32);
      add_input(&c, &r, WF_FLOAT32, xd, 4, 0, 1);
      add_input(&c, &r, WF_FLOAT32, fd, 4, -0.1, 0.1);
      window_attrs(&c, &w, 1);
      if (!(n = build(g, &c, st)) || !(k = wf__kernel_select(rt, n, "cpu", st)))
        fail_msg("%s: %s", c.name, wf_status_message(st));
      if (strcmp(k->def.label,
                 own_winograd_takes(&w) ? "loops/winograd" : "onednn") != 0)
        fail_msg("%s: the registry picks '%s', not %s", c.name, k->def.label,
                 own_winograd_takes(&w) ? "loops/winograd" : "onednn");
      case_free(&c);
      wf_graph_free(g);
      wf_status_free(st);
    }
  }
}

/* One Conv2D (fused: _FusedConv2D with fused list fl) of window w for
 * the plugin's own loops labelled label, on random inputs (filter in
 * [-frange, frange]). Where takes, the registry must pick them and their
 * result match the reference; *differ (when not NULL) counts results that
 * differ from the direct kernel's in their last bits. Elsewhere the
 * registry must not pick them. */
static void own_loops_case(rng *r, const win *w, int fused, int fl,
                           double frange, const char *label, int takes,
                           int *differ) {
  const char *op = fused ? "_FusedConv2D" : "Conv2D";
  wf_status *st = wf_status_new();
  wf_graph *g = wf_graph_new(rt);
  const wf__kernel *k, *direct = cpu_kernel(op, "onednn");
  wf_tensor *ref = NULL, *got = NULL, *dir = NULL;
  int64_t xd[4], fd[4] = {w->kh, w->kw, w->c, w->co};
  kcase c;
  wf_node *n;

  act_dims(w, w->h, w->w, w->c, xd);
  case_init(&c, op, WF_FLOAT32);
  add_input(&c, r, WF_FLOAT32, xd, 4, -1, 1);
  add_input(&c, r, WF_FLOAT32, fd, 4, -frange, frange);
  if (fused)
    add_input(&c, r, WF_FLOAT32, &fd[3], 1, -1, 1);
  window_attrs(&c, w, 1);
  if (fused)
    fused_attrs(&c, fl);
  if (!(n = build(g, &c, st)))
    fail_msg("%s: building: %s", c.name, wf_status_message(st));
  if (!(k = wf__kernel_select(rt, n, "cpu", st)))
    fail_msg("%s: no kernel: %s", c.name, wf_status_message(st));
  if (!takes) {
    if (strcmp(k->def.label, label) == 0)
      fail_msg("%s: %s picked for a node it does not take", c.name, label);
  } else {
    if (strcmp(k->def.label, label) != 0)
      fail_msg("%s: the registry picks '%s', not %s", c.name, k->def.label,
               label);
    if (wf__kernel_run(reference_kernel(op, WF_FLOAT32), n,
                       (const wf_tensor *const *)c.in, &ref, st) ||
        wf__kernel_run(k, n, (const wf_tensor *const *)c.in, &got, st) ||
        (differ && wf__kernel_run(direct, n, (const wf_tensor *const *)c.in,
                                  &dir, st)))
      fail_msg("%s: %s", c.name, wf_status_message(st));
    expect_close(c.name, 0, ref, got);
    if (differ && memcmp(wf_tensor_data(got), wf_tensor_data(dir),
                         wf_tensor_nbytes(dir)) != 0)
      (*differ)++;
    wf_tensor_release(ref);
    wf_tensor_release(got);
    wf_tensor_release(dir);
  }
  case_free(&c);
  wf_graph_free(g);
  wf_status_free(st);
}

/* The plugin's own Winograd loops: random NHWC batches, sizes (odd ones
 * leave half tiles at the edges, a 1x1 input is all padding but one
 * element), SAME, VALID and EXPLICIT paddings, channel counts over their
 * range, Conv2D and _FusedConv2D with every epilogue (ReLU and none in
 * the loops, the others after them). The registry picks loops/winograd;
 * the results match the reference within the file's tolerance and, in
 * most cases, differ from the direct kernel's in their last bits (the
 * algorithm ran). On a CPU they do not serve, the registry must not pick
 * them, which is then all this checks. */
static void test_own_winograd_conv2d_matches_reference(void **state) {
  rng r = {31};
  int ncases = 4 * NFUSED, differ = 0;

  for (int i = 0; i < ncases; i++) {
    int fused = i % 2 == 1, fl = (i / 2) % NFUSED;
    win w = {.padding = (int)irand(&r, 0, 2), .n = irand(&r, 1, 3),
             .h = i == 0 ? 1 : irand(&r, 1, 15),
             .w = i == 0 ? 1 : irand(&r, 1, 15), .c = 8 * irand(&r, 1, 8),
             .co = 16 * irand(&r, 1, 4), .kh = 3, .kw = 3, .sh = 1,
             .sw = 1, .dh = 1, .dw = 1};

    for (int j = 0; j < 4; j++)
      w.pad[j] = w.padding == 2 ? irand(&r, 0, 2) : 0;
    w.oh = out_dim(w.padding, w.h, 3, 1, 1, w.pad[0], w.pad[1]);
    w.ow = out_dim(w.padding, w.w, 3, 1, 1, w.pad[2], w.pad[3]);
    if (w.oh <= 0 || w.ow <= 0)
      w.padding = 0, w.pad[0] = w.pad[1] = w.pad[2] = w.pad[3] = 0;
    own_loops_case(&r, &w, fused, fl, 0.2, "loops/winograd",
                   avx2_fma(), &differ);
  }
  if (!avx2_fma())
    print_message("this CPU lacks AVX2/FMA: the plugin's Winograd loops "
                  "are not used (checked)\n");
  else if (differ < ncases / 2)
    fail_msg("only %d of %d cases differ from the direct kernel: the "
             "Winograd loops hardly ran",
             differ, ncases);
}

/* The plugin's loops for shallow inputs (cpu_conv_shallow.c) take NHWC
 * convolutions of 1 to 4 input channels, windows up to 7x7, any stride,
 * dilation 1 and output channels a multiple of 8, on the CPUs
 * shallow_isa names (the rule the plugin documents, repeated here). */
static int shallow_takes(const win *w) {
  return shallow_isa() && !w->nchw && w->kh <= 7 && w->kw <= 7 &&
         w->dh == 1 && w->dw == 1 && w->c >= 1 && w->c <= 4 &&
         w->co % 8 == 0;
}

/* The shallow loops: random NHWC batches, sizes (widths that leave every
 * short block of outputs, a 1x1 input), windows, strides, SAME, VALID and
 * EXPLICIT paddings, input and output channels over their range (a last
 * block of eight), one case large enough for the intra-op threads to
 * share it, Conv2D and _FusedConv2D with every epilogue. The registry
 * picks loops/shallow, whose results match the reference within the
 * file's tolerance. Shapes they do not take (five channels, a dilation,
 * NCHW, 12 output channels, an 8x8 window) go to the other kernels. On a
 * CPU they do not serve, the registry must not pick them. */
static void test_shallow_conv2d_matches_reference(void **state) {
  rng r = {37};
  int ncases = 6 * NFUSED;

  for (int i = 0; i < ncases; i++) {
    int fused = i % 2 == 1, fl = (i / 2) % NFUSED;
    win w = {.padding = (int)irand(&r, 0, 2), .n = irand(&r, 1, 3),
             .h = i == 0 ? 1 : irand(&r, 1, 20),
             .w = i == 0 ? 1 : irand(&r, 1, 20), .c = irand(&r, 1, 4),
             .co = 8 * irand(&r, 1, 6), .kh = irand(&r, 1, 7),
             .kw = irand(&r, 1, 7), .sh = irand(&r, 1, 3),
             .sw = irand(&r, 1, 3), .dh = 1, .dw = 1};
    if (i == 1) /* shared by the intra-op threads */
      w.n = 4, w.h = 28, w.w = 28, w.c = 3, w.co = 32, w.kh = 3, w.kw = 3,
      w.sh = 1, w.sw = 1, w.padding = 0;

    for (int j = 0; j < 4; j++)
      w.pad[j] = w.padding == 2 ? irand(&r, 0, 3) : 0;
    w.oh = out_dim(w.padding, w.h, w.kh, w.sh, 1, w.pad[0], w.pad[1]);
    w.ow = out_dim(w.padding, w.w, w.kw, w.sw, 1, w.pad[2], w.pad[3]);
    if (w.oh <= 0 || w.ow <= 0) /* a window larger than the input: SAME */
      w.padding = 0, w.pad[0] = w.pad[1] = w.pad[2] = w.pad[3] = 0;
    own_loops_case(&r, &w, fused, fl, 0.5, "loops/shallow", shallow_takes(&w),
                   NULL);
  }
  if (!shallow_isa())
    print_message("this CPU has AVX-512 or lacks AVX2/FMA: the plugin's "
                  "shallow loops are not used (checked)\n");
  {
    static const int64_t other[][6] = {
        /* kh, kw, dilation, c, co, nchw */
        {3, 3, 1, 5, 16, 0}, {3, 3, 2, 1, 16, 0}, {3, 3, 1, 1, 16, 1},
        {3, 3, 1, 3, 12, 0}, {8, 8, 1, 1, 16, 0}};
    for (size_t i = 0; i < sizeof other / sizeof *other; i++) {
      wf_status *st = wf_status_new();
      wf_graph *g = wf_graph_new(rt);
      win w = {.nchw = (int)other[i][5], .padding = 0, .n = 1, .h = 12,
               .w = 12, .c = other[i][3], .co = other[i][4],
               .kh = other[i][0], .kw = other[i][1], .sh = 1, .sw = 1,
               .dh = other[i][2], .dw = other[i][2]};
      int64_t xd[4], fd[4] = {w.kh, w.kw, w.c, w.co};
      const wf__kernel *k = NULL;
      kcase c;
      wf_node *n;

      act_dims(&w, w.h, w.w, w.c, xd);
      case_init(&c, "Conv2D", WF_FLOAT32);
      add_input(&c, &r, WF_FLOAT32, xd, 4, 0, 1);
      add_input(&c, &r, WF_FLOAT32, fd, 4, -0.1, 0.1);
      window_attrs(&c, &w, 1);
      if (!(n = build(g, &c, st)) || !(k = wf__kernel_select(rt, n, "cpu", st)))
        fail_msg("%s: %s", c.name, wf_status_message(st));
      if (strcmp(k->def.label, "loops/shallow") == 0)
        fail_msg("%s: loops/shallow picked for a shape it does not take",
                 c.name);
      case_free(&c);
      wf_graph_free(g);
      wf_status_free(st);
    }
  }
}

/* Conv2DBackpropFilter in the shallow loops: the cnn's first layer (the
 * intra-op threads share its 64 images), then random NHWC batches, sizes,
 * windows up to 7x7 (49 x 4 taps: blocks of nine and a last short one),
 * strides, SAME, VALID and EXPLICIT paddings, 1 to 4 input and 8 to 48
 * output channels. The registry picks loops/shallow for the inputs it
 * takes (on the CPUs it serves), and the gradients, from its loops or
 * from the direct kernel for a shape they do not take, match the
 * reference within the file's tolerance. */
static void shallow_filter_grad_case(rng *r, const win *w) {
  int64_t xd[4], yd[4], fd[4] = {w->kh, w->kw, w->c, w->co};
  wf_status *st = wf_status_new();
  wf_graph *g = wf_graph_new(rt);
  const wf__kernel *k = NULL;
  wf_node *n;
  kcase c;

  act_dims(w, w->h, w->w, w->c, xd);
  act_dims(w, w->oh, w->ow, w->co, yd);
  case_init(&c, "Conv2DBackpropFilter", WF_FLOAT32);
  case_note(&c, " n %lld %lldx%lldx%lld -> %lld, %lldx%lld stride %lldx%lld "
            "padding %d",
            (long long)w->n, (long long)w->h, (long long)w->w,
            (long long)w->c, (long long)w->co, (long long)w->kh,
            (long long)w->kw, (long long)w->sh, (long long)w->sw,
            w->padding);
  add_input(&c, r, WF_FLOAT32, xd, 4, -1, 1);
  add_sizes(&c, fd, 4);
  add_input(&c, r, WF_FLOAT32, yd, 4, -1, 1);
  window_attrs(&c, w, 1);
  if (!(n = build(g, &c, st)) || !(k = wf__kernel_select(rt, n, "cpu", st)))
    fail_msg("%s: %s", c.name, wf_status_message(st));
  /* filter_sizes is fed: the filter's shape is not known while placing,
   * the loops take the node by its input's channels, layout and dilation */
  if ((strcmp(k->def.label, "loops/shallow") == 0) !=
      (shallow_isa() && !w->nchw && w->c <= 4 && w->dh == 1 &&
       w->dw == 1))
    fail_msg("%s: the registry picks '%s'", c.name, k->def.label);
  check_case(&c);
  case_free(&c);
  wf_graph_free(g);
  wf_status_free(st);
}

static void test_shallow_filter_gradient_matches_reference(void **state) {
  rng r = {38};
  win cnn = {.padding = 0, .n = 64, .h = 28, .w = 28, .c = 1, .co = 16,
             .kh = 3, .kw = 3, .sh = 1, .sw = 1, .dh = 1, .dw = 1};

  cnn.oh = out_dim(0, 28, 3, 1, 1, 0, 0);
  cnn.ow = cnn.oh;
  shallow_filter_grad_case(&r, &cnn);
  for (int i = 0; i < 40; i++) {
    win w = {.padding = (int)irand(&r, 0, 2), .n = irand(&r, 1, 5),
             .h = irand(&r, 1, 20), .w = irand(&r, 1, 20),
             .c = irand(&r, 1, 4), .co = 8 * irand(&r, 1, 6),
             .kh = irand(&r, 1, 7), .kw = irand(&r, 1, 7),
             .sh = irand(&r, 1, 3), .sw = irand(&r, 1, 3), .dh = 1, .dw = 1};
    if (i == 0) /* every tap block full but the last, of one tap */
      w.kh = w.kw = 7, w.c = 4, w.h = w.w = 9;
    for (int j = 0; j < 4; j++)
      w.pad[j] = w.padding == 2 ? irand(&r, 0, 3) : 0;
    w.oh = out_dim(w.padding, w.h, w.kh, w.sh, 1, w.pad[0], w.pad[1]);
    w.ow = out_dim(w.padding, w.w, w.kw, w.sw, 1, w.pad[2], w.pad[3]);
    if (w.oh <= 0 || w.ow <= 0) /* a window larger than the input: SAME */
      w.padding = 0, w.pad[0] = w.pad[1] = w.pad[2] = w.pad[3] = 0;
    w.oh = out_dim(w.padding, w.h, w.kh, w.sh, 1, w.pad[0], w.pad[1]);
    w.ow = out_dim(w.padding, w.w, w.kw, w.sw, 1, w.pad[2], w.pad[3]);
    shallow_filter_grad_case(&r, &w);
  }
  {
    /* shapes the loops do not take: five channels, 12 output channels,
     * NCHW */
    win w = {.padding = 0, .n = 2, .h = 9, .w = 9, .c = 5, .co = 16,
             .kh = 3, .kw = 3, .sh = 1, .sw = 1, .dh = 1, .dw = 1};
    w.oh = w.ow = 9;
    shallow_filter_grad_case(&r, &w);
    w.c = 3, w.co = 12;
    shallow_filter_grad_case(&r, &w);
    w.co = 16, w.nchw = 1;
    shallow_filter_grad_case(&r, &w);
  }
}

/* _FusedConv2DMaxPool and _FusedConv2DAndMaxPool (op): device-cpu's
 * kernel against the reference (the convolution's reference, then
 * MaxPool's), every output: the cnn's two layers (the shallow and the
 * Winograd loops pooling in their epilogue on the CPUs they serve), odd
 * sizes whose last row and column the pooling drops (and
 * _FusedConv2DAndMaxPool stores), then random NHWC windows, paddings,
 * channel counts, epilogues and poolings (2x2 or 3x3, strides 1 to 3, SAME
 * or VALID), which mostly convolve into a buffer (or the first output) and
 * pool it. */
static void fused_conv_pool_case(rng *r, const char *op, const win *w,
                                 int fl, const int64_t pk[2],
                                 const int64_t ps[2], const char *ppad) {
  int64_t xd[4], fd[4] = {w->kh, w->kw, w->c, w->co}, v[4];
  kcase c;

  act_dims(w, w->h, w->w, w->c, xd);
  case_init(&c, op, WF_FLOAT32);
  add_input(&c, r, WF_FLOAT32, xd, 4, -1, 1);
  add_input(&c, r, WF_FLOAT32, fd, 4, -0.5, 0.5);
  add_input(&c, r, WF_FLOAT32, &fd[3], 1, -1, 1);
  window_attrs(&c, w, 1);
  fused_attrs(&c, fl);
  v[0] = v[3] = 1, v[1] = pk[0], v[2] = pk[1];
  attr_ints(&c, "pool_ksize", v, 4);
  v[1] = ps[0], v[2] = ps[1];
  attr_ints(&c, "pool_strides", v, 4);
  attr_string(&c, "pool_padding", ppad);
  case_note(&c, " pool %lldx%lld s%lldx%lld %s", (long long)pk[0],
            (long long)pk[1], (long long)ps[0], (long long)ps[1], ppad);
  check_case(&c);
  case_free(&c);
}

static void fused_conv_pool_cases(const char *op) {
  rng r = {41};
  static const int64_t two[2] = {2, 2};
  /* the cnn's layers, and odd sizes, with ReLU and with the bias alone */
  static const int64_t fixed[][5] = {
      /* n, h, w, c, co */
      {3, 28, 28, 1, 16}, {2, 14, 14, 16, 32}, {2, 15, 13, 1, 16},
      {1, 9, 11, 16, 32}, {8, 28, 28, 1, 16}, {4, 14, 14, 16, 32},
      /* the Winograd products' blocks of output channels: 32 and a last
       * 16 (AVX-512), 16 (AVX2) */
      {2, 10, 10, 8, 48}, {1, 8, 12, 64, 64}, {2, 6, 6, 24, 16},
      /* the shallow loops pooling two rows in registers (AVX-512):
       * blocks of 8, 4 and 2 positions, 32 and 48 channels; the
       * Winograd loops' 4x4 tiles reaching past the output by one and
       * by two and three rows and columns, and 2x2 tiles (10x6) */
      {2, 17, 19, 3, 32}, {1, 12, 26, 2, 48}, {1, 13, 11, 16, 16},
      {2, 12, 12, 32, 32}, {1, 10, 6, 8, 16}};

  for (size_t i = 0; i < sizeof fixed / sizeof *fixed; i++)
    for (int fl = 0; fl < 2; fl++) {
      win w = {.padding = 0, .n = fixed[i][0], .h = fixed[i][1],
               .w = fixed[i][2], .c = fixed[i][3], .co = fixed[i][4],
               .kh = 3, .kw = 3, .sh = 1, .sw = 1, .dh = 1, .dw = 1};
      fused_conv_pool_case(&r, op, &w, fl, two, two, "VALID");
    }
  /* every count of positions a row's last register block can hold (rows
   * of 9 to 16), through the buffer a 3x3 pooling reads whole */
  for (int64_t width = 9; width <= 16; width++) {
    static const int64_t three[2] = {3, 3};
    win w = {.padding = 0, .n = 1, .h = 5, .w = width, .c = 1 + width % 4,
             .co = width % 2 ? 16 : 40, .kh = 3, .kw = 3, .sh = 1, .sw = 1,
             .dh = 1, .dw = 1};
    fused_conv_pool_case(&r, op, &w, 1, three, two, "SAME");
  }
  for (int i = 0; i < 24; i++) {
    static const char *const ppads[2] = {"SAME", "VALID"};
    win w = {.padding = (int)irand(&r, 0, 1), .n = irand(&r, 1, 3),
             .h = irand(&r, 3, 16), .w = irand(&r, 3, 16),
             .c = i % 3 == 0 ? irand(&r, 1, 4) : 8 * irand(&r, 1, 3),
             .co = i % 4 == 0 ? irand(&r, 1, 20) : 8 * irand(&r, 1, 4),
             .kh = irand(&r, 1, 3), .kw = irand(&r, 1, 3),
             .sh = irand(&r, 1, 2), .sw = irand(&r, 1, 2), .dh = 1,
             .dw = 1};
    int64_t pk[2] = {irand(&r, 2, 3), irand(&r, 2, 3)};
    int64_t ps[2] = {irand(&r, 1, 3), irand(&r, 1, 3)};
    const char *ppad = ppads[irand(&r, 0, 1)];

    if (i % 2 == 0)
      w.kh = w.kw = 3, w.sh = w.sw = 1, pk[0] = pk[1] = 2, ps[0] = ps[1] = 2;
    /* a VALID pooling must fit the convolution's output */
    if (out_dim(w.padding, w.h, w.kh, w.sh, 1, 0, 0) < pk[0] ||
        out_dim(w.padding, w.w, w.kw, w.sw, 1, 0, 0) < pk[1])
      ppad = "SAME";
    fused_conv_pool_case(&r, op, &w, (int)irand(&r, 0, NFUSED - 1), pk, ps,
                         ppad);
  }
}

static void test_fused_conv2d_max_pool_matches_reference(void **state) {
  (void)state;
  fused_conv_pool_cases("_FusedConv2DMaxPool");
}

static void test_fused_conv2d_and_max_pool_matches_reference(void **state) {
  (void)state;
  fused_conv_pool_cases("_FusedConv2DAndMaxPool");
}

/* The label of the kernel the registry of r picks for an op (as
 * fused_conv_pool_case's) of the cnn's layer (c channels into co, 3x3,
 * 2x2 pooling after ReLU); its result must match the reference. */
static const char *fused_conv_pool_label(wf_runtime *r, const char *op,
                                         int64_t c, int64_t co) {
  static const int64_t two[2] = {2, 2};
  wf_runtime *saved = rt;
  rng rr = {43};
  win w = {.padding = 0, .n = 2, .h = 12, .w = 12, .c = c, .co = co,
           .kh = 3, .kw = 3, .sh = 1, .sw = 1, .dh = 1, .dw = 1};

  rt = r;
  fused_conv_pool_case(&rr, op, &w, 1, two, two, "VALID");
  rt = saved;
  return picked_label;
}

/* `[kernels] deny = shallow` and `winograd` reach the fused convolutions
 * and poolings (both ops) as they reach Conv2D: its own loops are kernels of their
 * own labels, which the config can deny, leaving the node to oneDNN's
 * direct kernel (and the pooling loops). Without the config, the cnn's
 * two layers go to the loops on CPUs with AVX2 and FMA (AVX-512 or not:
 * pooled, the loops beat oneDNN's kernels there too), to oneDNN
 * elsewhere. */
static void test_fused_conv2d_max_pool_kernels_obey_deny(void **state) {
  wf_runtime *denying = new_runtime_denying(NULL, "shallow, winograd");
  wf_runtime *no_shallow = new_runtime_denying(NULL, "loops/shallow");
  int own = avx2_fma();

  (void)state;
  for (int keep = 0; keep < 2; keep++) {
    const char *op = keep ? "_FusedConv2DAndMaxPool" : "_FusedConv2DMaxPool";

    assert_string_equal(fused_conv_pool_label(rt, op, 1, 16),
                        own ? "loops/shallow" : "onednn");
    assert_string_equal(fused_conv_pool_label(rt, op, 16, 32),
                        own ? "loops/winograd" : "onednn");
    assert_string_equal(fused_conv_pool_label(denying, op, 1, 16), "onednn");
    assert_string_equal(fused_conv_pool_label(denying, op, 16, 32),
                        "onednn");
    assert_string_equal(fused_conv_pool_label(no_shallow, op, 1, 16),
                        "onednn");
    assert_string_equal(fused_conv_pool_label(no_shallow, op, 16, 32),
                        own ? "loops/winograd" : "onednn");
  }
  wf_runtime_free(denying);
  wf_runtime_free(no_shallow);
}

/* One NHWC Conv2D (or, fused, _FusedConv2D with fused list fl) of window
 * w on random inputs, fast kernel against the reference. */
static void nhwc_conv_case(rng *r, const win *w, int fused, int fl) {
  int64_t xd[4], fd[4] = {w->kh, w->kw, w->c, w->co};
  kcase c;

  act_dims(w, w->h, w->w, w->c, xd);
  case_init(&c, fused ? "_FusedConv2D" : "Conv2D", WF_FLOAT32);
  add_input(&c, r, WF_FLOAT32, xd, 4, -1, 1);
  add_input(&c, r, WF_FLOAT32, fd, 4, -1, 1);
  if (fused)
    add_input(&c, r, WF_FLOAT32, &fd[3], 1, -1, 1);
  window_attrs(&c, w, 1);
  if (fused)
    fused_attrs(&c, fl);
  check_case(&c);
  case_free(&c);
}

/* Convolutions of one input channel into 8 or 16 (NHWC), which the fast
 * kernel hands to oneDNN as NCHW in and blocked out without a reorder
 * (the bytes read the same): random windows, plain and fused. */
static void test_first_layer_conv2d_matches_reference(void **state) {
  rng r = {23};
  int64_t before = bits_differ;

  for (int i = 0; i < 8 * NFUSED; i++) {
    int fused = i % 2;
    win w;

    draw_window(&r, &w, 1);
    w.nchw = 0;
    w.n = irand(&r, 1, 3);
    w.c = 1;
    w.co = i % 4 < 2 ? 16 : 8;
    nhwc_conv_case(&r, &w, fused, (i / 2) % NFUSED);
  }
  expect_fast_path("first-layer Conv2D", before);
}

/* Convolutions of one to four input channels (an image model's first
 * layer, NHWC) into 8 to 40: random windows, strides and paddings, plain
 * and fused with every activation, and a batch the team shares. */
static void test_few_channel_conv2d_matches_reference(void **state) {
  rng r = {27};
  int64_t before = bits_differ;

  for (int i = 0; i < 12 * NFUSED; i++) {
    int fused = i % 2;
    win w;

    draw_window(&r, &w, 1);
    w.nchw = 0;
    w.c = irand(&r, 1, 4);
    w.co = irand(&r, 8, 40);
    if (i % 12 == 11) { /* 16 images of 28x28x3 into 24 channels */
      w = (win){.padding = 0, .n = 16, .h = 28, .w = 28, .c = 3, .co = 24,
                .kh = 3, .kw = 3, .sh = 1, .sw = 1, .dh = 1, .dw = 1,
                .oh = 28, .ow = 28};
    }
    nhwc_conv_case(&r, &w, fused, (i / 2) % NFUSED);
  }
  expect_fast_path("few-channel Conv2D", before);
}

/* The cnn's inference layers (_FusedConv2D with relu, then 2x2 MaxPool) at
 * batch 1, where the smaller ones run on one thread, and at batch 64, on
 * every intra-op thread. */
static void test_cnn_inference_layers_match_reference(void **state) {
  static const int64_t layers[2][4] = {{28, 28, 1, 16}, {14, 14, 16, 32}};
  static const int64_t batches[2] = {1, 64};
  rng r = {24};

  for (int b = 0; b < 2; b++)
    for (int l = 0; l < 2; l++) {
      win w = {.padding = 0, .n = batches[b], .h = layers[l][0],
               .w = layers[l][1], .c = layers[l][2], .co = layers[l][3],
               .kh = 3, .kw = 3, .sh = 1, .sw = 1, .dh = 1, .dw = 1};
      int64_t xd[4], yd[4], fd[4] = {3, 3, w.c, w.co};
      kcase c;

      w.oh = w.h, w.ow = w.w;
      act_dims(&w, w.h, w.w, w.c, xd);
      case_init(&c, "_FusedConv2D", WF_FLOAT32);
      add_input(&c, &r, WF_FLOAT32, xd, 4, 0, 1);
      add_input(&c, &r, WF_FLOAT32, fd, 4, -0.3, 0.3);
      add_input(&c, &r, WF_FLOAT32, &fd[3], 1, -0.1, 0.1);
      window_attrs(&c, &w, 1);
      fused_attrs(&c, 1); /* BiasAdd, Relu */
      check_case(&c);
      case_free(&c);

      w.c = w.co, w.kh = w.kw = w.sh = w.sw = 2, w.padding = 1;
      w.oh = w.h / 2, w.ow = w.w / 2;
      act_dims(&w, w.h, w.w, w.c, xd);
      act_dims(&w, w.oh, w.ow, w.c, yd);
      case_init(&c, "MaxPool", WF_FLOAT32);
      add_input(&c, &r, WF_FLOAT32, xd, 4, -1, 1);
      window_attrs(&c, &w, 0);
      check_case(&c);
      case_free(&c);
    }
}

static void pool_case(rng *r, const char *op) {
  int grad = strstr(op, "Grad") != NULL, avg_grad = strcmp(op, "AvgPoolGrad") == 0;
  int64_t xd[4], yd[4];
  win w;
  kcase c;

  draw_window(r, &w, 0);
  act_dims(&w, w.h, w.w, w.c, xd);
  act_dims(&w, w.oh, w.ow, w.c, yd);
  case_init(&c, op, WF_FLOAT32);
  if (avg_grad)
    add_sizes(&c, xd, 4);
  else
    add_input(&c, r, WF_FLOAT32, xd, 4, -1, 1);
  if (grad)
    add_input(&c, r, WF_FLOAT32, yd, 4, -1, 1);
  window_attrs(&c, &w, 0);
  check_case(&c);
  case_free(&c);
}

static void test_pools_match_reference_on_random_windows(void **state) {
  static const char *const ops[] = {"MaxPool", "AvgPool", "MaxPoolGrad",
                                    "AvgPoolGrad", "_FusedMaxPoolGradReluGrad"};
  rng r = {7};

  /* Max pooling only selects: AvgPool's sums tell the paths apart. */
  for (int i = 0; i < 200; i++)
    pool_case(&r, ops[i % 5]);
  for (int k = 0; k < 2; k++) {
    const char *op = k ? "AvgPoolGrad" : "AvgPool";
    int64_t before = bits_differ;
    for (int i = 0; i < 20; i++)
      pool_case(&r, op);
    expect_fast_path(op, before);
  }
}

static int bits_exact(void **state) {
  exact = 1;
  return 0;
}

static int bits_within_tolerance(void **state) {
  exact = 0;
  return 0;
}

/* Forward pools over NHWC run the plugin's own loops (cpu_pool.c), which
 * give the reference's bits: random windows and paddings, channel counts
 * on both sides of the loops' 16-channel blocks, and NaN in some inputs
 * (it propagates through a window's maximum and its average). */
static void test_nhwc_pools_give_reference_bits(void **state) {
  rng r = {26};

  for (int i = 0; i < 160; i++) {
    int64_t xd[4];
    win w;
    kcase c;

    draw_window(&r, &w, 0);
    w.nchw = 0;
    w.c = irand(&r, 1, 40);
    if (i % 8 == 7) /* the cnn's, with a batch the team shares */
      w = (win){.padding = 1, .n = 64, .h = 28, .w = 28, .c = 16,
                .kh = 2, .kw = 2, .sh = 2, .sw = 2, .dh = 1, .dw = 1,
                .oh = 14, .ow = 14};
    act_dims(&w, w.h, w.w, w.c, xd);
    case_init(&c, i % 2 ? "AvgPool" : "MaxPool", WF_FLOAT32);
    add_input(&c, &r, WF_FLOAT32, xd, 4, -1, 1);
    if (i % 4 < 2) {
      float *x = wf_tensor_data(c.in[0]);
      for (int k = 0; k < 3; k++)
        x[irand(&r, 0, wf_tensor_count(c.in[0]) - 1)] = NAN;
    }
    window_attrs(&c, &w, 0);
    check_case(&c);
    case_free(&c);
  }
}

/* MaxPoolGrad over NHWC runs the plugin's own loops too, with the
 * reference's bits (oneDNN's picks differ where a window holds NaN): the
 * first of tied maxima takes a window's gradient (inputs drawn from a few
 * values tie often), the last NaN does, and where windows overlap an
 * element's gradients are summed as the reference sums them. Windows with
 * and without overlap, windows that tile the input (dx is then written
 * without being zeroed first) and ones that leave gaps, channel counts on
 * both sides of the loops' 16- and 8-channel blocks, negative zeros among
 * the gradients, and the cnn's two poolings at batch 64 (the team shares
 * their images in pieces). Each case also
 * runs as _FusedMaxPoolGradReluGrad (the ReLU's gradient applied at the
 * picks), with the same bits as its reference. */
static void test_nhwc_max_pool_grad_gives_reference_bits(void **state) {
  rng r = {27};

  for (int i = 0; i < 120; i++) {
    int64_t xd[4], yd[4];
    win w;
    kcase c;

    draw_window(&r, &w, 0);
    w.nchw = 0;
    w.c = irand(&r, 1, 40);
    if (i % 20 == 19)
      w = (win){.padding = 1, .n = 64, .h = 28, .w = 28, .c = 16,
                .kh = 2, .kw = 2, .sh = 2, .sw = 2, .dh = 1, .dw = 1,
                .oh = 14, .ow = 14};
    else if (i % 20 == 9)
      w = (win){.padding = 1, .n = 64, .h = 14, .w = 14, .c = 32,
                .kh = 2, .kw = 2, .sh = 2, .sw = 2, .dh = 1, .dw = 1,
                .oh = 7, .ow = 7};
    else if (i % 10 == 7) /* tiling windows: 2x2 or 3x1, stride = window */
      w = (win){.padding = 1, .n = irand(&r, 1, 3), .h = 6, .w = 9,
                .c = irand(&r, 1, 40), .kh = i % 20 == 7 ? 2 : 3,
                .kw = i % 20 == 7 ? 2 : 1, .sh = i % 20 == 7 ? 2 : 3,
                .sw = i % 20 == 7 ? 2 : 1, .dh = 1, .dw = 1,
                .oh = 2 + (i % 20 == 7), .ow = i % 20 == 7 ? 4 : 9};
    else if (i % 10 == 8) /* overlapping 3x3 windows, stride 2, many images */
      w = (win){.padding = 1, .n = 24, .h = 15, .w = 13, .c = 12,
                .kh = 3, .kw = 3, .sh = 2, .sw = 2, .dh = 1, .dw = 1,
                .oh = 7, .ow = 6};
    act_dims(&w, w.h, w.w, w.c, xd);
    act_dims(&w, w.oh, w.ow, w.c, yd);
    case_init(&c, "MaxPoolGrad", WF_FLOAT32);
    add_input(&c, &r, WF_FLOAT32, xd, 4, -1, 1);
    add_input(&c, &r, WF_FLOAT32, yd, 4, -1, 1);
    float *x = wf_tensor_data(c.in[0]), *g = wf_tensor_data(c.in[1]);
    int64_t nx = wf_tensor_count(c.in[0]), ng = wf_tensor_count(c.in[1]);
    if (i % 3 == 0) /* ties */
      for (int64_t k = 0; k < nx; k++)
        x[k] = (float)irand(&r, 0, 2);
    if (i % 4 == 1)
      for (int k = 0; k < 4; k++)
        x[irand(&r, 0, nx - 1)] = NAN;
    for (int k = 0; k < 3; k++)
      g[irand(&r, 0, ng - 1)] = -0.0f;
    window_attrs(&c, &w, 0);
    check_case(&c);
    /* the same inputs through the fusion pass's MaxPoolGrad and ReluGrad:
     * x is a ReLU's output there, any value here (0 where it is not > 0,
     * NaN included) */
    c.op = "_FusedMaxPoolGradReluGrad";
    snprintf(c.name, sizeof c.name, "%s case %d", c.op, i);
    check_case(&c);
    case_free(&c);
  }
}

/* ---- activations, softmax, batch normalisation ---------------------------------- */

/* Each activation and backward op on random sizes (odd ones, empty ones),
 * inputs where the op is defined (positive for Sqrt's family). */
static void test_activations_match_reference(void **state) {
  static const struct {
    const char *op;
    int grad;
    double lo, hi;
  } ops[] = {{"Relu", 0, -3, 3},         {"LeakyRelu", 0, -3, 3},
             {"Elu", 0, -3, 3},          {"Sigmoid", 0, -8, 8},
             {"Tanh", 0, -4, 4},         {"Gelu", 0, -4, 4},
             {"Softplus", 0, -8, 8},     {"Exp", 0, -5, 5},
             {"Sqrt", 0, 0.01, 9},       {"Square", 0, -3, 3},
             {"ReluGrad", 1, -3, 3},     {"LeakyReluGrad", 1, -3, 3},
             {"EluGrad", 1, -0.99, 3},   {"SigmoidGrad", 1, 0, 1},
             {"TanhGrad", 1, -1, 1},     {"GeluGrad", 1, -4, 4},
             {"SoftplusGrad", 1, -8, 8}, {"SqrtGrad", 1, 0.1, 3}};
  static const int64_t sizes[][3] = {{1, 1, 1}, {2, 7, 3}, {3, 1, 1000},
                                     {0, 4, 1}, {5, 33, 17}};
  rng r = {8};
  int64_t before = bits_differ;

  for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
    for (int s = 0; s < 5; s++)
      for (int variant = 0; variant < 2; variant++) {
        kcase c;
        case_init(&c, ops[i].op, WF_FLOAT32);
        case_note(&c, " (%lld, %lld, %lld)", (long long)sizes[s][0],
                  (long long)sizes[s][1], (long long)sizes[s][2]);
        if (ops[i].grad)
          add_input(&c, &r, WF_FLOAT32, sizes[s], 3, -1, 1);
        add_input(&c, &r, WF_FLOAT32, sizes[s], 3, ops[i].lo, ops[i].hi);
        if (strstr(ops[i].op, "LeakyRelu")) {
          attr_float(&c, "alpha", variant ? 0.3 : 0.01);
          case_note(&c, " alpha=%g", variant ? 0.3 : 0.01);
        } else if (strstr(ops[i].op, "Gelu")) {
          attr_bool(&c, "approximate", variant);
          case_note(&c, " approximate=%d", variant);
        } else if (variant) {
          case_free(&c);
          continue;
        }
        check_case(&c);
        case_free(&c);
      }
  expect_fast_path("activations", before);
}

/* ReluGrad's own loops (label loops, cpu_eltwise.c) on CPUs with AVX2 and
 * FMA: the reference's bits (run under bits_exact)
 * on sizes around the vector width and past the threads' split (the
 * intra-op threads share it), with x holding +0, -0, NaN, +-inf, tiny
 * and huge values and dy holding NaN, -0 and infinities. Elsewhere the
 * node stays with oneDNN's kernel. */
static void test_relu_grad_loops_give_reference_bits(void **state) {
  static const int64_t sizes[] = {1, 7, 8, 9, 31, 16384, 40001, 65536 + 3};
  static const float specials[] = {0.0f,      -0.0f,   NAN,     INFINITY,
                                   -INFINITY, 1e-45f,  -1e-45f, 3e38f,
                                   -3e38f};
  int takes = avx2_fma();
  rng r = {95};

  (void)state;
  for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
    wf_status *st = wf_status_new();
    wf_graph *g = wf_graph_new(rt);
    const wf__kernel *k = NULL;
    wf_node *n;
    kcase c;
    int64_t d = sizes[s];

    case_init(&c, "ReluGrad", WF_FLOAT32);
    case_note(&c, " %lld elements", (long long)d);
    float *dy = wf_tensor_data(add_input(&c, &r, WF_FLOAT32, &d, 1, -2, 2));
    float *x = wf_tensor_data(add_input(&c, &r, WF_FLOAT32, &d, 1, -2, 2));
    for (int64_t i = 0; i < d; i++) {
      if (i % 5 == 1)
        x[i] = specials[(i / 5) % 9];
      if (i % 7 == 3)
        dy[i] = specials[(i / 7) % 9];
    }
    if (!(n = build(g, &c, st)) || !(k = wf__kernel_select(rt, n, "cpu", st)))
      fail_msg("%s: %s", c.name, wf_status_message(st));
    if (strcmp(k->def.label, takes ? "loops" : "onednn") != 0)
      fail_msg("%s: the registry picks '%s', not %s", c.name, k->def.label,
               takes ? "loops" : "onednn");
    wf_graph_free(g);
    wf_status_free(st);
    if (takes)
      check_case(&c);
    case_free(&c);
  }
}

/* Gelu and GeluGrad in their exact form run the plugin's own loops (label
 * loops, cpu_eltwise.c) on CPUs with AVX-512: the reference within the
 * file's tolerance on sizes around the vector width and past the
 * threads' split, x holding NaN, infinities, zeros of both signs and
 * values far out on both sides (where the loops' erfc and exponential
 * reach 0). The tanh form, and every node on other CPUs, stays with
 * oneDNN's kernel. */
static void test_gelu_loops_match_reference(void **state) {
  static const int64_t sizes[] = {1, 15, 16, 17, 33, 40001, 65536 + 5};
  static const float specials[] = {NAN,   INFINITY, -INFINITY, 0.0f, -0.0f,
                                   1e-30f, -9.5f,   -14.0f,    30.0f, -30.0f};
  const size_t nspecial = sizeof specials / sizeof *specials;
  int takes = avx512f();
  rng r = {96};

  (void)state;
  for (int grad = 0; grad < 2; grad++)
    for (int approximate = 0; approximate < 2; approximate++)
      for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
        const char *op = grad ? "GeluGrad" : "Gelu";
        const char *want = takes && !approximate ? "loops" : "onednn";
        wf_status *st = wf_status_new();
        wf_graph *g = wf_graph_new(rt);
        const wf__kernel *k = NULL;
        wf_node *n;
        kcase c;
        int64_t d = sizes[s];

        case_init(&c, op, WF_FLOAT32);
        case_note(&c, " %lld elements approximate=%d", (long long)d,
                  approximate);
        if (grad)
          add_input(&c, &r, WF_FLOAT32, &d, 1, -2, 2);
        float *x = wf_tensor_data(add_input(&c, &r, WF_FLOAT32, &d, 1, -6, 6));
        for (int64_t i = 0; i < d; i++)
          if (i % 11 == 4)
            x[i] = specials[(size_t)(i / 11) % nspecial];
        attr_bool(&c, "approximate", approximate);
        if (!(n = build(g, &c, st)) ||
            !(k = wf__kernel_select(rt, n, "cpu", st)))
          fail_msg("%s: %s", c.name, wf_status_message(st));
        if (strcmp(k->def.label, want) != 0)
          fail_msg("%s: the registry picks '%s', not %s", c.name,
                   k->def.label, want);
        wf_graph_free(g);
        wf_status_free(st);
        if (!approximate)
          check_case(&c);
        case_free(&c);
      }
}

static void test_softmax_family_matches_reference(void **state) {
  static const char *const ops[] = {"Softmax", "LogSoftmax", "SoftmaxGrad",
                                    "LogSoftmaxGrad"};
  /* The last is large enough for the intra-op threads to share its rows
   * (33 a row: a vector body and a tail). */
  static const int64_t shapes[][4] = {{1, 10},     {2, 64, 10}, {1, 1},
                                      {3, 2, 5, 129}, {1, 7},   {2, 0, 3},
                                      {16, 64, 33}};
  static const int ranks[] = {1, 2, 0, 3, 1, 2, 2};
  rng r = {9};

  for (int o = 0; o < 4; o++) {
    int64_t before = bits_differ;
    for (int s = 0; s < 7; s++) {
      int rank = ranks[s] + 1;
      kcase c;
      case_init(&c, ops[o], WF_FLOAT32);
      case_note(&c, " case %d", s);
      if (o == 2) { /* a real softmax output */
        wf_tensor *t = add_input(&c, &r, WF_FLOAT32, shapes[s], rank, 0, 1);
        int64_t cdim = shapes[s][rank - 1], n = wf_tensor_count(t);
        float *p = wf_tensor_data(t);
        for (int64_t i = 0; cdim > 0 && i < n; i += cdim) {
          double sum = 0;
          for (int64_t j = 0; j < cdim; j++)
            sum += p[i + j];
          for (int64_t j = 0; j < cdim; j++)
            p[i + j] = (float)(p[i + j] / sum);
        }
      } else {
        add_input(&c, &r, WF_FLOAT32, shapes[s], rank, o == 3 ? -6 : -5,
                  o == 3 ? -0.1 : 5);
      }
      if (o >= 2)
        add_input(&c, &r, WF_FLOAT32, shapes[s], rank, -1, 1);
      check_case(&c);
      case_free(&c);
    }
    expect_fast_path(ops[o], before);
  }
}

/* The plugin's own Softmax loops (loops/softmax, cpu_softmax.c) take every
 * float32 Softmax on CPUs with AVX2 and FMA, and are picked there before
 * oneDNN's; elsewhere never. Rows of every length class (a
 * tail only, a body only, both; the transformer's 28), logits far apart
 * (exponentials under FLT_MIN), rows holding -inf, +inf or NaN, and a row
 * of -inf only: each matches the reference within a few float ulps
 * (relative; more for the smallest results), NaN where it gives NaN. */
static void test_own_softmax_loops_match_reference(void **state) {
  static const int64_t shapes[][4] = {{5, 1},   {9, 8},  {4, 9},
                                      {3, 37},  {2, 64}, {64, 4, 28, 28},
                                      {1, 300}, {6, 28}};
  static const int ranks[] = {2, 2, 2, 2, 2, 4, 2, 2};
  int takes = avx2_fma();
  rng r = {91};

  for (int s = 0; s < 8; s++)
    for (int spread = 0; spread < 2; spread++) {
      wf_status *st = wf_status_new();
      wf_graph *g = wf_graph_new(rt);
      wf_tensor *ref = NULL, *got = NULL;
      const wf__kernel *k;
      wf_node *n;
      kcase c;

      case_init(&c, "Softmax", WF_FLOAT32);
      case_note(&c, " case %d%s", s, spread ? " spread out" : "");
      wf_tensor *t = add_input(&c, &r, WF_FLOAT32, shapes[s], ranks[s],
                               spread ? -150 : -8, spread ? 150 : 8);
      float *x = wf_tensor_data(t);
      int64_t cdim = shapes[s][ranks[s] - 1];
      if (s == 7) { /* special values, one row each */
        x[0 * cdim + 3] = -INFINITY;
        x[1 * cdim + 27] = INFINITY;
        x[2 * cdim + 5] = NAN;
        for (int64_t j = 0; j < cdim; j++)
          x[3 * cdim + j] = -INFINITY;
        x[4 * cdim + 0] = x[4 * cdim + 27] = 88.0f; /* a tie at the top */
      }
      if (!(n = build(g, &c, st)))
        fail_msg("%s: building: %s", c.name, wf_status_message(st));
      if (!(k = wf__kernel_select(rt, n, "cpu", st)))
        fail_msg("%s: no kernel: %s", c.name, wf_status_message(st));
      if (!takes) {
        if (strcmp(k->def.label, "loops/softmax") == 0)
          fail_msg("%s: loops/softmax picked on a CPU it does not serve",
                   c.name);
      } else {
        if (strcmp(k->def.label, "loops/softmax") != 0)
          fail_msg("%s: the registry picks '%s', not loops/softmax", c.name,
                   k->def.label);
        if (wf__kernel_run(reference_kernel("Softmax", WF_FLOAT32), n,
                           (const wf_tensor *const *)c.in, &ref, st) ||
            wf__kernel_run(k, n, (const wf_tensor *const *)c.in, &got, st))
          fail_msg("%s: %s", c.name, wf_status_message(st));
        expect_close(c.name, 0, ref, got);
        /* and closer: within a few float ulps of exp, plus the rounding
         * of x - max in float (up to |x - max| ulps of 1, and |x - max|
         * is about -ln(y)) */
        for (int64_t i = 0; i < wf_tensor_count(ref); i++) {
          double w = ((const float *)wf_tensor_data(ref))[i];
          double v = ((const float *)wf_tensor_data(got))[i];
          double tol = w == 0 ? 1.2e-38
                              : fabs(w) * (1e-6 + 1.2e-7 * fabs(log(fabs(w)))) +
                                    1.2e-38;
          if (!(isnan(w) && isnan(v)) && !(fabs(v - w) <= tol))
            fail_msg("%s: element %lld is %.9g, the reference gives %.9g "
                     "(tolerance %.3g)",
                     c.name, (long long)i, v, w, tol);
        }
        wf_tensor_release(ref);
        wf_tensor_release(got);
      }
      case_free(&c);
      wf_graph_free(g);
      wf_status_free(st);
    }
  if (!takes)
    print_message("this CPU lacks AVX2/FMA: the plugin's "
                  "Softmax loops are not used (checked)\n");
}

/* The cross-entropy losses' loops (loops/softmax, cpu_softmax.c) on the
 * CPUs loops/softmax serves: the mlp's (64, 10) logits and rows of every
 * length class, logits near and far apart, int32 and int64 class labels
 * and label distributions; a row holding +inf, NaN, or only -inf gives
 * the reference's NaN; both outputs within the file's tolerance of the
 * reference. A label out of range fails both with the same message.
 * Elsewhere the reference keeps the nodes. */
static void xent_case(rng *r, int sparse, wf_dtype ldt, int64_t n, int64_t c,
                      double spread, int special, int bad_label) {
  int64_t xd[2] = {n, c};
  kcase kc;
  wf_tensor *x;

  case_init(&kc, sparse ? "SparseSoftmaxCrossEntropyWithLogits"
                        : "SoftmaxCrossEntropyWithLogits",
            WF_FLOAT32);
  case_note(&kc, " %lldx%lld%s%s", (long long)n, (long long)c,
            sparse ? (ldt == WF_INT32 ? " int32" : " int64") : "",
            special ? " special values" : bad_label ? " bad label" : "");
  x = add_input(&kc, r, WF_FLOAT32, xd, 2, -spread, spread);
  if (special && n >= 3 && c >= 3) {
    float *v = wf_tensor_data(x);
    v[0 * c + 1] = INFINITY;
    v[1 * c + 2] = NAN;
    for (int64_t k = 0; k < c; k++)
      v[2 * c + k] = -INFINITY;
  }
  if (sparse) {
    wf_status *st = wf_status_new();
    wf_tensor *t = wf_tensor_new(ldt, &n, 1, st);

    assert_non_null(t);
    for (int64_t i = 0; i < n; i++) {
      int64_t v = irand(r, 0, c - 1);
      if (bad_label && i == n / 2)
        v = i % 2 ? c : -1;
      if (ldt == WF_INT32)
        ((int32_t *)wf_tensor_data(t))[i] = (int32_t)v;
      else
        ((int64_t *)wf_tensor_data(t))[i] = v;
    }
    wf_status_free(st);
    kc.in[kc.nin++] = t;
    kc.must_fail = bad_label;
  } else {
    wf_tensor *t = add_input(&kc, r, WF_FLOAT32, xd, 2, 0, 1);
    float *y = wf_tensor_data(t);
    for (int64_t i = 0; i < n; i++) { /* rows summing to 1, some one-hot */
      double sum = 0;
      for (int64_t k = 0; k < c; k++)
        sum += y[i * c + k];
      for (int64_t k = 0; k < c; k++)
        y[i * c + k] = i % 3 == 0 ? (float)(k == i % c)
                                  : (float)(y[i * c + k] / sum);
    }
  }
  check_case(&kc);
  case_free(&kc);
}

static void test_own_xent_loops_match_reference(void **state) {
  static const int64_t shapes[][2] = {{64, 10}, {5, 1},  {9, 8},  {4, 9},
                                      {3, 37},  {2, 64}, {1, 300}, {0, 10},
                                      {700, 50}};
  int takes = avx2_fma();
  rng r = {93};

  (void)state;
  if (!takes) {
    wf_status *st = wf_status_new();
    wf_graph *g = wf_graph_new(rt);
    const wf__kernel *k;
    kcase kc;
    int64_t xd[2] = {4, 3};
    wf_node *n;

    case_init(&kc, "SoftmaxCrossEntropyWithLogits", WF_FLOAT32);
    add_input(&kc, &r, WF_FLOAT32, xd, 2, -1, 1);
    add_input(&kc, &r, WF_FLOAT32, xd, 2, 0, 1);
    if (!(n = build(g, &kc, st)) || !(k = wf__kernel_select(rt, n, "cpu", st)))
      fail_msg("%s: %s", kc.name, wf_status_message(st));
    if (strcmp(k->def.label, "loops/softmax") == 0)
      fail_msg("loops/softmax picked on a CPU it does not serve");
    case_free(&kc);
    wf_graph_free(g);
    wf_status_free(st);
    print_message("this CPU lacks AVX2/FMA: the plugin's "
                  "cross-entropy loops are not used (checked)\n");
    return;
  }
  for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++)
    for (int sparse = 0; sparse < 2; sparse++) {
      xent_case(&r, sparse, s % 2 ? WF_INT32 : WF_INT64, shapes[s][0],
                shapes[s][1], 8, 0, 0);
      xent_case(&r, sparse, WF_INT64, shapes[s][0], shapes[s][1], 60, 0, 0);
    }
  xent_case(&r, 0, WF_INT64, 6, 28, 8, 1, 0);
  xent_case(&r, 1, WF_INT32, 6, 28, 8, 1, 0);
  xent_case(&r, 1, WF_INT32, 7, 10, 8, 0, 1);
  xent_case(&r, 1, WF_INT64, 8, 10, 8, 0, 1);
}

static void test_batch_norm_matches_reference(void **state) {
  static const int64_t shapes[][4] = {
      {8, 5}, {4, 3, 6, 7}, {2, 9, 5, 3}, {3, 4, 7}, {64, 14, 14, 16}};
  static const int ranks[] = {2, 4, 4, 3, 4};
  rng r = {10};
  int64_t before = bits_differ;

  for (int s = 0; s < 5; s++)
    for (int nchw = 0; nchw < 2; nchw++)
      for (int training = 0; training < 2; training++)
        for (int grad = 0; grad < 2; grad++) {
          int rank = ranks[s];
          int64_t cdim = shapes[s][nchw ? 1 : rank - 1];
          int64_t empty = 0;
          kcase c;

          case_init(&c, grad ? "BatchNormGrad" : "BatchNorm", WF_FLOAT32);
          case_note(&c, " case %d %s %s", s, nchw ? "NCHW" : "NHWC",
                    training ? "training" : "inference");
          if (grad)
            add_input(&c, &r, WF_FLOAT32, shapes[s], rank, -1, 1);
          add_input(&c, &r, WF_FLOAT32, shapes[s], rank, -2, 3);
          add_input(&c, &r, WF_FLOAT32, &cdim, 1, 0.5, 2); /* scale */
          if (!grad)
            add_input(&c, &r, WF_FLOAT32, &cdim, 1, -1, 1); /* offset */
          if (!grad && training && s % 2) {
            /* Training ignores empty statistics inputs. */
            add_input(&c, &r, WF_FLOAT32, &empty, 1, 0, 1);
            add_input(&c, &r, WF_FLOAT32, &empty, 1, 0, 1);
          } else {
            add_input(&c, &r, WF_FLOAT32, &cdim, 1, -0.5, 0.5); /* mean */
            add_input(&c, &r, WF_FLOAT32, &cdim, 1, 0.5, 2);    /* var */
          }
          if (grad) { /* statistics' gradients: zero for half the cases */
            double hi = s % 2 ? 0 : 1;
            add_input(&c, &r, WF_FLOAT32, &cdim, 1, -hi, hi);
            add_input(&c, &r, WF_FLOAT32, &cdim, 1, -hi, hi);
          }
          attr_bool(&c, "is_training", training);
          attr_float(&c, "epsilon", 1e-3);
          attr_string(&c, "data_format", nchw ? "NCHW" : "NHWC");
          check_case(&c);
          case_free(&c);
        }
  expect_fast_path("BatchNorm and BatchNormGrad", before);
}

/* BiasAdd gives the reference's bits (each element one addition);
 * BiasAddGrad sums in double in another order (row parts per thread, two
 * running sums per column, blocks of 16 and 4 columns and single ones),
 * so within the file's tolerance. Shapes: the cnn's and the transformer's
 * layers (shared by the intra-op threads), columns that leave every block
 * size a remainder, odd row counts, one row, NCHW. Run in the default
 * runtime and in one of 3 intra-op threads (uneven parts). */
static void bias_cases(void) {
  static const int64_t shapes[][4] = {
      {64, 10},  {2, 5, 7},       {3, 4, 5, 6}, {64, 28, 28, 16},
      {1, 1},    {64, 14, 14, 32}, {1792, 64},  {3001, 23},
      {1, 37},   {4097, 3, 5},    {7, 41, 33, 9}};
  static const int ranks[] = {2, 3, 4, 4, 2, 4, 2, 2, 2, 3, 4};
  enum { NSHAPES = sizeof ranks / sizeof *ranks };
  rng r = {14};

  for (int s = 0; s < NSHAPES; s++)
    for (int nchw = 0; nchw < 2; nchw++)
      for (int grad = 0; grad < 2; grad++) {
        int64_t cdim = shapes[s][nchw ? 1 : ranks[s] - 1];
        kcase c;
        case_init(&c, grad ? "BiasAddGrad" : "BiasAdd", WF_FLOAT32);
        case_note(&c, " case %d %s", s, nchw ? "NCHW" : "NHWC");
        add_input(&c, &r, WF_FLOAT32, shapes[s], ranks[s], -1, 1);
        if (!grad)
          add_input(&c, &r, WF_FLOAT32, &cdim, 1, -1, 1);
        attr_string(&c, "data_format", nchw ? "NCHW" : "NHWC");
        check_case(&c);
        case_free(&c);
      }
}

/* Sums every partial sum of which is exact (small integers): each order
 * gives the true column sums, which must come out exactly, whichever rows
 * and columns went to which thread, block or running sum. */
static void bias_grad_exact_cases(void) {
  static const struct {
    int rank, nchw;
    int64_t dims[3];
  } cases[] = {{2, 0, {4099, 23}},    {2, 0, {1, 17}},  {3, 0, {2, 1001, 5}},
               {2, 1, {4099, 23}},    {3, 1, {3, 5, 1001}},
               {3, 1, {4097, 3, 5}}};
  wf_status *st = wf_status_new();
  rng r = {15};

  for (size_t s = 0; s < sizeof cases / sizeof *cases; s++) {
    int rank = cases[s].rank, nchw = cases[s].nchw;
    int axis = nchw ? 1 : rank - 1;
    int64_t ch = cases[s].dims[axis], inner = 1, want[32] = {0};
    const wf__kernel *k = NULL;
    wf_tensor *out = NULL, *x;
    wf_graph *g = wf_graph_new(rt);
    wf_node *n;
    kcase c;

    for (int i = axis + 1; i < rank; i++)
      inner *= cases[s].dims[i];
    assert_true(ch <= 32);
    case_init(&c, "BiasAddGrad", WF_FLOAT32);
    case_note(&c, " exact case %d %s", (int)s, nchw ? "NCHW" : "NHWC");
    x = add_input(&c, &r, WF_FLOAT32, cases[s].dims, rank, 0, 1);
    for (int64_t i = 0; i < wf_tensor_count(x); i++) {
      int64_t kk = (i / inner) % ch, v = (i * 7919) % 13 - 6 + kk;
      ((float *)wf_tensor_data(x))[i] = (float)v;
      want[kk] += v;
    }
    attr_string(&c, "data_format", nchw ? "NCHW" : "NHWC");
    assert_non_null(g);
    if (!(n = build(g, &c, st)) || !(k = wf__kernel_select(rt, n, "cpu", st)))
      fail_msg("%s: %s", c.name, wf_status_message(st));
    assert_string_equal(k->plugin, "device-cpu");
    if (wf__kernel_run(k, n, (const wf_tensor *const *)c.in, &out, st))
      fail_msg("%s: %s", c.name, wf_status_message(st));
    for (int64_t kk = 0; kk < ch; kk++)
      if (((const float *)wf_tensor_data(out))[kk] != (float)want[kk])
        fail_msg("%s: channel %lld sums to %.9g, not %lld", c.name,
                 (long long)kk, ((const float *)wf_tensor_data(out))[kk],
                 (long long)want[kk]);
    wf_tensor_release(out);
    wf_graph_free(g);
    case_free(&c);
  }
  wf_status_free(st);
}

static void test_bias_add_and_its_gradient_match_reference(void **state) {
  bias_cases();
  bias_grad_exact_cases();
}

/* ---- arithmetic, sums and Transpose on the intra-op threads ---------------------- */

/* cpu_arith.c's kernels give the reference's bits (each element computed
 * by one thread with the reference's arithmetic), so they are compared bit
 * for bit, in a runtime of 3 intra-op threads (uneven parts), on shapes
 * below and above the size from which the work is shared. */
static void arith_cases(void) {
  static const char *const ops[] = {"Add", "Sub", "Mul", "Div"};
  /* pairs of shapes (rank 0..4) that broadcast */
  static const struct {
    int ra, rb;
    int64_t a[4], b[4];
  } pairs[] = {
      {3, 3, {64, 28, 64}, {64, 28, 64}}, /* equal, shared */
      {2, 2, {3, 5}, {3, 5}},             /* equal, one thread */
      {3, 0, {64, 28, 64}, {0}},          /* scalar y */
      {0, 2, {0}, {257, 131}},            /* scalar x */
      {3, 1, {64, 28, 64}, {64}},         /* bias-like */
      {2, 2, {1792, 1}, {1, 64}},         /* outer product */
      {3, 2, {64, 1, 64}, {28, 1}},       /* both sides broadcast */
      {3, 3, {3, 1, 5}, {1, 4, 1}},       /* small */
      {4, 3, {2, 33, 1, 1001}, {1, 7, 1}}, /* odd sizes */
      {2, 2, {5, 0}, {1, 0}},             /* empty */
      {1, 2, {1}, {40000, 1}},            /* long column */
  };
  rng r = {71};

  for (size_t o = 0; o < sizeof ops / sizeof *ops; o++)
    for (size_t p = 0; p < sizeof pairs / sizeof *pairs; p++)
      for (int swap = 0; swap < 2; swap++) {
        kcase c;
        case_init(&c, ops[o], WF_FLOAT32);
        case_note(&c, " pair %d%s", (int)p, swap ? " swapped" : "");
        add_input(&c, &r, WF_FLOAT32, swap ? pairs[p].b : pairs[p].a,
                  swap ? pairs[p].rb : pairs[p].ra, -2, 2);
        add_input(&c, &r, WF_FLOAT32, swap ? pairs[p].a : pairs[p].b,
                  swap ? pairs[p].ra : pairs[p].rb, -2, 2);
        check_case(&c);
        case_free(&c);
      }
}

static void add_n_cases(void) {
  static const int64_t big[3] = {64, 28, 64}, odd[1] = {100003},
                       small[2] = {3, 7}, empty[2] = {4, 0};
  static const struct {
    const int64_t *dims;
    int rank;
  } shapes[] = {{big, 3}, {odd, 1}, {small, 2}, {empty, 2}};
  static const int counts[] = {1, 2, 3, 5, 17};
  rng r = {72};

  for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++)
    for (size_t n = 0; n < sizeof counts / sizeof *counts; n++) {
      kcase c;
      case_init(&c, "AddN", WF_FLOAT32);
      c.input_list = 1;
      case_note(&c, " of %d, shape %d", counts[n], (int)s);
      if (counts[n] > MAX_IN) {
        case_free(&c);
        continue;
      }
      for (int k = 0; k < counts[n]; k++)
        add_input(&c, &r, WF_FLOAT32, shapes[s].dims, shapes[s].rank, -1e3,
                  1e3);
      check_case(&c);
      case_free(&c);
    }
}

static void reduce_cases(void) {
  static const struct {
    int rank;
    int64_t dims[4];
    int naxes;
    int64_t axes[4];
  } cases[] = {
      {3, {64, 28, 64}, 1, {1}},      /* mean-pool over tokens */
      {3, {64, 28, 64}, 2, {0, 1}},   /* bias-like */
      {3, {64, 28, 64}, 1, {-1}},     /* last axis */
      {3, {64, 28, 64}, 0, {0}},      /* everything */
      {2, {3, 5}, 1, {0}},            /* one thread */
      {4, {3, 37, 11, 129}, 2, {1, 3}},
      {2, {100003, 1}, 1, {0}},       /* a long column into one */
      {3, {3, 0, 4}, 1, {1}},         /* empty input, 12 outputs */
  };
  rng r = {73};

  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
    for (int mean = 0; mean < 2; mean++)
      for (int keep = 0; keep < 2; keep++) {
        kcase c;
        case_init(&c, mean ? "Mean" : "Sum", WF_FLOAT32);
        case_note(&c, " case %d keep_dims %d", (int)i, keep);
        add_input(&c, &r, WF_FLOAT32, cases[i].dims, cases[i].rank, -1, 1);
        attr_ints(&c, "axes", cases[i].axes, cases[i].naxes);
        attr_bool(&c, "keep_dims", keep);
        check_case(&c);
        case_free(&c);
      }
}

/* Sums whose terms span twenty orders of magnitude, with huge ones that cancel (each
 * addition's rounding error is what the compensation keeps, so the fast
 * loops must find it exactly as the reference does), and rows holding an
 * infinity or a NaN. */
static void reduce_magnitude_cases(void) {
  static const int64_t dims[3] = {16, 28, 64};
  rng r = {75};

  for (int k = 0; k < 8; k++) {
    int special = k >> 2, mean = (k >> 1) & 1, all = k & 1;
    kcase c;
    case_init(&c, mean ? "Mean" : "Sum", WF_FLOAT32);
    case_note(&c, " wide magnitudes%s, %s", special ? ", inf and NaN" : "",
              all ? "all axes" : "axis 1");
    wf_tensor *t = add_input(&c, &r, WF_FLOAT32, dims, 3, -1, 1);
    float *x = wf_tensor_data(t);
    int64_t n = wf_tensor_count(t);
    for (int64_t i = 0; i < n; i++)
      x[i] = (float)(x[i] * pow(10.0, floor(urand(&r, -20, 1))));
    /* a term of order one, then a huge one and its negation: along
     * the reduced axis (columns c % 4 == 0) and along the rows (the
     * order in which a reduction over every axis meets them) */
    for (int64_t b = 0; b < dims[0]; b++)
      for (int64_t c4 = 0; c4 < dims[2]; c4 += 4) {
        float *col = x + b * dims[1] * dims[2] + c4;
        col[0] = (float)urand(&r, 1, 2);
        col[dims[2]] = (float)urand(&r, 1e18, 1e20);
        col[2 * dims[2]] = -col[dims[2]];
        col[5 * dims[2] + 1] = (float)urand(&r, -2, -1);
        col[5 * dims[2] + 2] = (float)urand(&r, 1e18, 1e20);
        col[5 * dims[2] + 3] = -col[5 * dims[2] + 2];
      }
    if (special) {
      x[5 * 64 + 3] = INFINITY;
      x[9 * 64 + 3] = -INFINITY;
      x[9 * 64 + 28 * 64 + 3] = INFINITY;
      x[2 * 28 * 64 + 17] = NAN;
    }
    attr_ints(&c, "axes", (const int64_t[]){1}, all ? 0 : 1);
    check_case(&c);
    case_free(&c);
  }
}

/* SumGrad and MeanGrad: dy (x reduced, with or without its kept axes)
 * spread back over x. */
static void spread_cases(void) {
  static const struct {
    int rank;
    int64_t dims[4];
    int naxes;
    int64_t axes[4];
  } cases[] = {
      {3, {64, 28, 64}, 1, {1}},    /* the transformer's mean over tokens */
      {3, {64, 28, 64}, 2, {0, 1}}, /* a row broadcast down */
      {3, {64, 28, 64}, 1, {-1}},   /* a value per row */
      {3, {64, 28, 64}, 0, {0}},    /* everything from one value */
      {2, {3, 5}, 1, {0}},          /* one thread */
      {4, {3, 37, 11, 129}, 2, {1, 3}},
      {3, {3, 0, 4}, 1, {1}},       /* empty x */
  };
  rng r = {77};

  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
    for (int mean = 0; mean < 2; mean++)
      for (int keep = 0; keep < 2; keep++) {
        int64_t red[4];
        int rr = 0;
        uint32_t m = 0;
        kcase c;
        for (int k = 0; k < cases[i].naxes; k++)
          m |= 1u << (cases[i].axes[k] + (cases[i].axes[k] < 0
                                               ? cases[i].rank : 0));
        if (cases[i].naxes == 0)
          m = (1u << cases[i].rank) - 1;
        for (int d = 0; d < cases[i].rank; d++)
          if (!(m & (1u << d)))
            red[rr++] = cases[i].dims[d];
          else if (keep)
            red[rr++] = 1;
        case_init(&c, mean ? "MeanGrad" : "SumGrad", WF_FLOAT32);
        case_note(&c, " case %d keep_dims %d", (int)i, keep);
        add_input(&c, &r, WF_FLOAT32, red, rr, -1e3, 1e3);
        add_input(&c, &r, WF_FLOAT32, cases[i].dims, cases[i].rank, -1, 1);
        attr_ints(&c, "axes", cases[i].axes, cases[i].naxes);
        attr_bool(&c, "keep_dims", keep);
        check_case(&c);
        case_free(&c);
      }
}

static void sum_to_like_cases(void) {
  static const struct {
    int rx, rl;
    int64_t x[4], like[4];
  } cases[] = {
      {3, 1, {64, 28, 64}, {64}},         /* a bias's gradient */
      {3, 2, {64, 28, 64}, {28, 64}},     /* positions' gradient */
      {3, 3, {64, 28, 64}, {64, 1, 64}},  /* a kept middle axis */
      {3, 2, {64, 28, 64}, {28, 1}},
      {3, 3, {64, 28, 64}, {64, 28, 64}}, /* nothing broadcast */
      {2, 0, {300, 301}, {0}},            /* to a scalar */
      {2, 2, {7, 5}, {1, 5}},             /* one thread */
  };
  rng r = {74};

  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    kcase c;
    case_init(&c, "SumToLike", WF_FLOAT32);
    case_note(&c, " case %d", (int)i);
    add_input(&c, &r, WF_FLOAT32, cases[i].x, cases[i].rx, -1, 1);
    add_input(&c, &r, WF_FLOAT32, cases[i].like, cases[i].rl, -1, 1);
    check_case(&c);
    case_free(&c);
  }
}

static void transpose_cases(void) {
  static const struct {
    int rank;
    int64_t dims[4], perm[4];
  } cases[] = {
      {4, {64, 28, 4, 16}, {0, 2, 1, 3}}, /* split heads */
      {4, {64, 4, 28, 16}, {0, 2, 1, 3}}, /* and back */
      {4, {64, 28, 4, 16}, {0, 2, 3, 1}},
      {4, {7, 9, 11, 13}, {3, 2, 1, 0}},
      {2, {300, 257}, {1, 0}},
      {3, {2, 1, 3}, {1, 0, 2}},          /* one thread */
      {3, {60, 50, 10}, {1, 0, 2}},       /* rows of 40 or 80 bytes */
      {3, {40, 30, 70}, {1, 0, 2}},       /* rows past 256 bytes */
      {3, {50, 1, 1000}, {2, 1, 0}},      /* a size-1 axis */
      {2, {0, 5}, {1, 0}},                /* empty */
      {1, {40000}, {0}},                  /* identity */
  };
  rng r = {75};

  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
    for (int f64 = 0; f64 < 2; f64++) {
      wf_dtype dt = f64 ? WF_FLOAT64 : WF_FLOAT32;
      kcase c;
      case_init(&c, "Transpose", dt);
      case_note(&c, " case %d %s", (int)i, wf_dtype_name(dt));
      add_input(&c, &r, dt, cases[i].dims, cases[i].rank, -1, 1);
      add_sizes(&c, cases[i].perm, cases[i].rank);
      check_case(&c);
      case_free(&c);
    }
}

static wf_runtime *shared_rt;

static int three_threads_exact(void **state) {
  shared_rt = rt;
  rt = new_runtime("3");
  exact = 1;
  return 0;
}

static int three_threads(void **state) {
  shared_rt = rt;
  rt = new_runtime("3");
  return 0;
}

static int back_to_shared(void **state) {
  wf_runtime_free(rt);
  rt = shared_rt;
  exact = 0;
  return 0;
}

/* Inputs the ops refuse: the same error from both kernels (or the op's
 * shape function's, which the fast kernels report). Placeholders of
 * unknown shape, so that the node is built and the kernels see them. */
static void arith_bad_cases(void) {
  static const int64_t a[2] = {3, 4}, b[1] = {5}, bad_perm[2] = {0, 0},
                       bad_axes[1] = {5}, axis0[1] = {0};
  static const struct {
    const char *op;
    int list;               /* AddN's one list of inputs */
    const int64_t *second;  /* the second input's dims (rank 1), or NULL */
    const int64_t *perm;    /* Transpose's perm */
    const int64_t *axes;    /* the reduction's axes */
  } cases[] = {
      {"Add", 0, b, NULL, NULL},      {"Transpose", 0, NULL, bad_perm, NULL},
      {"SumToLike", 0, b, NULL, NULL}, {"AddN", 1, b, NULL, NULL},
      {"Sum", 0, NULL, NULL, bad_axes},
      {"MeanGrad", 0, b, NULL, bad_axes}, /* an axis x does not have */
      {"SumGrad", 0, b, NULL, axis0},     /* dy is not x reduced */
  };
  rng r = {76};

  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    kcase c;
    case_init(&c, cases[i].op, WF_FLOAT32);
    c.input_list = cases[i].list;
    c.unknown_shapes = 1;
    c.must_fail = 1;
    add_input(&c, &r, WF_FLOAT32, a, 2, -1, 1);
    if (cases[i].second)
      add_input(&c, &r, WF_FLOAT32, cases[i].second, 1, -1, 1);
    if (cases[i].perm)
      add_sizes(&c, cases[i].perm, 2);
    if (cases[i].axes) {
      attr_ints(&c, "axes", cases[i].axes, 1);
      attr_bool(&c, "keep_dims", 0);
    }
    check_case(&c);
    case_free(&c);
  }
}

static void test_arithmetic_sums_and_transpose_match_reference_bits(
    void **state) {
  arith_bad_cases();
  arith_cases();
  add_n_cases();
  reduce_cases();
  reduce_magnitude_cases();
  spread_cases();
  sum_to_like_cases();
  transpose_cases();
}

/* ---- recurrent layers ----------------------------------------------------------- */

static void rnn_case(rng *r, int lstm, int grad, int64_t t, int64_t n,
                     int64_t ci, int64_t h) {
  int64_t g = lstm ? 4 : 3;
  int64_t x[3] = {t, n, ci}, y[3] = {t, n, h}, s[2] = {n, h};
  int64_t w[2] = {ci, g * h}, rr[2] = {h, g * h}, b[1] = {g * h};
  double scale = 1.0 / sqrt((double)(ci + h));
  kcase c;

  case_init(&c, lstm ? (grad ? "LSTMGrad" : "LSTM") : (grad ? "GRUGrad" : "GRU"),
            WF_FLOAT32);
  case_note(&c, " T=%lld N=%lld C=%lld H=%lld", (long long)t, (long long)n,
            (long long)ci, (long long)h);
  add_input(&c, r, WF_FLOAT32, x, 3, -1, 1);
  add_input(&c, r, WF_FLOAT32, s, 2, -0.5, 0.5);
  if (lstm)
    add_input(&c, r, WF_FLOAT32, s, 2, -0.5, 0.5);
  add_input(&c, r, WF_FLOAT32, w, 2, -2 * scale, 2 * scale);
  add_input(&c, r, WF_FLOAT32, rr, 2, -2 * scale, 2 * scale);
  add_input(&c, r, WF_FLOAT32, b, 1, -0.5, 0.5);
  if (grad) {
    add_input(&c, r, WF_FLOAT32, y, 3, -1, 1);
    add_input(&c, r, WF_FLOAT32, s, 2, -1, 1);
    if (lstm)
      add_input(&c, r, WF_FLOAT32, s, 2, -1, 1);
  }
  check_case(&c);
  case_free(&c);
}

static void test_lstm_and_gru_match_reference(void **state) {
  static const char *const names[] = {"GRU", "LSTM", "GRUGrad", "LSTMGrad"};
  rng r = {11};

  for (int kind = 0; kind < 4; kind++) {
    int64_t before = bits_differ;
    for (int i = 0; i < 6; i++)
      rnn_case(&r, kind % 2, kind / 2, irand(&r, 1, 9), irand(&r, 1, 5),
               irand(&r, 1, 7), irand(&r, 1, 9));
    expect_fast_path(names[kind], before);
  }
  /* The Fashion-MNIST GRU's shapes: 28 rows of 28 pixels, 128 units. */
  rnn_case(&r, 0, 0, 28, 64, 28, 128);
  rnn_case(&r, 0, 1, 28, 16, 28, 128);
}

/* ---- fallbacks ----------------------------------------------------------------- */

/* Empty tensors are computed as the reference computes them; inputs the
 * op refuses give the op's own error, word for word: the reference
 * kernel's, or its shape function's (which the fast kernels ask for their
 * output shapes). */
static void test_fast_kernels_fall_back_for_empty_and_bad_inputs(
    void **state) {
  rng r = {12};
  kcase c;

  /* Empty batch through a convolution. */
  case_init(&c, "Conv2D", WF_FLOAT32);
  add_input(&c, &r, WF_FLOAT32, (int64_t[]){0, 5, 5, 2}, 4, -1, 1);
  add_input(&c, &r, WF_FLOAT32, (int64_t[]){3, 3, 2, 4}, 4, -1, 1);
  window_attrs(&c, &(win){.padding = 0, .sh = 1, .sw = 1, .dh = 1, .dw = 1},
               1);
  check_case(&c);
  case_free(&c);
  /* No input channels: the output is zeros. */
  case_init(&c, "Conv2D", WF_FLOAT32);
  add_input(&c, &r, WF_FLOAT32, (int64_t[]){2, 5, 5, 0}, 4, -1, 1);
  add_input(&c, &r, WF_FLOAT32, (int64_t[]){3, 3, 0, 4}, 4, -1, 1);
  window_attrs(&c, &(win){.padding = 1, .sh = 1, .sw = 1, .dh = 1, .dw = 1},
               1);
  check_case(&c);
  case_free(&c);
  /* Channels that disagree, seen only by the kernel. */
  case_init(&c, "Conv2D", WF_FLOAT32);
  c.unknown_shapes = 1;
  add_input(&c, &r, WF_FLOAT32, (int64_t[]){1, 5, 5, 3}, 4, -1, 1);
  add_input(&c, &r, WF_FLOAT32, (int64_t[]){3, 3, 2, 4}, 4, -1, 1);
  window_attrs(&c, &(win){.padding = 0, .sh = 1, .sw = 1, .dh = 1, .dw = 1},
               1);
  check_case(&c);
  case_free(&c);
  /* A VALID window larger than the input. */
  case_init(&c, "MaxPool", WF_FLOAT32);
  c.unknown_shapes = 1;
  add_input(&c, &r, WF_FLOAT32, (int64_t[]){1, 2, 2, 3}, 4, -1, 1);
  window_attrs(&c,
               &(win){.padding = 1, .kh = 3, .kw = 3, .sh = 1, .sw = 1,
                      .dh = 1, .dw = 1},
               0);
  check_case(&c);
  case_free(&c);
  /* A backprop whose gradient does not have the convolution's shape. */
  case_init(&c, "Conv2DBackpropInput", WF_FLOAT32);
  c.unknown_shapes = 1;
  add_sizes(&c, (int64_t[]){1, 6, 6, 2}, 4);
  add_input(&c, &r, WF_FLOAT32, (int64_t[]){3, 3, 2, 4}, 4, -1, 1);
  add_input(&c, &r, WF_FLOAT32, (int64_t[]){1, 5, 6, 4}, 4, -1, 1);
  window_attrs(&c, &(win){.padding = 0, .sh = 1, .sw = 1, .dh = 1, .dw = 1},
               1);
  check_case(&c);
  case_free(&c);
  /* Empty batch statistics, empty sequence, mismatched softmax grad. */
  case_init(&c, "BatchNorm", WF_FLOAT32);
  add_input(&c, &r, WF_FLOAT32, (int64_t[]){0, 3}, 2, -1, 1);
  for (int i = 0; i < 4; i++)
    add_input(&c, &r, WF_FLOAT32, (int64_t[]){3}, 1, 0.5, 1);
  check_case(&c);
  case_free(&c);
  rnn_case(&r, 1, 0, 0, 2, 3, 4);
  rnn_case(&r, 0, 1, 0, 2, 3, 4);
  rnn_case(&r, 1, 1, 3, 0, 3, 4);
  rnn_case(&r, 0, 0, 3, 2, 3, 0);
  {
    /* Inputs of no features (C = 0), known while placing: the oneDNN
     * kernel declines the node and the reference kernel is chosen. */
    int64_t x[3] = {2, 3, 0}, s2[2] = {3, 4}, w[2] = {0, 16}, rr[2] = {4, 16},
            b[1] = {16};
    wf_status *st = wf_status_new();
    wf_graph *g = wf_graph_new(rt);
    const wf__kernel *k;
    wf_node *n;

    case_init(&c, "LSTM", WF_FLOAT32);
    add_input(&c, &r, WF_FLOAT32, x, 3, -1, 1);
    add_input(&c, &r, WF_FLOAT32, s2, 2, -1, 1);
    add_input(&c, &r, WF_FLOAT32, s2, 2, -1, 1);
    add_input(&c, &r, WF_FLOAT32, w, 2, -1, 1);
    add_input(&c, &r, WF_FLOAT32, rr, 2, -1, 1);
    add_input(&c, &r, WF_FLOAT32, b, 1, -1, 1);
    assert_non_null(n = build(g, &c, st));
    assert_non_null(k = wf__kernel_select(rt, n, "cpu", st));
    assert_string_equal(k->plugin, "ops-rnn");
    assert_int_equal(k->def.priority, 0);
    wf_graph_free(g);
    wf_status_free(st);
    case_free(&c);
  }
  case_init(&c, "SoftmaxGrad", WF_FLOAT32);
  c.unknown_shapes = 1;
  add_input(&c, &r, WF_FLOAT32, (int64_t[]){2, 5}, 2, 0, 1);
  add_input(&c, &r, WF_FLOAT32, (int64_t[]){2, 4}, 2, 0, 1);
  check_case(&c);
  case_free(&c);
  /* A gradient that does not match its input. */
  case_init(&c, "ReluGrad", WF_FLOAT32);
  c.unknown_shapes = 1;
  add_input(&c, &r, WF_FLOAT32, (int64_t[]){2, 5}, 2, -1, 1);
  add_input(&c, &r, WF_FLOAT32, (int64_t[]){2, 4}, 2, -1, 1);
  {
    /* The reference words this error its own way: only both refusing is
     * required. */
    wf_status *st = wf_status_new();
    wf_graph *g = wf_graph_new(rt);
    wf_node *n = build(g, &c, st);
    wf_tensor *out[2] = {NULL, NULL};
    const wf__kernel *k;

    assert_non_null(n);
    assert_non_null(k = wf__kernel_select(rt, n, "cpu", st));
    assert_int_equal(
        wf__kernel_run(k, n, (const wf_tensor *const *)c.in, out, st),
        WF_INVALID_ARGUMENT);
    assert_non_null(strstr(wf_status_message(st), "(2, 5)"));
    assert_non_null(strstr(wf_status_message(st), "(2, 4)"));
    wf_graph_free(g);
    wf_status_free(st);
  }
  case_free(&c);
}

/* ---- plans across runs, shapes and threads --------------------------------------- */

typedef struct conv_session {
  wf_graph *g;
  wf_session *s;
  wf_callable *call;
  wf_node *x, *f, *y;
  int64_t ci, co;
} conv_session;

/* y = Conv2D(x (?, 9, 9, ci), f (3, 3, ci, co)), SAME, through a
 * session. */
static void conv_session_new_c(conv_session *cs, int64_t ci, int64_t co) {
  wf_status *st = wf_status_new();
  int64_t xd[4] = {-1, 9, 9, ci}, fd[4] = {3, 3, ci, co};
  const int64_t ones[4] = {1, 1, 1, 1};
  wf_node_desc *d;
  wf_output feeds[2], fetch;

  cs->ci = ci, cs->co = co;
  cs->g = wf_graph_new(rt);
  d = wf_node_desc_new(cs->g, "Placeholder", "x");
  wf_node_desc_set_attr_dtype(d, "dtype", WF_FLOAT32);
  wf_node_desc_set_attr_shape(d, "shape", xd, 4);
  assert_non_null(cs->x = wf_node_desc_finish(d, st));
  d = wf_node_desc_new(cs->g, "Placeholder", "f");
  wf_node_desc_set_attr_dtype(d, "dtype", WF_FLOAT32);
  wf_node_desc_set_attr_shape(d, "shape", fd, 4);
  assert_non_null(cs->f = wf_node_desc_finish(d, st));
  d = wf_node_desc_new(cs->g, "Conv2D", "y");
  wf_node_desc_add_input(d, (wf_output){cs->x, 0});
  wf_node_desc_add_input(d, (wf_output){cs->f, 0});
  wf_node_desc_set_attr_int_list(d, "strides", ones, 4);
  wf_node_desc_set_attr_string(d, "padding", "SAME");
  assert_non_null(cs->y = wf_node_desc_finish(d, st));
  assert_non_null(cs->s = wf_session_new(cs->g, st));
  feeds[0] = (wf_output){cs->x, 0};
  feeds[1] = (wf_output){cs->f, 0};
  fetch = (wf_output){cs->y, 0};
  cs->call = wf_session_prepare(cs->s, feeds, 2, &fetch, 1, NULL, 0, st);
  if (!cs->call)
    fail_msg("preparing: %s", wf_status_message(st));
  wf_status_free(st);
}

static void conv_session_new(conv_session *cs) { conv_session_new_c(cs, 3, 5); }

static void conv_session_free(conv_session *cs) {
  wf_callable_free(cs->call);
  wf_session_free(cs->s);
  wf_graph_free(cs->g);
}

/* The reference kernel's output for x and f on the session's node. */
static wf_tensor *conv_reference(const conv_session *cs, wf_tensor *x,
                                 wf_tensor *f) {
  wf_status *st = wf_status_new();
  const wf__kernel *ref = reference_kernel("Conv2D", WF_FLOAT32);
  const wf_tensor *in[2] = {x, f};
  wf_tensor *out = NULL;

  assert_non_null(ref);
  if (wf__kernel_run(ref, cs->y, in, &out, st))
    fail_msg("reference: %s", wf_status_message(st));
  wf_status_free(st);
  return out;
}

static void fill(wf_tensor *t, rng *r) {
  float *p = wf_tensor_data(t);
  for (int64_t i = 0; i < wf_tensor_count(t); i++)
    p[i] = (float)urand(r, -1, 1);
}

/* One node's plans: batches come and go (more shapes than the cache
 * holds, so plans are evicted and rebuilt), and the filter's bytes change
 * under the same address between runs: every result is the reference's. */
static void test_plans_follow_shapes_and_weights_changed_in_place(
    void **state) {
  static const int64_t batches[] = {1, 2, 3, 1, 4, 5, 6, 7, 8, 9, 10, 2, 1};
  wf_status *st = wf_status_new();
  float fbuf[3 * 3 * 3 * 5];
  int64_t fd[4] = {3, 3, 3, 5};
  conv_session cs;
  wf_tensor *f;
  rng r = {13};

  conv_session_new(&cs);
  f = wf_tensor_wrap(WF_FLOAT32, fd, 4, fbuf, sizeof fbuf, NULL, NULL, st);
  assert_non_null(f);
  for (size_t i = 0; i < sizeof batches / sizeof batches[0]; i++) {
    int64_t xd[4] = {batches[i], 9, 9, 3};
    wf_tensor *x = wf_tensor_new(WF_FLOAT32, xd, 4, st), *y = NULL, *want;
    wf_tensor *feeds[2] = {x, f};
    char name[64];

    fill(x, &r);
    fill(f, &r); /* same buffer, new values */
    if (wf_callable_run(cs.call, NULL, feeds, &y, NULL, st))
      fail_msg("run %zu: %s", i, wf_status_message(st));
    want = conv_reference(&cs, x, f);
    snprintf(name, sizeof name, "run %zu (batch %lld)", i,
             (long long)batches[i]);
    expect_close(name, 0, want, y);
    wf_tensor_release(want);
    wf_tensor_release(y);
    wf_tensor_release(x);
  }
  wf_tensor_release(f);
  conv_session_free(&cs);
  wf_status_free(st);
}

/* Runs of a ci -> co session with one filter buffer whose bytes change in
 * place between runs: change[i] is -1 (run i changes nothing), or 0, 1, 2
 * (its first, middle or last element gains 0.5 first); batch[i] is run
 * i's batch. Every result must be the reference's. */
static void weights_in_place_case(int64_t ci, int64_t co, const int *change,
                                  const int64_t *batch, size_t runs,
                                  uint64_t seed) {
  wf_status *st = wf_status_new();
  int64_t fd[4] = {3, 3, ci, co};
  conv_session cs;
  rng r = {seed};
  wf_tensor *f = wf_tensor_new(WF_FLOAT32, fd, 4, st);
  int64_t n;

  assert_non_null(f);
  n = wf_tensor_count(f);
  conv_session_new_c(&cs, ci, co);
  fill(f, &r);
  for (size_t i = 0; i < runs; i++) {
    int64_t xd[4] = {batch[i], 9, 9, ci};
    int64_t at = change[i] < 0 ? -1 : change[i] == 0 ? 0
                                  : change[i] == 1 ? n / 2
                                                   : n - 1;
    wf_tensor *x = wf_tensor_new(WF_FLOAT32, xd, 4, st), *y = NULL, *want;
    wf_tensor *feeds[2] = {x, f};
    char name[96];

    assert_non_null(x);
    fill(x, &r);
    if (at >= 0) /* one element, same buffer */
      ((float *)wf_tensor_data(f))[at] += 0.5f;
    if (wf_callable_run(cs.call, NULL, feeds, &y, NULL, st))
      fail_msg("run %zu: %s", i, wf_status_message(st));
    want = conv_reference(&cs, x, f);
    snprintf(name, sizeof name, "%lld -> %lld, run %zu (element %lld changed)",
             (long long)ci, (long long)co, i, (long long)at);
    expect_close(name, 0, want, y);
    wf_tensor_release(want);
    wf_tensor_release(y);
    wf_tensor_release(x);
  }
  wf_tensor_release(f);
  conv_session_free(&cs);
  wf_status_free(st);
}

/* The Winograd loops' transformed filter (16 -> 32 channels, where the CPU
 * runs them) follows every change, batches varying. */
static void test_own_winograd_follows_weights_changed_in_place(void **state) {
  static const int change[] = {-1, -1, 0, -1, 1, 2, -1};
  static const int64_t batch[] = {1, 2, 1, 3, 1, 1, 2};

  weights_in_place_case(16, 32, change, batch, 7, 15);
}

/* A filter of 1.18 MB (resnet-sized, 128 -> 256): the plan's reordered
 * copy follows every change. */
static void test_large_weights_changed_in_place_anywhere(void **state) {
  static const int change[] = {-1, -1, 0, 1, 2, -1};
  static const int64_t batch[] = {1, 1, 1, 1, 1, 1};

  weights_in_place_case(128, 256, change, batch, 6, 14);
}

static wf_node *node(wf_graph *g, const char *op, const char *name,
                     const wf_output *in, int nin, const int64_t *shape) {
  wf_status *st = wf_status_new();
  wf_node_desc *d = wf_node_desc_new(g, op, name);
  wf_node *n;
  for (int i = 0; i < nin; i++)
    wf_node_desc_add_input(d, in[i]);
  if (shape) {
    wf_node_desc_set_attr_dtype(d, "dtype", WF_FLOAT32);
    wf_node_desc_set_attr_shape(d, "shape", shape, 4);
  }
  if (!(n = wf_node_desc_finish(d, st)))
    fail_msg("%s: %s", name, wf_status_message(st));
  wf_status_free(st);
  return n;
}

/* The filter a variable (whose value the core versions): assigned, then
 * updated in place by AssignAddVariable between runs, and assigned again;
 * the convolution follows every change, and runs that change nothing
 * match too. */
static void test_variable_weights_updated_in_place(void **state) {
  wf_status *st = wf_status_new();
  int64_t fd[4] = {3, 3, 128, 256}, xd[4] = {1, 9, 9, 128};
  const int64_t ones[4] = {1, 1, 1, 1};
  wf_graph *g = wf_graph_new(rt);
  wf_node *x = node(g, "Placeholder", "x", NULL, 0, xd);
  wf_node *init = node(g, "Placeholder", "init", NULL, 0, fd);
  wf_node *delta = node(g, "Placeholder", "delta", NULL, 0, fd);
  wf_node *h = node(g, "VarHandle", "w", NULL, 0, fd);
  wf_node *read = node(g, "ReadVariable", "read", (wf_output[]){{h, 0}}, 1,
                       fd);
  wf_node *assign = node(g, "AssignVariable", "assign",
                         (wf_output[]){{h, 0}, {init, 0}}, 2, NULL);
  wf_node *add = node(g, "AssignAddVariable", "add",
                      (wf_output[]){{h, 0}, {delta, 0}}, 2, NULL);
  wf_node_desc *d = wf_node_desc_new(g, "Conv2D", "y");
  wf_node *y;
  wf_session *s;
  rng r = {15};
  wf_tensor *xt = wf_tensor_new(WF_FLOAT32, xd, 4, st),
            *ft = wf_tensor_new(WF_FLOAT32, fd, 4, st),
            *dt = wf_tensor_new(WF_FLOAT32, fd, 4, st);
  /* what each run does before the convolution: 0 nothing, 1 add, 2 assign */
  static const int steps[] = {2, 0, 0, 1, 0, 1, 1, 2, 0, 1};

  wf_node_desc_add_input(d, (wf_output){x, 0});
  wf_node_desc_add_input(d, (wf_output){read, 0});
  wf_node_desc_set_attr_int_list(d, "strides", ones, 4);
  wf_node_desc_set_attr_string(d, "padding", "SAME");
  assert_non_null(y = wf_node_desc_finish(d, st));
  assert_non_null(s = wf_session_new(g, st));
  fill(xt, &r);
  for (size_t i = 0; i < sizeof steps / sizeof *steps; i++) {
    wf_tensor *out = NULL, *want, *w = NULL;
    wf_output fetch = {y, 0}, wf = {read, 0};
    char name[64];
    if (steps[i]) {
      wf_output feed = {steps[i] == 2 ? init : delta, 0};
      wf_tensor *v = steps[i] == 2 ? ft : dt;
      wf_node *target = steps[i] == 2 ? assign : add;
      fill(v, &r);
      if (wf_session_run(s, NULL, &feed, &v, 1, NULL, NULL, 0, &target, 1,
                         NULL, st))
        fail_msg("update %zu: %s", i, wf_status_message(st));
    }
    if (wf_session_run(s, NULL, (wf_output[]){{x, 0}}, &xt, 1, &fetch, &out,
                       1, NULL, 0, NULL, st) ||
        wf_session_run(s, NULL, NULL, NULL, 0, &wf, &w, 1, NULL, 0, NULL, st))
      fail_msg("run %zu: %s", i, wf_status_message(st));
    {
      const wf__kernel *ref = reference_kernel("Conv2D", WF_FLOAT32);
      const wf_tensor *in[2] = {xt, w};
      want = NULL;
      if (wf__kernel_run(ref, y, in, &want, st))
        fail_msg("reference: %s", wf_status_message(st));
    }
    snprintf(name, sizeof name, "run %zu (after %s)", i,
             steps[i] == 2 ? "an assignment"
                           : steps[i] ? "an in-place add" : "nothing");
    expect_close(name, 0, want, out);
    wf_tensor_release(want);
    wf_tensor_release(out);
    wf_tensor_release(w);
  }
  wf_tensor_release(xt);
  wf_tensor_release(ft);
  wf_tensor_release(dt);
  wf_session_free(s);
  wf_graph_free(g);
  wf_status_free(st);
}

typedef struct runner {
  conv_session *cs;
  int id, failures;
  char why[256];
} runner;

static void *run_many(void *arg) {
  runner *w = arg;
  wf_status *st = wf_status_new();
  rng r = {100 + (uint64_t)w->id};

  for (int i = 0; i < 30 && !w->failures; i++) {
    int64_t xd[4] = {1 + (w->id + i) % 3, 9, 9, w->cs->ci};
    int64_t fd[4] = {3, 3, w->cs->ci, w->cs->co};
    wf_tensor *x = wf_tensor_new(WF_FLOAT32, xd, 4, st);
    wf_tensor *f = wf_tensor_new(WF_FLOAT32, fd, 4, st), *y = NULL, *want;
    wf_tensor *feeds[2] = {x, f};
    const float *a, *b;

    fill(x, &r);
    fill(f, &r);
    if (wf_callable_run(w->cs->call, NULL, feeds, &y, NULL, st)) {
      w->failures++;
      snprintf(w->why, sizeof w->why, "%s", wf_status_message(st));
    } else {
      want = conv_reference(w->cs, x, f);
      a = wf_tensor_data(want);
      b = wf_tensor_data(y);
      for (int64_t j = 0; j < wf_tensor_count(want); j++)
        if (fabs(a[j] - b[j]) > 1e-4 * fabs(a[j]) + 1e-5 * 10) {
          w->failures++;
          snprintf(w->why, sizeof w->why,
                   "run %d element %lld: %.9g, the reference %.9g", i,
                   (long long)j, (double)b[j], (double)a[j]);
          break;
        }
      wf_tensor_release(want);
      wf_tensor_release(y);
    }
    wf_tensor_release(x);
    wf_tensor_release(f);
  }
  wf_status_free(st);
  return NULL;
}

/* Several threads run the same callable (so the same kernel state) at
 * once, with shapes and filters that change between their runs: the
 * direct kernel's plans (3 -> 5 channels) and, 16 -> 32, the Winograd
 * loops' transformed filters where the CPU runs them (more threads than
 * the node keeps filters for). */
static void threads_case(int64_t ci, int64_t co) {
  enum { THREADS = 6 };
  pthread_t t[THREADS];
  runner w[THREADS];
  conv_session cs;

  conv_session_new_c(&cs, ci, co);
  for (int i = 0; i < THREADS; i++) {
    w[i] = (runner){.cs = &cs, .id = i};
    assert_int_equal(pthread_create(&t[i], NULL, run_many, &w[i]), 0);
  }
  for (int i = 0; i < THREADS; i++) {
    pthread_join(t[i], NULL);
    if (w[i].failures)
      fail_msg("%lld -> %lld channels, thread %d: %s", (long long)ci,
               (long long)co, i, w[i].why);
  }
  conv_session_free(&cs);
}

static void test_plans_are_safe_from_several_threads(void **state) {
  threads_case(3, 5);
  threads_case(16, 32);
}
#endif /* HAVE_NN_KERNELS */

/* ---- threads ---------------------------------------------------------------------- */

/* The device description reports the split the libraries were given. */
static void test_cpu_device_reports_its_thread_layout(void **state) {
  wf_runtime *r1 = new_runtime("1");
  wf_device_info info;
  char want[64];
  int32_t inter = 0, intra = 0;

  wf_runtime_device_get(r1, 0, &info);
  assert_non_null(strstr(info.description, "\nthreads: "));
  wf__threads(r1->cfg, &inter, &intra);
  assert_int_equal(intra, 1);
  snprintf(want, sizeof want, "threads: %d inter-op x 1 intra-op",
           (int)inter);
  if (!strstr(info.description, want))
    fail_msg("the description does not say '%s':\n%s", want,
             info.description);
#ifdef HAVE_DNNL
  assert_non_null(strstr(info.description, "oneDNN "));
#endif
  wf_runtime_free(r1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
#ifdef HAVE_GEMM_KERNELS
      cmocka_unit_test(test_matmul_matches_reference_on_random_shapes),
      cmocka_unit_test(test_batch_matmul_matches_reference_with_broadcasting),
      cmocka_unit_test(test_small_batch_matmul_matches_reference),
      cmocka_unit_test(test_large_matmul_matches_reference),
      cmocka_unit_test(test_matmul_split_along_k_matches_reference),
      cmocka_unit_test_setup_teardown(
          test_matmul_split_along_k_matches_reference, three_threads,
          back_to_shared),
      cmocka_unit_test(test_matmul_split_along_m_matches_reference),
      cmocka_unit_test_setup_teardown(
          test_matmul_split_along_m_matches_reference, three_threads,
          back_to_shared),
      cmocka_unit_test(test_large_fused_matmul_matches_reference),
      cmocka_unit_test(test_narrow_matmul_matches_reference),
      cmocka_unit_test(test_fused_matmul_matches_reference),
#endif
#ifdef HAVE_NN_KERNELS
      cmocka_unit_test(test_conv2d_matches_reference_on_random_windows),
      cmocka_unit_test(test_fused_conv2d_matches_reference),
      cmocka_unit_test(test_conv2d_backprop_input_matches_reference),
      cmocka_unit_test(test_conv2d_backprop_filter_matches_reference),
      cmocka_unit_test(test_conv2d_matches_reference_on_the_cnn_layers),
      cmocka_unit_test(test_first_layer_conv2d_matches_reference),
      cmocka_unit_test(test_winograd_conv2d_matches_reference),
      cmocka_unit_test(test_own_winograd_conv2d_matches_reference),
      cmocka_unit_test(test_shallow_conv2d_matches_reference),
      cmocka_unit_test(test_shallow_filter_gradient_matches_reference),
      cmocka_unit_test_setup_teardown(
          test_shallow_filter_gradient_matches_reference, three_threads,
          back_to_shared),
      cmocka_unit_test(test_fused_conv2d_max_pool_matches_reference),
      cmocka_unit_test(test_fused_conv2d_and_max_pool_matches_reference),
      cmocka_unit_test(test_fused_conv2d_max_pool_kernels_obey_deny),
      cmocka_unit_test(test_few_channel_conv2d_matches_reference),
      cmocka_unit_test(test_cnn_inference_layers_match_reference),
      cmocka_unit_test(test_pools_match_reference_on_random_windows),
      cmocka_unit_test_setup_teardown(test_nhwc_pools_give_reference_bits,
                                      bits_exact, bits_within_tolerance),
      cmocka_unit_test_setup_teardown(
          test_nhwc_max_pool_grad_gives_reference_bits, bits_exact,
          bits_within_tolerance),
      cmocka_unit_test(test_activations_match_reference),
      cmocka_unit_test(test_gelu_loops_match_reference),
      cmocka_unit_test_setup_teardown(test_relu_grad_loops_give_reference_bits,
                                      bits_exact, bits_within_tolerance),
      cmocka_unit_test_setup_teardown(test_relu_grad_loops_give_reference_bits,
                                      three_threads_exact, back_to_shared),
      cmocka_unit_test(test_softmax_family_matches_reference),
      cmocka_unit_test(test_own_softmax_loops_match_reference),
      cmocka_unit_test(test_own_xent_loops_match_reference),
      cmocka_unit_test(test_batch_norm_matches_reference),
      cmocka_unit_test(test_bias_add_and_its_gradient_match_reference),
      cmocka_unit_test_setup_teardown(
          test_bias_add_and_its_gradient_match_reference, three_threads,
          back_to_shared),
      cmocka_unit_test(test_lstm_and_gru_match_reference),
      cmocka_unit_test_setup_teardown(
          test_arithmetic_sums_and_transpose_match_reference_bits,
          three_threads_exact, back_to_shared),
      cmocka_unit_test(test_fast_kernels_fall_back_for_empty_and_bad_inputs),
      cmocka_unit_test(test_plans_follow_shapes_and_weights_changed_in_place),
      cmocka_unit_test(test_large_weights_changed_in_place_anywhere),
      cmocka_unit_test(test_own_winograd_follows_weights_changed_in_place),
      cmocka_unit_test(test_variable_weights_updated_in_place),
      cmocka_unit_test(test_plans_are_safe_from_several_threads),
#endif
      cmocka_unit_test(test_cpu_device_reports_its_thread_layout),
  };
  return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
