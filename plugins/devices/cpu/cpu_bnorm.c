/* plugins/devices/cpu/cpu_bnorm.c — fast float32 BatchNorm and BatchNormGrad
 * on oneDNN batch normalisation (scale and shift; batch statistics in
 * training, given ones with use_global_stats in inference). x of any rank
 * >= 2 is viewed as (N, C, rest, 1) for NCHW and as (rest, C) for NHWC, so
 * the statistics cover every dimension but C, as the nn ops define.
 *
 * oneDNN's backward has no inputs for the gradients of the batch
 * statistics: in training, BatchNormGrad adds mean_backprop / M +
 * variance_backprop * 2 (x - mean) / M itself when either is non-zero.
 * Output shapes are the ops' shape functions' (cpu_output), so bad inputs
 * get the op's own error; empty tensors are computed here as the nn ops
 * define them (an empty batch's statistics are NaN, its gradients of
 * scale and offset zero). */
#include <config.h>

#include "cpu_nn.h"

#include <math.h>
#include <string.h>

/* Plan memories. */
enum {
  MEM_X = 0,
  MEM_Y = 1, /* forward: y; backward: dy */
  MEM_SCALE = 2,
  MEM_SHIFT = 3, /* backward: an unread placeholder */
  MEM_MEAN = 4,
  MEM_VAR = 5,
  MEM_DX = 6,
  MEM_DSCALE = 7,
  MEM_DSHIFT = 8
};

typedef struct bn_state {
  cpu_dnnl_cache cache;
  int nchw, training;
  double eps;
} bn_state;

typedef struct bn_job {
  int grad, training, ndims;
  float eps;
  int64_t dims[4]; /* (N, C, rest, 1) or (rest, C) */
  int64_t c;
} bn_job;

static void bn_destroy(void *state) {
  bn_state *s = state;

  if (!s)
    return;
  cpu_dnnl_cache_deinit(&s->cache);
  wfx_host->free(s);
}

static int bn_create(wf_kernel_ctx *ctx, void **state, wf_status *st) {
  bn_state *s = wfx_host->alloc(sizeof *s, 0);
  nn_attrs a = {.kernel = ctx};

  *state = NULL;
  if (!s)
    return wfx_fail(st, WF_RESOURCE_EXHAUSTED,
                    "out of memory for a kernel's state");
  memset(s, 0, sizeof *s);
  cpu_dnnl_cache_init(&s->cache);
  /* Accepted by the op's shape function when the node was added. */
  if (nn_data_format(&a, &s->nchw, st) ||
      nn_attr_bool(&a, "is_training", &s->training, st) ||
      nn_attr_float(&a, "epsilon", &s->eps, st)) {
    bn_destroy(s);
    return wfx_code(st);
  }
  *state = s;
  return 0;
}

static unsigned bn_flags(const bn_job *j) {
  return dnnl_use_scale | dnnl_use_shift |
         (j->training ? 0u : (unsigned)dnnl_use_global_stats);
}

static int bn_build(void *arg, cpu_dnnl_plan *p, wf_status *st) {
  const bn_job *j = arg;
  dnnl_memory_desc_t xmd, cmd;
  dnnl_batch_normalization_desc_t fdesc, bdesc;
  dnnl_primitive_desc_t fwd = NULL, bwd = NULL;
  dnnl_status_t s;
  int rc = 0;

  if (cpu_dnnl_md(&xmd, j->ndims, j->dims, NULL, st) ||
      cpu_dnnl_md(&cmd, 1, &j->c, NULL, st))
    return wfx_code(st);
  s = dnnl_batch_normalization_forward_desc_init(
      &fdesc,
      j->training || j->grad ? dnnl_forward_training : dnnl_forward_inference,
      &xmd, j->eps, bn_flags(j));
  if (s != dnnl_success)
    return cpu_dnnl_refuse(s, "batch normalization setup", st);
  if (cpu_dnnl_pd(&fwd, &fdesc, NULL, "batch normalization setup", st))
    return wfx_code(st);
  if (!j->grad) {
    static const int ids[6] = {DNNL_ARG_SRC,   DNNL_ARG_DST,
                               DNNL_ARG_SCALE, DNNL_ARG_SHIFT,
                               DNNL_ARG_MEAN,  DNNL_ARG_VARIANCE};
    static const int mems[6] = {MEM_X,     MEM_Y,    MEM_SCALE,
                                MEM_SHIFT, MEM_MEAN, MEM_VAR};
    int stats = j->training ? WF_DNNL_OUT : WF_DNNL_IN;
    if (cpu_dnnl_plan_mem(p, MEM_X, &xmd, NULL, WF_DNNL_IN, st) ||
        cpu_dnnl_plan_mem(p, MEM_Y, &xmd, NULL, WF_DNNL_OUT, st) ||
        cpu_dnnl_plan_mem(p, MEM_SCALE, &cmd, NULL, WF_DNNL_IN, st) ||
        cpu_dnnl_plan_mem(p, MEM_SHIFT, &cmd, NULL, WF_DNNL_IN, st) ||
        cpu_dnnl_plan_mem(p, MEM_MEAN, &cmd, NULL, stats, st) ||
        cpu_dnnl_plan_mem(p, MEM_VAR, &cmd, NULL, stats, st) ||
        cpu_dnnl_plan_step(p, fwd, ids, mems, 6, st))
      rc = wfx_code(st);
    goto done;
  }
  s = dnnl_batch_normalization_backward_desc_init(
      &bdesc, dnnl_backward, &xmd, &xmd, j->eps, bn_flags(j));
  if (s != dnnl_success) {
    rc = cpu_dnnl_refuse(s, "batch normalization backward setup", st);
    goto done;
  }
  if (cpu_dnnl_pd(&bwd, &bdesc, fwd, "batch normalization backward setup",
                  st)) {
    rc = wfx_code(st);
    goto done;
  }
  {
    /* oneDNN 2.6's backward takes the shift too (and does not read it):
     * it gets a zeroed internal vector, BatchNormGrad has no offset. */
    static const int ids[9] = {DNNL_ARG_SRC,        DNNL_ARG_DIFF_DST,
                               DNNL_ARG_SCALE,      DNNL_ARG_SHIFT,
                               DNNL_ARG_MEAN,       DNNL_ARG_VARIANCE,
                               DNNL_ARG_DIFF_SRC,   DNNL_ARG_DIFF_SCALE,
                               DNNL_ARG_DIFF_SHIFT};
    static const int mems[9] = {MEM_X,   MEM_Y,  MEM_SCALE,  MEM_SHIFT,
                                MEM_MEAN, MEM_VAR, MEM_DX, MEM_DSCALE,
                                MEM_DSHIFT};
    if (cpu_dnnl_plan_mem(p, MEM_X, &xmd, NULL, WF_DNNL_IN, st) ||
        cpu_dnnl_plan_mem(p, MEM_Y, &xmd, NULL, WF_DNNL_IN, st) ||
        cpu_dnnl_plan_mem(p, MEM_SCALE, &cmd, NULL, WF_DNNL_IN, st) ||
        cpu_dnnl_plan_mem(p, MEM_SHIFT, NULL, &cmd, 0, st) ||
        cpu_dnnl_plan_mem(p, MEM_MEAN, &cmd, NULL, WF_DNNL_IN, st) ||
        cpu_dnnl_plan_mem(p, MEM_VAR, &cmd, NULL, WF_DNNL_IN, st) ||
        cpu_dnnl_plan_mem(p, MEM_DX, &xmd, NULL, WF_DNNL_OUT, st) ||
        cpu_dnnl_plan_mem(p, MEM_DSCALE, &cmd, NULL, WF_DNNL_OUT, st) ||
        cpu_dnnl_plan_mem(p, MEM_DSHIFT, &cmd, NULL, WF_DNNL_OUT, st) ||
        cpu_dnnl_plan_step(p, bwd, ids, mems, 9, st))
      rc = wfx_code(st);
    else
      memset(p->mems[MEM_SHIFT].buf, 0, p->mems[MEM_SHIFT].size);
  }
done:
  dnnl_primitive_desc_destroy(fwd);
  if (bwd)
    dnnl_primitive_desc_destroy(bwd);
  return rc;
}

/* Fills j's view of x (xs, rank >= 2 as the op requires) for the
 * state's format; 0 when it is empty (then only j->c is set). */
static int bn_view(const bn_state *s, const wf_shape *xs, bn_job *j) {
  int axis;
  int64_t outer = 1, inner = 1;

  axis = nn_channel_axis(s->nchw, xs->rank);
  j->c = xs->dims[axis];
  for (int i = 0; i < axis; i++)
    outer *= xs->dims[i];
  for (int i = axis + 1; i < xs->rank; i++)
    inner *= xs->dims[i];
  if (outer == 0 || inner == 0 || j->c == 0)
    return 0;
  if (s->nchw) {
    /* 4-D: oneDNN's optimised kernel takes nchw, not ncw. */
    j->ndims = 4;
    j->dims[0] = outer, j->dims[1] = j->c, j->dims[2] = inner, j->dims[3] = 1;
  } else {
    j->ndims = 2;
    j->dims[0] = outer * inner, j->dims[1] = j->c;
  }
  j->training = s->training;
  j->eps = (float)s->eps;
  return 1;
}

/* Fills n floats of t with v. */
static void fill(wf_tensor *t, float v, int64_t n) {
  float *p = wfx_data(t);

  for (int64_t i = 0; i < n; i++)
    p[i] = v;
}

static int bn_forward(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  bn_state *s = state;
  const wf_tensor *x, *v[4];
  wf_tensor *y, *bm, *bv;
  wf_shape xs, cs;
  bn_job j;
  cpu_key key = {0};
  cpu_dnnl_plan *p;
  void *data[9] = {NULL};
  int rc;

  if (wfx_kernel_input(ctx, 0, &x, &xs, st))
    return wfx_code(st);
  for (int i = 0; i < 4; i++)
    if (wfx_kernel_input(ctx, i + 1, &v[i], NULL, st))
      return wfx_code(st);
  if (!(y = cpu_output(ctx, 0, NULL, st)))
    return wfx_code(st);
  memset(&j, 0, sizeof j);
  if (!bn_view(s, &xs, &j)) {
    wfx_shape_make(&cs, 1, &j.c);
    if (!(bm = wfx_host->kernel_output_new(ctx, 1, &cs, st)) ||
        !(bv = wfx_host->kernel_output_new(ctx, 2, &cs, st)))
      return wfx_code(st);
    if (s->training) {
      /* The statistics of an empty batch. */
      fill(bm, NAN, j.c);
      fill(bv, NAN, j.c);
    } else if (j.c > 0) {
      memcpy(wfx_data(bm), wfx_data(v[2]), wfx_host->tensor_nbytes(bm));
      memcpy(wfx_data(bv), wfx_data(v[3]), wfx_host->tensor_nbytes(bv));
    }
    return 0;
  }
  cpu_key_shape(&key, &xs);
  if (!(p = cpu_dnnl_cache_get(&s->cache, &key, bn_build, &j, st)))
    return wfx_code(st);
  if (p->fallback) {
    cpu_dnnl_cache_put(&s->cache, p);
    return cpu_dnnl_unsupported("batch normalization", &xs, st);
  }
  wfx_shape_make(&cs, 1, &j.c);
  if (!(bm = wfx_host->kernel_output_new(ctx, 1, &cs, st)) ||
      !(bv = wfx_host->kernel_output_new(ctx, 2, &cs, st))) {
    cpu_dnnl_cache_put(&s->cache, p);
    return wfx_code(st);
  }
  data[MEM_X] = wfx_data(x);
  data[MEM_Y] = wfx_data(y);
  data[MEM_SCALE] = wfx_data(v[0]);
  data[MEM_SHIFT] = wfx_data(v[1]);
  data[MEM_MEAN] = wfx_data(s->training ? bm : v[2]);
  data[MEM_VAR] = wfx_data(s->training ? bv : v[3]);
  rc = cpu_dnnl_plan_run(p, data, NULL, "batch normalization", st);
  cpu_dnnl_cache_put(&s->cache, p);
  if (rc == 0 && !s->training) {
    memcpy(wfx_data(bm), wfx_data(v[2]), wfx_host->tensor_nbytes(bm));
    memcpy(wfx_data(bv), wfx_data(v[3]), wfx_host->tensor_nbytes(bv));
  }
  return rc;
}

/* dx += dmean / M + dvar * 2 (x - mean) / M, per channel of j's view. */
static void add_stat_grads(const bn_job *j, float *dx, const float *x,
                           const float *mean, const float *dmean,
                           const float *dvar) {
  int64_t outer = j->dims[0], inner = j->ndims == 4 ? j->dims[2] : 1;
  double m = (double)(outer * inner);

  for (int64_t o = 0; o < outer; o++)
    for (int64_t k = 0; k < j->c; k++) {
      double a = dmean[k] / m, b = 2.0 * dvar[k] / m;
      int64_t base = (o * j->c + k) * inner;
      for (int64_t i = 0; i < inner; i++)
        dx[base + i] += (float)(a + b * ((double)x[base + i] - mean[k]));
    }
}

static int any_nonzero(const float *v, int64_t n) {
  for (int64_t i = 0; i < n; i++)
    if (v[i] != 0.0f)
      return 1;
  return 0;
}

static int bn_backward(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  bn_state *s = state;
  const wf_tensor *dy, *x, *v[5];
  wf_tensor *dx, *ds, *doff;
  wf_shape xs, cs;
  bn_job j;
  cpu_key key = {0};
  cpu_dnnl_plan *p;
  void *data[9] = {NULL};
  int rc;

  if (wfx_kernel_input(ctx, 0, &dy, NULL, st) ||
      wfx_kernel_input(ctx, 1, &x, &xs, st))
    return wfx_code(st);
  for (int i = 0; i < 5; i++)
    if (wfx_kernel_input(ctx, i + 2, &v[i], NULL, st))
      return wfx_code(st);
  if (!(dx = cpu_output(ctx, 0, NULL, st)))
    return wfx_code(st);
  memset(&j, 0, sizeof j);
  if (!bn_view(s, &xs, &j)) {
    /* An empty batch: scale's and offset's gradients are empty sums. */
    wfx_shape_make(&cs, 1, &j.c);
    if (!(ds = wfx_host->kernel_output_new(ctx, 1, &cs, st)) ||
        !(doff = wfx_host->kernel_output_new(ctx, 2, &cs, st)))
      return wfx_code(st);
    fill(ds, 0.0f, j.c);
    fill(doff, 0.0f, j.c);
    return 0;
  }
  j.grad = 1;
  cpu_key_shape(&key, &xs);
  if (!(p = cpu_dnnl_cache_get(&s->cache, &key, bn_build, &j, st)))
    return wfx_code(st);
  if (p->fallback) {
    cpu_dnnl_cache_put(&s->cache, p);
    return cpu_dnnl_unsupported("batch normalization backward", &xs, st);
  }
  wfx_shape_make(&cs, 1, &j.c);
  if (!(ds = wfx_host->kernel_output_new(ctx, 1, &cs, st)) ||
      !(doff = wfx_host->kernel_output_new(ctx, 2, &cs, st))) {
    cpu_dnnl_cache_put(&s->cache, p);
    return wfx_code(st);
  }
  data[MEM_X] = wfx_data(x);
  data[MEM_Y] = wfx_data(dy);
  data[MEM_SCALE] = wfx_data(v[0]);
  data[MEM_MEAN] = wfx_data(v[1]);
  data[MEM_VAR] = wfx_data(v[2]);
  data[MEM_DX] = wfx_data(dx);
  data[MEM_DSCALE] = wfx_data(ds);
  data[MEM_DSHIFT] = wfx_data(doff);
  rc = cpu_dnnl_plan_run(p, data, NULL, "batch normalization backward", st);
  cpu_dnnl_cache_put(&s->cache, p);
  if (rc == 0 && s->training &&
      (any_nonzero(wfx_data(v[3]), j.c) || any_nonzero(wfx_data(v[4]), j.c)))
    add_stat_grads(&j, wfx_data(dx), wfx_data(x), wfx_data(v[1]),
                   wfx_data(v[3]), wfx_data(v[4]));
  return rc;
}

const wf_kernel_def cpu_k_batch_norm =
    WFX_KERNEL_FOR("cpu", "onednn", "BatchNorm", "T", WF_DTYPE_BIT(WF_FLOAT32),
                   bn_forward, .priority = WF_CPU_FAST_PRIORITY,
                   .create = bn_create, .destroy = bn_destroy);
const wf_kernel_def cpu_k_batch_norm_grad = WFX_KERNEL_FOR(
    "cpu", "onednn", "BatchNormGrad", "T", WF_DTYPE_BIT(WF_FLOAT32),
    bn_backward, .priority = WF_CPU_FAST_PRIORITY, .create = bn_create,
    .destroy = bn_destroy);
