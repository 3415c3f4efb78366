/* plugins/devices/cpu/cpu_bias.c — fast float32 BiasAdd and BiasAddGrad,
 * the other half of a dense or convolution layer, as plain loops along the
 * contiguous dimension: channels for NHWC (value viewed as (rows, C)),
 * positions for NCHW ((N, C, rest)). Rows are shared by the intra-op
 * threads from WF_CPU_SPLIT elements on.
 *
 * Not oneDNN: on the development machine (one-node graph runs, 1 thread,
 * (64, 28, 28, 16) NHWC, best of 50), oneDNN 2.6's binary add with a
 * per-channel broadcast took 308 us (4.6 ms on 2 threads) and its sum
 * reduction (a reference implementation in 2.6) 5.5 ms; these loops took
 * 200 us and 253 us, the nn plugin's reference kernels 369 us and 483 us.
 *
 * BiasAdd gives the reference's bits. BiasAddGrad sums in double, like
 * the reference kernel, but not in its order (which carried one sum per
 * channel from row to row, a store and a load of latency per row): each
 * thread sums its rows, in registers, two running sums per channel, and
 * the threads' sums are added in thread order. The cnn's two gradients
 * went from 0.224 and 0.090 to 0.068 and 0.037 ms a step (bench/train
 * --profile 30 --by-node, 2-core AVX2 machine); cnn training 1.095x,
 * transformer training 1.043x (medians of five and four alternated runs).
 * Output shapes are the ops' shape functions' (cpu_output), so bad inputs
 * get the op's own error; empty tensors are computed here. */
#include <config.h>

#include "cpu_nn.h"

#include <string.h>

/* The loops are compiled for AVX-512 and AVX2 next to the baseline, chosen
 * at load time (GCC's target_clones); each element's arithmetic is the
 * same on every one, so are the results. (The NHWC gradient's sums are
 * the exception: AVX loops where the CPU has AVX, another order
 * elsewhere; sum_columns.) */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) &&         \
    defined(__linux__)
#define WF_BIAS_CLONES                                                         \
  __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define WF_BIAS_CLONES
#endif

typedef struct bias_state {
  int nchw;
} bias_state;

static void bias_destroy(void *state) { wfx_host->free(state); }

static int bias_create(wf_kernel_ctx *ctx, void **state, wf_status *st) {
  bias_state *s = wfx_host->alloc(sizeof *s, 0);
  nn_attrs a = {.kernel = ctx};

  *state = NULL;
  if (!s)
    return wfx_fail(st, WF_RESOURCE_EXHAUSTED,
                    "out of memory for a kernel's state");
  memset(s, 0, sizeof *s);
  /* Accepted by the op's shape function when the node was added. */
  if (nn_data_format(&a, &s->nchw, st)) {
    bias_destroy(s);
    return wfx_code(st);
  }
  *state = s;
  return 0;
}

/* y = x + b over outer rows [o0, o1) of the (outer, c, inner) view; y
 * may be x (WF_KERNEL_IN_PLACE). */
static WF_BIAS_CLONES void bias_add(float *y, const float *x,
                                    const float *restrict b, int64_t o0,
                                    int64_t o1, int64_t c, int64_t inner) {
  x += o0 * c * inner;
  y += o0 * c * inner;
  if (inner == 1) {
    for (int64_t o = o0; o < o1; o++, x += c, y += c)
      for (int64_t k = 0; k < c; k++)
        y[k] = x[k] + b[k];
    return;
  }
  for (int64_t o = o0; o < o1; o++)
    for (int64_t k = 0; k < c; k++, x += inner, y += inner) {
      float bk = b[k];
      for (int64_t i = 0; i < inner; i++)
        y[i] = x[i] + bk;
    }
}

/* The column sums of a (rows, c) block of x, in double: acc[k] = the sum of
 * x[o * c + k] over o. The plain loop carries each column's sum from row
 * to row through memory, at the latency of a store and a load per row; on
 * CPUs with AVX the sums of 16 columns (then 4) stay in registers, two sets
 * of them (the even rows' and the odd rows', added at the end) to overlap
 * the additions' latency. */
static void sum_columns_plain(double *restrict acc, const float *restrict x,
                              int64_t rows, int64_t c) {
  memset(acc, 0, (size_t)c * sizeof *acc);
  for (int64_t o = 0; o < rows; o++, x += c)
    for (int64_t k = 0; k < c; k++)
      acc[k] += x[k];
}

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#define BIAS_X86 1
#include <immintrin.h>
#define BIAS_WIDEN(p) _mm256_cvtps_pd(_mm_loadu_ps(p))

__attribute__((target("avx"))) static void
sum_columns_avx(double *restrict acc, const float *restrict x, int64_t rows,
                int64_t c) {
  int64_t k = 0;

  for (; k + 16 <= c; k += 16) {
    __m256d a0 = _mm256_setzero_pd(), a1 = a0, a2 = a0, a3 = a0;
    __m256d b0 = a0, b1 = a0, b2 = a0, b3 = a0;
    const float *p = x + k;
    int64_t o = 0;
    for (; o + 2 <= rows; o += 2, p += 2 * c) {
      a0 = _mm256_add_pd(a0, BIAS_WIDEN(p));
      a1 = _mm256_add_pd(a1, BIAS_WIDEN(p + 4));
      a2 = _mm256_add_pd(a2, BIAS_WIDEN(p + 8));
      a3 = _mm256_add_pd(a3, BIAS_WIDEN(p + 12));
      b0 = _mm256_add_pd(b0, BIAS_WIDEN(p + c));
      b1 = _mm256_add_pd(b1, BIAS_WIDEN(p + c + 4));
      b2 = _mm256_add_pd(b2, BIAS_WIDEN(p + c + 8));
      b3 = _mm256_add_pd(b3, BIAS_WIDEN(p + c + 12));
    }
    if (o < rows) {
      a0 = _mm256_add_pd(a0, BIAS_WIDEN(p));
      a1 = _mm256_add_pd(a1, BIAS_WIDEN(p + 4));
      a2 = _mm256_add_pd(a2, BIAS_WIDEN(p + 8));
      a3 = _mm256_add_pd(a3, BIAS_WIDEN(p + 12));
    }
    _mm256_storeu_pd(acc + k, _mm256_add_pd(a0, b0));
    _mm256_storeu_pd(acc + k + 4, _mm256_add_pd(a1, b1));
    _mm256_storeu_pd(acc + k + 8, _mm256_add_pd(a2, b2));
    _mm256_storeu_pd(acc + k + 12, _mm256_add_pd(a3, b3));
  }
  for (; k + 4 <= c; k += 4) {
    __m256d a0 = _mm256_setzero_pd(), b0 = a0;
    const float *p = x + k;
    int64_t o = 0;
    for (; o + 2 <= rows; o += 2, p += 2 * c) {
      a0 = _mm256_add_pd(a0, BIAS_WIDEN(p));
      b0 = _mm256_add_pd(b0, BIAS_WIDEN(p + c));
    }
    if (o < rows)
      a0 = _mm256_add_pd(a0, BIAS_WIDEN(p));
    _mm256_storeu_pd(acc + k, _mm256_add_pd(a0, b0));
  }
  for (; k < c; k++) {
    double a0 = 0, b0 = 0;
    const float *p = x + k;
    int64_t o = 0;
    for (; o + 2 <= rows; o += 2, p += 2 * c) {
      a0 += p[0];
      b0 += p[c];
    }
    if (o < rows)
      a0 += p[0];
    acc[k] = a0 + b0;
  }
}
#endif

static void sum_columns(double *restrict acc, const float *restrict x,
                        int64_t rows, int64_t c) {
#ifdef BIAS_X86
  if (__builtin_cpu_supports("avx")) {
    sum_columns_avx(acc, x, rows, c);
    return;
  }
#endif
  sum_columns_plain(acc, x, rows, c);
}

/* The sum of x[0..n-1] in double, in 8 partial sums (one per lane of the
 * vector registers the compiler gives them), then the tail. */
static WF_BIAS_CLONES double sum_run(const float *restrict x, int64_t n) {
  double p[8] = {0};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int j = 0; j < 8; j++)
      p[j] += x[i + j];
  double s = 0;
  for (int j = 0; j < 8; j++)
    s += p[j];
  for (; i < n; i++)
    s += x[i];
  return s;
}

/* BiasAdd and BiasAddGrad over the (outer, c, inner) view, outer rows
 * shared by the intra-op threads from WF_CPU_SPLIT elements on. BiasAddGrad:
 * each part sums its rows per channel into its own c doubles (part t at
 * acc + t * c), added in part order afterwards. */
typedef struct bias_job {
  float *y;
  const float *x, *b;
  double *acc;
  int64_t outer, c, inner;
  int grad, parts; /* BiasAddGrad: the row parts summed separately */
} bias_job;

/* Sums part p of j's rows into its accumulators. */
static void bias_sum_part(const bias_job *j, int p) {
  int64_t o0 = j->outer * p / j->parts, o1 = j->outer * (p + 1) / j->parts;
  double *acc = j->acc + (size_t)p * (size_t)j->c;

  if (j->inner == 1) {
    sum_columns(acc, j->x + o0 * j->c, o1 - o0, j->c);
    return;
  }
  memset(acc, 0, (size_t)j->c * sizeof *acc);
  const float *x = j->x + o0 * j->c * j->inner;
  for (int64_t o = o0; o < o1; o++)
    for (int64_t k = 0; k < j->c; k++, x += j->inner)
      acc[k] += sum_run(x, j->inner);
}

static void bias_part(void *arg, int t, int nt) {
  bias_job *j = arg;

  if (!j->grad) {
    bias_add(j->y, j->x, j->b, j->outer * t / nt, j->outer * (t + 1) / nt,
             j->c, j->inner);
    return;
  }
  /* every part, whatever the team's size: the sum depends on the parts
   * alone */
  for (int p = t; p < j->parts; p += nt)
    bias_sum_part(j, p);
}

/* BiasAdd (value, bias); BiasAddGrad (out_backprop). The output has the
 * shape the op's shape function gives (which also refuses what the op
 * refuses: a rank below 2, a bias that is not (C,)). */
static int bias_compute(wf_kernel_ctx *ctx, bias_state *s, int grad,
                        wf_status *st) {
  const wf_tensor *x, *b = NULL;
  wf_shape xs;
  int64_t outer = 1, inner = 1, c;
  int32_t inter, intra;
  wf_tensor *y;
  int axis, share;

  if (wfx_kernel_input(ctx, 0, &x, &xs, st) ||
      (!grad && wfx_kernel_input(ctx, 1, &b, NULL, st)))
    return wfx_code(st);
  if (!(y = cpu_output(ctx, 0, NULL, st)))
    return wfx_code(st);
  axis = nn_channel_axis(s->nchw, xs.rank);
  c = xs.dims[axis];
  for (int i = 0; i < axis; i++)
    outer *= xs.dims[i];
  for (int i = axis + 1; i < xs.rank; i++)
    inner *= xs.dims[i];
  share = wfx_count(x) >= WF_CPU_SPLIT && outer > 1;
  if (!grad) {
    bias_job j = {wfx_data(y), wfx_data(x), wfx_data(b), NULL, outer, c,
                  inner, 0, 0};
    if (wfx_count(y) > 0)
      cpu_team(bias_part, &j, share);
    return 0;
  }
  if (c == 0)
    return 0;
  if (outer == 0 || inner == 0) {
    memset(wfx_data(y), 0, (size_t)c * sizeof(float));
    return 0;
  }
  cpu_threads(&inter, &intra);
  bias_job j = {NULL, wfx_data(x), NULL, NULL, outer, c, inner, 1,
                share && intra > 1 ? (int)intra : 1};
  if (!(j.acc = wfx_host->alloc((size_t)j.parts * (size_t)c * sizeof *j.acc,
                                0)))
    return wfx_fail(st, WF_RESOURCE_EXHAUSTED,
                    "out of memory for %lld accumulators",
                    (long long)(j.parts * c));
  cpu_team(bias_part, &j, j.parts > 1);
  {
    float *db = wfx_data(y);
    for (int64_t k = 0; k < c; k++) {
      double sum = j.acc[k];
      for (int t = 1; t < j.parts; t++)
        sum += j.acc[(size_t)t * (size_t)c + (size_t)k];
      db[k] = (float)sum;
    }
  }
  wfx_host->free(j.acc);
  return 0;
}

static int bias_add_compute(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  return bias_compute(ctx, state, 0, st);
}

static int bias_add_grad_compute(wf_kernel_ctx *ctx, void *state,
                                 wf_status *st) {
  return bias_compute(ctx, state, 1, st);
}

const wf_kernel_def cpu_k_bias_add =
    WFX_KERNEL_FOR("cpu", "loops", "BiasAdd", "T", WF_DTYPE_BIT(WF_FLOAT32),
                   bias_add_compute, .priority = WF_CPU_FAST_PRIORITY,
                   .flags = WF_KERNEL_IN_PLACE, .create = bias_create,
                   .destroy = bias_destroy);
const wf_kernel_def cpu_k_bias_add_grad =
    WFX_KERNEL_FOR("cpu", "loops", "BiasAddGrad", "T", WF_DTYPE_BIT(WF_FLOAT32),
                   bias_add_grad_compute, .priority = WF_CPU_FAST_PRIORITY,
                   .create = bias_create, .destroy = bias_destroy);
