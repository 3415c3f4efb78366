/* plugins/devices/cpu/cpu_nn.h — what the oneDNN kernels of the nn ops
 * (cpu_conv.c, cpu_pool.c) share: the sliding-window geometry of Conv2D and
 * the pools in oneDNN's terms, and the layouts of activations and filters.
 *
 * The window attributes are read with plugins/numerics/window.h, the one
 * copy the nn ops use too, so that both pad a window alike. Output shapes
 * come from the ops' shape functions (cpu_output): an input an op refuses
 * gets the op's own error, and the kernels compute empty tensors
 * themselves. */
#ifndef WF_PLUGINS_DEVICES_CPU_CPU_NN_H
#define WF_PLUGINS_DEVICES_CPU_CPU_NN_H

#include "cpu_kernels.h"
#include "window.h"

/* One 2-D window over an input of (H, W) in oneDNN's terms. */
typedef struct cpu_win {
  int64_t in[2], k[2], out[2];
  dnnl_dims_t strides, kernel, dilates; /* dilates: dilation - 1 */
  dnnl_dims_t pad_l, pad_r;
} cpu_win;

/* Fills g for window w over an input of in[0] x in[1] with a window of
 * k[0] x k[1]: output size and padding as the nn ops define them (SAME's
 * split, VALID's unused tail as zero right padding). Returns 0, or
 * INVALID_ARGUMENT as nn_window_dim. */
int cpu_win_init(const nn_window *w, const int64_t in[2],
                     const int64_t k[2], cpu_win *g, wf_status *st);

/* (N, H, W, C) of a rank-4 activation shape in either format. */
void cpu_nhwc_dims(const wf_shape *s, int nchw, int64_t d[4]);

/* The memory descriptor of an activation (N, C, H, W) logically, stored
 * NHWC or NCHW. */
int cpu_act_md(dnnl_memory_desc_t *md, int nchw, int64_t n, int64_t c,
                   int64_t h, int64_t w, wf_status *st);

/* The activation shape (N, H, W, C) in the format's order. */
void cpu_act_shape(wf_shape *s, int nchw, int64_t n, int64_t h, int64_t w,
                       int64_t c);

/* MaxPool's values over NHWC x (n images of c channels; geometry g, its
 * windows with no dilation and padded by less than a window), into y:
 * cpu_pool.c's loops, the reference's bits. */
void cpu_max_pool_nhwc(const float *x, float *y, int64_t n, int64_t c,
                       const cpu_win *g);

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#include <immintrin.h>
/* The maximum of a 2x2 window's four vectors in the reference's order
 * (row by row): a value replaces the maximum when it is larger or NaN, as
 * MaxPool's reference and loops take it. */
__attribute__((target("avx2,fma"))) static inline __m256
cpu_max2x2(__m256 a, __m256 b, __m256 c, __m256 d) {
  __m256 m = a;
  m = _mm256_blendv_ps(m, b,
                       _mm256_or_ps(_mm256_cmp_ps(b, m, _CMP_GT_OQ),
                                    _mm256_cmp_ps(b, b, _CMP_UNORD_Q)));
  m = _mm256_blendv_ps(m, c,
                       _mm256_or_ps(_mm256_cmp_ps(c, m, _CMP_GT_OQ),
                                    _mm256_cmp_ps(c, c, _CMP_UNORD_Q)));
  m = _mm256_blendv_ps(m, d,
                       _mm256_or_ps(_mm256_cmp_ps(d, m, _CMP_GT_OQ),
                                    _mm256_cmp_ps(d, d, _CMP_UNORD_Q)));
  return m;
}

/* The same sixteen lanes to a vector, on CPUs with AVX-512. */
__attribute__((target("avx512f"))) static inline __m512
cpu_max2x2_16(__m512 a, __m512 b, __m512 c, __m512 d) {
  __m512 m = a;
  m = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(b, m, _CMP_GT_OQ) |
                               _mm512_cmp_ps_mask(b, b, _CMP_UNORD_Q),
                           m, b);
  m = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(c, m, _CMP_GT_OQ) |
                               _mm512_cmp_ps_mask(c, c, _CMP_UNORD_Q),
                           m, c);
  m = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(d, m, _CMP_GT_OQ) |
                               _mm512_cmp_ps_mask(d, d, _CMP_UNORD_Q),
                           m, d);
  return m;
}
#endif

/* Whether the own convolution loops hand a call of `macs` multiply-adds
 * (the direct algorithm's) to the intra-op team: oneDNN's plans' rule
 * (cpu_dnnl_plan_threads), one unit a vector of the width the loops run,
 * sixteen lanes when `wide` (AVX-512), else eight. */
static inline int cpu_loops_share(int64_t macs, int wide) {
  return macs / (wide ? 16 : 8) >= WF_DNNL_SMALL_WORK;
}

/* ---- Winograd's F(2x2,3x3) and F(4x4,3x3) in the plugin's own loops
 * (cpu_winograd.c) ----------------------------------------------------- */

typedef struct opc_fused opc_fused;

/* 1 for the convolutions they take: NHWC, a 3x3 filter moved one element
 * at a time (dilation 1), c input channels a multiple of 8 up to 64 and k
 * output channels a multiple of 16 up to 64. */
int cpu_wino_shape(int64_t kh, int64_t kw, int64_t sh, int64_t sw,
                   int64_t dh, int64_t dw, int64_t c, int64_t k, int nchw);

/* A node's transformed filters, kept between calls (thread-safe). */
typedef struct cpu_wino_cache cpu_wino_cache;
cpu_wino_cache *cpu_wino_cache_new(void); /* NULL when out of memory */
void cpu_wino_cache_free(cpu_wino_cache *c);

/* y (n, oh, ow, k) = the convolution of x (n, h, wd, c) with the HWIO
 * filter w (3, 3, c, k) (version: the core's, or 0), padded by pad_top and
 * pad_left (the rest of the padding is where oh and ow reach past the
 * input); fu: _FusedConv2D's bias and activation, else NULL; y and py:
 * as cpu_shallow_conv's. The shape must be one cpu_wino_shape takes, on a
 * CPU cpu_avx2_fma accepts. 0, or the code with st set
 * (RESOURCE_EXHAUSTED). */
int cpu_wino_conv(cpu_wino_cache *cache, const float *x, const float *w,
                  uint64_t wversion, const float *bias, const opc_fused *fu,
                  float *y, float *py, int64_t n, int64_t h, int64_t wd,
                  int64_t c, int64_t k, int64_t oh, int64_t ow,
                  int64_t pad_top, int64_t pad_left, wf_status *st);

/* ---- inputs of at most four channels in the plugin's own loops
 * (cpu_conv_shallow.c) ----------------------------------------------------- */

/* 1 for the convolutions they take: NHWC, windows up to 7x7, any stride,
 * dilation 1, c of 1 to 4 input channels and k output channels a multiple
 * of 8. */
int cpu_shallow_shape(int64_t kh, int64_t kw, int64_t sh, int64_t sw,
                      int64_t dh, int64_t dw, int64_t c, int64_t k,
                      int nchw);

/* y (n, oh, ow, k) = the convolution of x (n, h, wd, c) with the HWIO
 * filter w (kh, kw, c, k), strides sh and sw, padded by pad_top and
 * pad_left (the rest of the padding is where oh and ow reach past the
 * input); fu: _FusedConv2D's bias and activation, else NULL. py: NULL, or
 * where the 2x2 max pooling of stride 2 without padding of y goes (n,
 * oh / 2, ow / 2, k), for _FusedConv2DMaxPool and _FusedConv2DAndMaxPool
 * (fu's activation then no activation or ReLU); y may then be NULL: the
 * pooling alone is stored. The shape must be one cpu_shallow_shape takes,
 * on a CPU cpu_avx2_fma accepts. 0, or the code with st set
 * (RESOURCE_EXHAUSTED). */
int cpu_shallow_conv(const float *x, const float *w, const float *bias,
                     const opc_fused *fu, float *y, float *py, int64_t n,
                     int64_t h, int64_t wd, int64_t c, int64_t k, int64_t kh,
                     int64_t kw, int64_t sh, int64_t sw, int64_t oh,
                     int64_t ow, int64_t pad_top, int64_t pad_left,
                     wf_status *st);

/* dw (kh, kw, c, k) = the gradient of that convolution's filter given
 * x (n, h, wd, c) and the output's gradient dy (n, oh, ow, k): each
 * element the sum over the images and positions, in float per image and
 * in double across images. Same shapes and CPUs as cpu_shallow_conv. 0,
 * or the code with st set (RESOURCE_EXHAUSTED). */
int cpu_shallow_filter_grad(const float *x, const float *dy, float *dw,
                            int64_t n, int64_t h, int64_t wd, int64_t c,
                            int64_t k, int64_t kh, int64_t kw, int64_t sh,
                            int64_t sw, int64_t oh, int64_t ow,
                            int64_t pad_top, int64_t pad_left, wf_status *st);

#endif /* WF_PLUGINS_DEVICES_CPU_CPU_NN_H */
