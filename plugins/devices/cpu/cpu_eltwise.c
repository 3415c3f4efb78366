/* plugins/devices/cpu/cpu_eltwise.c — fast float32 activations and their
 * fused backward ops on oneDNN eltwise primitives: Relu, LeakyRelu, Elu,
 * Sigmoid, Tanh, Gelu (exact and tanh form), Softplus, Exp, Sqrt, Square;
 * ReluGrad, LeakyReluGrad, GeluGrad, SoftplusGrad from the forward input;
 * EluGrad, SigmoidGrad, TanhGrad, SqrtGrad from the forward output. The
 * tensor is one flat run of elements whatever its shape.
 *
 * oneDNN computes in float32 (the reference kernels go through double),
 * so results agree within float rounding: for Elu and Softplus the
 * absolute error near 0 and in the far negative tail is float epsilon
 * (oneDNN has no expm1/log1p form). Other dtypes keep the reference
 * kernels.
 *
 * Every one may write its output over input 0 (WF_KERNEL_IN_PLACE): oneDNN
 * runs eltwise primitives in place, src over dst forward and diff_dst over
 * diff_src backward. */
#include <config.h>

#include "cpu_kernels.h"

#include <inttypes.h>
#include <string.h>

/* How an op maps onto oneDNN. */
typedef struct eltwise_op {
  dnnl_alg_kind_t alg;
  float alpha;        /* oneDNN's alpha, unless read from the attribute */
  int grad;           /* inputs (dy, x or y) */
  int from_dst;       /* grad: the second input is the forward output */
  int alpha_attr;     /* alpha is the node's "alpha" (LeakyRelu) */
} eltwise_op;

enum { ATTR_ALG = 0 };
enum { FATTR_ALPHA = 0 };

/* Plan memories: forward (x -> y); backward (dy, x or y -> dx). */
enum { MEM_A = 0, MEM_B = 1, MEM_OUT = 2 };

typedef struct eltwise_job {
  dnnl_alg_kind_t alg;
  float alpha;
  int grad, from_dst;
  int64_t count;
} eltwise_job;

static int eltwise_build(void *arg, cpu_dnnl_plan *p, wf_status *st) {
  const eltwise_job *j = arg;
  dnnl_memory_desc_t md;
  dnnl_eltwise_desc_t fdesc, bdesc;
  dnnl_primitive_desc_t fwd = NULL, bwd = NULL;
  dnnl_status_t s;
  int rc;

  if (cpu_dnnl_md(&md, 1, &j->count, NULL, st))
    return wfx_code(st);
  s = dnnl_eltwise_forward_desc_init(
      &fdesc, j->grad ? dnnl_forward_training : dnnl_forward_inference,
      j->alg, &md, j->alpha, 0.0f);
  if (s != dnnl_success)
    return cpu_dnnl_refuse(s, "eltwise setup", st);
  if (cpu_dnnl_pd(&fwd, &fdesc, NULL, "eltwise setup", st))
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
  s = dnnl_eltwise_backward_desc_init(&bdesc, j->alg, &md, &md, j->alpha,
                                      0.0f);
  if (s != dnnl_success) {
    dnnl_primitive_desc_destroy(fwd);
    return cpu_dnnl_refuse(s, "eltwise backward setup", st);
  }
  rc = cpu_dnnl_pd(&bwd, &bdesc, fwd, "eltwise backward setup", st);
  dnnl_primitive_desc_destroy(fwd);
  if (rc)
    return wfx_code(st);
  {
    const int ids[3] = {DNNL_ARG_DIFF_DST,
                        j->from_dst ? DNNL_ARG_DST : DNNL_ARG_SRC,
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

/* create: the op's mapping, with the attributes that change it (LeakyRelu's
 * alpha, Gelu's form). */
static int eltwise_create(wf_kernel_ctx *ctx, void **state,
                          const eltwise_op *op, wf_status *st) {
  cpu_dnnl_state *s;
  double alpha = op->alpha;
  int approximate = 0;
  dnnl_alg_kind_t alg = op->alg;

  *state = NULL;
  if (op->alpha_attr && wfx_kernel_attr_float(ctx, "alpha", &alpha, st))
    return wfx_code(st);
  if (alg == dnnl_eltwise_gelu_erf) {
    if (wfx_kernel_attr_bool(ctx, "approximate", &approximate, st))
      return wfx_code(st);
    if (approximate)
      alg = dnnl_eltwise_gelu_tanh;
  }
  if (cpu_dnnl_state_new(&s, st))
    return wfx_code(st);
  s->attr[ATTR_ALG] = alg;
  s->fattr[FATTR_ALPHA] = alpha;
  *state = s;
  return 0;
}

static int eltwise_compute(wf_kernel_ctx *ctx, cpu_dnnl_state *s,
                           const eltwise_op *op, wf_status *st) {
  const wf_tensor *a, *b = NULL;
  wf_shape as;
  wf_tensor *out;
  eltwise_job j;
  cpu_key key = {0};
  cpu_dnnl_plan *p;
  void *data[3];
  int rc;

  if (wfx_kernel_input(ctx, 0, &a, &as, st) ||
      (op->grad && wfx_kernel_input(ctx, 1, &b, NULL, st)))
    return wfx_code(st);
  /* A backward op's shape function checks dy against x or y; a forward
   * op's output is its input's shape. */
  out = op->grad ? cpu_output(ctx, 0, NULL, st)
                 : wfx_host->kernel_output_new(ctx, 0, &as, st);
  if (!out)
    return wfx_code(st);
  memset(&j, 0, sizeof j);
  j.count = wfx_count(a);
  if (j.count == 0)
    return 0;
  j.alg = (dnnl_alg_kind_t)s->attr[ATTR_ALG];
  j.alpha = (float)s->fattr[FATTR_ALPHA];
  j.grad = op->grad;
  j.from_dst = op->from_dst;
  cpu_key_word(&key, j.count);
  if (!(p = cpu_dnnl_cache_get(&s->cache, &key, eltwise_build, &j, st)))
    return wfx_code(st);
  if (p->fallback) {
    cpu_dnnl_cache_put(&s->cache, p);
    return wfx_fail(st, WF_UNIMPLEMENTED,
                    "oneDNN has no eltwise implementation for %" PRId64
                    " float32 elements",
                    j.count);
  }
  data[MEM_A] = wfx_data(a);
  data[MEM_B] = b ? wfx_data(b) : NULL;
  data[MEM_OUT] = wfx_data(out);
  rc = cpu_dnnl_plan_run(p, data, NULL,
                         op->grad ? "eltwise backward" : "eltwise", st);
  cpu_dnnl_cache_put(&s->cache, p);
  return rc;
}

/* One kernel per op: its mapping, create and compute. */
#define ELTWISE(var, name, alg_, alpha_, grad_, from_dst_, alpha_attr_)       \
  static const eltwise_op var##_op = {(alg_), (alpha_), (grad_), (from_dst_),  \
                                      (alpha_attr_)};                          \
  static int var##_create(wf_kernel_ctx *ctx, void **state, wf_status *st) {   \
    return eltwise_create(ctx, state, &var##_op, st);                          \
  }                                                                            \
  static int var##_compute(wf_kernel_ctx *ctx, void *state, wf_status *st) {   \
    return eltwise_compute(ctx, state, &var##_op, st);                         \
  }                                                                            \
  const wf_kernel_def cpu_k_##var = {                                      \
      WF_STRUCT_INIT(wf_kernel_def),                                           \
      .op = (name),                                                            \
      .device_type = "cpu",                                                    \
      .type_attr = "T",                                                        \
      .dtypes = WF_DTYPE_BIT(WF_FLOAT32),                                      \
      .priority = WF_CPU_FAST_PRIORITY,                                        \
      .label = "onednn",                                                       \
      .flags = WF_KERNEL_IN_PLACE,                                             \
      .create = var##_create,                                                  \
      .compute = var##_compute,                                                \
      .destroy = cpu_dnnl_state_free}

ELTWISE(relu, "Relu", dnnl_eltwise_relu, 0.0f, 0, 0, 0);
ELTWISE(leaky_relu, "LeakyRelu", dnnl_eltwise_relu, 0.0f, 0, 0, 1);
ELTWISE(elu, "Elu", dnnl_eltwise_elu, 1.0f, 0, 0, 0);
ELTWISE(sigmoid, "Sigmoid", dnnl_eltwise_logistic, 0.0f, 0, 0, 0);
ELTWISE(tanh, "Tanh", dnnl_eltwise_tanh, 0.0f, 0, 0, 0);
ELTWISE(gelu, "Gelu", dnnl_eltwise_gelu_erf, 0.0f, 0, 0, 0);
ELTWISE(softplus, "Softplus", dnnl_eltwise_soft_relu, 0.0f, 0, 0, 0);
ELTWISE(exp, "Exp", dnnl_eltwise_exp, 0.0f, 0, 0, 0);
ELTWISE(sqrt, "Sqrt", dnnl_eltwise_sqrt, 0.0f, 0, 0, 0);
ELTWISE(square, "Square", dnnl_eltwise_square, 0.0f, 0, 0, 0);
ELTWISE(relu_grad, "ReluGrad", dnnl_eltwise_relu, 0.0f, 1, 0, 0);
ELTWISE(leaky_relu_grad, "LeakyReluGrad", dnnl_eltwise_relu, 0.0f, 1, 0, 1);
ELTWISE(elu_grad, "EluGrad", dnnl_eltwise_elu_use_dst_for_bwd, 1.0f, 1, 1, 0);
ELTWISE(sigmoid_grad, "SigmoidGrad", dnnl_eltwise_logistic_use_dst_for_bwd,
        0.0f, 1, 1, 0);
ELTWISE(tanh_grad, "TanhGrad", dnnl_eltwise_tanh_use_dst_for_bwd, 0.0f, 1, 1,
        0);
ELTWISE(gelu_grad, "GeluGrad", dnnl_eltwise_gelu_erf, 0.0f, 1, 0, 0);
ELTWISE(softplus_grad, "SoftplusGrad", dnnl_eltwise_soft_relu, 0.0f, 1, 0, 0);
ELTWISE(sqrt_grad, "SqrtGrad", dnnl_eltwise_sqrt_use_dst_for_bwd, 0.0f, 1, 1,
        0);

/* ---- ReluGrad in the plugin's own loops ----------------------------------- */

/* dx = dy where x > 0, else +0, as the reference computes it (a NaN x
 * gives 0): a compare and a mask eight lanes at a time, the same bits.
 * oneDNN's eltwise primitive costs more to call than this costs to run on
 * the tensors a dense layer's ReLU makes (the mlp's two nodes, 8K and 16K
 * elements: 8-10 us each a step through oneDNN on an AVX2 CPU, 5-6 on an
 * AVX-512 one, where these loops took 2.5-5); rows of the tensor are
 * shared by the intra-op threads from WF_CPU_SPLIT elements. */
typedef struct relu_grad_job {
  float *dx;
  const float *dy, *x;
  int64_t count;
} relu_grad_job;

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#include <immintrin.h>

__attribute__((target("avx"))) static void relu_grad_part(void *arg, int t,
                                                          int nt) {
  const relu_grad_job *j = arg;
  /* parts of whole vectors, the last one taking the remainder */
  int64_t vecs = j->count / 8;
  int64_t i = vecs * t / nt * 8;
  int64_t end = t == nt - 1 ? j->count : vecs * (t + 1) / nt * 8;
  const __m256 zero = _mm256_setzero_ps();

  for (; i + 8 <= end; i += 8) {
    __m256 gt = _mm256_cmp_ps(_mm256_loadu_ps(j->x + i), zero, _CMP_GT_OQ);
    _mm256_storeu_ps(j->dx + i, _mm256_and_ps(gt, _mm256_loadu_ps(j->dy + i)));
  }
  for (; i < end; i++)
    j->dx[i] = j->x[i] > 0 ? j->dy[i] : 0.0f;
}
#define RELU_GRAD_LOOPS 1
#else
#define RELU_GRAD_LOOPS 0
#endif

static int relu_grad_loops(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  const wf_tensor *dy, *x;
  wf_tensor *out;
  relu_grad_job j;

  (void)state;
  if (wfx_kernel_input(ctx, 0, &dy, NULL, st) ||
      wfx_kernel_input(ctx, 1, &x, NULL, st) ||
      !(out = cpu_output(ctx, 0, NULL, st)))
    return wfx_code(st);
  j.count = wfx_count(dy);
  if (j.count == 0)
    return 0;
  j.dx = wfx_data(out);
  j.dy = wfx_data(dy);
  j.x = wfx_data(x);
#if RELU_GRAD_LOOPS
  cpu_team(relu_grad_part, &j, j.count >= WF_CPU_SPLIT);
  return 0;
#else
  return wfx_fail(st, WF_INTERNAL, "the ReluGrad loops are built for x86 only");
#endif
}

/* Taken on CPUs with AVX2 and FMA (AVX-512 or not), before oneDNN's
 * kernel; `[kernels] deny = ReluGrad:loops` leaves the nodes to it. */
static int relu_grad_loops_supports(const wf_node *node) {
  (void)node;
  return RELU_GRAD_LOOPS && cpu_avx2_fma();
}

const wf_kernel_def cpu_k_relu_grad_loops = WFX_KERNEL_FOR(
    "cpu", "loops", "ReluGrad", "T", WF_DTYPE_BIT(WF_FLOAT32),
    relu_grad_loops, .priority = WF_CPU_FAST_PRIORITY + 1,
    .flags = WF_KERNEL_IN_PLACE, .supports = relu_grad_loops_supports);

/* ---- Gelu and GeluGrad (exact form) in the plugin's own loops ------------- */

/* y = x Phi(x) and dx = dy (Phi(x) + x phi(x)), Phi the normal
 * distribution, phi its density, on CPUs with AVX-512, sixteen lanes at a
 * time. With a = |x| / sqrt(2), erfc(a) is t P(t) exp(-a^2), t = 1 / (1 +
 * p a), P of degree 4 (Abramowitz and Stegun 7.1.26: within 1.5e-7 of
 * erf), and exp(-a^2) = exp(-x^2 / 2) is also phi's exponential, so the
 * backward op computes one exponential an element, not two. Phi(x) is 1 -
 * erfc(a) / 2 for x >= 0 and erfc(a) / 2 below, which keeps the small
 * values of the negative side from cancellation. As in the reference, a
 * NaN x gives NaN, Gelu(+inf) = +inf and Gelu(-inf) = 0, the derivative 1
 * at +inf and 0 at -inf.
 *
 * Against oneDNN's eltwise primitive, on an Intel Xeon with AVX-512 (2
 * cores), the transformer's training step (64 x 28 x 128 elements a node,
 * bench/train --profile 100, three alternated pairs): GeluGrad 0.19-0.22
 * -> 0.15 ms, Gelu 0.14-0.16 -> 0.12-0.13 ms, two nodes each; one node
 * alone in a graph (best of 3,000 steps): Gelu 66.6 -> 59.0 us, GeluGrad
 * 83.5 -> 67.0 us. Elements are shared by the intra-op threads from
 * WF_CPU_SPLIT. */
typedef struct gelu_job {
  float *out;
  const float *x, *dy; /* dy: GeluGrad */
  int64_t count;
} gelu_job;

#if RELU_GRAD_LOOPS
#include "cpu_vexp.h"

#define GELU16_INLINE                                                          \
  static inline __attribute__((always_inline, target("avx512f")))

/* Phi(x) into *phi_cdf and exp(-x^2 / 2) into *e for sixteen lanes. */
GELU16_INLINE void gelu_parts16(__m512 x, __m512 *phi_cdf, __m512 *e) {
  const __m512 one = _mm512_set1_ps(1.0f);
  __m512 a = _mm512_mul_ps(_mm512_abs_ps(x), _mm512_set1_ps(0.70710678f));
  /* t from a at most 10 (erfc is 0 in float from 9.2; a NaN or infinite a
   * would make the Newton step NaN): exp(-a^2) carries the NaN */
  __m512 d = _mm512_fmadd_ps(_mm512_min_ps(a, _mm512_set1_ps(10.0f)),
                             _mm512_set1_ps(0.3275911f), one);
  /* 1 / d: the 14-bit estimate and a Newton step (1 <= d <= 4.3) */
  __m512 t = _mm512_rcp14_ps(d);
  t = _mm512_mul_ps(t, _mm512_fnmadd_ps(d, t, _mm512_set1_ps(2.0f)));
  __m512 p = _mm512_set1_ps(1.061405429f);
  p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(-1.453152027f));
  p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(1.421413741f));
  p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(-0.284496736f));
  p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(0.254829592f));
  *e = cpu_exp16_nonpos(_mm512_mul_ps(_mm512_mul_ps(a, a), _mm512_set1_ps(-1.0f)));
  /* half of erfc(a) */
  __m512 h = _mm512_mul_ps(_mm512_mul_ps(p, t),
                           _mm512_mul_ps(*e, _mm512_set1_ps(0.5f)));
  __mmask16 pos = _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_GE_OQ);
  *phi_cdf = _mm512_mask_sub_ps(h, pos, one, h);
}

/* x Phi(x), 0 where Phi(x) is (x = -inf: not NaN). */
GELU16_INLINE __m512 gelu_y16(__m512 x, __m512 cdf) {
  return _mm512_maskz_mul_ps(
      _mm512_cmp_ps_mask(cdf, _mm512_setzero_ps(), _CMP_NEQ_UQ), x, cdf);
}

/* Phi(x) + x phi(x), the product 0 where exp(-x^2 / 2) is (x infinite:
 * 1 or 0, not NaN). */
GELU16_INLINE __m512 gelu_d16(__m512 x, __m512 cdf, __m512 e) {
  __m512 xe = _mm512_maskz_mul_ps(
      _mm512_cmp_ps_mask(e, _mm512_setzero_ps(), _CMP_NEQ_UQ),
      _mm512_mul_ps(x, _mm512_set1_ps(0.39894228f)), e);
  return _mm512_add_ps(cdf, xe);
}

/* Sixteen elements at i, the lanes of m: y, or dx when grad (a constant
 * where the two parts below inline it). */
GELU16_INLINE void gelu_vec16(const gelu_job *j, int64_t i, __mmask16 m,
                              int grad) {
  __m512 x = _mm512_maskz_loadu_ps(m, j->x + i), cdf, e;

  gelu_parts16(x, &cdf, &e);
  if (grad)
    _mm512_mask_storeu_ps(j->out + i, m,
                          _mm512_mul_ps(_mm512_maskz_loadu_ps(m, j->dy + i),
                                        gelu_d16(x, cdf, e)));
  else
    _mm512_mask_storeu_ps(j->out + i, m, gelu_y16(x, cdf));
}

/* The thread's part of the elements: whole vectors, then the tail's lanes. */
GELU16_INLINE void gelu_span16(const gelu_job *j, int t, int nt, int grad) {
  int64_t vecs = j->count / 16;
  int64_t i = vecs * t / nt * 16;
  int64_t end = t == nt - 1 ? j->count : vecs * (t + 1) / nt * 16;

  for (; i + 16 <= end; i += 16)
    gelu_vec16(j, i, (__mmask16)0xffff, grad);
  if (i < end)
    gelu_vec16(j, i, (__mmask16)((1u << (end - i)) - 1), grad);
}

__attribute__((target("avx512f"))) static void gelu_part(void *arg, int t,
                                                         int nt) {
  gelu_span16(arg, t, nt, 0);
}

__attribute__((target("avx512f"))) static void gelu_grad_part(void *arg,
                                                              int t, int nt) {
  gelu_span16(arg, t, nt, 1);
}
#endif

/* Gelu (grad 0: x -> y) or GeluGrad (grad 1: dy, x -> dx). */
static int gelu_loops(wf_kernel_ctx *ctx, int grad, wf_status *st) {
  const wf_tensor *x, *dy = NULL;
  wf_shape xs;
  wf_tensor *out;
  gelu_job j;

  if ((grad && wfx_kernel_input(ctx, 0, &dy, NULL, st)) ||
      wfx_kernel_input(ctx, grad, &x, &xs, st))
    return wfx_code(st);
  out = grad ? cpu_output(ctx, 0, NULL, st)
             : wfx_host->kernel_output_new(ctx, 0, &xs, st);
  if (!out)
    return wfx_code(st);
  j.count = wfx_count(x);
  if (j.count == 0)
    return 0;
  j.out = wfx_data(out);
  j.x = wfx_data(x);
  j.dy = dy ? wfx_data(dy) : NULL;
#if RELU_GRAD_LOOPS
  cpu_team(grad ? gelu_grad_part : gelu_part, &j, j.count >= WF_CPU_SPLIT);
  return 0;
#else
  return wfx_fail(st, WF_INTERNAL, "the GELU loops are built for x86 only");
#endif
}

static int gelu_fwd_loops(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  (void)state;
  return gelu_loops(ctx, 0, st);
}

static int gelu_grad_loops(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  (void)state;
  return gelu_loops(ctx, 1, st);
}

/* Taken for the exact form on CPUs with AVX-512 (approximate = true, and
 * every node elsewhere, stays with oneDNN's kernel); `[kernels] deny =
 * Gelu:loops` leaves a node to it. */
static int gelu_loops_supports(const wf_node *node) {
#if RELU_GRAD_LOOPS
  wf_attr_value v;

  if (!cpu_avx2_fma() || !__builtin_cpu_supports("avx512f"))
    return 0;
  return !(wfx_host->node_attr(node, "approximate", &v) == 0 &&
           v.type == WF_ATTR_BOOL && v.u.b);
#else
  (void)node;
  return 0;
#endif
}

const wf_kernel_def cpu_k_gelu_loops = WFX_KERNEL_FOR(
    "cpu", "loops", "Gelu", "T", WF_DTYPE_BIT(WF_FLOAT32), gelu_fwd_loops,
    .priority = WF_CPU_FAST_PRIORITY + 1, .flags = WF_KERNEL_IN_PLACE,
    .supports = gelu_loops_supports);

const wf_kernel_def cpu_k_gelu_grad_loops = WFX_KERNEL_FOR(
    "cpu", "loops", "GeluGrad", "T", WF_DTYPE_BIT(WF_FLOAT32), gelu_grad_loops,
    .priority = WF_CPU_FAST_PRIORITY + 1, .flags = WF_KERNEL_IN_PLACE,
    .supports = gelu_loops_supports);
