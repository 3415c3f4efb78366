/* plugins/devices/cpu/cpu_pool.c — fast float32 MaxPool, AvgPool,
 * MaxPoolGrad and AvgPoolGrad on oneDNN pooling (NHWC and NCHW, SAME,
 * VALID and EXPLICIT): max pooling pads with -inf and average pooling divides by the
 * elements inside the input, as the nn ops define. MaxPoolGrad takes no
 * MaxPool output, so its plan runs the forward pooling again (training
 * mode, keeping oneDNN's record of each window's pick) and then the
 * backward one.
 *
 * Where it differs from the reference kernels: a window holding NaN gives
 * oneDNN's maximum (NaN does not propagate); ties pick the first maximum
 * in the window's row-major order, as the reference does. Output shapes
 * are the ops' shape functions' (cpu_output), so bad inputs get the op's
 * own error; empty tensors are computed here. */
#include <config.h>

#include "cpu_nn.h"

#include <string.h>

enum { POOL_MAX, POOL_AVG, POOL_MAX_GRAD, POOL_AVG_GRAD };

/* Plan memories. */
enum { MEM_X = 0, MEM_Y = 1, MEM_DX = 2, MEM_WS = 3, MEM_YT = 4 };

typedef struct pool_state {
  cpu_dnnl_cache cache;
  nn_window win;
} pool_state;

typedef struct pool_job {
  int kind, nchw;
  int64_t n, c;
  cpu_win g;
} pool_job;

static void pool_destroy(void *state) {
  pool_state *s = state;

  if (!s)
    return;
  cpu_dnnl_cache_deinit(&s->cache);
  wfx_host->free(s);
}

static int pool_create(wf_kernel_ctx *ctx, void **state, wf_status *st) {
  pool_state *s = wfx_host->alloc(sizeof *s, 0);
  nn_attrs a = {.kernel = ctx};

  *state = NULL;
  if (!s)
    return wfx_fail(st, WF_RESOURCE_EXHAUSTED,
                    "out of memory for a kernel's state");
  memset(s, 0, sizeof *s);
  cpu_dnnl_cache_init(&s->cache);
  /* Accepted by the op's shape function when the node was added. */
  if (nn_window_parse(&a, "ksize", 0, 1, &s->win, st)) {
    pool_destroy(s);
    return wfx_code(st);
  }
  *state = s;
  return 0;
}

static dnnl_alg_kind_t pool_alg(int kind) {
  return kind == POOL_MAX || kind == POOL_MAX_GRAD
             ? dnnl_pooling_max
             : dnnl_pooling_avg_exclude_padding;
}

/* The forward descriptor, activations in the user's layout or (any)
 * oneDNN's. */
static int pool_fwd_pd(const pool_job *j, int any, dnnl_prop_kind_t prop,
                       dnnl_primitive_desc_t *pd, wf_status *st) {
  dnnl_memory_desc_t x, y;
  dnnl_pooling_v2_desc_t desc;
  int64_t xd[4] = {j->n, j->c, j->g.in[0], j->g.in[1]};
  int64_t yd[4] = {j->n, j->c, j->g.out[0], j->g.out[1]};
  dnnl_format_tag_t act = any ? dnnl_format_tag_any
                              : (j->nchw ? dnnl_nchw : dnnl_nhwc);
  dnnl_status_t s;

  *pd = NULL;
  if (cpu_dnnl_md_tag(&x, 4, xd, act, st) ||
      cpu_dnnl_md_tag(&y, 4, yd, act, st))
    return wfx_code(st);
  s = dnnl_pooling_v2_forward_desc_init(&desc, prop, pool_alg(j->kind), &x,
                                        &y, j->g.strides, j->g.kernel,
                                        j->g.dilates, j->g.pad_l, j->g.pad_r);
  if (s != dnnl_success)
    return cpu_dnnl_refuse(s, "pooling setup", st);
  return cpu_dnnl_pd(pd, &desc, NULL, "pooling setup", st);
}

static int pool_bwd_pd(const pool_job *j, int any,
                       const_dnnl_primitive_desc_t fwd,
                       dnnl_primitive_desc_t *pd, wf_status *st) {
  dnnl_memory_desc_t x, y;
  dnnl_pooling_v2_desc_t desc;
  int64_t xd[4] = {j->n, j->c, j->g.in[0], j->g.in[1]};
  int64_t yd[4] = {j->n, j->c, j->g.out[0], j->g.out[1]};
  dnnl_format_tag_t act = any ? dnnl_format_tag_any
                              : (j->nchw ? dnnl_nchw : dnnl_nhwc);
  dnnl_status_t s;

  *pd = NULL;
  if (cpu_dnnl_md_tag(&x, 4, xd, act, st) ||
      cpu_dnnl_md_tag(&y, 4, yd, act, st))
    return wfx_code(st);
  s = dnnl_pooling_v2_backward_desc_init(&desc, pool_alg(j->kind), &x, &y,
                                         j->g.strides, j->g.kernel,
                                         j->g.dilates, j->g.pad_l,
                                         j->g.pad_r);
  if (s != dnnl_success)
    return cpu_dnnl_refuse(s, "pooling backward setup", st);
  return cpu_dnnl_pd(pd, &desc, fwd, "pooling backward setup", st);
}

/* The descriptors of the job: fwd alone for the forward kinds; fwd
 * (training) and bwd for the backward ones. */
static int pool_pds(const pool_job *j, int any, dnnl_primitive_desc_t *fwd,
                    dnnl_primitive_desc_t *bwd, wf_status *st) {
  *fwd = *bwd = NULL;
  if (j->kind == POOL_MAX || j->kind == POOL_AVG)
    return pool_fwd_pd(j, any, dnnl_forward_inference, fwd, st);
  if (pool_fwd_pd(j, any, dnnl_forward_training, fwd, st) ||
      pool_bwd_pd(j, any, *fwd, bwd, st)) {
    if (*fwd)
      dnnl_primitive_desc_destroy(*fwd);
    *fwd = NULL;
    return wfx_code(st);
  }
  return 0;
}

static int pool_build(void *arg, cpu_dnnl_plan *p, wf_status *st) {
  const pool_job *j = arg;
  dnnl_primitive_desc_t fwd, bwd, last;
  dnnl_memory_desc_t xu, yu;
  const dnnl_memory_desc_t *ws;
  int rc = 0;

  cpu_dnnl_plan_threads(p, j->n * j->c * j->g.in[0] * j->g.in[1]);
  if (pool_pds(j, 0, &fwd, &bwd, st))
    return wfx_code(st);
  last = bwd ? bwd : fwd;
  if (cpu_dnnl_pd_is_ref(last)) {
    dnnl_primitive_desc_t fwd2, bwd2;
    if (pool_pds(j, 1, &fwd2, &bwd2, st) == 0) {
      dnnl_primitive_desc_destroy(fwd);
      if (bwd)
        dnnl_primitive_desc_destroy(bwd);
      fwd = fwd2, bwd = bwd2;
    } else {
      wfx_host->status_set(st, WF_OK, "%s", "");
    }
  }
  if (cpu_act_md(&xu, j->nchw, j->n, j->c, j->g.in[0], j->g.in[1], st) ||
      cpu_act_md(&yu, j->nchw, j->n, j->c, j->g.out[0], j->g.out[1], st))
    goto fail;
  switch (j->kind) {
  case POOL_MAX:
  case POOL_AVG: {
    static const int ids[2] = {DNNL_ARG_SRC, DNNL_ARG_DST};
    static const int mems[2] = {MEM_X, MEM_Y};
    if (cpu_dnnl_plan_mem(p, MEM_X, &xu,
                          dnnl_primitive_desc_query_md(fwd, dnnl_query_src_md,
                                                       0),
                          WF_DNNL_IN, st) ||
        cpu_dnnl_plan_mem(p, MEM_Y, &yu,
                          dnnl_primitive_desc_query_md(fwd, dnnl_query_dst_md,
                                                       0),
                          WF_DNNL_OUT, st) ||
        cpu_dnnl_plan_step(p, fwd, ids, mems, 2, st))
      goto fail;
    break;
  }
  case POOL_MAX_GRAD: {
    static const int fids[3] = {DNNL_ARG_SRC, DNNL_ARG_DST,
                                DNNL_ARG_WORKSPACE};
    static const int fmems[3] = {MEM_X, MEM_YT, MEM_WS};
    static const int bids[3] = {DNNL_ARG_DIFF_DST, DNNL_ARG_DIFF_SRC,
                                DNNL_ARG_WORKSPACE};
    static const int bmems[3] = {MEM_Y, MEM_DX, MEM_WS};
    ws = dnnl_primitive_desc_query_md(fwd, dnnl_query_workspace_md, 0);
    if (!ws) {
      rc = wfx_fail(st, WF_UNIMPLEMENTED,
                    "oneDNN max pooling keeps no workspace");
      goto done;
    }
    if (cpu_dnnl_plan_mem(p, MEM_X, &xu,
                          dnnl_primitive_desc_query_md(fwd, dnnl_query_src_md,
                                                       0),
                          WF_DNNL_IN, st) ||
        cpu_dnnl_plan_mem(p, MEM_Y, &yu,
                          dnnl_primitive_desc_query_md(
                              bwd, dnnl_query_diff_dst_md, 0),
                          WF_DNNL_IN, st) ||
        cpu_dnnl_plan_mem(p, MEM_DX, &xu,
                          dnnl_primitive_desc_query_md(
                              bwd, dnnl_query_diff_src_md, 0),
                          WF_DNNL_OUT, st) ||
        cpu_dnnl_plan_mem(p, MEM_WS, NULL, ws, 0, st) ||
        cpu_dnnl_plan_mem(p, MEM_YT, NULL,
                          dnnl_primitive_desc_query_md(fwd, dnnl_query_dst_md,
                                                       0),
                          0, st) ||
        cpu_dnnl_plan_step(p, fwd, fids, fmems, 3, st) ||
        cpu_dnnl_plan_step(p, bwd, bids, bmems, 3, st))
      goto fail;
    break;
  }
  default: {
    static const int ids[2] = {DNNL_ARG_DIFF_DST, DNNL_ARG_DIFF_SRC};
    static const int mems[2] = {MEM_Y, MEM_DX};
    if (cpu_dnnl_plan_mem(p, MEM_Y, &yu,
                          dnnl_primitive_desc_query_md(
                              bwd, dnnl_query_diff_dst_md, 0),
                          WF_DNNL_IN, st) ||
        cpu_dnnl_plan_mem(p, MEM_DX, &xu,
                          dnnl_primitive_desc_query_md(
                              bwd, dnnl_query_diff_src_md, 0),
                          WF_DNNL_OUT, st) ||
        cpu_dnnl_plan_step(p, bwd, ids, mems, 2, st))
      goto fail;
    break;
  }
  }
  goto done;

fail:
  rc = wfx_code(st);
done:
  dnnl_primitive_desc_destroy(fwd);
  if (bwd)
    dnnl_primitive_desc_destroy(bwd);
  return rc;
}

/* Inputs: MAX/AVG (input); MAX_GRAD (orig_input, grad); AVG_GRAD
 * (orig_input_shape, grad). The output has the shape the op's shape
 * function gives (which also refuses what the op refuses). */
static int pool_compute(wf_kernel_ctx *ctx, pool_state *s, int kind,
                        wf_status *st) {
  static const char *const what[] = {"max pooling", "average pooling",
                                     "max pooling backward",
                                     "average pooling backward"};
  const wf_tensor *in[2] = {NULL, NULL};
  wf_shape xs, os;
  int64_t x4[4];
  void *data[5] = {NULL, NULL, NULL, NULL, NULL};
  pool_job j;
  cpu_key key = {0};
  cpu_dnnl_plan *p;
  wf_tensor *out;
  int nin = kind == POOL_MAX || kind == POOL_AVG ? 1 : 2, rc;

  for (int i = 0; i < nin; i++)
    if (wfx_kernel_input(ctx, i, &in[i], NULL, st))
      return wfx_code(st);
  if (!(out = cpu_output(ctx, 0, &os, st)))
    return wfx_code(st);
  if (kind == POOL_AVG_GRAD)
    xs = os;
  else
    wfx_host->tensor_shape(in[0], &xs);
  memset(&j, 0, sizeof j);
  j.kind = kind;
  j.nchw = s->win.nchw;
  cpu_nhwc_dims(&xs, j.nchw, x4);
  j.n = x4[0], j.c = x4[3];
  if (cpu_win_init(&s->win, x4 + 1, s->win.ksize, &j.g, st))
    return wfx_code(st);
  if (wfx_count(out) == 0)
    return 0;
  if (j.n == 0 || j.c == 0 || j.g.in[0] == 0 || j.g.in[1] == 0 ||
      j.g.out[0] == 0 || j.g.out[1] == 0) {
    /* A gradient no window carries back: zero. */
    memset(wfx_data(out), 0, wfx_host->tensor_nbytes(out));
    return 0;
  }

  cpu_key_shape(&key, &xs);
  if (!(p = cpu_dnnl_cache_get(&s->cache, &key, pool_build, &j, st)))
    return wfx_code(st);
  if (p->fallback) {
    cpu_dnnl_cache_put(&s->cache, p);
    return cpu_dnnl_unsupported(what[kind], &xs, st);
  }
  if (nin == 1) {
    data[MEM_X] = wfx_data(in[0]);
    data[MEM_Y] = wfx_data(out);
  } else {
    data[MEM_X] = kind == POOL_MAX_GRAD ? wfx_data(in[0]) : NULL;
    data[MEM_Y] = wfx_data(in[1]);
    data[MEM_DX] = wfx_data(out);
  }
  rc = cpu_dnnl_plan_run(p, data, NULL,
                         nin == 1 ? "pooling" : "pooling backward", st);
  cpu_dnnl_cache_put(&s->cache, p);
  return rc;
}

static int max_pool_compute(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  return pool_compute(ctx, state, POOL_MAX, st);
}

static int avg_pool_compute(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  return pool_compute(ctx, state, POOL_AVG, st);
}

static int max_pool_grad_compute(wf_kernel_ctx *ctx, void *state,
                                 wf_status *st) {
  return pool_compute(ctx, state, POOL_MAX_GRAD, st);
}

static int avg_pool_grad_compute(wf_kernel_ctx *ctx, void *state,
                                 wf_status *st) {
  return pool_compute(ctx, state, POOL_AVG_GRAD, st);
}

const wf_kernel_def cpu_k_max_pool =
    WFX_KERNEL_FOR("cpu", "onednn", "MaxPool", "T", WF_DTYPE_BIT(WF_FLOAT32),
                   max_pool_compute, .priority = WF_CPU_FAST_PRIORITY,
                   .create = pool_create, .destroy = pool_destroy);
const wf_kernel_def cpu_k_avg_pool =
    WFX_KERNEL_FOR("cpu", "onednn", "AvgPool", "T", WF_DTYPE_BIT(WF_FLOAT32),
                   avg_pool_compute, .priority = WF_CPU_FAST_PRIORITY,
                   .create = pool_create, .destroy = pool_destroy);
const wf_kernel_def cpu_k_max_pool_grad = WFX_KERNEL_FOR(
    "cpu", "onednn", "MaxPoolGrad", "T", WF_DTYPE_BIT(WF_FLOAT32),
    max_pool_grad_compute, .priority = WF_CPU_FAST_PRIORITY,
    .create = pool_create, .destroy = pool_destroy);
const wf_kernel_def cpu_k_avg_pool_grad = WFX_KERNEL_FOR(
    "cpu", "onednn", "AvgPoolGrad", "T", WF_DTYPE_BIT(WF_FLOAT32),
    avg_pool_grad_compute, .priority = WF_CPU_FAST_PRIORITY,
    .create = pool_create, .destroy = pool_destroy);
