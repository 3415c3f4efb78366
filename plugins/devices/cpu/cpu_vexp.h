/* plugins/devices/cpu/cpu_vexp.h — exp(x) for x <= 0 on vectors of float,
 * for the plugin's own loops on x86 (softmax rows, the cross-entropy
 * losses, GELU): inlined into the loop that calls it, compiled for that
 * loop's target. Included where <immintrin.h> is (GCC or clang on x86). */
#ifndef WF_PLUGINS_DEVICES_CPU_CPU_VEXP_H
#define WF_PLUGINS_DEVICES_CPU_CPU_VEXP_H

#include <immintrin.h>

#define CPU_VEXP8_INLINE                                                       \
  static inline __attribute__((always_inline, target("avx2,fma")))
#define CPU_VEXP16_INLINE                                                      \
  static inline __attribute__((always_inline, target("avx512f")))

/* exp(x) for x <= 0 and NaN, eight lanes (AVX2 and FMA): x = n ln2 +
 * r with |r| <= ln2 / 2, exp(r) by Cephes's minimax polynomial, times 2^n
 * built in the exponent bits. Below ln(FLT_MIN) the result is 0 (the
 * reference's float result there is a subnormal under 1.2e-38); NaN stays
 * NaN (the polynomial carries it). */
CPU_VEXP8_INLINE __m256 cpu_exp8_nonpos(__m256 x) {
  const __m256 lo = _mm256_set1_ps(-87.3365478515625f);
  __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504f)),
                             _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
  __m256 p = _mm256_set1_ps(1.9875691500e-4f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
  p = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), r);
  p = _mm256_add_ps(p, _mm256_set1_ps(1.0f));
  /* n >= -126 wherever x >= lo: a normal power of two */
  __m256i k = _mm256_cvtps_epi32(n);
  __m256 two_n = _mm256_castsi256_ps(
      _mm256_slli_epi32(_mm256_add_epi32(k, _mm256_set1_epi32(127)), 23));
  __m256 e = _mm256_mul_ps(p, two_n);
  return _mm256_andnot_ps(_mm256_cmp_ps(x, lo, _CMP_LT_OQ), e);
}

/* As cpu_exp8_nonpos, sixteen lanes (AVX-512). */
CPU_VEXP16_INLINE __m512 cpu_exp16_nonpos(__m512 x) {
  const __m512 lo = _mm512_set1_ps(-87.3365478515625f);
  __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504f)),
                                  _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
  __m512 p = _mm512_set1_ps(1.9875691500e-4f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
  p = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), r);
  p = _mm512_add_ps(p, _mm512_set1_ps(1.0f));
  __m512i k = _mm512_cvtps_epi32(n);
  __m512 two_n = _mm512_castsi512_ps(
      _mm512_slli_epi32(_mm512_add_epi32(k, _mm512_set1_epi32(127)), 23));
  __m512 e = _mm512_mul_ps(p, two_n);
  /* 0 below lo; NaN (unordered: not below) stays */
  return _mm512_maskz_mov_ps(
      (__mmask16)~_mm512_cmp_ps_mask(x, lo, _CMP_LT_OQ), e);
}

#endif
