/* plugins/ops/nn/fusion.c — the graph pass "fusion" (order 200, after the
 * arithmetic pass of ops-math): a product, its BiasAdd and the activation
 * after it become one node. MatMul -> BiasAdd -> act becomes _FusedMatMul
 * (ops-math) and Conv2D -> BiasAdd -> act becomes _FusedConv2D (this
 * plugin), with the steps named in the fused node's fused_ops list. Passes
 * run on a signature's working graph, which is executed and never
 * differentiated, so the fused ops need no gradient.
 *
 * A chain is fused only when every value it hides is read by the next step
 * alone (one reader, not fetched), no node of it has control consumers
 * (they would wait for a node that no longer runs), its device requests
 * agree, and the fused node would be placed on the device every node of
 * the chain would be placed on (pass_kernel_device: a kernel for the fused
 * op with its dtype that the config allows, there; a fused op only the CPU
 * has is not made in a graph a GPU runs). A product and its BiasAdd alone fuse
 * only where no activation reads their sum (a residual block's
 * convolution, which an Add reads; a transformer's projections; logits):
 * where an activation's gradient reads its input (Gelu's and LeakyRelu's,
 * in training graphs), fusing just the product with its bias measured
 * 1.45x slower for the cnn step (oneDNN's separate convolution and bias
 * loop beat the fused primitive), while whole chains fuse: inference
 * ones, and training ones whose activation's gradient reads its output
 * (Relu's, Sigmoid's, Tanh's, Elu's). Then a MaxPool (SAME or VALID,
 * NHWC) that alone reads a _FusedConv2D joins it as _FusedConv2DMaxPool:
 * in inference, where no gradient reads the activation, the convolution's
 * output need never be stored whole. Where something else reads that
 * output too (in training, the activation's gradient), the two become one
 * _FusedConv2DAndMaxPool giving both, so that the pooling is taken while
 * the convolution's output is in registers or the cache instead of read
 * back from memory (the CPU's own loops: the cnn's training step's two
 * convolutions and poolings 0.57 -> 0.44 ms, bench/train --profile; 32.3k
 * -> 35.5k samples/s, medians of six alternated runs). In training
 * graphs, a MaxPoolGrad
 * whose only reader is the ReluGrad of the ReLU output it pools (both
 * read that r) becomes one _FusedMaxPoolGradReluGrad: the ReLU's
 * gradient is decided at each window's pick, and the gradient is written
 * once instead of written, read and written again (the cnn's two pairs:
 * 1.16 -> 0.87 ms a step, medians of four alternated profiled runs). The
 * replaced nodes are left for dead-node removal. Switched off with
 * [passes] fusion = false. */
#include <config.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nn.h"

/* The product's attributes the fused ops take over. */
static const char *const matmul_attrs[] = {"transpose_a", "transpose_b",
                                           NULL};
static const char *const conv2d_attrs[] = {
    "strides", "padding", "explicit_paddings", "dilations", "data_format",
    NULL};

static int is_op(const wf_node *n, const char *op) {
  return strcmp(wfx_host->node_op(n), op) == 0;
}

static const char *string_attr(const wf_node *n, const char *name) {
  wf_attr_value v;
  if (wfx_host->node_attr(n, name, &v) || v.type != WF_ATTR_STRING)
    return "";
  return v.u.s;
}

/* Whether the activation node fuses: Gelu only in its exact form (the
 * fused kernels have no tanh approximation). */
static int fusable_activation(const wf_node *act) {
  wf_attr_value v;
  if (wfx_host->node_num_inputs(act) != 1)
    return 0;
  if (is_op(act, "Gelu") && !wfx_host->node_attr(act, "approximate", &v) &&
      v.u.b)
    return 0;
  return 1;
}

/* The device request the chain's nodes agree on ("" for none), or NULL
 * when two of them ask for different devices. */
static const char *common_request(wf_node *const *chain, int len) {
  const char *request = "";
  for (int k = 0; k < len; k++) {
    const char *d = wfx_host->node_device(chain[k]);
    if (!d[0])
      continue;
    if (request[0] && strcmp(request, d) != 0)
      return NULL;
    request = d;
  }
  return request;
}

/* Whether a node of op fused asking for request, dtype as its type, would
 * be placed where each of the len nodes of chain would be. */
static int stays_on_device(wf_pass_ctx *ctx, wf_node *const *chain, int len,
                           const char *fused, const char *request,
                           int32_t dtype) {
  int32_t d = wfx_host->pass_kernel_device(ctx, fused, request, dtype);

  if (d < 0)
    return 0;
  for (int k = 0; k < len; k++) {
    int32_t t;
    if (wfx_host->node_output_info(chain[k], 0, &t, NULL) ||
        wfx_host->pass_kernel_device(ctx, wfx_host->node_op(chain[k]),
                                     wfx_host->node_device(chain[k]),
                                     t) != d)
      return 0;
  }
  return 1;
}

/* Adds the node that replaces the len nodes of chain: op fused on request
 * (named after the last node) with the nin inputs in and attributes
 * attrs, taking over every control input of the chain. NULL with st set
 * when refused. */
static wf_node *add_fused(wf_pass_ctx *ctx, wf_node *const *chain, int len,
                          const char *fused, const char *request,
                          const wf_output *in, int nin,
                          const wf_attr_item *attrs, int nattrs,
                          wf_status *st) {
  char name[WFX_WHAT_MAX];
  wf_node *f = wfx_host->pass_add_node(
      ctx, fused,
      wfx_pass_name(ctx, chain[len - 1], "fused", name, sizeof name),
      request[0] ? request : NULL, in, nin, attrs, nattrs, st);

  if (!f)
    return NULL;
  for (int k = 0; k < len; k++)
    for (int32_t c = 0; c < wfx_host->node_num_control_inputs(chain[k]);
         c++)
      if (wfx_host->pass_add_control_edge(
              ctx, wfx_host->node_control_input(chain[k], c), f, st))
        return NULL;
  return f;
}

/* Replaces the len nodes of chain, the last one's output 0 read by the
 * rest of the graph, by add_fused's node, which takes over the readers and
 * fetches of that output. */
static int replace_chain(wf_pass_ctx *ctx, wf_node *const *chain, int len,
                         const char *fused, const char *request,
                         const wf_output *in, int nin,
                         const wf_attr_item *attrs, int nattrs,
                         wf_status *st) {
  wf_node *f =
      add_fused(ctx, chain, len, fused, request, in, nin, attrs, nattrs, st);

  if (!f)
    return wfx_code(st);
  return wfx_host->pass_replace(ctx, (wf_output){chain[len - 1], 0},
                                (wf_output){f, 0}, st);
}

/* Replaces the chain (product, BiasAdd, activation) by one node of op
 * fused on request, which takes over the readers and fetches of the
 * activation's output and every control input of the chain. */
static int fuse(wf_pass_ctx *ctx, wf_node *const *chain, const char *fused,
                const char *const *copied, const char *request,
                wf_status *st) {
  wf_node *prod = chain[0], *bias = chain[1], *act = chain[2];
  const char *steps[2] = {"BiasAdd", wfx_host->node_op(act)};
  wf_attr_item attrs[8];
  int nattrs = 0;

  for (int k = 0; copied[k]; k++)
    if (!wfx_host->node_attr(prod, copied[k], &attrs[nattrs].value))
      attrs[nattrs++].name = copied[k];
  attrs[nattrs++] = (wf_attr_item){
      "fused_ops",
      {.type = WF_ATTR_LIST | WF_ATTR_STRING, .count = 2, .u.strings = steps}};
  if (is_op(act, "LeakyRelu") &&
      !wfx_host->node_attr(act, "alpha", &attrs[nattrs].value))
    attrs[nattrs++].name = "alpha";

  wf_output in[3] = {wfx_host->node_input(prod, 0),
                     wfx_host->node_input(prod, 1),
                     wfx_host->node_input(bias, 1)};
  return replace_chain(ctx, chain, 3, fused, request, in, 3, attrs, nattrs,
                       st);
}

/* Fuses the chain ending at the activation act when every condition of the
 * file's header holds. */
static int try_fuse(wf_pass_ctx *ctx, wf_node *act, wf_status *st) {
  static const wf_pattern_node chain_pattern[] = {
      /* the activations the fused kernels apply after the bias */
      {WF_STRUCT_INIT(wf_pattern_node),
       .op = "Relu|Sigmoid|Tanh|Elu|Gelu|LeakyRelu", .parent = -1},
      {WF_STRUCT_INIT(wf_pattern_node), .op = "BiasAdd", .parent = 0,
       .parent_input = 0, .single_use = 1},
      {WF_STRUCT_INIT(wf_pattern_node), .op = "MatMul|Conv2D", .parent = 1,
       .parent_input = 0, .single_use = 1},
  };
  wf_node *m[3], *chain[3];
  int32_t dtype;

  if (!wfx_host->pass_match(ctx, act, chain_pattern, 3, m))
    return 0;
  chain[0] = m[2]; /* the product */
  chain[1] = m[1]; /* its BiasAdd */
  chain[2] = m[0]; /* the activation */
  if (!fusable_activation(act) ||
      wfx_host->node_input(chain[1], 1).node == chain[0])
    return 0;
  for (int k = 0; k < 3; k++)
    if (wfx_host->node_num_control_consumers(chain[k]) > 0)
      return 0;
  int conv = is_op(chain[0], "Conv2D");
  /* BiasAdd adds along the channel axis: for a matrix that is its last
   * dim in either format; for a convolution, the formats must agree. */
  if (conv && strcmp(string_attr(chain[0], "data_format"),
                     string_attr(chain[1], "data_format")) != 0)
    return 0;
  const char *request = common_request(chain, 3);
  const char *fused = conv ? "_FusedConv2D" : "_FusedMatMul";
  if (!request ||
      wfx_host->node_output_info(chain[0], 0, &dtype, NULL) ||
      !stays_on_device(ctx, chain, 3, fused, request, dtype))
    return 0;
  return fuse(ctx, chain, fused, conv ? conv2d_attrs : matmul_attrs, request,
              st);
}

static int is_activation(const wf_node *n) {
  return is_op(n, "Relu") || is_op(n, "Sigmoid") || is_op(n, "Tanh") ||
         is_op(n, "Elu") || is_op(n, "Gelu") || is_op(n, "LeakyRelu");
}

static int ptr_cmp(const void *a, const void *b) {
  uintptr_t x = (uintptr_t) * (wf_node *const *)a,
            y = (uintptr_t) * (wf_node *const *)b;
  return (x > y) - (x < y);
}

/* The nodes an activation reads, sorted (for bsearch); *n of them. NULL
 * with *n = 0 when there are none; -1 when out of memory. */
static int activation_inputs(const wf_pass_ctx *ctx, wf_node ***out,
                             size_t *n) {
  int32_t total = wfx_host->pass_num_nodes(ctx);
  size_t k = 0;
  *out = NULL;
  *n = 0;
  for (int32_t i = 0; i < total; i++)
    k += (size_t)is_activation(wfx_host->pass_node(ctx, i));
  if (k == 0)
    return 0;
  wf_node **a = wfx_host->alloc(k * sizeof *a, 0);
  if (!a)
    return -1;
  k = 0;
  for (int32_t i = 0; i < total; i++) {
    wf_node *r = wfx_host->pass_node(ctx, i);
    if (is_activation(r) && wfx_host->node_num_inputs(r) > 0)
      a[k++] = wfx_host->node_input(r, 0).node;
  }
  qsort(a, k, sizeof *a, ptr_cmp);
  *out = a;
  *n = k;
  return 0;
}

/* Conv2D or MatMul -> BiasAdd whose result goes on to something other
 * than an activation (a residual Add, a transformer's projections, the
 * logits): the bias joins the product. Not where an activation reads the
 * sum: there the whole chain fuses above, or, in training, the
 * activation's gradient also reads the sum and the convolution with its
 * bias measured slower than the two apart. */
static int try_fuse_bias(wf_pass_ctx *ctx, wf_node *bias,
                         wf_node *const *act_in, size_t nact, wf_status *st) {
  static const wf_pattern_node pair_pattern[] = {
      {WF_STRUCT_INIT(wf_pattern_node), .op = "BiasAdd", .parent = -1},
      {WF_STRUCT_INIT(wf_pattern_node), .op = "Conv2D|MatMul", .parent = 0,
       .parent_input = 0, .single_use = 1},
  };
  static const char *const steps[1] = {"BiasAdd"};
  wf_node *m[2];
  int32_t dtype;
  wf_output out = {bias, 0};

  if (!wfx_host->pass_match(ctx, bias, pair_pattern, 2, m))
    return 0;
  int conv = is_op(m[1], "Conv2D");
  const char *fused = conv ? "_FusedConv2D" : "_FusedMatMul";
  if (wfx_host->node_input(bias, 1).node == m[1] ||
      wfx_host->node_num_control_consumers(m[1]) > 0 ||
      wfx_host->node_num_control_consumers(bias) > 0 ||
      (wfx_host->pass_num_consumers(ctx, out) == 0 &&
       !wfx_host->pass_is_fetched(ctx, out)) ||
      (conv && strcmp(string_attr(m[1], "data_format"),
                      string_attr(bias, "data_format")) != 0) ||
      (nact && bsearch(&bias, act_in, nact, sizeof *act_in, ptr_cmp)))
    return 0;
  wf_node *chain[2] = {m[1], bias};
  const char *request = common_request(chain, 2);
  if (!request || wfx_host->node_output_info(m[1], 0, &dtype, NULL) ||
      !stays_on_device(ctx, chain, 2, fused, request, dtype))
    return 0;

  wf_attr_item attrs[8];
  int nattrs = 0;
  const char *const *copied = conv ? conv2d_attrs : matmul_attrs;
  for (int k = 0; copied[k]; k++)
    if (!wfx_host->node_attr(m[1], copied[k], &attrs[nattrs].value))
      attrs[nattrs++].name = copied[k];
  attrs[nattrs++] = (wf_attr_item){
      "fused_ops",
      {.type = WF_ATTR_LIST | WF_ATTR_STRING, .count = 1, .u.strings = steps}};
  wf_output in[3] = {wfx_host->node_input(m[1], 0),
                     wfx_host->node_input(m[1], 1),
                     wfx_host->node_input(bias, 1)};
  return replace_chain(ctx, chain, 2, fused, request, in, 3, attrs, nattrs,
                       st);
}

/* Whether the MaxPool pool after the _FusedConv2D conv joins it: SAME or
 * VALID, both NHWC. */
static int pool_fuses(const wf_node *conv, const wf_node *pool) {
  const char *pad = string_attr(pool, "padding");
  const char *fmt = string_attr(pool, "data_format");

  return (strcmp(pad, "SAME") == 0 || strcmp(pad, "VALID") == 0) &&
         (!fmt[0] || strcmp(fmt, "NHWC") == 0) &&
         strcmp(fmt, string_attr(conv, "data_format")) == 0;
}

/* The attributes of the fused node of conv and pool (at most 12): the
 * convolution's, then the pooling's as pool_ksize, pool_strides and
 * pool_padding. Their count, or -1 when the pooling lacks one. */
static int pool_fused_attrs(const wf_node *conv, const wf_node *pool,
                            wf_attr_item *attrs) {
  static const char *const conv_attrs[] = {
      "strides", "padding", "explicit_paddings", "dilations", "data_format",
      "fused_ops", "alpha", NULL};
  static const char *const pool_attrs[][2] = {{"ksize", "pool_ksize"},
                                              {"strides", "pool_strides"},
                                              {"padding", "pool_padding"}};
  int nattrs = 0;

  for (int k = 0; conv_attrs[k]; k++)
    if (!wfx_host->node_attr(conv, conv_attrs[k], &attrs[nattrs].value))
      attrs[nattrs++].name = conv_attrs[k];
  for (int k = 0; k < 3; k++) {
    if (wfx_host->node_attr(pool, pool_attrs[k][0], &attrs[nattrs].value))
      return -1;
    attrs[nattrs++].name = pool_attrs[k][1];
  }
  return nattrs;
}

/* _FusedConv2D -> MaxPool, both NHWC: where the pooling is the
 * convolution's only reader, one _FusedConv2DMaxPool with the
 * convolution's attributes and the pooling's as pool_ksize, pool_strides
 * and pool_padding; where something else reads the convolution's output
 * too or it is fetched, one _FusedConv2DAndMaxPool with those attributes,
 * whose output 0 takes over the convolution's readers and fetches and
 * output 1 the pooling's. */
static int try_fuse_pool(wf_pass_ctx *ctx, wf_node *pool, wf_status *st) {
  static const wf_pattern_node pool_pattern[] = {
      {WF_STRUCT_INIT(wf_pattern_node), .op = "MaxPool", .parent = -1},
      {WF_STRUCT_INIT(wf_pattern_node), .op = "_FusedConv2D", .parent = 0,
       .parent_input = 0},
  };
  wf_node *m[2];
  wf_attr_item attrs[12];
  int nattrs;
  int32_t dtype;

  if (!wfx_host->pass_match(ctx, pool, pool_pattern, 2, m))
    return 0;
  wf_output conv_out = {m[1], 0};
  int keep = wfx_host->pass_num_consumers(ctx, conv_out) > 1 ||
             wfx_host->pass_is_fetched(ctx, conv_out);
  const char *fused = keep ? "_FusedConv2DAndMaxPool" : "_FusedConv2DMaxPool";
  wf_node *chain[2] = {m[1], pool};
  const char *request = common_request(chain, 2);
  if (wfx_host->node_num_control_consumers(m[1]) > 0 ||
      (keep && wfx_host->node_num_control_consumers(pool) > 0) || !request ||
      !pool_fuses(m[1], pool) ||
      wfx_host->node_output_info(m[1], 0, &dtype, NULL) ||
      !stays_on_device(ctx, chain, 2, fused, request, dtype) ||
      (nattrs = pool_fused_attrs(m[1], pool, attrs)) < 0)
    return 0;
  wf_output in[3] = {wfx_host->node_input(m[1], 0),
                     wfx_host->node_input(m[1], 1),
                     wfx_host->node_input(m[1], 2)};
  if (!keep)
    return replace_chain(ctx, chain, 2, fused, request, in, 3, attrs, nattrs,
                         st);
  wf_node *f = add_fused(ctx, chain, 2, fused, request, in, 3, attrs, nattrs,
                         st);
  if (!f)
    return wfx_code(st);
  /* the pooling first: it reads the convolution, whose readers move next */
  if (wfx_host->pass_replace(ctx, (wf_output){pool, 0}, (wf_output){f, 1},
                             st) ||
      wfx_host->pass_replace(ctx, conv_out, (wf_output){f, 0}, st))
    return wfx_code(st);
  return 0;
}

/* ReluGrad(MaxPoolGrad(r, g), r), the gradient of a ReLU's output r that a
 * MaxPool reads (a training graph's convolution, ReLU and pooling): the
 * MaxPoolGrad the ReluGrad's only reader, both reading the same r. One
 * _FusedMaxPoolGradReluGrad with MaxPoolGrad's inputs and attributes. */
static int try_fuse_pool_grad(wf_pass_ctx *ctx, wf_node *relu_grad,
                              wf_status *st) {
  static const wf_pattern_node grad_pattern[] = {
      {WF_STRUCT_INIT(wf_pattern_node), .op = "ReluGrad", .parent = -1},
      {WF_STRUCT_INIT(wf_pattern_node), .op = "MaxPoolGrad", .parent = 0,
       .parent_input = 0, .single_use = 1},
  };
  static const char *const copied[] = {"ksize",   "strides",
                                       "padding", "explicit_paddings",
                                       "data_format", NULL};
  const char *fused = "_FusedMaxPoolGradReluGrad";
  wf_node *m[2];
  wf_attr_item attrs[8];
  int nattrs = 0;
  int32_t dtype;

  if (!wfx_host->pass_match(ctx, relu_grad, grad_pattern, 2, m))
    return 0;
  wf_output r = wfx_host->node_input(m[1], 0),
            features = wfx_host->node_input(relu_grad, 1);
  wf_node *chain[2] = {m[1], relu_grad};
  const char *request = common_request(chain, 2);
  if (r.node != features.node || r.index != features.index ||
      wfx_host->node_num_control_consumers(m[1]) > 0 || !request ||
      wfx_host->node_output_info(relu_grad, 0, &dtype, NULL) ||
      !stays_on_device(ctx, chain, 2, fused, request, dtype))
    return 0;
  for (int k = 0; copied[k]; k++)
    if (!wfx_host->node_attr(m[1], copied[k], &attrs[nattrs].value))
      attrs[nattrs++].name = copied[k];
  wf_output in[2] = {r, wfx_host->node_input(m[1], 1)};
  return replace_chain(ctx, chain, 2, fused, request, in, 2, attrs, nattrs,
                       st);
}

static int run_fusion(wf_pass_ctx *ctx, wf_status *st) {
  /* Fused nodes get the numbers after n and are never candidates. */
  int32_t n = wfx_host->pass_num_nodes(ctx);
  for (int32_t i = 0; i < n; i++) {
    int rc = try_fuse(ctx, wfx_host->pass_node(ctx, i), st);
    if (rc)
      return rc;
  }
  wf_node **act_in;
  size_t nact;
  if (activation_inputs(ctx, &act_in, &nact))
    return wfx_fail(st, WF_RESOURCE_EXHAUSTED, "fusion: out of memory");
  for (int32_t i = 0; i < n; i++) {
    wf_node *b = wfx_host->pass_node(ctx, i);
    int rc = is_op(b, "BiasAdd") ? try_fuse_bias(ctx, b, act_in, nact, st) : 0;
    if (rc) {
      wfx_host->free(act_in);
      return rc;
    }
  }
  wfx_host->free(act_in);
  /* The poolings are among the first n nodes; what they read may be a
   * _FusedConv2D made above. */
  for (int32_t i = 0; i < n; i++) {
    wf_node *p = wfx_host->pass_node(ctx, i);
    int rc = is_op(p, "MaxPool") ? try_fuse_pool(ctx, p, st) : 0;
    if (rc)
      return rc;
  }
  for (int32_t i = 0; i < n; i++) {
    wf_node *g = wfx_host->pass_node(ctx, i);
    int rc = is_op(g, "ReluGrad") ? try_fuse_pool_grad(ctx, g, st) : 0;
    if (rc)
      return rc;
  }
  return 0;
}

const wf_pass_def nn_fusion_pass = {
    WF_STRUCT_INIT(wf_pass_def),
    .name = "fusion",
    .doc = "MatMul or Conv2D -> BiasAdd -> Relu, Sigmoid, Tanh, Elu, exact "
           "Gelu or LeakyRelu become one _FusedMatMul or _FusedConv2D node; "
           "Conv2D -> BiasAdd read by no activation, one _FusedConv2D; a "
           "_FusedConv2D whose only reader is an NHWC MaxPool, with it, one "
           "_FusedConv2DMaxPool; one it shares with other readers, one "
           "_FusedConv2DAndMaxPool giving both; in training, "
           "ReluGrad(MaxPoolGrad(r, g), r), one _FusedMaxPoolGradReluGrad",
    .order = 200,
    .run = run_fusion};
