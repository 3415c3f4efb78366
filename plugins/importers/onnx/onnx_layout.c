/* plugins/importers/onnx/onnx_layout.c — the importer's layout pass,
 * onnx_nhwc: ONNX convolution networks are NCHW, and the CPU device's
 * oneDNN kernels run convolutions and pools in NHWC (channels last), so
 * every NCHW Conv2D paid two reorders of its activations (in and out) at
 * every run: on bench/onnx_vs_ort.py's PyTorch-exported resnet18 at batch
 * 32, 55 ms of a 385 ms run. The pass turns each connected region of
 * layout-bearing nodes into NHWC nodes, with one Transpose where a value
 * enters the region and one where it leaves, so activations stay channels
 * last from the first convolution to the last.
 *
 * The region's nodes:
 *   - anchors, ops with data_format "NCHW" on a rank-4 input: Conv2D,
 *     MaxPool, AvgPool, BiasAdd, and BatchNorm in inference whose
 *     statistics outputs nobody reads; their 4-entry attributes (strides,
 *     ksize, dilations) and explicit_paddings are permuted to NHWC order;
 *   - elementwise ops whose inputs are of rank 4 or scalars: Add, Sub,
 *     Mul, Div, Maximum, Minimum, Relu, Sigmoid, Tanh, Elu, LeakyRelu,
 *     Gelu (any broadcast between rank-4 operands survives the same
 *     permutation of both);
 *   - Pad of a rank-4 value by constant paddings (rows permuted).
 * A region is a set of such nodes joined by their data edges; a region
 * changes when it holds an anchor and saves reorders: two per Conv2D (the
 * kernel's own, in and out) against one Transpose per edge entering it
 * and per reader outside it (a grouped convolution, split and
 * concatenated along the channels, stays NCHW). Nodes with control edges stay. The
 * NCHW nodes left behind are read by nobody and are pruned; results are
 * the same values (each op computes the same sums in either layout, up
 * to the kernels' own order). Off with `[passes] onnx_nhwc = false`. */
#include <config.h>

#include <stdlib.h>
#include <string.h>

#include "onnx_internal.h"

/* NCHW index -> NHWC position of a 4-entry list: [N, C, H, W] -> [N, H, W,
 * C]. */
static const int to_nhwc[4] = {0, 2, 3, 1}; /* Transpose's perm */
static const int to_nchw[4] = {0, 3, 1, 2};

enum { K_NONE, K_ANCHOR, K_ELEMENTWISE, K_PAD };

static const char *const elementwise_ops[] = {
    "Add",  "Sub", "Mul", "Div",       "Maximum", "Minimum",
    "Relu", "Sigmoid", "Tanh", "Elu", "LeakyRelu", "Gelu"};
/* Attributes copied unchanged, besides the permuted ones. */
static const char *const copied_attrs[] = {
    "T", "padding", "epsilon", "is_training", "alpha", "approximate",
    "Tpaddings", "constant_values"};
/* 4-entry attributes in data_format order. */
static const char *const permuted_attrs[] = {"strides", "ksize",
                                             "dilations"};

static int is(const wf_node *n, const char *op) {
  return strcmp(wfx_host->node_op(n), op) == 0;
}

static int rank_of(wf_output o) {
  int32_t dt;
  wf_shape s;
  if (wfx_host->node_output_info(o.node, o.index, &dt, &s))
    return -1;
  return s.rank;
}

static int attr_is(const wf_node *n, const char *name, const char *want) {
  wf_attr_value v;
  return wfx_host->node_attr(n, name, &v) == 0 &&
         (v.type & ~WF_ATTR_LIST) == WF_ATTR_STRING && v.count == 1 &&
         strcmp(v.u.s, want) == 0;
}

/* Constant (R, 2) paddings of integers (the node's input 1 is a Const). */
static const wf_tensor *const_paddings(const wf_node *n) {
  wf_output p = wfx_host->node_input(n, 1);
  wf_attr_value v;
  wf_shape s;
  if (!is(p.node, "Const") || wfx_host->node_attr(p.node, "value", &v) ||
      v.type != WF_ATTR_TENSOR || !v.u.tensor)
    return NULL;
  wfx_host->tensor_shape(v.u.tensor, &s);
  if (s.rank != 2 || s.dims[0] != 4 || s.dims[1] != 2)
    return NULL;
  int32_t dt = wfx_host->tensor_dtype(v.u.tensor);
  return dt == WF_INT32 || dt == WF_INT64 ? v.u.tensor : NULL;
}

/* What node n is to the pass. */
static int kind_of(const wf_pass_ctx *ctx, const wf_node *n) {
  const char *op = wfx_host->node_op(n);
  int32_t nin = wfx_host->node_num_inputs(n);

  /* a host before 1.4 cannot say who waits for n: leave every node */
  if (!WF_HOST_HAS(wfx_host, node_num_control_consumers) ||
      wfx_host->node_num_control_inputs(n) ||
      wfx_host->node_num_control_consumers(n) ||
      wfx_host->node_num_outputs(n) < 1 || nin < 1)
    return K_NONE;
  if (!strcmp(op, "Conv2D") || !strcmp(op, "MaxPool") ||
      !strcmp(op, "AvgPool") || !strcmp(op, "BiasAdd") ||
      !strcmp(op, "BatchNorm")) {
    if (!attr_is(n, "data_format", "NCHW") ||
        rank_of(wfx_host->node_input(n, 0)) != 4)
      return K_NONE;
    if (!strcmp(op, "BatchNorm")) {
      wf_attr_value v;
      if (wfx_host->node_attr(n, "is_training", &v) || v.u.b)
        return K_NONE;
      for (int32_t i = 1; i < wfx_host->node_num_outputs(n); i++) {
        wf_output o = {(wf_node *)n, i};
        if (wfx_host->pass_num_consumers(ctx, o) ||
            wfx_host->pass_is_fetched(ctx, o))
          return K_NONE;
      }
    }
    return K_ANCHOR;
  }
  if (!strcmp(op, "Pad"))
    return nin == 2 && rank_of(wfx_host->node_input(n, 0)) == 4 &&
                   const_paddings(n)
               ? K_PAD
               : K_NONE;
  for (size_t k = 0; k < sizeof elementwise_ops / sizeof *elementwise_ops;
       k++)
    if (!strcmp(op, elementwise_ops[k])) {
      wf_output o = {(wf_node *)n, 0};
      if (wfx_host->node_num_outputs(n) != 1 || rank_of(o) != 4)
        return K_NONE;
      for (int32_t i = 0; i < nin; i++) {
        int r = rank_of(wfx_host->node_input(n, i));
        if (r != 4 && r != 0)
          return K_NONE;
      }
      return K_ELEMENTWISE;
    }
  return K_NONE;
}

/* ---- the pass's tables ---------------------------------------------------- */

typedef struct layout {
  wf_pass_ctx *ctx;
  int32_t n;          /* nodes when the pass began */
  wf_node **node;     /* [n] */
  int *kind;          /* [n] K_* */
  int32_t *parent;    /* [n] union-find */
  int *anchored;      /* [n] bit 0, by root: the region holds an anchor;
                         bit 1, by node: a node outside reads output 0 */
  wf_node **made;     /* [n] the NHWC node of a converted node, or NULL */
  /* node -> index, open addressing */
  wf_node **keys;
  int32_t *vals;
  size_t cap;
  /* values transposed into the region, to share them */
  wf_output *in_src, *in_nhwc;
  int32_t nin, in_cap;
} layout;

static size_t hash_ptr(const void *p, size_t cap) {
  uintptr_t v = (uintptr_t)p;
  v ^= v >> 17;
  v *= UINT64_C(0xed5ad4bb);
  v ^= v >> 11;
  return (size_t)v & (cap - 1);
}

static int32_t index_of(const layout *L, const wf_node *n) {
  for (size_t h = hash_ptr(n, L->cap);; h = (h + 1) & (L->cap - 1)) {
    if (!L->keys[h])
      return -1;
    if (L->keys[h] == n)
      return L->vals[h];
  }
}

static int32_t find(layout *L, int32_t i) {
  while (L->parent[i] != i)
    i = L->parent[i] = L->parent[L->parent[i]];
  return i;
}

static void unite(layout *L, int32_t a, int32_t b) {
  a = find(L, a);
  b = find(L, b);
  if (a != b)
    L->parent[a] = b;
}

/* The inputs of node i that carry its layout (those that join regions). */
static int layout_input(const layout *L, int32_t i, int32_t k) {
  if (L->kind[i] == K_ELEMENTWISE)
    return rank_of(wfx_host->node_input(L->node[i], k)) == 4;
  return k == 0;
}

static int converted(const layout *L, int32_t i) {
  return i >= 0 && L->kind[i] != K_NONE &&
         (L->anchored[find((layout *)L, i)] & 1);
}

/* ---- building the NHWC nodes -------------------------------------------- */

static wf_output perm_const(layout *L, const int *perm, const char *device,
                            wf_status *st) {
  wf_shape s = {.rank = 1, .dims = {4}};
  wf_output o = {NULL, 0};
  wf_tensor *t = wfx_host->tensor_new(WF_INT32, &s, st);
  if (!t)
    return o;
  for (int i = 0; i < 4; i++)
    ((int32_t *)wfx_data(t))[i] = perm[i];
  wf_attr_item a[2] = {
      WFX_ITEM_DTYPE("dtype", WF_INT32),
      {"value", {.type = WF_ATTR_TENSOR, .count = 1, .u.tensor = t}}};
  o.node = wfx_host->pass_add_node(L->ctx, "Const", NULL, device, NULL, 0, a,
                                   2, st);
  wfx_host->tensor_release(t);
  return o;
}

static wf_output transpose(layout *L, wf_output x, const int *perm,
                           const char *device, wf_status *st) {
  wf_output p = perm_const(L, perm, device, st), o = {NULL, 0};
  int32_t dt;
  wf_shape s;
  if (!p.node || wfx_host->node_output_info(x.node, x.index, &dt, &s))
    return o;
  wf_attr_item a[2] = {WFX_ITEM_DTYPE("T", dt),
                       WFX_ITEM_DTYPE("Tperm", WF_INT32)};
  wf_output in[2] = {x, p};
  o.node = wfx_host->pass_add_node(L->ctx, "Transpose", NULL, device, in, 2,
                                   a, 2, st);
  return o;
}

/* Input k of converted node i in NHWC: the made node of a converted
 * producer, else a (shared) Transpose of the value. */
static wf_output nhwc_input(layout *L, int32_t i, int32_t k, wf_status *st) {
  wf_output x = wfx_host->node_input(L->node[i], k);
  int32_t j = index_of(L, x.node);
  if (converted(L, j) && x.index == 0)
    return (wf_output){L->made[j], 0};
  for (int32_t m = 0; m < L->nin; m++)
    if (L->in_src[m].node == x.node && L->in_src[m].index == x.index)
      return L->in_nhwc[m];
  wf_output t = transpose(L, x, to_nhwc, wfx_host->node_device(L->node[i]),
                          st);
  if (!t.node)
    return t;
  if (L->nin == L->in_cap) {
    int32_t cap = L->in_cap ? 2 * L->in_cap : 16;
    wf_output *a = wfx_host->alloc((size_t)cap * 2 * sizeof *a, 0);
    if (!a) {
      wfx_fail(st, WF_RESOURCE_EXHAUSTED, "onnx_nhwc: out of memory");
      return (wf_output){NULL, 0};
    }
    if (L->nin) {
      memcpy(a, L->in_src, (size_t)L->nin * sizeof *a);
      memcpy(a + cap, L->in_nhwc, (size_t)L->nin * sizeof *a);
      wfx_host->free(L->in_src);
    }
    L->in_src = a;
    L->in_nhwc = a + cap;
    L->in_cap = cap;
  }
  L->in_src[L->nin] = x;
  L->in_nhwc[L->nin++] = t;
  return t;
}

/* Pad's paddings with the rows in NHWC order. */
static wf_output nhwc_paddings(layout *L, int32_t i, wf_status *st) {
  const wf_tensor *p = const_paddings(L->node[i]);
  int32_t dt = wfx_host->tensor_dtype(p);
  wf_shape s = {.rank = 2, .dims = {4, 2}};
  wf_output o = {NULL, 0};
  wf_tensor *t = wfx_host->tensor_new(dt, &s, st);
  if (!t)
    return o;
  size_t es = dt == WF_INT32 ? 4 : 8;
  for (int r = 0; r < 4; r++)
    memcpy((char *)wfx_data(t) + (size_t)r * 2 * es,
           (const char *)wfx_data(p) + (size_t)to_nhwc[r] * 2 * es, 2 * es);
  wf_attr_item a[2] = {
      WFX_ITEM_DTYPE("dtype", dt),
      {"value", {.type = WF_ATTR_TENSOR, .count = 1, .u.tensor = t}}};
  o.node = wfx_host->pass_add_node(L->ctx, "Const", NULL,
                                   wfx_host->node_device(L->node[i]), NULL, 0,
                                   a, 2, st);
  wfx_host->tensor_release(t);
  return o;
}

/* The NHWC twin of converted node i (its converted producers made). */
static int make(layout *L, int32_t i, wf_status *st) {
  const wf_node *n = L->node[i];
  int32_t nin = wfx_host->node_num_inputs(n), na = 0;
  wf_output in[8];
  wf_attr_item a[16];
  int64_t lists[4][8];
  int nl = 0;

  if (nin > 8)
    return wfx_fail(st, WF_INTERNAL, "onnx_nhwc: %d inputs", (int)nin);
  for (int32_t k = 0; k < nin; k++) {
    if (L->kind[i] == K_PAD && k == 1)
      in[k] = nhwc_paddings(L, i, st);
    else if (layout_input(L, i, k))
      in[k] = nhwc_input(L, i, k, st);
    else
      in[k] = wfx_host->node_input(n, k);
    if (!in[k].node)
      return wfx_code(st);
  }
  for (size_t k = 0; k < sizeof copied_attrs / sizeof *copied_attrs; k++) {
    wf_attr_value v;
    if (wfx_host->node_attr(n, copied_attrs[k], &v) == 0)
      a[na++] = (wf_attr_item){copied_attrs[k], v};
  }
  if (L->kind[i] == K_ANCHOR) {
    wf_attr_value v;
    a[na++] = (wf_attr_item){
        "data_format", {.type = WF_ATTR_STRING, .count = 1, .u.s = "NHWC"}};
    for (size_t k = 0; k < sizeof permuted_attrs / sizeof *permuted_attrs;
         k++)
      if (wfx_host->node_attr(n, permuted_attrs[k], &v) == 0) {
        if (v.count != 4)
          return wfx_fail(st, WF_INTERNAL, "onnx_nhwc: '%s' has %d entries",
                          permuted_attrs[k], (int)v.count);
        for (int r = 0; r < 4; r++)
          lists[nl][r] = v.u.ints[to_nhwc[r]];
        v.u.ints = lists[nl++];
        a[na++] = (wf_attr_item){permuted_attrs[k], v};
      }
    if (wfx_host->node_attr(n, "explicit_paddings", &v) == 0 && v.count) {
      if (v.count != 8)
        return wfx_fail(st, WF_INTERNAL,
                        "onnx_nhwc: explicit_paddings has %d entries",
                        (int)v.count);
      for (int r = 0; r < 4; r++) {
        lists[nl][2 * r] = v.u.ints[2 * to_nhwc[r]];
        lists[nl][2 * r + 1] = v.u.ints[2 * to_nhwc[r] + 1];
      }
      v.u.ints = lists[nl++];
      a[na++] = (wf_attr_item){"explicit_paddings", v};
    }
  }
  L->made[i] = wfx_host->pass_add_node(L->ctx, wfx_host->node_op(n), NULL,
                                       wfx_host->node_device(n), in, nin, a,
                                       na, st);
  return L->made[i] ? 0 : wfx_code(st);
}

/* 1 when every converted producer of i's layout inputs is made. */
static int ready(const layout *L, int32_t i) {
  for (int32_t k = 0; k < wfx_host->node_num_inputs(L->node[i]); k++) {
    if (!layout_input(L, i, k))
      continue;
    wf_output x = wfx_host->node_input(L->node[i], k);
    int32_t j = index_of(L, x.node);
    if (converted(L, j) && x.index == 0 && !L->made[j])
      return 0;
  }
  return 1;
}

static void layout_free(layout *L) {
  wfx_host->free(L->node);
  wfx_host->free(L->kind);
  wfx_host->free(L->parent);
  wfx_host->free(L->anchored);
  wfx_host->free(L->made);
  wfx_host->free(L->keys);
  wfx_host->free(L->vals);
  wfx_host->free(L->in_src);
}

static int nhwc_run(wf_pass_ctx *ctx, wf_status *st) {
  layout L = {.ctx = ctx, .n = wfx_host->pass_num_nodes(ctx)};
  int32_t n = L.n, todo = 0;
  int rc = 0;

  if (n == 0)
    return 0;
  for (L.cap = 16; L.cap < 2 * (size_t)n; L.cap *= 2)
    ;
  L.node = wfx_host->alloc((size_t)n * sizeof *L.node, 0);
  L.kind = wfx_host->alloc((size_t)n * sizeof *L.kind, 0);
  L.parent = wfx_host->alloc((size_t)n * sizeof *L.parent, 0);
  L.anchored = wfx_host->alloc((size_t)n * sizeof *L.anchored, 0);
  L.made = wfx_host->alloc((size_t)n * sizeof *L.made, 0);
  L.keys = wfx_host->alloc(L.cap * sizeof *L.keys, 0);
  L.vals = wfx_host->alloc(L.cap * sizeof *L.vals, 0);
  if (!L.node || !L.kind || !L.parent || !L.anchored || !L.made || !L.keys ||
      !L.vals) {
    layout_free(&L);
    return wfx_fail(st, WF_RESOURCE_EXHAUSTED, "onnx_nhwc: out of memory");
  }
  memset(L.keys, 0, L.cap * sizeof *L.keys);
  for (int32_t i = 0; i < n; i++) {
    L.node[i] = wfx_host->pass_node(ctx, i);
    L.parent[i] = i;
    L.anchored[i] = 0;
    L.made[i] = NULL;
    size_t h = hash_ptr(L.node[i], L.cap);
    while (L.keys[h])
      h = (h + 1) & (L.cap - 1);
    L.keys[h] = L.node[i];
    L.vals[h] = i;
  }
  for (int32_t i = 0; i < n; i++)
    L.kind[i] = kind_of(ctx, L.node[i]);
  /* regions: data edges between such nodes (output 0 is the layout's) */
  for (int32_t i = 0; i < n; i++) {
    if (L.kind[i] == K_NONE)
      continue;
    for (int32_t k = 0; k < wfx_host->node_num_inputs(L.node[i]); k++) {
      if (!layout_input(&L, i, k))
        continue;
      wf_output x = wfx_host->node_input(L.node[i], k);
      int32_t j = index_of(&L, x.node);
      if (j >= 0 && L.kind[j] != K_NONE && x.index == 0)
        unite(&L, i, j);
    }
  }
  /* a region changes when it saves reorders: each NCHW Conv2D costs two
   * (in and out, inside the kernel), the region a Transpose per edge
   * entering it and per value leaving it */
  for (int32_t i = 0; i < n; i++)
    L.made[i] = NULL;
  {
    int32_t *gain = wfx_host->alloc((size_t)n * sizeof *gain, 0);
    if (!gain) {
      layout_free(&L);
      return wfx_fail(st, WF_RESOURCE_EXHAUSTED, "onnx_nhwc: out of memory");
    }
    memset(gain, 0, (size_t)n * sizeof *gain);
    for (int32_t i = 0; i < n; i++) {
      if (L.kind[i] == K_NONE)
        continue;
      int32_t r = find(&L, i);
      if (L.kind[i] == K_ANCHOR)
        L.anchored[r] = 1;
      if (is(L.node[i], "Conv2D"))
        gain[r] += 2;
      for (int32_t k = 0; k < wfx_host->node_num_inputs(L.node[i]); k++) {
        if (!layout_input(&L, i, k))
          continue;
        wf_output x = wfx_host->node_input(L.node[i], k);
        int32_t j = index_of(&L, x.node);
        if (j < 0 || L.kind[j] == K_NONE || x.index != 0)
          gain[r]--; /* enters */
      }
    }
    for (int32_t j = 0; j < n; j++)
      for (int32_t k = 0; k < wfx_host->node_num_inputs(L.node[j]); k++) {
        wf_output x = wfx_host->node_input(L.node[j], k);
        int32_t i = index_of(&L, x.node);
        if (i >= 0 && L.kind[i] != K_NONE && x.index == 0 &&
            (L.kind[j] == K_NONE || find(&L, j) != find(&L, i)))
          gain[find(&L, i)]--; /* leaves (counted per reader) */
      }
    for (int32_t i = 0; i < n; i++)
      if (L.kind[i] != K_NONE && wfx_host->pass_is_fetched(
                                     ctx, (wf_output){L.node[i], 0}))
        gain[find(&L, i)]--;
    for (int32_t i = 0; i < n; i++)
      if (find(&L, i) == i && gain[i] <= 0)
        L.anchored[i] = 0;
    wfx_host->free(gain);
  }
  for (int32_t i = 0; i < n; i++)
    todo += converted(&L, i);
  /* the NHWC nodes, producers first */
  while (todo > 0 && rc == 0) {
    int progress = 0;
    for (int32_t i = 0; i < n && rc == 0; i++)
      if (converted(&L, i) && !L.made[i] && ready(&L, i)) {
        rc = make(&L, i, st);
        todo--;
        progress = 1;
      }
    if (!progress && rc == 0)
      rc = wfx_fail(st, WF_INTERNAL, "onnx_nhwc: a cycle among %d nodes",
                    (int)todo);
  }
  /* readers outside the region (and fetches) get the value back in NCHW;
   * readers inside are the NCHW nodes left for dead-node removal, which
   * must not hold the NHWC nodes' outputs (the fusion pass fuses only
   * values with one reader) */
  for (int32_t j = 0; j < n; j++) {
    if (converted(&L, j))
      continue;
    for (int32_t k = 0; k < wfx_host->node_num_inputs(L.node[j]); k++) {
      wf_output x = wfx_host->node_input(L.node[j], k);
      int32_t i = index_of(&L, x.node);
      if (converted(&L, i) && x.index == 0)
        L.anchored[i] |= 2; /* read outside: i's own entry, bit 1 */
    }
  }
  for (int32_t i = 0; i < n && rc == 0; i++) {
    if (!converted(&L, i))
      continue;
    wf_output old = {L.node[i], 0};
    if (!(L.anchored[i] & 2) && !wfx_host->pass_is_fetched(ctx, old))
      continue;
    wf_output back = transpose(&L, (wf_output){L.made[i], 0}, to_nchw,
                               wfx_host->node_device(L.node[i]), st);
    if (!back.node || wfx_host->pass_replace(ctx, old, back, st))
      rc = wfx_code(st);
  }
  layout_free(&L);
  return rc;
}

const wf_pass_def ox_nhwc_pass = {
    WF_STRUCT_INIT(wf_pass_def),
    .name = "onnx_nhwc",
    .doc = "regions of NCHW Conv2D, pools, BiasAdd, BatchNorm, Pad and the "
           "elementwise ops between them -> NHWC, with a Transpose where a "
           "value enters or leaves a region",
    .order = 150,
    .run = nhwc_run};
