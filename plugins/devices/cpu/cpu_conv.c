/* plugins/devices/cpu/cpu_conv.c — fast float32 Conv2D, Conv2DBackpropInput
 * and Conv2DBackpropFilter on oneDNN convolutions (forward, backward data,
 * backward weights): NHWC and NCHW, strides, dilations, SAME / VALID /
 * EXPLICIT padding, the nn plugin's attributes and argument orders. Also
 * the window geometry the pool kernels share (cpu_nn.h).
 *
 * Activations stay in the tensor's own layout when oneDNN has an optimised
 * implementation for it (a first layer, one channel in and a block of 8 or
 * 16 out, under another name for the same bytes); otherwise the plan
 * reorders into oneDNN's choice at the kernel's borders. Filters are
 * always handed over in oneDNN's preferred layout, reordered once and kept
 * while the filter's bytes do not change. Output shapes are the ops' shape
 * functions' (cpu_output), so bad inputs get the op's own error; empty
 * tensors are computed here (a sum over nothing is zero); a shape oneDNN
 * refuses is UNIMPLEMENTED (cpu_dnnl_unsupported). */
#include <config.h>

#include "cpu_nn.h"

#include <string.h>

/* ---- window geometry (shared with cpu_pool.c) ------------------------------ */

int cpu_win_init(const nn_window *w, const int64_t in[2],
                     const int64_t k[2], cpu_win *g, wf_status *st) {
  memset(g, 0, sizeof *g);
  for (int d = 0; d < 2; d++) {
    int64_t out, before, eff, after;

    if (nn_window_dim(w, d, in[d], k[d], &out, &before, st))
      return wfx_code(st);
    eff = (k[d] - 1) * w->dilation[d] + 1;
    /* What the window needs after the input to make `out` positions;
     * negative for a tail the windows never reach, which oneDNN takes as
     * no padding (its output size rounds down the same way). */
    after = (out - 1) * w->stride[d] + eff - in[d] - before;
    if (w->padding == NN_PAD_EXPLICIT)
      after = w->explicit_pad[2 * d + 1];
    g->in[d] = in[d];
    g->k[d] = k[d];
    g->out[d] = out;
    g->strides[d] = w->stride[d];
    g->kernel[d] = k[d];
    g->dilates[d] = w->dilation[d] - 1;
    g->pad_l[d] = before;
    g->pad_r[d] = after > 0 ? after : 0;
  }
  return 0;
}

void cpu_nhwc_dims(const wf_shape *s, int nchw, int64_t d[4]) {
  int ix[4];

  nn_nhwc_index(nchw, ix);
  for (int i = 0; i < 4; i++)
    d[i] = s->dims[ix[i]];
}

int cpu_act_md(dnnl_memory_desc_t *md, int nchw, int64_t n, int64_t c,
                   int64_t h, int64_t w, wf_status *st) {
  int64_t dims[4] = {n, c, h, w};

  return cpu_dnnl_md_tag(md, 4, dims, nchw ? dnnl_nchw : dnnl_nhwc, st);
}

void cpu_act_shape(wf_shape *s, int nchw, int64_t n, int64_t h, int64_t w,
                       int64_t c) {
  int64_t d[4] = {n, nchw ? c : h, nchw ? h : w, nchw ? w : c};

  wfx_shape_make(s, 4, d);
}

/* ---- the kernels ----------------------------------------------------------- */

enum { CONV_FWD, CONV_BWD_DATA, CONV_BWD_WEIGHTS };

/* Plan memories, the same for the three kinds: the activation (x or dx),
 * the filter (or its gradient), the output side (y or dy). */
enum { MEM_X = 0, MEM_F = 1, MEM_Y = 2, MEM_B = 3 /* _FusedConv2D's bias */ };

typedef struct conv_state {
  cpu_dnnl_cache cache;
  nn_window win;
  int winograd;         /* the onednn/winograd kernels */
  cpu_wino_cache *wino; /* the loops/winograd kernels' filters, else NULL */
  int shallow;          /* the loops/shallow kernels */
  nn_window pool;       /* _FusedConv2DMaxPool's pooling */
} conv_state;

/* One call's geometry. */
typedef struct conv_job {
  int kind, nchw, winograd;
  int64_t n, c, co;
  cpu_win g;
  const opc_fused *fused; /* _FusedConv2D (forward only), else NULL */
} conv_job;

static void conv_destroy(void *state) {
  conv_state *s = state;

  if (!s)
    return;
  cpu_dnnl_cache_deinit(&s->cache);
  cpu_wino_cache_free(s->wino);
  wfx_host->free(s);
}

/* What a kernel's state may use besides oneDNN's direct kernel (flags):
 * oneDNN's Winograd (the onednn/winograd kernels), the plugin's own
 * Winograd loops (cpu_winograd.c, loops/winograd) or its loops for shallow
 * inputs (cpu_conv_shallow.c, loops/shallow), each for the calls it takes,
 * the direct kernel for the others; CONV_POOL: _FusedConv2DMaxPool's. */
enum {
  CONV_DIRECT = 0,
  CONV_ONEDNN_WINOGRAD = 1,
  CONV_OWN_WINOGRAD = 2,
  CONV_SHALLOW = 4,
  CONV_POOL = 8
};

static int conv_create_as(wf_kernel_ctx *ctx, void **state, int use,
                          wf_status *st) {
  conv_state *s = wfx_host->alloc(sizeof *s, 0);
  nn_attrs a = {.kernel = ctx};

  *state = NULL;
  if (!s)
    return wfx_fail(st, WF_RESOURCE_EXHAUSTED,
                    "out of memory for a kernel's state");
  memset(s, 0, sizeof *s);
  cpu_dnnl_cache_init(&s->cache);
  /* The op's shape function accepted these attributes when the node was
   * added, so this reads them rather than judging them. */
  if (nn_window_parse(&a, NULL, 1, 1, &s->win, st) ||
      ((use & CONV_POOL) && nn_pool_window_parse(&a, &s->pool, st))) {
    conv_destroy(s);
    return wfx_code(st);
  }
  s->winograd = (use & CONV_ONEDNN_WINOGRAD) != 0;
  s->shallow = (use & CONV_SHALLOW) != 0;
  if ((use & CONV_OWN_WINOGRAD) && !(s->wino = cpu_wino_cache_new())) {
    conv_destroy(s);
    return wfx_fail(st, WF_RESOURCE_EXHAUSTED,
                    "out of memory for a kernel's state");
  }
  *state = s;
  return 0;
}

static int conv_create(wf_kernel_ctx *ctx, void **state, wf_status *st) {
  return conv_create_as(ctx, state, CONV_DIRECT, st);
}

static int conv_create_winograd(wf_kernel_ctx *ctx, void **state,
                                wf_status *st) {
  return conv_create_as(ctx, state, CONV_ONEDNN_WINOGRAD, st);
}

static int conv_create_own_winograd(wf_kernel_ctx *ctx, void **state,
                                    wf_status *st) {
  return conv_create_as(ctx, state, CONV_OWN_WINOGRAD, st);
}

/* The layout tag of the job's activations: the user's (any = 0) or
 * oneDNN's choice (any = 1). */
static dnnl_format_tag_t act_tag(const conv_job *j, int any) {
  return any ? dnnl_format_tag_any : (j->nchw ? dnnl_nchw : dnnl_nhwc);
}

/* The forward primitive descriptor of the job with the input in layout
 * xt and the output in yt; filters always in oneDNN's. */
static int conv_fwd_pd_alg(const conv_job *j, dnnl_alg_kind_t alg,
                           dnnl_format_tag_t xt, dnnl_format_tag_t yt,
                           dnnl_prop_kind_t prop, dnnl_primitive_desc_t *pd,
                           wf_status *st) {
  dnnl_memory_desc_t x, f, y, b;
  dnnl_convolution_desc_t desc;
  int64_t fd[4] = {j->co, j->c, j->g.k[0], j->g.k[1]};
  int64_t xd[4] = {j->n, j->c, j->g.in[0], j->g.in[1]};
  int64_t yd[4] = {j->n, j->co, j->g.out[0], j->g.out[1]};
  dnnl_status_t s;

  *pd = NULL;
  if (cpu_dnnl_md_tag(&x, 4, xd, xt, st) ||
      cpu_dnnl_md_tag(&f, 4, fd, dnnl_format_tag_any, st) ||
      cpu_dnnl_md_tag(&y, 4, yd, yt, st) ||
      (j->fused && cpu_dnnl_md(&b, 1, &j->co, NULL, st)))
    return wfx_code(st);
  s = dnnl_dilated_convolution_forward_desc_init(
      &desc, prop, alg, &x, &f, j->fused ? &b : NULL, &y,
      j->g.strides, j->g.dilates, j->g.pad_l, j->g.pad_r);
  if (s != dnnl_success)
    return cpu_dnnl_refuse(s, "convolution setup", st);
  if (j->fused)
    return cpu_dnnl_pd_fused(pd, &desc, j->fused, "fused convolution setup",
                             st);
  return cpu_dnnl_pd(pd, &desc, NULL, "convolution setup", st);
}

static int conv_fwd_pd(const conv_job *j, dnnl_format_tag_t xt,
                       dnnl_format_tag_t yt, dnnl_prop_kind_t prop,
                       dnnl_primitive_desc_t *pd, wf_status *st) {
  return conv_fwd_pd_alg(j, dnnl_convolution_direct, xt, yt, prop, pd, st);
}

/* The shapes the onednn/winograd kernels take: a 3x3 filter moved one
 * element at a time, undilated, between at least 32 channels in and out
 * and 64 on one side. With fewer the reorders at the borders cost more
 * than the algorithm saves (oneDNN 2.6, 2 threads, 14x14, batch 64, ms,
 * direct against Winograd with reorders: 16 -> 32 0.53 / 0.80, 32 -> 32
 * 0.54 / 0.57, 32 -> 64 1.09 / 0.93, 48 -> 48 2.17 / 1.48). */
static int winograd_shape(int64_t kh, int64_t kw, const dnnl_dims_t strides,
                          const dnnl_dims_t dilates, int64_t c, int64_t co) {
  return kh == 3 && kw == 3 && strides[0] == 1 && strides[1] == 1 &&
         dilates[0] == 0 && dilates[1] == 0 && c >= 32 && co >= 32 &&
         c * co >= 32 * 64;
}

/* A forward convolution by oneDNN's Winograd kernel (F(2x2,3x3) or
 * F(4x4,3x3)), in its own blocked layouts, reordered at the borders;
 * NULL (st clear) when the job is not one it takes. Measured with oneDNN
 * 2.6 (AVX-512, 2 threads), NHWC in and out, reorders included, against
 * the direct kernel (brgconv), resnet18's 3x3 layers, ms:
 *                    64ch 56x56   128ch 28x28   256ch 14x14   512ch 7x7
 *     batch 1  direct   0.541        0.503         0.465        0.459
 *              wino     0.371        0.268         0.268        0.394
 *     batch 32 direct  17.24        16.48         15.50        14.58
 *              wino    12.34        10.33          9.30         7.76
 * It rounds differently: its largest difference from the direct kernel
 * on those layers was 2e-6 of the largest output (outputs up to 5 from
 * inputs in [0, 1) and weights in [-0.05, 0.05)). */
static void conv_winograd_pd(const conv_job *j, dnnl_primitive_desc_t *pd,
                             wf_status *st) {
  *pd = NULL;
  if (!j->winograd || j->kind != CONV_FWD ||
      !winograd_shape(j->g.k[0], j->g.k[1], j->g.strides, j->g.dilates, j->c,
                      j->co))
    return;
  if (conv_fwd_pd_alg(j, dnnl_convolution_winograd, dnnl_format_tag_any,
                      dnnl_format_tag_any, dnnl_forward_inference, pd, st)) {
    wfx_host->status_set(st, WF_OK, "%s", "");
    *pd = NULL;
  }
}

/* The primitive descriptor of the job's kind (fwd: its hint, backward
 * kinds only). */
static int conv_pd(const conv_job *j, int any, dnnl_primitive_desc_t *pd,
                   dnnl_primitive_desc_t *fwd, wf_status *st) {
  dnnl_memory_desc_t x, f, y;
  dnnl_convolution_desc_t desc;
  int64_t fd[4] = {j->co, j->c, j->g.k[0], j->g.k[1]};
  int64_t xd[4] = {j->n, j->c, j->g.in[0], j->g.in[1]};
  int64_t yd[4] = {j->n, j->co, j->g.out[0], j->g.out[1]};
  dnnl_format_tag_t act = act_tag(j, any);
  dnnl_status_t s;

  *pd = *fwd = NULL;
  if (j->kind == CONV_FWD)
    return conv_fwd_pd(j, act, act, dnnl_forward_inference, pd, st);
  if (conv_fwd_pd(j, act, act, dnnl_forward_training, fwd, st))
    return wfx_code(st);
  if (cpu_dnnl_md_tag(&x, 4, xd, act, st) ||
      cpu_dnnl_md_tag(&f, 4, fd, dnnl_format_tag_any, st) ||
      cpu_dnnl_md_tag(&y, 4, yd, act, st)) {
    dnnl_primitive_desc_destroy(*fwd);
    *fwd = NULL;
    return wfx_code(st);
  }
  if (j->kind == CONV_BWD_DATA)
    s = dnnl_dilated_convolution_backward_data_desc_init(
        &desc, dnnl_convolution_direct, &x, &f, &y, j->g.strides, j->g.dilates,
        j->g.pad_l, j->g.pad_r);
  else
    s = dnnl_dilated_convolution_backward_weights_desc_init(
        &desc, dnnl_convolution_direct, &x, &f, NULL, &y, j->g.strides,
        j->g.dilates, j->g.pad_l, j->g.pad_r);
  if (s != dnnl_success)
    cpu_dnnl_refuse(s, "convolution backward setup", st);
  else
    cpu_dnnl_pd(pd, &desc, *fwd, "convolution backward setup", st);
  if (*pd)
    return 0;
  dnnl_primitive_desc_destroy(*fwd);
  *fwd = NULL;
  return wfx_code(st);
}

/* A forward convolution over NHWC tensors whose bytes read the same in
 * the layouts of oneDNN's direct "first layer" kernel: one input channel
 * (NHWC is NCHW) and as many output channels as its block (NHWC is
 * nChw16c, or nChw8c). That kernel takes NCHW in and blocked out, with no
 * reorder here. Measured with oneDNN 2.6 (AVX-512, 2 threads), 28x28,
 * 1 -> 16, 3x3, bias and relu, microseconds:
 *                          NHWC (brgconv)   NCHW -> nChw16c (jit)
 *     batch 1                   3.5               2.5
 *     batch 64                  130                58
 * Sets *pd (NULL when oneDNN has no such kernel for the job) and the two
 * tags; st is left clear either way. */
static void conv_first_layer_pd(const conv_job *j, dnnl_primitive_desc_t *pd,
                                dnnl_format_tag_t *xt, dnnl_format_tag_t *yt,
                                wf_status *st) {
  const char *impl = NULL;

  *pd = NULL;
  if (j->kind != CONV_FWD || j->nchw || j->c != 1 ||
      (j->co != 16 && j->co != 8))
    return;
  *xt = dnnl_nchw;
  *yt = j->co == 16 ? dnnl_nChw16c : dnnl_nChw8c;
  if (conv_fwd_pd(j, *xt, *yt, dnnl_forward_inference, pd, st)) {
    wfx_host->status_set(st, WF_OK, "%s", "");
    return;
  }
  /* Only the direct jit kernel is worth it; brgconv does as well on NHWC. */
  if (dnnl_primitive_desc_query(*pd, dnnl_query_impl_info_str, 0, &impl) !=
          dnnl_success ||
      !impl || strncmp(impl, "jit:", 4) != 0) {
    dnnl_primitive_desc_destroy(*pd);
    *pd = NULL;
  }
}


/* float32 lanes of the widest vectors oneDNN uses here: 16 with AVX-512,
 * else 8 (AVX2). */
static int64_t conv_lanes(void) {
#if defined(__x86_64__) || defined(__i386__)
  return __builtin_cpu_supports("avx512f") ? 16 : 8;
#else
  return 8;
#endif
}

static int conv_build(void *arg, cpu_dnnl_plan *p, wf_status *st) {
  const conv_job *j = arg;
  dnnl_primitive_desc_t pd = NULL, fwd = NULL;
  dnnl_memory_desc_t xu, fu, yu, bu;
  int64_t fd[4] = {j->co, j->c, j->g.k[0], j->g.k[1]};
  int ids[4], mems[4] = {MEM_X, MEM_F, MEM_Y, MEM_B};
  int xfl, ffl, yfl, rc = 0;
  dnnl_query_t qx, qf, qy;
  dnnl_format_tag_t xt, yt;

  /* A vector's multiply-adds count one unit (16 with AVX-512, 8 with
   * AVX2): they run from registers, where pooling loads and stores each
   * element. */
  cpu_dnnl_plan_threads(p, j->n * j->co * j->g.out[0] * j->g.out[1] * j->c *
                               j->g.k[0] * j->g.k[1] / conv_lanes());
  /* The tensors' own layouts when oneDNN has a direct kernel for them
   * (NHWC: its brgemm and jit kernels take nhwc); else its own blocked
   * layout, reordered at the borders. Measured with oneDNN 2.6 on the
   * development machine (AVX-512, 1 thread), microseconds:
   *   batch 64, 14x14, 16 -> 32, 3x3   NHWC as is   NCHW as is   blocked
   *     forward                           443 brg     1157 gemm     603 brg
   *     backward data                     439 jit     1502 gemm     501 jit
   *     backward weights                  407 jit     1218 gemm     505 jit
   * (the blocked column includes the reorders); NCHW goes through im2col
   * and gemm unless blocked; a first layer takes conv_first_layer_pd's
   * layouts when it can. */
  conv_winograd_pd(j, &pd, st);
  if (!pd)
    conv_first_layer_pd(j, &pd, &xt, &yt, st);
  else
    xt = yt = j->nchw ? dnnl_nchw : dnnl_nhwc;
  if (pd) {
    int64_t xd[4] = {j->n, j->c, j->g.in[0], j->g.in[1]};
    int64_t yd[4] = {j->n, j->co, j->g.out[0], j->g.out[1]};
    if (cpu_dnnl_md_tag(&xu, 4, xd, xt, st) ||
        cpu_dnnl_md_tag(&yu, 4, yd, yt, st))
      goto fail;
  } else if (cpu_act_md(&xu, j->nchw, j->n, j->c, j->g.in[0],
                            j->g.in[1], st) ||
             cpu_act_md(&yu, j->nchw, j->n, j->co, j->g.out[0],
                            j->g.out[1], st) ||
             conv_pd(j, 0, &pd, &fwd, st)) {
    goto fail;
  }
  if (!cpu_dnnl_pd_is_direct(pd)) {
    dnnl_primitive_desc_t pd2, fwd2;
    if (conv_pd(j, 1, &pd2, &fwd2, st) == 0 && cpu_dnnl_pd_is_direct(pd2)) {
      dnnl_primitive_desc_destroy(pd);
      if (fwd)
        dnnl_primitive_desc_destroy(fwd);
      pd = pd2, fwd = fwd2;
    } else {
      if (pd2)
        dnnl_primitive_desc_destroy(pd2);
      if (fwd2)
        dnnl_primitive_desc_destroy(fwd2);
      wfx_host->status_set(st, WF_OK, "%s", "");
    }
  }
  switch (j->kind) {
  case CONV_FWD:
    ids[0] = DNNL_ARG_SRC, ids[1] = DNNL_ARG_WEIGHTS, ids[2] = DNNL_ARG_DST;
    qx = dnnl_query_src_md, qf = dnnl_query_weights_md, qy = dnnl_query_dst_md;
    xfl = WF_DNNL_IN, ffl = WF_DNNL_WEIGHTS, yfl = WF_DNNL_OUT;
    ids[3] = DNNL_ARG_BIAS;
    break;
  case CONV_BWD_DATA:
    ids[0] = DNNL_ARG_DIFF_SRC, ids[1] = DNNL_ARG_WEIGHTS;
    ids[2] = DNNL_ARG_DIFF_DST;
    qx = dnnl_query_diff_src_md, qf = dnnl_query_weights_md;
    qy = dnnl_query_diff_dst_md;
    xfl = WF_DNNL_OUT, ffl = WF_DNNL_WEIGHTS, yfl = WF_DNNL_IN;
    break;
  default:
    ids[0] = DNNL_ARG_SRC, ids[1] = DNNL_ARG_DIFF_WEIGHTS;
    ids[2] = DNNL_ARG_DIFF_DST;
    qx = dnnl_query_src_md, qf = dnnl_query_diff_weights_md;
    qy = dnnl_query_diff_dst_md;
    xfl = WF_DNNL_IN, ffl = WF_DNNL_OUT, yfl = WF_DNNL_IN;
    break;
  }
  if (cpu_dnnl_md_tag(&fu, 4, fd, dnnl_hwio, st) ||
      cpu_dnnl_plan_mem(p, MEM_X, &xu, dnnl_primitive_desc_query_md(pd, qx, 0),
                        xfl, st) ||
      cpu_dnnl_plan_mem(p, MEM_F, &fu, dnnl_primitive_desc_query_md(pd, qf, 0),
                        ffl, st) ||
      cpu_dnnl_plan_mem(p, MEM_Y, &yu, dnnl_primitive_desc_query_md(pd, qy, 0),
                        yfl, st) ||
      (j->fused &&
       (cpu_dnnl_md(&bu, 1, &j->co, NULL, st) ||
        cpu_dnnl_plan_mem(p, MEM_B, &bu, NULL, WF_DNNL_IN, st))) ||
      cpu_dnnl_plan_step(p, pd, ids, mems, j->fused ? 4 : 3, st))
    goto fail;
  goto done;

fail:
  rc = wfx_code(st);
done:
  if (pd)
    dnnl_primitive_desc_destroy(pd);
  if (fwd)
    dnnl_primitive_desc_destroy(fwd);
  return rc;
}

/* The convolution's names in messages. */
static const char *conv_what(int kind, const opc_fused *fu) {
  return kind == CONV_FWD ? (fu ? "fused convolution" : "convolution")
         : kind == CONV_BWD_DATA ? "convolution backward data"
                                 : "convolution backward weights";
}

/* Runs the convolution of j over the memories data (MEM_*; version: the
 * filter's, or 0) of activations xs and filter fs: the plugin's own loops
 * where the kernel has them and they take the call (forward only), else
 * oneDNN's plan for the shapes. pooled: where the 2x2 pooling of stride
 * 2 of _FusedConv2DMaxPool and _FusedConv2DAndMaxPool goes, taken in the
 * own loops' epilogue (the caller has checked that one of them takes the
 * call), else NULL; with it, data[MEM_Y] may be NULL: the pooling alone
 * is stored. */
static int conv_run(conv_state *s, const conv_job *j, const wf_shape *xs,
                    const wf_shape *fs, void *const data[4],
                    const uint64_t version[4], float *pooled,
                    wf_status *st) {
  const opc_fused *fu = j->fused;
  cpu_key key = {0};
  cpu_dnnl_plan *p;
  int rc;

  if (s->wino && j->kind == CONV_FWD &&
      cpu_wino_shape(j->g.k[0], j->g.k[1], j->g.strides[0], j->g.strides[1],
                     j->g.dilates[0] + 1, j->g.dilates[1] + 1, j->c, j->co,
                     j->nchw))
    return cpu_wino_conv(s->wino, data[MEM_X], data[MEM_F], version[MEM_F],
                         data[MEM_B], fu, data[MEM_Y], pooled, j->n,
                         j->g.in[0], j->g.in[1], j->c, j->co, j->g.out[0],
                         j->g.out[1], j->g.pad_l[0], j->g.pad_l[1], st);
  if (s->shallow && j->kind == CONV_FWD &&
      cpu_shallow_shape(j->g.k[0], j->g.k[1], j->g.strides[0],
                        j->g.strides[1], j->g.dilates[0] + 1,
                        j->g.dilates[1] + 1, j->c, j->co, j->nchw))
    return cpu_shallow_conv(data[MEM_X], data[MEM_F], data[MEM_B], fu,
                            data[MEM_Y], pooled, j->n, j->g.in[0], j->g.in[1],
                            j->c, j->co, j->g.k[0], j->g.k[1], j->g.strides[0],
                            j->g.strides[1], j->g.out[0], j->g.out[1],
                            j->g.pad_l[0], j->g.pad_l[1], st);
  if (s->shallow && j->kind == CONV_BWD_WEIGHTS &&
      cpu_shallow_shape(j->g.k[0], j->g.k[1], j->g.strides[0],
                        j->g.strides[1], j->g.dilates[0] + 1,
                        j->g.dilates[1] + 1, j->c, j->co, j->nchw))
    return cpu_shallow_filter_grad(data[MEM_X], data[MEM_Y], data[MEM_F],
                                   j->n, j->g.in[0], j->g.in[1], j->c, j->co,
                                   j->g.k[0], j->g.k[1], j->g.strides[0],
                                   j->g.strides[1], j->g.out[0], j->g.out[1],
                                   j->g.pad_l[0], j->g.pad_l[1], st);
  if (pooled)
    return wfx_fail(st, WF_INTERNAL,
                    "a pooled convolution reached oneDNN's kernels");
  cpu_key_shape(&key, xs);
  cpu_key_shape(&key, fs);
  if (!(p = cpu_dnnl_cache_get(&s->cache, &key, conv_build, (void *)j, st)))
    return wfx_code(st);
  if (p->fallback) {
    cpu_dnnl_cache_put(&s->cache, p);
    return cpu_dnnl_unsupported(conv_what(j->kind, fu), xs, st);
  }
  rc = cpu_dnnl_plan_run(p, data, version, conv_what(j->kind, fu), st);
  cpu_dnnl_cache_put(&s->cache, p);
  return rc;
}

/* Inputs: FWD (input, filter); BWD_DATA (input_sizes, filter,
 * out_backprop); BWD_WEIGHTS (input, filter_sizes, out_backprop). fu and
 * bias: FWD of _FusedConv2D (its epilogue and bias), else NULL. The output
 * has the shape the op's shape function gives (which also refuses what the
 * op refuses): dx is the input's shape, df the filter's. */
static int conv_compute_fused(wf_kernel_ctx *ctx, conv_state *s, int kind,
                              const opc_fused *fu, const wf_tensor *bias,
                              wf_status *st) {
  const wf_tensor *in[3] = {NULL, NULL, NULL};
  wf_shape xs, fs, os;
  int64_t x4[4], ksz[2];
  void *data[4];
  uint64_t version[4] = {0};
  conv_job j;
  wf_tensor *out;
  int nin = kind == CONV_FWD ? 2 : 3;

  for (int i = 0; i < nin; i++)
    if (wfx_kernel_input(ctx, i, &in[i], NULL, st))
      return wfx_code(st);
  if (!(out = cpu_output(ctx, 0, &os, st)))
    return wfx_code(st);
  if (kind == CONV_BWD_DATA)
    xs = os;
  else
    wfx_host->tensor_shape(in[0], &xs);
  if (kind == CONV_BWD_WEIGHTS)
    fs = os;
  else
    wfx_host->tensor_shape(in[1], &fs);
  memset(&j, 0, sizeof j);
  j.kind = kind;
  j.fused = fu;
  j.nchw = s->win.nchw;
  j.winograd = s->winograd;
  cpu_nhwc_dims(&xs, j.nchw, x4);
  j.n = x4[0], j.c = x4[3], j.co = fs.dims[3];
  ksz[0] = fs.dims[0], ksz[1] = fs.dims[1];
  if (cpu_win_init(&s->win, x4 + 1, ksz, &j.g, st))
    return wfx_code(st);
  if (wfx_count(out) == 0)
    return 0;
  if (j.n == 0 || j.c == 0 || j.co == 0 || j.g.in[0] == 0 ||
      j.g.in[1] == 0 || j.g.out[0] == 0 || j.g.out[1] == 0) {
    /* Every element is a sum over nothing (no input channels, positions
     * or batch): zero, then _FusedConv2D's bias and activation. */
    memset(wfx_data(out), 0, wfx_host->tensor_nbytes(out));
    if (fu) {
      int64_t hw = j.g.out[0] * j.g.out[1];
      opc_fused_apply(WF_FLOAT32, wfx_data(out), wfx_data(bias),
                      j.nchw ? j.n : j.n * hw, j.co, j.nchw ? hw : 1, fu);
    }
    return 0;
  }

  switch (kind) {
  case CONV_FWD:
    data[MEM_X] = wfx_data(in[0]);
    data[MEM_F] = wfx_data(in[1]);
    version[MEM_F] = cpu_version(in[1]);
    data[MEM_Y] = wfx_data(out);
    data[MEM_B] = fu ? wfx_data(bias) : NULL;
    break;
  case CONV_BWD_DATA:
    data[MEM_X] = wfx_data(out);
    data[MEM_F] = wfx_data(in[1]);
    version[MEM_F] = cpu_version(in[1]);
    data[MEM_Y] = wfx_data(in[2]);
    break;
  default:
    data[MEM_X] = wfx_data(in[0]);
    data[MEM_F] = wfx_data(out);
    data[MEM_Y] = wfx_data(in[2]);
    break;
  }
  return conv_run(s, &j, &xs, &fs, data, version, NULL, st);
}

static int conv2d_compute(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  return conv_compute_fused(ctx, state, CONV_FWD, NULL, NULL, st);
}

static int conv_bp_input_compute(wf_kernel_ctx *ctx, void *state,
                                 wf_status *st) {
  return conv_compute_fused(ctx, state, CONV_BWD_DATA, NULL, NULL, st);
}

static int conv_bp_filter_compute(wf_kernel_ctx *ctx, void *state,
                                  wf_status *st) {
  return conv_compute_fused(ctx, state, CONV_BWD_WEIGHTS, NULL, NULL, st);
}

/* _FusedConv2D: the convolution with the bias as the primitive's bias
 * input and the activation as an eltwise post-op. */
static int fused_conv2d_compute(wf_kernel_ctx *ctx, void *state,
                                wf_status *st) {
  const wf_tensor *bias;
  opc_fused f;

  if (opc_fused_kernel_attrs(ctx, &f, st) ||
      wfx_kernel_input(ctx, 2, &bias, NULL, st))
    return wfx_code(st);
  return conv_compute_fused(ctx, state, CONV_FWD, &f, bias, st);
}

const wf_kernel_def cpu_k_conv2d =
    WFX_KERNEL_FOR("cpu", "onednn", "Conv2D", "T", WF_DTYPE_BIT(WF_FLOAT32),
                   conv2d_compute, .priority = WF_CPU_FAST_PRIORITY,
                   .create = conv_create, .destroy = conv_destroy);
const wf_kernel_def cpu_k_conv2d_backprop_input = WFX_KERNEL_FOR(
    "cpu", "onednn", "Conv2DBackpropInput", "T", WF_DTYPE_BIT(WF_FLOAT32),
    conv_bp_input_compute, .priority = WF_CPU_FAST_PRIORITY,
    .create = conv_create, .destroy = conv_destroy);
const wf_kernel_def cpu_k_conv2d_backprop_filter = WFX_KERNEL_FOR(
    "cpu", "onednn", "Conv2DBackpropFilter", "T", WF_DTYPE_BIT(WF_FLOAT32),
    conv_bp_filter_compute, .priority = WF_CPU_FAST_PRIORITY,
    .create = conv_create, .destroy = conv_destroy);
/* The onednn/winograd kernels take the nodes whose window Winograd's
 * algorithm serves (conv_winograd_pd) and are chosen before the direct
 * ones; `[kernels] deny = winograd` leaves every convolution to those. A
 * filter whose shape is not known while placing is taken, and a call
 * Winograd does not serve runs the direct kernel: every call on a CPU
 * without AVX-512, for which oneDNN 2.6 has no Winograd kernels. */
static int conv_winograd_supports(const wf_node *node) {
  nn_attrs a = {.node = node};
  nn_window w;
  wf_output f = wfx_host->node_input(node, 1);
  wf_shape fs;
  dnnl_dims_t strides, dilates;

  /* the op's shape function judged the attributes: one that reads wrong
   * here is left to the direct kernel */
  if (nn_window_parse(&a, NULL, 1, 1, &w, NULL))
    return 0;
  strides[0] = w.stride[0], strides[1] = w.stride[1];
  dilates[0] = w.dilation[0] - 1, dilates[1] = w.dilation[1] - 1;
  if (!f.node || wfx_host->node_output_info(f.node, f.index, NULL, &fs) ||
      fs.rank != 4 || fs.dims[0] < 0 || fs.dims[1] < 0 || fs.dims[2] < 0 ||
      fs.dims[3] < 0)
    return winograd_shape(3, 3, strides, dilates, 64, 64);
  return winograd_shape(fs.dims[0], fs.dims[1], strides, dilates, fs.dims[2],
                        fs.dims[3]);
}

const wf_kernel_def cpu_k_conv2d_winograd = WFX_KERNEL_FOR(
    "cpu", "onednn/winograd", "Conv2D", "T", WF_DTYPE_BIT(WF_FLOAT32),
    conv2d_compute, .priority = WF_CPU_FAST_PRIORITY + 1,
    .create = conv_create_winograd, .destroy = conv_destroy,
    .supports = conv_winograd_supports);
const wf_kernel_def cpu_k_fused_conv2d_winograd = WFX_KERNEL_FOR(
    "cpu", "onednn/winograd", "_FusedConv2D", "T", WF_DTYPE_BIT(WF_FLOAT32),
    fused_conv2d_compute, .priority = WF_CPU_FAST_PRIORITY + 1,
    .create = conv_create_winograd, .destroy = conv_destroy,
    .supports = conv_winograd_supports);
typedef int own_shape_fn(int64_t kh, int64_t kw, int64_t sh, int64_t sw,
                         int64_t dh, int64_t dw, int64_t c, int64_t k,
                         int nchw);

/* Whether the plugin's own loops whose shapes shape names take node: a
 * filter of known shape, on a CPU with AVX2 and FMA; with avx512 0, only
 * one without AVX-512. Measured on an Intel Xeon with AVX-512, 2 cores,
 * the cnn at batch 64, ms a node (bench/train --profile, bench/cnn_infer;
 * the loops' AVX2 code, then their sixteen-lane forms):
 *                           oneDNN   AVX2 loops   AVX-512 loops
 *   first layer              0.100     0.192                  (training)
 *   its filter gradient      0.089     0.135
 *   second layer             0.378     0.442         0.312    (training)
 *   first layer, pooled      0.242     0.159         0.134    (inference)
 *   second layer, pooled     0.483     0.385         0.306
 *   first layer, pooled
 *     and stored             0.23                    0.126    (training)
 * oneDNN's pooled calls are its convolution and cpu_pool.c's pooling of
 * its output, which goes through memory; the loops pool in registers (or
 * from the two rows just stored). So the Winograd loops serve every such
 * CPU, the shallow ones AVX-512 CPUs only for _FusedConv2DMaxPool and
 * _FusedConv2DAndMaxPool. */
static int own_loops_support(const wf_node *node, own_shape_fn *shape,
                             int avx512) {
  nn_attrs a = {.node = node};
  nn_window w;
  wf_output f = wfx_host->node_input(node, 1);
  wf_shape fs;

  if (!(avx512 ? cpu_avx2_fma() : cpu_avx2_fma_only()) ||
      nn_window_parse(&a, NULL, 1, 1, &w, NULL) || !f.node ||
      wfx_host->node_output_info(f.node, f.index, NULL, &fs) || fs.rank != 4)
    return 0;
  return shape(fs.dims[0], fs.dims[1], w.stride[0], w.stride[1],
               w.dilation[0], w.dilation[1], fs.dims[2], fs.dims[3], w.nchw);
}

/* The loops/winograd kernels (cpu_winograd.c) take the nodes of the
 * shapes cpu_wino_shape names, on CPUs with AVX2 and FMA, before oneDNN's
 * kernels; a filter whose shape is not known while placing
 * is left to those. `[kernels] deny = winograd` leaves every convolution
 * to the direct kernels. A call they do not take runs the direct kernel. */
static int conv_own_winograd_supports(const wf_node *node) {
  return own_loops_support(node, cpu_wino_shape, 1);
}

const wf_kernel_def cpu_k_conv2d_own_winograd = WFX_KERNEL_FOR(
    "cpu", "loops/winograd", "Conv2D", "T", WF_DTYPE_BIT(WF_FLOAT32),
    conv2d_compute, .priority = WF_CPU_FAST_PRIORITY + 2,
    .create = conv_create_own_winograd, .destroy = conv_destroy,
    .supports = conv_own_winograd_supports);
const wf_kernel_def cpu_k_fused_conv2d_own_winograd = WFX_KERNEL_FOR(
    "cpu", "loops/winograd", "_FusedConv2D", "T", WF_DTYPE_BIT(WF_FLOAT32),
    fused_conv2d_compute, .priority = WF_CPU_FAST_PRIORITY + 2,
    .create = conv_create_own_winograd, .destroy = conv_destroy,
    .supports = conv_own_winograd_supports);
/* The loops/shallow kernels (cpu_conv_shallow.c) take the nodes of the
 * shapes cpu_shallow_shape names (an image's first layer), on CPUs with
 * AVX2 and FMA and no AVX-512, before every other kernel; a filter whose
 * shape is not known while placing is left to those. `[kernels] deny =
 * shallow` leaves them to the others. A call they do not take runs the
 * direct kernel. */
static int conv_shallow_supports(const wf_node *node) {
  return own_loops_support(node, cpu_shallow_shape, 0);
}

static int conv_create_shallow(wf_kernel_ctx *ctx, void **state,
                               wf_status *st) {
  return conv_create_as(ctx, state, CONV_SHALLOW, st);
}

const wf_kernel_def cpu_k_conv2d_shallow = WFX_KERNEL_FOR(
    "cpu", "loops/shallow", "Conv2D", "T", WF_DTYPE_BIT(WF_FLOAT32),
    conv2d_compute, .priority = WF_CPU_FAST_PRIORITY + 3,
    .create = conv_create_shallow, .destroy = conv_destroy,
    .supports = conv_shallow_supports);
const wf_kernel_def cpu_k_fused_conv2d_shallow = WFX_KERNEL_FOR(
    "cpu", "loops/shallow", "_FusedConv2D", "T", WF_DTYPE_BIT(WF_FLOAT32),
    fused_conv2d_compute, .priority = WF_CPU_FAST_PRIORITY + 3,
    .create = conv_create_shallow, .destroy = conv_destroy,
    .supports = conv_shallow_supports);
/* Conv2DBackpropFilter's: the filter is the node's output, its input
 * (operand 0) gives the channels. Taken on the same CPUs when the shape
 * the node's output has while placing is one cpu_shallow_shape names, or
 * is not known (filter_sizes computed) and the input's channels (1 to 4),
 * layout and dilation are ones it takes; a call these loops do not take
 * runs oneDNN's direct kernel. */
static int conv_shallow_filter_supports(const wf_node *node) {
  nn_attrs a = {.node = node};
  nn_window w;
  wf_output x = wfx_host->node_input(node, 0);
  wf_shape xs, fs;
  int64_t c;

  if (!cpu_avx2_fma_only() || nn_window_parse(&a, NULL, 1, 1, &w, NULL) ||
      !x.node || wfx_host->node_output_info(x.node, x.index, NULL, &xs) ||
      xs.rank != 4)
    return 0;
  c = xs.dims[w.nchw ? 1 : 3];
  if (wfx_host->node_output_info(node, 0, NULL, &fs) || fs.rank != 4 ||
      fs.dims[0] < 0 || fs.dims[1] < 0 || fs.dims[2] < 0 || fs.dims[3] < 0)
    return c >= 1 && cpu_shallow_shape(1, 1, w.stride[0], w.stride[1],
                                       w.dilation[0], w.dilation[1], c, 8,
                                       w.nchw);
  return (c < 0 || fs.dims[2] == c) &&
         cpu_shallow_shape(fs.dims[0], fs.dims[1], w.stride[0], w.stride[1],
                           w.dilation[0], w.dilation[1], fs.dims[2],
                           fs.dims[3], w.nchw);
}

const wf_kernel_def cpu_k_conv2d_backprop_filter_shallow = WFX_KERNEL_FOR(
    "cpu", "loops/shallow", "Conv2DBackpropFilter", "T",
    WF_DTYPE_BIT(WF_FLOAT32), conv_bp_filter_compute,
    .priority = WF_CPU_FAST_PRIORITY + 3, .create = conv_create_shallow,
    .destroy = conv_destroy, .supports = conv_shallow_filter_supports);
/* _FusedConv2DMaxPool (keep 0) and _FusedConv2DAndMaxPool (keep 1) over
 * NHWC float32. With a 2x2 pooling of stride 2 and no padding after ReLU
 * (or no activation), the convolutions the plugin's own loops take pool
 * in their epilogue, storing only the pooling (keep 0) or both; every
 * other call convolves into a buffer (keep 0) or the first output (own
 * loops or oneDNN's) and pools it with cpu_pool.c's loops. */
static int conv_pool_run(wf_kernel_ctx *ctx, conv_state *s, int keep,
                         wf_status *st) {
  const wf_tensor *x, *f, *bias;
  opc_fused fu;
  wf_shape xs, fs;
  int64_t x4[4], ksz[2], count;
  void *data[4];
  uint64_t version[4] = {0};
  conv_job j;
  cpu_win pg;
  wf_tensor *out, *conv_out = NULL;
  float *buf;
  int rc = 0;

  if (opc_fused_kernel_attrs(ctx, &fu, st) ||
      wfx_kernel_input(ctx, 0, &x, &xs, st) ||
      wfx_kernel_input(ctx, 1, &f, &fs, st) ||
      wfx_kernel_input(ctx, 2, &bias, NULL, st) ||
      (keep && !(conv_out = cpu_output(ctx, 0, NULL, st))) ||
      !(out = cpu_output(ctx, keep, NULL, st)))
    return wfx_code(st);
  memset(&j, 0, sizeof j);
  j.kind = CONV_FWD;
  j.fused = &fu;
  cpu_nhwc_dims(&xs, 0, x4);
  j.n = x4[0], j.c = x4[3], j.co = fs.dims[3];
  ksz[0] = fs.dims[0], ksz[1] = fs.dims[1];
  if (cpu_win_init(&s->win, x4 + 1, ksz, &j.g, st) ||
      cpu_win_init(&s->pool, j.g.out, s->pool.ksize, &pg, st))
    return wfx_code(st);
  count = j.n * j.g.out[0] * j.g.out[1] * j.co;
  if (keep ? count == 0 : wfx_count(out) == 0)
    return 0;
  data[MEM_X] = wfx_data(x);
  data[MEM_F] = wfx_data(f);
  version[MEM_F] = cpu_version(f);
  data[MEM_B] = wfx_data(bias);
  data[MEM_Y] = keep ? wfx_data(conv_out) : NULL;
  if (pg.k[0] == 2 && pg.k[1] == 2 && pg.strides[0] == 2 &&
      pg.strides[1] == 2 && pg.pad_l[0] == 0 && pg.pad_l[1] == 0 &&
      pg.pad_r[0] == 0 && pg.pad_r[1] == 0 &&
      (fu.act == OPC_ACT_NONE || fu.act == OPC_ACT_RELU) &&
      ((s->wino &&
        cpu_wino_shape(j.g.k[0], j.g.k[1], j.g.strides[0], j.g.strides[1],
                       j.g.dilates[0] + 1, j.g.dilates[1] + 1, j.c, j.co,
                       0)) ||
       (s->shallow &&
        cpu_shallow_shape(j.g.k[0], j.g.k[1], j.g.strides[0], j.g.strides[1],
                          j.g.dilates[0] + 1, j.g.dilates[1] + 1, j.c, j.co,
                          0))))
    /* (an empty pooling: the convolution alone) */
    return conv_run(s, &j, &xs, &fs, data, version,
                    wfx_count(out) ? wfx_data(out) : NULL, st);
  /* (a pooling of no padding may leave the convolution's last rows or
   * columns unread; they are computed all the same) */
  buf = keep ? wfx_data(conv_out)
             : wfx_host->alloc((size_t)count * sizeof(float), 64);
  if (!buf)
    return wfx_fail(st, WF_RESOURCE_EXHAUSTED,
                    "out of memory for the convolution's %lld elements "
                    "before pooling",
                    (long long)count);
  data[MEM_Y] = buf;
  if (j.n == 0 || j.c == 0 || j.co == 0 || j.g.in[0] == 0 ||
      j.g.in[1] == 0) {
    /* a sum over nothing: zero, then the bias and activation */
    memset(buf, 0, (size_t)count * sizeof(float));
    opc_fused_apply(WF_FLOAT32, buf, wfx_data(bias),
                    j.n * j.g.out[0] * j.g.out[1], j.co, 1, &fu);
  } else {
    rc = conv_run(s, &j, &xs, &fs, data, version, NULL, st);
  }
  if (rc == 0 && wfx_count(out) > 0)
    cpu_max_pool_nhwc(buf, wfx_data(out), j.n, j.co, &pg);
  if (!keep)
    wfx_host->free(buf);
  return rc;
}

static int fused_conv2d_pool_compute(wf_kernel_ctx *ctx, void *state,
                                     wf_status *st) {
  return conv_pool_run(ctx, state, 0, st);
}

static int fused_conv2d_and_pool_compute(wf_kernel_ctx *ctx, void *state,
                                         wf_status *st) {
  return conv_pool_run(ctx, state, 1, st);
}

/* _FusedConv2DMaxPool's and _FusedConv2DAndMaxPool's kernels, one per
 * convolution path, so that
 * `[kernels] deny = shallow` or `winograd` reaches the fused nodes as it
 * does Conv2D's: loops/shallow and loops/winograd take the NHWC nodes
 * whose convolution their loops take (as for Conv2D), onednn the other
 * NHWC nodes; an NCHW node (which the fusion pass never makes) goes to the
 * reference. */
static int conv_create_pool(wf_kernel_ctx *ctx, void **state,
                            wf_status *st) {
  return conv_create_as(ctx, state, CONV_POOL, st);
}

static int conv_create_pool_shallow(wf_kernel_ctx *ctx, void **state,
                                    wf_status *st) {
  return conv_create_as(ctx, state, CONV_POOL | CONV_SHALLOW, st);
}

static int conv_create_pool_own_winograd(wf_kernel_ctx *ctx, void **state,
                                         wf_status *st) {
  return conv_create_as(ctx, state, CONV_POOL | CONV_OWN_WINOGRAD, st);
}

static int conv_pool_supports(const wf_node *node) {
  nn_attrs a = {.node = node};
  nn_window w;

  return nn_window_parse(&a, NULL, 1, 1, &w, NULL) == 0 && !w.nchw;
}

static int conv_pool_shallow_supports(const wf_node *node) {
  return conv_pool_supports(node) &&
         own_loops_support(node, cpu_shallow_shape, 1);
}

static int conv_pool_own_winograd_supports(const wf_node *node) {
  return conv_pool_supports(node) && own_loops_support(node, cpu_wino_shape, 1);
}

const wf_kernel_def cpu_k_fused_conv2d_max_pool = WFX_KERNEL_FOR(
    "cpu", "onednn", "_FusedConv2DMaxPool", "T", WF_DTYPE_BIT(WF_FLOAT32),
    fused_conv2d_pool_compute, .priority = WF_CPU_FAST_PRIORITY,
    .create = conv_create_pool, .destroy = conv_destroy,
    .supports = conv_pool_supports);
const wf_kernel_def cpu_k_fused_conv2d_max_pool_own_winograd = WFX_KERNEL_FOR(
    "cpu", "loops/winograd", "_FusedConv2DMaxPool", "T",
    WF_DTYPE_BIT(WF_FLOAT32), fused_conv2d_pool_compute,
    .priority = WF_CPU_FAST_PRIORITY + 2,
    .create = conv_create_pool_own_winograd, .destroy = conv_destroy,
    .supports = conv_pool_own_winograd_supports);
const wf_kernel_def cpu_k_fused_conv2d_max_pool_shallow = WFX_KERNEL_FOR(
    "cpu", "loops/shallow", "_FusedConv2DMaxPool", "T",
    WF_DTYPE_BIT(WF_FLOAT32), fused_conv2d_pool_compute,
    .priority = WF_CPU_FAST_PRIORITY + 3,
    .create = conv_create_pool_shallow, .destroy = conv_destroy,
    .supports = conv_pool_shallow_supports);
const wf_kernel_def cpu_k_fused_conv2d_and_max_pool = WFX_KERNEL_FOR(
    "cpu", "onednn", "_FusedConv2DAndMaxPool", "T", WF_DTYPE_BIT(WF_FLOAT32),
    fused_conv2d_and_pool_compute, .priority = WF_CPU_FAST_PRIORITY,
    .create = conv_create_pool, .destroy = conv_destroy,
    .supports = conv_pool_supports);
const wf_kernel_def cpu_k_fused_conv2d_and_max_pool_own_winograd =
    WFX_KERNEL_FOR("cpu", "loops/winograd", "_FusedConv2DAndMaxPool", "T",
                   WF_DTYPE_BIT(WF_FLOAT32), fused_conv2d_and_pool_compute,
                   .priority = WF_CPU_FAST_PRIORITY + 2,
                   .create = conv_create_pool_own_winograd,
                   .destroy = conv_destroy,
                   .supports = conv_pool_own_winograd_supports);
const wf_kernel_def cpu_k_fused_conv2d_and_max_pool_shallow = WFX_KERNEL_FOR(
    "cpu", "loops/shallow", "_FusedConv2DAndMaxPool", "T",
    WF_DTYPE_BIT(WF_FLOAT32), fused_conv2d_and_pool_compute,
    .priority = WF_CPU_FAST_PRIORITY + 3,
    .create = conv_create_pool_shallow, .destroy = conv_destroy,
    .supports = conv_pool_shallow_supports);
const wf_kernel_def cpu_k_fused_conv2d = WFX_KERNEL_FOR(
    "cpu", "onednn", "_FusedConv2D", "T", WF_DTYPE_BIT(WF_FLOAT32),
    fused_conv2d_compute, .priority = WF_CPU_FAST_PRIORITY,
    .create = conv_create, .destroy = conv_destroy);
