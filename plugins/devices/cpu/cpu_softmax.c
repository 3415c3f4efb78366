/* plugins/devices/cpu/cpu_softmax.c — fast float32 Softmax, LogSoftmax
 * and LogSoftmaxGrad on oneDNN softmax primitives (v2: the accurate and
 * the log algorithm), over the last axis of a tensor viewed as (rows, C);
 * the backward primitive takes the forward output, as the nn ops do.
 *
 * SoftmaxGrad is the plugin's own loops: dx = y * (dy - sum(dy * y)) per
 * row, rows shared by the intra-op threads. oneDNN 2.6 has no jit kernel
 * for it on AVX2 (ref:any): on the transformer's (7168, 28) attention
 * weights its two nodes took 1.5-2.7 ms a step, these 0.11-0.14 ms
 * (bench/train --model transformer --profile 30, three alternated pairs
 * on a 2-core AVX2 machine).
 *
 * Not the cross-entropy losses (they keep the reference kernels). The
 * output has the shape the op's shape function gives, so bad inputs get
 * the op's own error; an empty tensor gives an empty output. */
#include <config.h>

#include "cpu_kernels.h"

#include <string.h>

/* Plan memories: forward (x -> y); backward (y, dy -> dx). */
enum { MEM_A = 0, MEM_B = 1, MEM_OUT = 2 };

typedef struct softmax_job {
  int log, grad;
  int64_t dims[2]; /* rows, C */
} softmax_job;

static int softmax_build(void *arg, cpu_dnnl_plan *p, wf_status *st) {
  const softmax_job *j = arg;
  dnnl_alg_kind_t alg = j->log ? dnnl_softmax_log : dnnl_softmax_accurate;
  dnnl_memory_desc_t md;
  dnnl_softmax_v2_desc_t fdesc, bdesc;
  dnnl_primitive_desc_t fwd = NULL, bwd = NULL;
  dnnl_status_t s;
  int rc;

  if (cpu_dnnl_md(&md, 2, j->dims, NULL, st))
    return wfx_code(st);
  s = dnnl_softmax_v2_forward_desc_init(
      &fdesc, j->grad ? dnnl_forward_training : dnnl_forward_inference, alg,
      &md, &md, 1);
  if (s != dnnl_success)
    return cpu_dnnl_refuse(s, "softmax setup", st);
  if (cpu_dnnl_pd(&fwd, &fdesc, NULL, "softmax setup", st))
    return wfx_code(st);
  if (!j->grad) {
    static const int ids[2] = {DNNL_ARG_SRC, DNNL_ARG_DST};
    static const int mems[2] = {MEM_A, MEM_OUT};
    rc = cpu_dnnl_plan_mem(p, MEM_A, &md, NULL, WF_DNNL_IN, st) ||
         cpu_dnnl_plan_mem(p, MEM_OUT, &md, NULL, WF_DNNL_OUT, st) ||
         cpu_dnnl_plan_step(p, fwd, ids, mems, 2, st);
    dnnl_primitive_desc_destroy(fwd);
    return rc ? wfx_code(st) : 0;
  }
  s = dnnl_softmax_v2_backward_desc_init(&bdesc, alg, &md, &md, &md, 1);
  if (s != dnnl_success) {
    dnnl_primitive_desc_destroy(fwd);
    return cpu_dnnl_refuse(s, "softmax backward setup", st);
  }
  rc = cpu_dnnl_pd(&bwd, &bdesc, fwd, "softmax backward setup", st);
  dnnl_primitive_desc_destroy(fwd);
  if (rc)
    return wfx_code(st);
  {
    static const int ids[3] = {DNNL_ARG_DST, DNNL_ARG_DIFF_DST,
                               DNNL_ARG_DIFF_SRC};
    static const int mems[3] = {MEM_A, MEM_B, MEM_OUT};
    rc = cpu_dnnl_plan_mem(p, MEM_A, &md, NULL, WF_DNNL_IN, st) ||
         cpu_dnnl_plan_mem(p, MEM_B, &md, NULL, WF_DNNL_IN, st) ||
         cpu_dnnl_plan_mem(p, MEM_OUT, &md, NULL, WF_DNNL_OUT, st) ||
         cpu_dnnl_plan_step(p, bwd, ids, mems, 3, st);
  }
  dnnl_primitive_desc_destroy(bwd);
  return rc ? wfx_code(st) : 0;
}

static int softmax_create(wf_kernel_ctx *ctx, void **state, wf_status *st) {
  cpu_dnnl_state *s;

  *state = NULL;
  if (cpu_dnnl_state_new(&s, st))
    return wfx_code(st);
  *state = s;
  return 0;
}

/* Inputs: forward (logits); backward (the forward output, dy). */
static int softmax_compute(wf_kernel_ctx *ctx, cpu_dnnl_state *s, int log,
                           int grad, wf_status *st) {
  const wf_tensor *a, *b = NULL;
  wf_shape as;
  wf_tensor *out;
  softmax_job j;
  cpu_key key = {0};
  cpu_dnnl_plan *p;
  void *data[3];
  int rc;

  if (wfx_kernel_input(ctx, 0, &a, &as, st) ||
      (grad && wfx_kernel_input(ctx, 1, &b, NULL, st)))
    return wfx_code(st);
  if (!(out = cpu_output(ctx, 0, NULL, st)))
    return wfx_code(st);
  if (wfx_count(a) == 0)
    return 0;
  memset(&j, 0, sizeof j);
  j.log = log;
  j.grad = grad;
  j.dims[1] = as.dims[as.rank - 1];
  j.dims[0] = wfx_count(a) / j.dims[1];
  cpu_key_word(&key, j.dims[0]);
  cpu_key_word(&key, j.dims[1]);
  if (!(p = cpu_dnnl_cache_get(&s->cache, &key, softmax_build, &j, st)))
    return wfx_code(st);
  if (p->fallback) {
    cpu_dnnl_cache_put(&s->cache, p);
    return cpu_dnnl_unsupported(grad ? "softmax backward" : "softmax", &as,
                                st);
  }
  data[MEM_A] = wfx_data(a);
  data[MEM_B] = b ? wfx_data(b) : NULL;
  data[MEM_OUT] = wfx_data(out);
  rc = cpu_dnnl_plan_run(p, data, NULL,
                         grad ? "softmax backward" : "softmax", st);
  cpu_dnnl_cache_put(&s->cache, p);
  return rc;
}

static int softmax_fwd(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  return softmax_compute(ctx, state, 0, 0, st);
}

static int log_softmax_fwd(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  return softmax_compute(ctx, state, 1, 0, st);
}

static int log_softmax_bwd(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  return softmax_compute(ctx, state, 1, 1, st);
}

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) &&         \
    defined(__linux__)
#define WF_SM_CLONES                                                           \
  __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define WF_SM_CLONES
#endif

/* dx = y * (dy - <dy, y>) for each of rows rows of c; the dot product in 8
 * partial sums (lanes of one vector register), then the tail. */
static WF_SM_CLONES void softmax_grad_rows(float *restrict dx,
                                           const float *restrict y,
                                           const float *restrict dy,
                                           int64_t rows, int64_t c) {
  for (int64_t r = 0; r < rows; r++, y += c, dy += c, dx += c) {
    float p[8] = {0};
    int64_t j = 0;
    for (; j + 8 <= c; j += 8)
      for (int k = 0; k < 8; k++)
        p[k] += dy[j + k] * y[j + k];
    float s = ((p[0] + p[4]) + (p[1] + p[5])) + ((p[2] + p[6]) + (p[3] + p[7]));
    for (; j < c; j++)
      s += dy[j] * y[j];
    for (j = 0; j < c; j++)
      dx[j] = y[j] * (dy[j] - s);
  }
}

typedef struct softmax_grad_job {
  float *dx;
  const float *y, *dy;
  int64_t rows, c;
} softmax_grad_job;

static void softmax_grad_part(void *arg, int t, int nt) {
  const softmax_grad_job *j = arg;
  int64_t lo = j->rows * t / nt, hi = j->rows * (t + 1) / nt;
  softmax_grad_rows(j->dx + lo * j->c, j->y + lo * j->c, j->dy + lo * j->c,
                    hi - lo, j->c);
}

/* Inputs: the forward output y and dy, of one shape (the op's shape
 * function merges them: a mismatch is its error). */
static int softmax_grad_loops(wf_kernel_ctx *ctx, void *state,
                              wf_status *st) {
  const wf_tensor *y, *dy;
  wf_shape ys;
  wf_tensor *out;
  softmax_grad_job j;

  (void)state;
  if (wfx_kernel_input(ctx, 0, &y, &ys, st) ||
      wfx_kernel_input(ctx, 1, &dy, NULL, st))
    return wfx_code(st);
  if (!(out = cpu_output(ctx, 0, NULL, st)))
    return wfx_code(st);
  int64_t n = wfx_count(y);
  if (n == 0)
    return 0;
  j.dx = wfx_data(out);
  j.y = wfx_data(y);
  j.dy = wfx_data(dy);
  j.c = ys.rank > 0 ? ys.dims[ys.rank - 1] : 1;
  j.rows = n / j.c;
  cpu_team(softmax_grad_part, &j, n >= WF_CPU_SPLIT && j.rows > 1);
  return 0;
}

const wf_kernel_def cpu_k_softmax =
    WFX_KERNEL_FOR("cpu", "onednn", "Softmax", "T", WF_DTYPE_BIT(WF_FLOAT32),
                   softmax_fwd, .priority = WF_CPU_FAST_PRIORITY,
                   .create = softmax_create, .destroy = cpu_dnnl_state_free);
const wf_kernel_def cpu_k_log_softmax =
    WFX_KERNEL_FOR("cpu", "onednn", "LogSoftmax", "T", WF_DTYPE_BIT(WF_FLOAT32),
                   log_softmax_fwd, .priority = WF_CPU_FAST_PRIORITY,
                   .create = softmax_create, .destroy = cpu_dnnl_state_free);
const wf_kernel_def cpu_k_softmax_grad = WFX_KERNEL_FOR(
    "cpu", "loops", "SoftmaxGrad", "T", WF_DTYPE_BIT(WF_FLOAT32),
    softmax_grad_loops, .priority = WF_CPU_FAST_PRIORITY);
const wf_kernel_def cpu_k_log_softmax_grad = WFX_KERNEL_FOR(
    "cpu", "onednn", "LogSoftmaxGrad", "T", WF_DTYPE_BIT(WF_FLOAT32),
    log_softmax_bwd, .priority = WF_CPU_FAST_PRIORITY, .create = softmax_create,
    .destroy = cpu_dnnl_state_free);
