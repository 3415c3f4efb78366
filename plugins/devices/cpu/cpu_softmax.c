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
 * Softmax also has the plugin's own loops (label loops/softmax), on CPUs
 * with AVX2 and FMA (sixteen lanes to a vector with AVX-512, below): oneDNN 2.6's jit:avx2 softmax spends about 5 cycles
 * an element on short rows; the transformer's attention weights are rows
 * of 28, and its two Softmax nodes took 0.16 ms each at batch 64. Its
 * AVX-512 kernel does little better on them: on an Intel Xeon with
 * AVX-512 the nodes took 0.27 ms a training step together, 0.19 in these
 * loops. These compute each row's maximum, exp(x - max) eight lanes at
 * a time (a degree-7 polynomial on the reduced argument, within two float
 * ulps of exp) and their sum, and divide; a NaN in a row makes the row
 * NaN, as in the reference kernel.
 *
 * The cross-entropy losses (SoftmaxCrossEntropyWithLogits and its sparse
 * form) have the same loops on the same CPUs (on AVX-512 ones they replace
 * the reference kernel: the mlp's node 12 -> 4 us): exp(x - max) once an
 * element, the loss from the row's maximum and the logarithm of its sum.
 * The output has the shape the op's shape function gives, so bad inputs
 * get the op's own error; an empty tensor gives an empty output. */
#include <config.h>

#include "cpu_kernels.h"

#include "labels.h"

#include <string.h>

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#define SOFTMAX_X86 1
#include "cpu_vexp.h"
#else
#define SOFTMAX_X86 0
#endif

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

#if SOFTMAX_X86
/* The same rows sixteen lanes at a time on AVX-512 (below). */
static __attribute__((target("avx512f"))) void
softmax_grad_rows16(float *dx, const float *y, const float *dy, int64_t rows,
                    int64_t c);
#endif

static void softmax_grad_part(void *arg, int t, int nt) {
  const softmax_grad_job *j = arg;
  int64_t lo = j->rows * t / nt, hi = j->rows * (t + 1) / nt;
#if SOFTMAX_X86
  if (__builtin_cpu_supports("avx512f")) {
    softmax_grad_rows16(j->dx + lo * j->c, j->y + lo * j->c,
                        j->dy + lo * j->c, hi - lo, j->c);
    return;
  }
#endif
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

/* ---- loops/softmax ------------------------------------------------------------ */

typedef struct softmax_loops_job {
  float *y;
  const float *x;
  int64_t rows, c;
} softmax_loops_job;

/* A cross-entropy's rows: logits x (rows, c), labels as classes cls
 * (sparse) or rows lab (dense); outputs loss (rows) and back (rows, c). */
typedef struct xent_loops_job {
  const float *x, *lab;
  const int64_t *cls;
  float *loss, *back;
  int64_t rows, c;
} xent_loops_job;

#if SOFTMAX_X86
#define SOFTMAX_TARGET __attribute__((target("avx2,fma")))
/* the helpers inlined into the loops (not calls per vector) */
#define SOFTMAX_INLINE                                                         \
  static inline __attribute__((always_inline, target("avx2,fma")))

SOFTMAX_INLINE float hsum8(__m256 v) {
  __m128 a = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  a = _mm_add_ps(a, _mm_movehl_ps(a, a));
  a = _mm_add_ss(a, _mm_movehdup_ps(a));
  return _mm_cvtss_f32(a);
}

SOFTMAX_INLINE float hmax8(__m256 v) {
  __m128 a = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  a = _mm_max_ps(a, _mm_movehl_ps(a, a));
  a = _mm_max_ss(a, _mm_movehdup_ps(a));
  return _mm_cvtss_f32(a);
}

/* The maximum of row x of c elements (body: c rounded down to 8; tail:
 * the rest, as mask tmask). maxps returns its second operand when either
 * is NaN, so NaNs are passed over, as the reference's comparison does. */
SOFTMAX_INLINE float row_max(const float *x, int64_t body, int tail,
                                    __m256i tmask) {
  const __m256 ninf = _mm256_set1_ps(-INFINITY);
  __m256 vm = ninf;

  for (int64_t j = 0; j < body; j += 8)
    vm = _mm256_max_ps(_mm256_loadu_ps(x + j), vm);
  if (tail)
    vm = _mm256_max_ps(_mm256_blendv_ps(ninf, _mm256_maskload_ps(x + body, tmask),
                                        _mm256_castsi256_ps(tmask)),
                       vm);
  return hmax8(vm);
}

/* y = exp(x - m) along a row; returns their sum. */
SOFTMAX_INLINE float row_exp(float *y, const float *x, float mx,
                                    int64_t body, int tail, __m256i tmask) {
  const __m256 m = _mm256_set1_ps(mx);
  __m256 vs = _mm256_setzero_ps();

  for (int64_t j = 0; j < body; j += 8) {
    __m256 e = cpu_exp8_nonpos(_mm256_sub_ps(_mm256_loadu_ps(x + j), m));
    _mm256_storeu_ps(y + j, e);
    vs = _mm256_add_ps(vs, e);
  }
  if (tail) {
    __m256 e =
        cpu_exp8_nonpos(_mm256_sub_ps(_mm256_maskload_ps(x + body, tmask), m));
    e = _mm256_and_ps(e, _mm256_castsi256_ps(tmask));
    _mm256_maskstore_ps(y + body, tmask, e);
    vs = _mm256_add_ps(vs, e);
  }
  return hsum8(vs);
}

/* y = softmax of each of rows rows of c elements of x, a block of rows at
 * a time and each step for the whole block (maxima, then exponentials and
 * sums, then quotients): one row's steps form a chain of dependent
 * operations (about 100 cycles for a row of 28), and the rows of a block
 * are independent, so the core overlaps them. The row's last c % 8
 * elements go through masked loads and stores. */
static SOFTMAX_TARGET void softmax_rows(float *y, const float *x,
                                        int64_t rows, int64_t c) {
  enum { BLOCK = 16 };
  const int64_t body = c & ~(int64_t)7;
  const int tail = (int)(c - body);
  const __m256i tmask = _mm256_cmpgt_epi32(
      _mm256_set1_epi32(tail), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  float mx[BLOCK], sum[BLOCK];

  for (int64_t r0 = 0; r0 < rows; r0 += BLOCK) {
    int nb = rows - r0 < BLOCK ? (int)(rows - r0) : BLOCK;
    const float *xb = x + r0 * c;
    float *yb = y + r0 * c;
    for (int r = 0; r < nb; r++)
      mx[r] = row_max(xb + r * c, body, tail, tmask);
    for (int r = 0; r < nb; r++)
      sum[r] = row_exp(yb + r * c, xb + r * c, mx[r], body, tail, tmask);
    for (int r = 0; r < nb; r++) {
      __m256 s = _mm256_set1_ps(sum[r]);
      float *yr = yb + r * c;
      for (int64_t j = 0; j < body; j += 8)
        _mm256_storeu_ps(yr + j, _mm256_div_ps(_mm256_loadu_ps(yr + j), s));
      if (tail)
        _mm256_maskstore_ps(
            yr + body, tmask,
            _mm256_div_ps(_mm256_maskload_ps(yr + body, tmask), s));
    }
  }
}

/* ---- the same sixteen lanes to a vector, on AVX-512 ---- */

/* On a CPU with AVX-512 the rows go sixteen lanes at a time (the
 * transformer's rows of 28: one vector and one of 12 masked lanes, against
 * three and one of 4), with the masked lanes of AVX-512 for the row's
 * tail, and the quotients as products with the reciprocal of the row's
 * sum (one division a row instead of one a vector: within an ulp and a
 * half of the quotient, inside the tests' tolerance). Same exponential
 * as above. SoftmaxGrad's rows likewise (softmax_grad_rows16). On an
 * Intel Xeon with AVX-512 (2 cores), the transformer's training step
 * (bench/train --profile 100, three alternated pairs): Softmax 0.221-0.225
 * -> 0.179-0.184 ms, SoftmaxGrad 0.093-0.096 -> 0.072-0.074 ms. */
#define SOFTMAX16_TARGET __attribute__((target("avx512f")))
#define SOFTMAX16_INLINE                                                       \
  static inline __attribute__((always_inline, target("avx512f")))

/* As row_max: body c rounded down to 16, the tail's lanes in tm. maxps
 * passes over NaN as above. */
SOFTMAX16_INLINE float row_max16(const float *x, int64_t body, __mmask16 tm) {
  const __m512 ninf = _mm512_set1_ps(-INFINITY);
  __m512 vm = ninf;

  for (int64_t j = 0; j < body; j += 16)
    vm = _mm512_max_ps(_mm512_loadu_ps(x + j), vm);
  if (tm)
    vm = _mm512_max_ps(_mm512_mask_loadu_ps(ninf, tm, x + body), vm);
  return _mm512_reduce_max_ps(vm);
}

/* As row_exp. */
SOFTMAX16_INLINE float row_exp16(float *y, const float *x, float mx,
                                 int64_t body, __mmask16 tm) {
  const __m512 m = _mm512_set1_ps(mx);
  __m512 vs = _mm512_setzero_ps();

  for (int64_t j = 0; j < body; j += 16) {
    __m512 e = cpu_exp16_nonpos(_mm512_sub_ps(_mm512_loadu_ps(x + j), m));
    _mm512_storeu_ps(y + j, e);
    vs = _mm512_add_ps(vs, e);
  }
  if (tm) {
    __m512 e = cpu_exp16_nonpos(_mm512_sub_ps(_mm512_maskz_loadu_ps(tm, x + body), m));
    e = _mm512_maskz_mov_ps(tm, e);
    _mm512_mask_storeu_ps(y + body, tm, e);
    vs = _mm512_add_ps(vs, e);
  }
  return _mm512_reduce_add_ps(vs);
}

/* As softmax_rows. */
static SOFTMAX16_TARGET void softmax_rows16(float *y, const float *x,
                                            int64_t rows, int64_t c) {
  enum { BLOCK = 16 };
  const int64_t body = c & ~(int64_t)15;
  const __mmask16 tm = (__mmask16)((1u << (c - body)) - 1);
  float mx[BLOCK], sum[BLOCK];

  for (int64_t r0 = 0; r0 < rows; r0 += BLOCK) {
    int nb = rows - r0 < BLOCK ? (int)(rows - r0) : BLOCK;
    const float *xb = x + r0 * c;
    float *yb = y + r0 * c;
    for (int r = 0; r < nb; r++)
      mx[r] = row_max16(xb + r * c, body, tm);
    for (int r = 0; r < nb; r++)
      sum[r] = row_exp16(yb + r * c, xb + r * c, mx[r], body, tm);
    for (int r = 0; r < nb; r++) {
      __m512 s = _mm512_set1_ps(1.0f / sum[r]);
      float *yr = yb + r * c;
      for (int64_t j = 0; j < body; j += 16)
        _mm512_storeu_ps(yr + j, _mm512_mul_ps(_mm512_loadu_ps(yr + j), s));
      if (tm)
        _mm512_mask_storeu_ps(
            yr + body, tm, _mm512_mul_ps(_mm512_maskz_loadu_ps(tm, yr + body), s));
    }
  }
}

/* dx = y * (dy - <dy, y>) for each of rows rows of c (softmax_grad_rows),
 * the dot product in sixteen lanes of fused multiply-adds. */
static SOFTMAX16_TARGET void softmax_grad_rows16(float *dx, const float *y,
                                                 const float *dy, int64_t rows,
                                                 int64_t c) {
  const int64_t body = c & ~(int64_t)15;
  const __mmask16 tm = (__mmask16)((1u << (c - body)) - 1);

  for (int64_t r = 0; r < rows; r++, y += c, dy += c, dx += c) {
    __m512 p = _mm512_setzero_ps();
    for (int64_t j = 0; j < body; j += 16)
      p = _mm512_fmadd_ps(_mm512_loadu_ps(dy + j), _mm512_loadu_ps(y + j), p);
    if (tm)
      p = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(tm, dy + body),
                          _mm512_maskz_loadu_ps(tm, y + body), p);
    __m512 s = _mm512_set1_ps(_mm512_reduce_add_ps(p));
    for (int64_t j = 0; j < body; j += 16)
      _mm512_storeu_ps(dx + j,
                       _mm512_mul_ps(_mm512_loadu_ps(y + j),
                                     _mm512_sub_ps(_mm512_loadu_ps(dy + j), s)));
    if (tm)
      _mm512_mask_storeu_ps(
          dx + body, tm,
          _mm512_mul_ps(_mm512_maskz_loadu_ps(tm, y + body),
                        _mm512_sub_ps(_mm512_maskz_loadu_ps(tm, dy + body), s)));
  }
}

/* 1 on a CPU with AVX-512 (the loops above sixteen lanes at a time). */
static int softmax_sixteen(void) {
  return __builtin_cpu_supports("avx512f");
}

static void softmax_loops_part(void *arg, int t, int nt) {
  const softmax_loops_job *j = arg;
  int64_t lo = j->rows * t / nt, hi = j->rows * (t + 1) / nt;
  if (softmax_sixteen())
    softmax_rows16(j->y + lo * j->c, j->x + lo * j->c, hi - lo, j->c);
  else
    softmax_rows(j->y + lo * j->c, j->x + lo * j->c, hi - lo, j->c);
}

/* Rows [lo, hi) of a cross-entropy: back = exp(x - max) / sum - labels,
 * loss = -sum(labels * (x - max - log(sum))), labels one-hot at cls[i]
 * (sparse) or the rows of lab (dense). The logarithm of each row's sum is
 * taken in double. */
static SOFTMAX_TARGET void xent_rows(const xent_loops_job *j, int64_t lo,
                                     int64_t hi) {
  const int64_t c = j->c, body = c & ~(int64_t)7;
  const int tail = (int)(c - body);
  const __m256i tmask = _mm256_cmpgt_epi32(
      _mm256_set1_epi32(tail), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));

  for (int64_t i = lo; i < hi; i++) {
    const float *x = j->x + i * c;
    float *back = j->back + i * c;
    float mx = row_max(x, body, tail, tmask);
    float sum = row_exp(back, x, mx, body, tail, tmask);
    float ls = (float)log((double)sum);
    __m256 vs = _mm256_set1_ps(sum);

    for (int64_t k = 0; k < body; k += 8)
      _mm256_storeu_ps(back + k,
                       _mm256_div_ps(_mm256_loadu_ps(back + k), vs));
    if (tail)
      _mm256_maskstore_ps(
          back + body, tmask,
          _mm256_div_ps(_mm256_maskload_ps(back + body, tmask), vs));
    if (j->cls) {
      int64_t l = j->cls[i];
      j->loss[i] = -((x[l] - mx) - ls);
      back[l] -= 1.0f;
    } else {
      const float *y = j->lab + i * c;
      float loss = 0;
      for (int64_t k = 0; k < c; k++) {
        if (y[k] != 0)
          loss -= y[k] * ((x[k] - mx) - ls);
        back[k] -= y[k];
      }
      j->loss[i] = loss;
    }
  }
}

static void xent_loops_part(void *arg, int t, int nt) {
  const xent_loops_job *j = arg;
  xent_rows(j, j->rows * t / nt, j->rows * (t + 1) / nt);
}
#endif /* SOFTMAX_X86 */

static int softmax_loops(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  const wf_tensor *x;
  wf_shape xs;
  wf_tensor *out;
  softmax_loops_job j;

  (void)state;
  if (wfx_kernel_input(ctx, 0, &x, &xs, st) ||
      !(out = cpu_output(ctx, 0, NULL, st)))
    return wfx_code(st);
  int64_t n = wfx_count(x);
  if (n == 0)
    return 0;
  j.y = wfx_data(out);
  j.x = wfx_data(x);
  j.c = xs.dims[xs.rank - 1]; /* the shape function refuses rank 0 */
  j.rows = n / j.c;
#if SOFTMAX_X86
  cpu_team(softmax_loops_part, &j, n >= WF_CPU_SPLIT && j.rows > 1);
  return 0;
#else
  return wfx_fail(st, WF_INTERNAL, "the softmax loops are built for x86 only");
#endif
}

/* loops/softmax takes every float32 Softmax on a CPU with AVX2 and FMA
 * (elsewhere oneDNN's kernel, as before); `[kernels] deny =
 * loops/softmax` leaves them to it. */
static int softmax_loops_supports(const wf_node *node) {
  (void)node;
  return SOFTMAX_X86 && cpu_avx2_fma();
}

const wf_kernel_def cpu_k_softmax_loops = WFX_KERNEL_FOR(
    "cpu", "loops/softmax", "Softmax", "T", WF_DTYPE_BIT(WF_FLOAT32),
    softmax_loops, .priority = WF_CPU_FAST_PRIORITY + 1,
    .supports = softmax_loops_supports);

/* SoftmaxCrossEntropyWithLogits and its sparse form over float32 logits,
 * on the same CPUs as loops/softmax and under the same label: the
 * reference kernels (ops-nn) compute in double with the C library's exp,
 * twice an element, which took 11-17 us a step for the mlp's (64, 10)
 * logits, on the one thread the step runs between its products. Labels
 * and shapes are checked as the reference checks them, with its
 * messages. */
static int xent_loops(wf_kernel_ctx *ctx, int sparse, wf_status *st) {
  const wf_tensor *x, *lab;
  wf_shape xs, ls;
  wf_tensor *loss, *back;
  xent_loops_job j;
  int64_t *cls = NULL;

  if (wfx_kernel_input(ctx, 0, &x, &xs, st) ||
      wfx_kernel_input(ctx, 1, &lab, &ls, st))
    return wfx_code(st);
  /* the shape function accepted (N, C) logits and matching labels */
  j.rows = xs.dims[0];
  j.c = xs.dims[1];
  if (sparse && nx_sparse_labels(lab, j.rows, j.c, &cls, st))
    return wfx_code(st);
  if (!(loss = cpu_output(ctx, 0, NULL, st)) ||
      !(back = cpu_output(ctx, 1, NULL, st))) {
    wfx_host->free(cls);
    return wfx_code(st);
  }
  j.x = wfx_data(x);
  j.lab = sparse ? NULL : wfx_data(lab);
  j.cls = cls;
  j.loss = wfx_data(loss);
  j.back = wfx_data(back);
#if SOFTMAX_X86
  if (j.c == 0 && j.rows > 0) /* no classes (dense labels): a loss of 0 */
    memset(j.loss, 0, (size_t)j.rows * sizeof *j.loss);
  else if (j.rows > 0)
    cpu_team(xent_loops_part, &j, j.rows * j.c >= WF_CPU_SPLIT && j.rows > 1);
  wfx_host->free(cls);
  return 0;
#else
  wfx_host->free(cls);
  return wfx_fail(st, WF_INTERNAL,
                  "the cross-entropy loops are built for x86 only");
#endif
}

static int xent_loops_dense(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  (void)state;
  return xent_loops(ctx, 0, st);
}

static int xent_loops_sparse(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  (void)state;
  return xent_loops(ctx, 1, st);
}

const wf_kernel_def cpu_k_xent_loops = WFX_KERNEL_FOR(
    "cpu", "loops/softmax", "SoftmaxCrossEntropyWithLogits", "T",
    WF_DTYPE_BIT(WF_FLOAT32), xent_loops_dense,
    .priority = WF_CPU_FAST_PRIORITY + 1, .supports = softmax_loops_supports);
const wf_kernel_def cpu_k_sparse_xent_loops = WFX_KERNEL_FOR(
    "cpu", "loops/softmax", "SparseSoftmaxCrossEntropyWithLogits", "T",
    WF_DTYPE_BIT(WF_FLOAT32), xent_loops_sparse,
    .priority = WF_CPU_FAST_PRIORITY + 1, .supports = softmax_loops_supports);

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
