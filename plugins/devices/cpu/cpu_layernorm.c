/* plugins/devices/cpu/cpu_layernorm.c — fast float32 LayerNorm and
 * LayerNormGrad (the transformer's normalisation over the last axis): the
 * row statistics in float (two passes over a row that stays in L1), loops
 * the compiler vectorises along the row, and the scale and offset
 * gradients accumulated per feature in double (each thread its own, added
 * in thread order). Rows are shared by the intra-op threads from
 * WF_CPU_SPLIT elements on: the transformer's LayerNorm + LayerNormGrad
 * went from 1.41-1.47 to 0.75-0.96 ms a step on two threads (bench/train
 * --profile 30, three alternated pairs, 2-core AVX2 machine; training
 * 1.10x). Rows of a multiple of 8 elements run AVX2 loops on CPUs that
 * have it (below): LayerNormGrad 110 -> 65 us and LayerNorm 43 -> 25 us
 * on (64, 28, 64), three alternated pairs; rows of a multiple of 16 run
 * AVX-512 loops on CPUs that have it (further below).
 *
 * Not the nn plugin's reference kernels (double arithmetic per element):
 * on the transformer's (64, 28, 64) activations, traced training steps
 * (bench/train --profile 20, three interleaved pairs of runs, the
 * reference chosen by [kernels] deny = LayerNorm:loops, LayerNormGrad:loops)
 * gave LayerNorm + LayerNormGrad 5.33, 4.01 and 3.19 ms per step with the
 * reference kernels and 0.85, 0.80 and 1.18 ms with these. Results differ
 * from the reference by
 * float rounding (tests/ops/test_layer_norm checks both against the
 * definition, 1e-5). Inputs the op refuses get the op's own error (its
 * shape function, through kernel_output_shape); empty tensors are
 * computed here. */
#include <config.h>

#include "cpu_nn.h"

#include <math.h>
#include <string.h>


#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) &&         \
    defined(__linux__)
#define WF_LN_CLONES                                                           \
  __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define WF_LN_CLONES
#endif

/* Sum of x[0..c-1] in 16 partial sums (lanes the compiler can keep in one
 * vector register: a single running float sum would not vectorise without
 * reassociation), then the tail. */
static inline float row_sum(const float *restrict x, int64_t c) {
  float p[16] = {0};
  int64_t j = 0;
  for (; j + 16 <= c; j += 16)
    for (int k = 0; k < 16; k++)
      p[k] += x[j + k];
  float s = 0;
  for (int k = 0; k < 16; k++)
    s += p[k];
  for (; j < c; j++)
    s += x[j];
  return s;
}

/* mean and 1 / sqrt(biased variance + eps) of a row of c; t (c floats) is
 * scratch for the squared deviations. */
static inline void row_stats(const float *restrict x, int64_t c, float eps,
                             float *restrict t, float *mean, float *rstd) {
  float m = row_sum(x, c) / (float)c;
  for (int64_t j = 0; j < c; j++)
    t[j] = (x[j] - m) * (x[j] - m);
  *mean = m;
  *rstd = 1.0f / sqrtf(row_sum(t, c) / (float)c + eps);
}

/* t: c floats of scratch. */
static WF_LN_CLONES void ln_forward(float *restrict y, const float *restrict x,
                                    const float *restrict g,
                                    const float *restrict b, float *restrict t,
                                    int64_t rows, int64_t c, float eps) {
  for (int64_t r = 0; r < rows; r++, x += c, y += c) {
    float m, rs;
    row_stats(x, c, eps, t, &m, &rs);
    for (int64_t j = 0; j < c; j++)
      y[j] = (x[j] - m) * rs * g[j] + b[j];
  }
}

/* dx per row; dscale and doffset summed over rows into acc (2c doubles,
 * zeroed here); t: 3c floats of scratch. */
static WF_LN_CLONES void ln_backward(float *restrict dx, double *restrict acc,
                                     const float *restrict dy,
                                     const float *restrict x,
                                     const float *restrict g,
                                     float *restrict t, int64_t rows,
                                     int64_t c, float eps) {
  double *ds = acc, *db = acc + c;
  float *xh = t + c, *gy = t + 2 * c;
  memset(acc, 0, (size_t)(2 * c) * sizeof *acc);
  for (int64_t r = 0; r < rows; r++, x += c, dy += c, dx += c) {
    float m, rs;
    row_stats(x, c, eps, t, &m, &rs);
    for (int64_t j = 0; j < c; j++) {
      xh[j] = (x[j] - m) * rs;
      gy[j] = dy[j] * g[j];
      ds[j] += (double)(dy[j] * xh[j]);
      db[j] += (double)dy[j];
    }
    float sg = row_sum(gy, c) / (float)c;
    for (int64_t j = 0; j < c; j++)
      t[j] = gy[j] * xh[j];
    float sgx = row_sum(t, c) / (float)c;
    for (int64_t j = 0; j < c; j++)
      dx[j] = rs * (gy[j] - sg - xh[j] * sgx);
  }
}

/* ---- rows of whole vectors on AVX2 ------------------------------------------ */

/* Rows of a multiple of 8 elements (the transformer's 64) on a CPU with
 * AVX2 and FMA: the same passes written with AVX2 intrinsics, the
 * backward's row sums taken in the pass that forms x-hat and g * dy. The
 * compiler's loops above spend most of a short row in their prologues,
 * epilogues and aliasing checks (about 660 instructions a row of 64 for
 * LayerNormGrad); these need about half. Same results up to float
 * rounding (the products are fused multiply-adds here). */
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#define LN_X86 1
#include <immintrin.h>
#define LN_TARGET __attribute__((target("avx2,fma")))
#define LN_INLINE static inline __attribute__((always_inline, target("avx2,fma")))

LN_INLINE float ln_hsum(__m256 v) {
  __m128 a = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  a = _mm_add_ps(a, _mm_movehl_ps(a, a));
  a = _mm_add_ss(a, _mm_movehdup_ps(a));
  return _mm_cvtss_f32(a);
}

/* mean and 1 / sqrt(biased variance + eps) of a row of c (c % 8 == 0). */
LN_INLINE void ln_stats8(const float *x, int64_t c, float eps, float *mean,
                         float *rstd) {
  __m256 s0 = _mm256_setzero_ps(), s1 = s0;
  int64_t j = 0;
  for (; j + 16 <= c; j += 16) {
    s0 = _mm256_add_ps(s0, _mm256_loadu_ps(x + j));
    s1 = _mm256_add_ps(s1, _mm256_loadu_ps(x + j + 8));
  }
  if (j < c)
    s0 = _mm256_add_ps(s0, _mm256_loadu_ps(x + j));
  float m = ln_hsum(_mm256_add_ps(s0, s1)) / (float)c;
  __m256 vm = _mm256_set1_ps(m);
  s0 = s1 = _mm256_setzero_ps();
  for (j = 0; j + 16 <= c; j += 16) {
    __m256 d0 = _mm256_sub_ps(_mm256_loadu_ps(x + j), vm);
    __m256 d1 = _mm256_sub_ps(_mm256_loadu_ps(x + j + 8), vm);
    s0 = _mm256_fmadd_ps(d0, d0, s0);
    s1 = _mm256_fmadd_ps(d1, d1, s1);
  }
  if (j < c) {
    __m256 d0 = _mm256_sub_ps(_mm256_loadu_ps(x + j), vm);
    s0 = _mm256_fmadd_ps(d0, d0, s0);
  }
  *mean = m;
  *rstd = 1.0f / sqrtf(ln_hsum(_mm256_add_ps(s0, s1)) / (float)c + eps);
}

static LN_TARGET void ln_forward8(float *y, const float *x, const float *g,
                                  const float *b, int64_t rows, int64_t c,
                                  float eps) {
  for (int64_t r = 0; r < rows; r++, x += c, y += c) {
    float m, rs;
    ln_stats8(x, c, eps, &m, &rs);
    __m256 vm = _mm256_set1_ps(m), vr = _mm256_set1_ps(rs);
    for (int64_t j = 0; j < c; j += 8) {
      __m256 xh = _mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(x + j), vm), vr);
      _mm256_storeu_ps(y + j, _mm256_fmadd_ps(xh, _mm256_loadu_ps(g + j),
                                              _mm256_loadu_ps(b + j)));
    }
  }
}

/* As ln_backward; t: 2c floats of scratch (x-hat, g * dy). */
static LN_TARGET void ln_backward8(float *dx, double *acc, const float *dy,
                                   const float *x, const float *g, float *t,
                                   int64_t rows, int64_t c, float eps) {
  double *ds = acc, *db = acc + c;
  float *xh = t, *gy = t + c;
  memset(acc, 0, (size_t)(2 * c) * sizeof *acc);
  for (int64_t r = 0; r < rows; r++, x += c, dy += c, dx += c) {
    float m, rs;
    ln_stats8(x, c, eps, &m, &rs);
    __m256 vm = _mm256_set1_ps(m), vr = _mm256_set1_ps(rs);
    __m256 sg = _mm256_setzero_ps(), sgx = sg;
    for (int64_t j = 0; j < c; j += 8) {
      __m256 d = _mm256_loadu_ps(dy + j);
      __m256 h = _mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(x + j), vm), vr);
      __m256 gd = _mm256_mul_ps(d, _mm256_loadu_ps(g + j));
      __m256 p = _mm256_mul_ps(d, h);
      _mm256_storeu_ps(xh + j, h);
      _mm256_storeu_ps(gy + j, gd);
      sg = _mm256_add_ps(sg, gd);
      sgx = _mm256_fmadd_ps(gd, h, sgx);
      /* the vectors' gradients: each product rounded to float, summed in
       * double, as the loops above do */
      _mm256_storeu_pd(ds + j, _mm256_add_pd(_mm256_loadu_pd(ds + j),
                                             _mm256_cvtps_pd(_mm256_castps256_ps128(p))));
      _mm256_storeu_pd(ds + j + 4,
                       _mm256_add_pd(_mm256_loadu_pd(ds + j + 4),
                                     _mm256_cvtps_pd(_mm256_extractf128_ps(p, 1))));
      _mm256_storeu_pd(db + j, _mm256_add_pd(_mm256_loadu_pd(db + j),
                                             _mm256_cvtps_pd(_mm256_castps256_ps128(d))));
      _mm256_storeu_pd(db + j + 4,
                       _mm256_add_pd(_mm256_loadu_pd(db + j + 4),
                                     _mm256_cvtps_pd(_mm256_extractf128_ps(d, 1))));
    }
    __m256 vsg = _mm256_set1_ps(ln_hsum(sg) / (float)c);
    __m256 vsgx = _mm256_set1_ps(ln_hsum(sgx) / (float)c);
    for (int64_t j = 0; j < c; j += 8) {
      __m256 v = _mm256_sub_ps(_mm256_loadu_ps(gy + j), vsg);
      v = _mm256_fnmadd_ps(_mm256_loadu_ps(xh + j), vsgx, v);
      _mm256_storeu_ps(dx + j, _mm256_mul_ps(vr, v));
    }
  }
}

/* ---- rows of whole vectors on AVX-512 --------------------------------------- */

/* Rows of a multiple of 16 elements on a CPU with AVX-512: the AVX2
 * passes sixteen lanes at a time, and in the backward pass the scale and
 * offset gradients summed in float over a block of LN_BLOCK rows before
 * the block's sums are added to the double accumulators (the AVX2 loops
 * convert and add every row's products in double: 29 instructions for 8
 * elements of the gradient pass against 16 for 16 here). The block's
 * float sums of 16 products round a few units in the 7th digit at most,
 * well inside the 1e-5 the tests hold the kernel to. On an Intel Xeon
 * with AVX-512 (2 cores), the transformer's training step (bench/train
 * --profile 100, three alternated pairs): LayerNormGrad 0.31-0.34 ->
 * 0.20-0.22 ms, LayerNorm 0.113-0.121 -> 0.093-0.104 ms. */
#define LN_BLOCK 16
#define LN512_TARGET __attribute__((target("avx512f,fma")))
#define LN512_INLINE                                                           \
  static inline __attribute__((always_inline, target("avx512f,fma")))

/* mean and 1 / sqrt(biased variance + eps) of a row of c (c % 16 == 0). */
LN512_INLINE void ln_stats16(const float *x, int64_t c, float eps,
                             float *mean, float *rstd) {
  __m512 s0 = _mm512_setzero_ps(), s1 = s0;
  int64_t j = 0;
  for (; j + 32 <= c; j += 32) {
    s0 = _mm512_add_ps(s0, _mm512_loadu_ps(x + j));
    s1 = _mm512_add_ps(s1, _mm512_loadu_ps(x + j + 16));
  }
  if (j < c)
    s0 = _mm512_add_ps(s0, _mm512_loadu_ps(x + j));
  float m = _mm512_reduce_add_ps(_mm512_add_ps(s0, s1)) / (float)c;
  __m512 vm = _mm512_set1_ps(m);
  s0 = s1 = _mm512_setzero_ps();
  for (j = 0; j + 32 <= c; j += 32) {
    __m512 d0 = _mm512_sub_ps(_mm512_loadu_ps(x + j), vm);
    __m512 d1 = _mm512_sub_ps(_mm512_loadu_ps(x + j + 16), vm);
    s0 = _mm512_fmadd_ps(d0, d0, s0);
    s1 = _mm512_fmadd_ps(d1, d1, s1);
  }
  if (j < c) {
    __m512 d0 = _mm512_sub_ps(_mm512_loadu_ps(x + j), vm);
    s0 = _mm512_fmadd_ps(d0, d0, s0);
  }
  *mean = m;
  *rstd =
      1.0f / sqrtf(_mm512_reduce_add_ps(_mm512_add_ps(s0, s1)) / (float)c + eps);
}

static LN512_TARGET void ln_forward16(float *y, const float *x, const float *g,
                                      const float *b, int64_t rows, int64_t c,
                                      float eps) {
  for (int64_t r = 0; r < rows; r++, x += c, y += c) {
    float m, rs;
    ln_stats16(x, c, eps, &m, &rs);
    __m512 vm = _mm512_set1_ps(m), vr = _mm512_set1_ps(rs);
    for (int64_t j = 0; j < c; j += 16) {
      __m512 xh = _mm512_mul_ps(_mm512_sub_ps(_mm512_loadu_ps(x + j), vm), vr);
      _mm512_storeu_ps(y + j, _mm512_fmadd_ps(xh, _mm512_loadu_ps(g + j),
                                              _mm512_loadu_ps(b + j)));
    }
  }
}

/* As ln_backward; t: 4c floats of scratch (x-hat, g * dy, and the block's
 * float sums of the scale and offset gradients). */
static LN512_TARGET void ln_backward16(float *dx, double *acc, const float *dy,
                                       const float *x, const float *g,
                                       float *t, int64_t rows, int64_t c,
                                       float eps) {
  double *ds = acc, *db = acc + c;
  float *xh = t, *gy = t + c, *fs = t + 2 * c, *fb = t + 3 * c;
  memset(acc, 0, (size_t)(2 * c) * sizeof *acc);
  for (int64_t r0 = 0; r0 < rows; r0 += LN_BLOCK) {
    int64_t nb = rows - r0 < LN_BLOCK ? rows - r0 : LN_BLOCK;
    memset(fs, 0, (size_t)(2 * c) * sizeof *fs);
    for (int64_t r = 0; r < nb; r++, x += c, dy += c, dx += c) {
      float m, rs;
      ln_stats16(x, c, eps, &m, &rs);
      __m512 vm = _mm512_set1_ps(m), vr = _mm512_set1_ps(rs);
      __m512 sg = _mm512_setzero_ps(), sgx = sg;
      for (int64_t j = 0; j < c; j += 16) {
        __m512 d = _mm512_loadu_ps(dy + j);
        __m512 h = _mm512_mul_ps(_mm512_sub_ps(_mm512_loadu_ps(x + j), vm), vr);
        __m512 gd = _mm512_mul_ps(d, _mm512_loadu_ps(g + j));
        _mm512_storeu_ps(xh + j, h);
        _mm512_storeu_ps(gy + j, gd);
        sg = _mm512_add_ps(sg, gd);
        sgx = _mm512_fmadd_ps(gd, h, sgx);
        _mm512_storeu_ps(fs + j, _mm512_fmadd_ps(d, h, _mm512_loadu_ps(fs + j)));
        _mm512_storeu_ps(fb + j, _mm512_add_ps(_mm512_loadu_ps(fb + j), d));
      }
      __m512 vsg = _mm512_set1_ps(_mm512_reduce_add_ps(sg) / (float)c);
      __m512 vsgx = _mm512_set1_ps(_mm512_reduce_add_ps(sgx) / (float)c);
      for (int64_t j = 0; j < c; j += 16) {
        __m512 v = _mm512_sub_ps(_mm512_loadu_ps(gy + j), vsg);
        v = _mm512_fnmadd_ps(_mm512_loadu_ps(xh + j), vsgx, v);
        _mm512_storeu_ps(dx + j, _mm512_mul_ps(vr, v));
      }
    }
    for (int64_t j = 0; j < c; j += 8) {
      _mm512_storeu_pd(ds + j, _mm512_add_pd(_mm512_loadu_pd(ds + j),
                                             _mm512_cvtps_pd(_mm256_loadu_ps(fs + j))));
      _mm512_storeu_pd(db + j, _mm512_add_pd(_mm512_loadu_pd(db + j),
                                             _mm512_cvtps_pd(_mm256_loadu_ps(fb + j))));
    }
  }
}
#else
#define LN_X86 0
#endif

/* The loops rows of c go to: LN_LOOPS_16 (AVX-512), LN_LOOPS_8 (AVX2 and
 * FMA) or the generic ones. */
enum { LN_LOOPS_ANY = 0, LN_LOOPS_8 = 8, LN_LOOPS_16 = 16 };
static int ln_loops(int64_t c) {
#if LN_X86
  if (c % 16 == 0 && __builtin_cpu_supports("avx512f"))
    return LN_LOOPS_16;
  if (c % 8 == 0 && __builtin_cpu_supports("avx2") &&
      __builtin_cpu_supports("fma"))
    return LN_LOOPS_8;
#else
  (void)c;
#endif
  return LN_LOOPS_ANY;
}

/* A LayerNorm or LayerNormGrad call, its rows shared by the intra-op
 * team: thread t of nt takes rows [rows * t / nt, rows * (t + 1) / nt)
 * and slot t of the scratch (and, backward, of the accumulators). */
typedef struct ln_job {
  float *y, *dx;
  const float *x, *g, *b, *dy;
  float *t;    /* forward: c floats of scratch a slot */
  double *acc; /* backward: a slot of slot_bytes each */
  size_t slot_bytes;
  int64_t rows, c;
  int slots;
  int loops; /* ln_loops */
  float eps;
} ln_job;

/* Slots (threads that may share the rows): the intra-op count from
 * WF_CPU_SPLIT elements on, else 1. */
static int ln_slots(int64_t n, int64_t rows) {
  int32_t inter, intra;

  cpu_threads(&inter, &intra);
  return n >= WF_CPU_SPLIT && rows > 1 && intra > 1 ? (int)intra : 1;
}

static void ln_forward_part(void *arg, int t, int nt) {
  const ln_job *j = arg;
  int64_t lo = j->rows * t / nt, hi = j->rows * (t + 1) / nt, c = j->c;

#if LN_X86
  if (j->loops == LN_LOOPS_16) {
    ln_forward16(j->y + lo * c, j->x + lo * c, j->g, j->b, hi - lo, c, j->eps);
    return;
  }
  if (j->loops == LN_LOOPS_8) {
    ln_forward8(j->y + lo * c, j->x + lo * c, j->g, j->b, hi - lo, c, j->eps);
    return;
  }
#endif
  ln_forward(j->y + lo * c, j->x + lo * c, j->g, j->b, j->t + t * c, hi - lo,
             c, j->eps);
}

static void ln_backward_part(void *arg, int t, int nt) {
  const ln_job *j = arg;
  int64_t lo = j->rows * t / nt, hi = j->rows * (t + 1) / nt, c = j->c;
  double *acc = (double *)((char *)j->acc + (size_t)t * j->slot_bytes);

#if LN_X86
  if (j->loops == LN_LOOPS_16) {
    ln_backward16(j->dx + lo * c, acc, j->dy + lo * c, j->x + lo * c, j->g,
                  (float *)(acc + 2 * c), hi - lo, c, j->eps);
    return;
  }
  if (j->loops == LN_LOOPS_8) {
    ln_backward8(j->dx + lo * c, acc, j->dy + lo * c, j->x + lo * c, j->g,
                 (float *)(acc + 2 * c), hi - lo, c, j->eps);
    return;
  }
#endif
  ln_backward(j->dx + lo * c, acc, j->dy + lo * c, j->x + lo * c, j->g,
              (float *)(acc + 2 * c), hi - lo, c, j->eps);
}

/* Reads epsilon (>= 0) and checks the inputs through the op's shape
 * function (kernel_output_shape: x of rank >= 1, the vectors (C,) with C
 * x's last dim), so that a refused input gets the op's own error. */
static int ln_prepare(wf_kernel_ctx *ctx, double *eps, wf_status *st) {
  nn_attrs a = {.kernel = ctx};
  wf_shape s;

  if (nn_attr_float(&a, "epsilon", eps, st))
    return wfx_code(st);
  if (!(*eps >= 0))
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "attribute 'epsilon' must be >= 0, got %g", *eps);
  return wfx_host->kernel_output_shape(ctx, 0, &s, st);
}

static int ln_compute(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  const wf_tensor *x, *g, *b;
  wf_shape xs;
  double eps;
  wf_tensor *y;

  (void)state;
  if (ln_prepare(ctx, &eps, st) || wfx_kernel_input(ctx, 0, &x, &xs, st) ||
      wfx_kernel_input(ctx, 1, &g, NULL, st) ||
      wfx_kernel_input(ctx, 2, &b, NULL, st))
    return wfx_code(st);
  int64_t c = xs.dims[xs.rank - 1], n = wfx_count(x);
  float *t;
  if (!(y = wfx_host->kernel_output_new(ctx, 0, &xs, st)))
    return wfx_code(st);
  if (n == 0) /* nothing to normalise */
    return 0;
  ln_job j = {.y = wfx_data(y), .x = wfx_data(x), .g = wfx_data(g),
              .b = wfx_data(b), .rows = n / c, .c = c, .eps = (float)eps};
  j.slots = ln_slots(n, j.rows);
  j.loops = ln_loops(c);
  if (!(t = wfx_host->alloc((size_t)(j.slots * c) * sizeof *t, 64)))
    return wfx_fail(st, WF_RESOURCE_EXHAUSTED,
                    "out of memory for a row of %lld", (long long)c);
  j.t = t;
  cpu_team(ln_forward_part, &j, j.slots > 1);
  wfx_host->free(t);
  return 0;
}

static int ln_grad_compute(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  const wf_tensor *dy, *x, *g;
  wf_shape xs, cs;
  double eps, *acc;
  wf_tensor *dx, *ds, *db;

  (void)state;
  if (ln_prepare(ctx, &eps, st) || wfx_kernel_input(ctx, 0, &dy, NULL, st) ||
      wfx_kernel_input(ctx, 1, &x, &xs, st) ||
      wfx_kernel_input(ctx, 2, &g, NULL, st))
    return wfx_code(st);
  int64_t c = xs.dims[xs.rank - 1], n = wfx_count(x);
  wfx_shape_make(&cs, 1, &c);
  if (!(dx = wfx_host->kernel_output_new(ctx, 0, &xs, st)) ||
      !(ds = wfx_host->kernel_output_new(ctx, 1, &cs, st)) ||
      !(db = wfx_host->kernel_output_new(ctx, 2, &cs, st)))
    return wfx_code(st);
  if (n == 0) { /* no rows: the vectors' gradients are sums of nothing */
    memset(wfx_data(ds), 0, (size_t)c * sizeof(float));
    memset(wfx_data(db), 0, (size_t)c * sizeof(float));
    return 0;
  }
  ln_job j = {.dx = wfx_data(dx), .dy = wfx_data(dy), .x = wfx_data(x),
              .g = wfx_data(g), .rows = n / c, .c = c, .eps = (float)eps};
  j.slots = ln_slots(n, j.rows);
  j.loops = ln_loops(c);
  /* Each slot: 2c double accumulators, then 4c floats of scratch. */
  size_t slot = (size_t)c * (2 * sizeof *acc + 4 * sizeof(float));
  if (!(acc = wfx_host->alloc((size_t)j.slots * slot, 64)))
    return wfx_fail(st, WF_RESOURCE_EXHAUSTED,
                    "out of memory for %lld accumulators",
                    (long long)(2 * c * j.slots));
  /* A team smaller than the slots leaves some untouched: zero sums. */
  memset(acc, 0, (size_t)j.slots * slot);
  j.acc = acc;
  j.slot_bytes = slot;
  cpu_team(ln_backward_part, &j, j.slots > 1);
  /* The threads' sums added in thread order. */
  float *dsv = wfx_data(ds), *dbv = wfx_data(db);
  for (int64_t k = 0; k < c; k++) {
    double sd = 0, sb = 0;
    for (int t = 0; t < j.slots; t++) {
      const double *a = (const double *)((char *)acc + (size_t)t * slot);
      sd += a[k];
      sb += a[c + k];
    }
    dsv[k] = (float)sd;
    dbv[k] = (float)sb;
  }
  wfx_host->free(acc);
  return 0;
}

const wf_kernel_def cpu_k_layer_norm =
    WFX_KERNEL_FOR("cpu", "loops", "LayerNorm", "T", WF_DTYPE_BIT(WF_FLOAT32),
                   ln_compute, .priority = WF_CPU_FAST_PRIORITY);
const wf_kernel_def cpu_k_layer_norm_grad = WFX_KERNEL_FOR(
    "cpu", "loops", "LayerNormGrad", "T", WF_DTYPE_BIT(WF_FLOAT32),
    ln_grad_compute, .priority = WF_CPU_FAST_PRIORITY);
