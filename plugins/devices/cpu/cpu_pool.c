/* plugins/devices/cpu/cpu_pool.c — fast float32 MaxPool, AvgPool,
 * MaxPoolGrad and AvgPoolGrad. Forward pooling and MaxPoolGrad over NHWC
 * run the plugin's own vector loops (they beat oneDNN's pooling several
 * times over, below); NCHW and AvgPoolGrad run oneDNN pooling (NHWC and
 * NCHW, SAME, VALID and EXPLICIT): max pooling pads with -inf and average
 * pooling divides by the elements inside the input, as the nn ops define.
 * MaxPoolGrad takes no MaxPool output, so its oneDNN plan runs the
 * forward pooling again (training mode, keeping oneDNN's record of each
 * window's pick) and then the backward one.
 *
 * The NHWC loops give the reference kernels' bits. Where oneDNN
 * differs from them: a window holding NaN gives oneDNN's maximum (NaN
 * does not propagate); ties pick the first maximum in the window's
 * row-major order, as the reference does. Output shapes are the ops'
 * shape functions' (cpu_output), so bad inputs get the op's own error;
 * empty tensors are computed here. */
#include <config.h>

#include "cpu_nn.h"
#include "cpu_pieces.h"

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

/* ---- forward pooling over NHWC, without oneDNN ---------------------------- */

/* The loops are compiled for AVX-512 and AVX2 next to the baseline, chosen
 * at load time (GCC's target_clones); every one computes the same values
 * as the reference kernels, in their order. */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) &&         \
    defined(__linux__)
#define WF_POOL_CLONES                                                         \
  __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define WF_POOL_CLONES
#endif

/* Forward MaxPool and AvgPool straight over NHWC: each output pixel's
 * window is walked in the reference's order (rows, then columns), 16
 * contiguous channels at a time in vector registers. NaN propagates as in
 * the reference (the first NaN of a window wins), and average pooling sums
 * in double and divides by the elements inside the input, as the
 * reference does, so both give the reference's bits. Measured against
 * oneDNN 2.6's pooling on an AMD EPYC (AVX2, 2 cores; oneDNN ran its
 * jit:avx2 kernel), the cnn's first MaxPool (2x2, stride 2, 28x28x16) as
 * a graph's one node, interleaved runs, microseconds a node:
 *                 oneDNN   these loops
 *     batch 1      13.9        3.6        (one thread)
 *     batch 64    420          99         (two threads) */
typedef struct direct_pool {
  const float *x;
  float *y;
  int max;
  int64_t n, c, rows; /* rows: n * out[0] */
  const cpu_win *g;
  cpu_pieces pieces; /* the rows, shared: whole images' at least */
} direct_pool;

/* Channels taken at a time: a block's maxima or sums stay in registers
 * (GCC's vector types, which each clone compiles to its own instructions)
 * while the window is walked, and the output is stored once. */
#define POOL_BLOCK 16
/* Window elements walked (output elements times the window's size) from
 * which the intra-op team shares a pooling: the cnn's first pooling at
 * batch 64 (800k) ran 1.6x faster on two threads than on one; at batch 1
 * (50k) the two made no measurable difference. */
#define POOL_SPLIT ((int64_t)1 << 18)
typedef float pool_v8f __attribute__((vector_size(32)));
typedef int32_t pool_v8i __attribute__((vector_size(32)));
typedef float pool_v4f __attribute__((vector_size(16)));
typedef double pool_v4d __attribute__((vector_size(32)));

/* m becomes the reference's maximum step over a block of 8 at v: v[k]
 * replaces m[k] where it is larger or NaN. (Statements, not functions:
 * a function passing these vectors would change ABI between clones.) */
#define POOL_MAX8(m, v)                                                        \
  do {                                                                         \
    pool_v8f v_;                                                               \
    memcpy(&v_, (v), sizeof v_);                                               \
    pool_v8i take_ = (v_ > (m)) | (v_ != v_);                                  \
    (m) = (pool_v8f)(((pool_v8i)v_ & take_) | ((pool_v8i)(m) & ~take_));       \
  } while (0)

/* acc (4 doubles) += the 4 floats at v. */
#define POOL_ADD4(acc, v)                                                      \
  do {                                                                         \
    pool_v4f v_;                                                               \
    memcpy(&v_, (v), sizeof v_);                                               \
    (acc) += __builtin_convertvector(v_, pool_v4d);                            \
  } while (0)

/* One output pixel's channels [k0, k1) of window rows [h0, h1), columns
 * [w0, w1), one channel at a time: the channels after the last block. */
static void pool_pixel_tail(const direct_pool *d, const float *xb, float *out,
                            int64_t k0, int64_t h0, int64_t h1, int64_t w0,
                            int64_t w1) {
  int64_t c = d->c, wi = d->g->in[1];

  for (int64_t k = k0; k < c; k++) {
    if (d->max) {
      float m = xb[(h0 * wi + w0) * c + k];
      for (int64_t ih = h0; ih < h1; ih++)
        for (int64_t iw = w0; iw < w1; iw++) {
          float v = xb[(ih * wi + iw) * c + k];
          m = v > m || v != v ? v : m;
        }
      out[k] = m;
    } else {
      double acc = 0;
      for (int64_t ih = h0; ih < h1; ih++)
        for (int64_t iw = w0; iw < w1; iw++)
          acc += xb[(ih * wi + iw) * c + k];
      out[k] = (float)(acc / (double)((h1 - h0) * (w1 - w0)));
    }
  }
}

static WF_POOL_CLONES void direct_pool_row(const direct_pool *d, int64_t r) {
  const cpu_win *g = d->g;
  int64_t c = d->c, wi = g->in[1], b = r / g->out[0], i = r % g->out[0];
  int64_t h0 = i * g->strides[0] - g->pad_l[0], h1 = h0 + g->k[0];
  const float *xb = d->x + b * g->in[0] * wi * c;
  float *out = d->y + r * g->out[1] * c;

  h0 = h0 < 0 ? 0 : h0;
  h1 = h1 > g->in[0] ? g->in[0] : h1;
  for (int64_t j = 0; j < g->out[1]; j++, out += c) {
    int64_t w0 = j * g->strides[1] - g->pad_l[1], w1 = w0 + g->k[1], k0 = 0;
    w0 = w0 < 0 ? 0 : w0;
    w1 = w1 > wi ? wi : w1;
    if (d->max) {
      /* The first element starts the maximum; walking it again changes
       * nothing (a NaN replaces itself). */
      for (; k0 + POOL_BLOCK <= c; k0 += POOL_BLOCK) {
        const float *first = xb + (h0 * wi + w0) * c + k0;
        pool_v8f m0, m1;
        memcpy(&m0, first, sizeof m0);
        memcpy(&m1, first + 8, sizeof m1);
        for (int64_t ih = h0; ih < h1; ih++)
          for (int64_t iw = w0; iw < w1; iw++) {
            const float *v = xb + (ih * wi + iw) * c + k0;
            POOL_MAX8(m0, v);
            POOL_MAX8(m1, v + 8);
          }
        memcpy(out + k0, &m0, sizeof m0);
        memcpy(out + k0 + 8, &m1, sizeof m1);
      }
    } else {
      double count = (double)((h1 - h0) * (w1 - w0));
      for (; k0 + POOL_BLOCK <= c; k0 += POOL_BLOCK) {
        pool_v4d a0 = {0}, a1 = {0}, a2 = {0}, a3 = {0};
        for (int64_t ih = h0; ih < h1; ih++)
          for (int64_t iw = w0; iw < w1; iw++) {
            const float *v = xb + (ih * wi + iw) * c + k0;
            POOL_ADD4(a0, v);
            POOL_ADD4(a1, v + 4);
            POOL_ADD4(a2, v + 8);
            POOL_ADD4(a3, v + 12);
          }
        pool_v4d sums[4] = {a0 / count, a1 / count, a2 / count, a3 / count};
        for (int k = 0; k < POOL_BLOCK; k++)
          out[k0 + k] = (float)sums[k / 4][k % 4];
      }
    }
    if (k0 < c)
      pool_pixel_tail(d, xb, out, k0, h0, h1, w0, w1);
  }
}

/* cpu_team_fn: thread t takes output rows in pieces (cpu_pieces.h), its
 * own share's first. */
static void direct_pool_part(void *arg, int t, int nt) {
  direct_pool *d = arg;
  cpu_piece_walk w = cpu_pieces_walk(&d->pieces, t);
  int64_t r0, r1;

  (void)nt;
  while (cpu_pieces_take(&w, &r0, &r1))
    for (int64_t r = r0; r < r1; r++)
      direct_pool_row(d, r);
}

/* Runs d on the team when share is set, in pieces of an image's rows at
 * least. */
static void direct_pool_run(direct_pool *d, int share) {
  cpu_pieces_init(&d->pieces, d->rows, 1, d->g->out[0], cpu_team_size(share));
  cpu_team(direct_pool_part, d, share);
}

void cpu_max_pool_nhwc(const float *x, float *y, int64_t n, int64_t c,
                       const cpu_win *g) {
  direct_pool d = {.x = x, .y = y, .max = 1, .n = n, .c = c,
                   .rows = n * g->out[0], .g = g};
  direct_pool_run(&d, n * g->out[0] * g->out[1] * c * g->k[0] * g->k[1] >=
                              POOL_SPLIT &&
                          d.rows > 1);
}

/* ---- MaxPoolGrad over NHWC, without oneDNN ------------------------------- */

/* Each window's gradient goes to the element the forward scan picks (the
 * reference's rule: the first of tied maxima, the last NaN), found 16 or 8
 * channels at a time: the running maximum and the offset of its element
 * in vector registers. Images are independent (no window crosses one), so
 * the team takes them whole, in pieces (cpu_pieces.h). Where windows
 * cannot overlap (stride >= the
 * window in both dims) each dx element gets at most one gradient and is
 * written as 0 + g, the reference's bits (its double sum of one term, -0
 * included); overlapping windows sum an image's contributions in double
 * in the reference's order (output rows, columns), so those bits match
 * too. oneDNN instead ran its forward pooling again for the picks (the op
 * takes no MaxPool output) and then its backward one: the cnn's two
 * MaxPoolGrad nodes at batch 64 took 3.9-4.4 ms a training step with it,
 * 0.77-0.97 ms with these loops (bench/train --model cnn --profile 20,
 * three alternated pairs, 2-core AVX2 machine; training 1.59x). Writing
 * tiling windows' dx without zeroing it first and taking 16 channels a
 * pass then cut the two nodes from 269 + 121 us to 203 + 93 (2-core
 * AVX-512 machine; training 1.046x, median of 5 alternated pairs). */
typedef struct direct_pool_grad {
  const float *x, *g;
  float *dx;
  double *acc; /* overlapping windows: one image of doubles per thread */
  int64_t n, c, slots;
  const cpu_win *g_win;
  int relu;  /* _FusedMaxPoolGradReluGrad: 0 where x is not > 0 */
  int tiled; /* the windows neither overlap nor leave gaps: each element of
              * dx lies in exactly one */
  cpu_pieces pieces; /* the images */
} direct_pool_grad;

/* m and at over a block of 8 channels at v (a window element at offset o
 * of its image): where v[k] is larger than m[k] or NaN, it becomes the
 * maximum and o its pick. (Statements, as POOL_MAX8.) */
#define POOL_PICK8(m, at, v, o)                                                \
  do {                                                                         \
    pool_v8f v_;                                                               \
    memcpy(&v_, (v), sizeof v_);                                               \
    pool_v8i take_ = (v_ > (m)) | (v_ != v_);                                  \
    (m) = (pool_v8f)(((pool_v8i)v_ & take_) | ((pool_v8i)(m) & ~take_));       \
    (at) = (((pool_v8i){0} + (o)) & take_) | ((at) & ~take_);                  \
  } while (0)

/* The gradient of a block of 8 channels at g as windows that do not overlap
 * write it: 0 + g (the reference's bits: its double sum of one term, -0
 * included), and with relu 0 where the pick m is not > 0. */
#define POOL_GRAD8(gv, g, m, relu)                                             \
  do {                                                                         \
    memcpy(&(gv), (g), sizeof(gv));                                            \
    (gv) = 0.0f + (gv);                                                        \
    if (relu)                                                                  \
      (gv) = (pool_v8f)((pool_v8i)(gv) & ((m) > 0));                           \
  } while (0)

/* Image b of d: gradients into dx, or summed into acc and then rounded
 * into dx. Where windows do not overlap every element of each window is
 * written (the gradient in the lanes it was picked in, 0 in the others),
 * so dx is zeroed first only where windows leave gaps. Channels go 16 at
 * a time (the cnn's 16 and 32: one cache line of each window element per
 * pass), then 8, then one by one. */
static WF_POOL_CLONES void direct_pool_grad_image(const direct_pool_grad *d,
                                                  int64_t b, double *acc) {
  const cpu_win *g = d->g_win;
  int64_t c = d->c, hi = g->in[0], wi = g->in[1], img = hi * wi * c;
  const float *xb = d->x + b * img;
  const float *gb = d->g + b * g->out[0] * g->out[1] * c;
  float *dxb = d->dx + b * img;

  if (acc)
    memset(acc, 0, (size_t)img * sizeof *acc);
  else if (!d->tiled)
    memset(dxb, 0, (size_t)img * sizeof *dxb);
  for (int64_t i = 0; i < g->out[0]; i++) {
    int64_t h0 = i * g->strides[0] - g->pad_l[0], h1 = h0 + g->k[0];
    h0 = h0 < 0 ? 0 : h0;
    h1 = h1 > hi ? hi : h1;
    for (int64_t j = 0; j < g->out[1]; j++, gb += c) {
      int64_t w0 = j * g->strides[1] - g->pad_l[1], w1 = w0 + g->k[1], k0 = 0;
      w0 = w0 < 0 ? 0 : w0;
      w1 = w1 > wi ? wi : w1;
      int32_t first = (int32_t)((h0 * wi + w0) * c);
      for (; !acc && k0 + 16 <= c; k0 += 16) {
        pool_v8f m0, m1, g0, g1;
        pool_v8i at0 = {0}, at1 = {0};
        memcpy(&m0, xb + first + k0, sizeof m0);
        memcpy(&m1, xb + first + k0 + 8, sizeof m1);
        at0 += first;
        at1 += first;
        for (int64_t ih = h0; ih < h1; ih++)
          for (int64_t iw = w0; iw < w1; iw++) {
            int32_t o = (int32_t)((ih * wi + iw) * c);
            POOL_PICK8(m0, at0, xb + o + k0, o);
            POOL_PICK8(m1, at1, xb + o + k0 + 8, o);
          }
        POOL_GRAD8(g0, gb + k0, m0, d->relu);
        POOL_GRAD8(g1, gb + k0 + 8, m1, d->relu);
        for (int64_t ih = h0; ih < h1; ih++)
          for (int64_t iw = w0; iw < w1; iw++) {
            int32_t o = (int32_t)((ih * wi + iw) * c);
            pool_v8f v0 = (pool_v8f)((pool_v8i)g0 & (at0 == o));
            pool_v8f v1 = (pool_v8f)((pool_v8i)g1 & (at1 == o));
            memcpy(dxb + o + k0, &v0, sizeof v0);
            memcpy(dxb + o + k0 + 8, &v1, sizeof v1);
          }
      }
      for (; k0 + 8 <= c; k0 += 8) {
        pool_v8f m;
        pool_v8i at = {0};
        memcpy(&m, xb + first + k0, sizeof m);
        at += first;
        for (int64_t ih = h0; ih < h1; ih++)
          for (int64_t iw = w0; iw < w1; iw++) {
            int32_t o = (int32_t)((ih * wi + iw) * c);
            POOL_PICK8(m, at, xb + o + k0, o);
          }
        if (acc) {
          for (int k = 0; k < 8; k++)
            acc[at[k] + k0 + k] += gb[k0 + k];
        } else {
          pool_v8f gv;
          POOL_GRAD8(gv, gb + k0, m, d->relu);
          for (int64_t ih = h0; ih < h1; ih++)
            for (int64_t iw = w0; iw < w1; iw++) {
              int32_t o = (int32_t)((ih * wi + iw) * c);
              pool_v8f v = (pool_v8f)((pool_v8i)gv & (at == o));
              memcpy(dxb + o + k0, &v, sizeof v);
            }
        }
      }
      for (; k0 < c; k0++) {
        int64_t at = first + k0;
        float m = xb[at];
        for (int64_t ih = h0; ih < h1; ih++)
          for (int64_t iw = w0; iw < w1; iw++) {
            int64_t o = (ih * wi + iw) * c + k0;
            if (xb[o] > m || xb[o] != xb[o]) {
              m = xb[o];
              at = o;
            }
          }
        if (acc) {
          acc[at] += gb[k0];
        } else {
          float v = !d->relu || m > 0 ? 0.0f + gb[k0] : 0.0f;
          for (int64_t ih = h0; ih < h1; ih++)
            for (int64_t iw = w0; iw < w1; iw++) {
              int64_t o = (ih * wi + iw) * c + k0;
              dxb[o] = o == at ? v : 0.0f;
            }
        }
      }
    }
  }
  if (acc)
    for (int64_t e = 0; e < img; e++)
      dxb[e] = !d->relu || xb[e] > 0 ? (float)acc[e] : 0.0f;
}

/* cpu_team_fn: thread t takes images in pieces (and, for overlapping
 * windows, uses its own image of accumulators). */
static void direct_pool_grad_part(void *arg, int t, int nt) {
  direct_pool_grad *d = arg;
  cpu_piece_walk w = cpu_pieces_walk(&d->pieces, t);
  double *acc = d->acc
                    ? d->acc + (int64_t)t * d->g_win->in[0] *
                                   d->g_win->in[1] * d->c
                    : NULL;
  int64_t b0, b1;

  (void)nt;
  while (cpu_pieces_take(&w, &b0, &b1))
    for (int64_t b = b0; b < b1; b++)
      direct_pool_grad_image(d, b, acc);
}

/* Whether windows of g tile its input: in each dim they neither overlap nor
 * leave gaps (stride = window) and the last one reaches the end. */
static int pool_windows_tile(const cpu_win *g) {
  for (int d = 0; d < 2; d++)
    if (g->strides[d] != g->k[d] ||
        (g->out[d] - 1) * g->strides[d] - g->pad_l[d] + g->k[d] < g->in[d])
      return 0;
  return 1;
}

/* Whether the job is one direct_pool or direct_pool_grad computes: a
 * forward pooling or MaxPoolGrad over NHWC whose windows each hold at
 * least one input element, with offsets within an image that int32 holds. */
static int direct_pool_takes(const pool_job *j) {
  return (j->kind == POOL_MAX || j->kind == POOL_AVG ||
          (j->kind == POOL_MAX_GRAD &&
           j->g.in[0] * j->g.in[1] * j->c < INT32_MAX)) &&
         !j->nchw &&
         j->g.dilates[0] == 0 && j->g.dilates[1] == 0 &&
         j->g.pad_l[0] < j->g.k[0] && j->g.pad_l[1] < j->g.k[1] &&
         j->g.pad_r[0] < j->g.k[0] && j->g.pad_r[1] < j->g.k[1];
}

/* Inputs: MAX/AVG (input); MAX_GRAD (orig_input, grad); AVG_GRAD
 * (orig_input_shape, grad). The output has the shape the op's shape
 * function gives (which also refuses what the op refuses). */
/* In place: dx where x > 0, else 0 (ReluGrad against a ReLU's output x,
 * after oneDNN's MaxPoolGrad). */
static void relu_mask(float *dx, const float *x, int64_t n) {
  for (int64_t i = 0; i < n; i++)
    dx[i] = x[i] > 0 ? dx[i] : 0.0f;
}

/* relu: _FusedMaxPoolGradReluGrad (kind POOL_MAX_GRAD). */
static int pool_compute(wf_kernel_ctx *ctx, pool_state *s, int kind,
                        int relu, wf_status *st) {
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

  if (direct_pool_takes(&j) && kind == POOL_MAX_GRAD) {
    int32_t inter, intra;
    int overlap = j.g.strides[0] < j.g.k[0] || j.g.strides[1] < j.g.k[1];
    int share = wfx_count(in[0]) >= POOL_SPLIT / 4 && j.n > 1;
    direct_pool_grad d = {.x = wfx_data(in[0]), .g = wfx_data(in[1]),
                          .dx = wfx_data(out), .n = j.n, .c = j.c,
                          .g_win = &j.g, .relu = relu,
                          .tiled = !overlap && pool_windows_tile(&j.g)};
    cpu_threads(&inter, &intra);
    d.slots = share && intra > 1 ? intra : 1;
    cpu_pieces_init(&d.pieces, j.n, 1, 1, cpu_team_size(d.slots > 1));
    if (overlap &&
        !(d.acc = wfx_host->alloc((size_t)(d.slots * j.g.in[0] * j.g.in[1] *
                                           j.c) *
                                      sizeof(double),
                                  64)))
      return wfx_fail(st, WF_RESOURCE_EXHAUSTED,
                      "out of memory for %lld gradient accumulators",
                      (long long)(d.slots * j.g.in[0] * j.g.in[1] * j.c));
    cpu_team(direct_pool_grad_part, &d, d.slots > 1);
    if (d.acc)
      wfx_host->free(d.acc);
    return 0;
  }
  if (direct_pool_takes(&j)) {
    direct_pool d = {.x = wfx_data(in[0]), .y = wfx_data(out),
                     .max = kind == POOL_MAX, .n = j.n, .c = j.c,
                     .rows = j.n * j.g.out[0], .g = &j.g};
    direct_pool_run(&d, wfx_count(out) * j.g.k[0] * j.g.k[1] >= POOL_SPLIT &&
                            d.rows > 1);
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
  if (!rc && relu)
    relu_mask(wfx_data(out), wfx_data(in[0]), wfx_count(out));
  return rc;
}

static int max_pool_compute(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  return pool_compute(ctx, state, POOL_MAX, 0, st);
}

static int avg_pool_compute(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  return pool_compute(ctx, state, POOL_AVG, 0, st);
}

static int max_pool_grad_compute(wf_kernel_ctx *ctx, void *state,
                                 wf_status *st) {
  return pool_compute(ctx, state, POOL_MAX_GRAD, 0, st);
}

static int max_pool_grad_relu_compute(wf_kernel_ctx *ctx, void *state,
                                      wf_status *st) {
  return pool_compute(ctx, state, POOL_MAX_GRAD, 1, st);
}

static int avg_pool_grad_compute(wf_kernel_ctx *ctx, void *state,
                                 wf_status *st) {
  return pool_compute(ctx, state, POOL_AVG_GRAD, 0, st);
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
/* The fusion pass's MaxPoolGrad and ReluGrad of a ReLU and a MaxPool in
 * training: the ReLU's gradient decided at each window's pick, where the
 * maximum is already in a register, so the gradient is written once; the
 * separate ReluGrad read and wrote it again (with the ReLU's output). */
const wf_kernel_def cpu_k_fused_max_pool_grad_relu = WFX_KERNEL_FOR(
    "cpu", "onednn", "_FusedMaxPoolGradReluGrad", "T",
    WF_DTYPE_BIT(WF_FLOAT32), max_pool_grad_relu_compute,
    .priority = WF_CPU_FAST_PRIORITY, .create = pool_create,
    .destroy = pool_destroy);
const wf_kernel_def cpu_k_avg_pool_grad = WFX_KERNEL_FOR(
    "cpu", "onednn", "AvgPoolGrad", "T", WF_DTYPE_BIT(WF_FLOAT32),
    avg_pool_grad_compute, .priority = WF_CPU_FAST_PRIORITY,
    .create = pool_create, .destroy = pool_destroy);
