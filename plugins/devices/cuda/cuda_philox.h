/* plugins/devices/cuda/cuda_philox.h — weft's Philox-4x32-10 streams and
 * uniform values as functions that compile both for the GPU (nvcc, in
 * cuda_random.cu) and for the host (gcc, in the plugin and in its test), so
 * that the test can check the device's arithmetic against the CPU kernels'
 * plugins/numerics/philox.c bit for bit without a GPU.
 *
 * The stream layout is philox.h's (keys from (seed, seed2) or the node
 * name, counter {lo32(b), hi16(b) | d << 16, lo32(step), hi32(step)}); only
 * the uniform values are here. Normal values go through log, sin and cos,
 * which the GPU does not round as the host's libm does, so they could not
 * match the CPU's bits and the plugin leaves those ops to the CPU. */
#ifndef WF_PLUGINS_DEVICES_CUDA_CUDA_PHILOX_H
#define WF_PLUGINS_DEVICES_CUDA_CUDA_PHILOX_H

#include <math.h>
#include <stdint.h>

#if defined(__CUDACC__)
#define CUPHILOX_FN static __host__ __device__ __forceinline__
#else
#define CUPHILOX_FN static inline
#endif

/* Double products and sums rounded on their own, never fused into one
 * multiply-add (nvcc fuses by default; the CPU kernels never do). */
#if defined(__CUDA_ARCH__)
#define CUPHILOX_DMUL(a, b) __dmul_rn((a), (b))
#define CUPHILOX_DADD(a, b) __dadd_rn((a), (b))
#else
#define CUPHILOX_DMUL(a, b) ((a) * (b))
#define CUPHILOX_DADD(a, b) ((a) + (b))
#endif

/* Philox-4x32's round multipliers and key increments. */
#define CUPHILOX_M0 UINT32_C(0xD2511F53)
#define CUPHILOX_M1 UINT32_C(0xCD9E8D57)
#define CUPHILOX_W0 UINT32_C(0x9E3779B9)
#define CUPHILOX_W1 UINT32_C(0xBB67AE85)

/* A stream: key K and step s, as philox.h's rnd_stream. Passed to kernels
 * by value. */
typedef struct cuphilox {
  uint32_t key[2];
  uint32_t step[2];
} cuphilox;

CUPHILOX_FN uint64_t cuphilox_mix64(uint64_t x) {
  uint64_t z = x + UINT64_C(0x9E3779B97F4A7C15);
  z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
  z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
  return z ^ (z >> 31);
}

/* The key of explicit seeds (not both 0). */
CUPHILOX_FN uint64_t cuphilox_key_from_seeds(int64_t seed, int64_t seed2) {
  return cuphilox_mix64(cuphilox_mix64((uint64_t)seed) ^ (uint64_t)seed2);
}

/* The key of a node name (FNV-1a 64, then mixed). */
CUPHILOX_FN uint64_t cuphilox_key_from_name(const char *name) {
  uint64_t h = UINT64_C(0xCBF29CE484222325);

  for (const unsigned char *p = (const unsigned char *)name; *p; p++) {
    h ^= *p;
    h *= UINT64_C(0x100000001B3);
  }
  return cuphilox_mix64(h);
}

CUPHILOX_FN void cuphilox_init(cuphilox *s, uint64_t key, int64_t step) {
  s->key[0] = (uint32_t)key;
  s->key[1] = (uint32_t)(key >> 32);
  s->step[0] = (uint32_t)(uint64_t)step;
  s->step[1] = (uint32_t)((uint64_t)step >> 32);
}

/* The four words of block b (< 2^48), substream d (< 2^16). */
CUPHILOX_FN void cuphilox_block(const cuphilox *s, uint64_t b, uint32_t d,
                                uint32_t out[4]) {
  uint32_t c0 = (uint32_t)b, c1 = (uint32_t)(b >> 32) | d << 16;
  uint32_t c2 = s->step[0], c3 = s->step[1];
  uint32_t k0 = s->key[0], k1 = s->key[1];

  for (int r = 0; r < 10; r++) {
    uint64_t p0 = (uint64_t)CUPHILOX_M0 * c0;
    uint64_t p1 = (uint64_t)CUPHILOX_M1 * c2;

    if (r > 0) {
      k0 += CUPHILOX_W0;
      k1 += CUPHILOX_W1;
    }
    c0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0;
    c1 = (uint32_t)p1;
    c2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1;
    c3 = (uint32_t)p0;
  }
  out[0] = c0;
  out[1] = c1;
  out[2] = c2;
  out[3] = c3;
}

/* [0, 1) from the top 24 bits of w, and from 53 bits of (hi, lo). */
CUPHILOX_FN double cuphilox_u24(uint32_t w) {
  return (double)(w >> 8) * 0x1p-24;
}

CUPHILOX_FN double cuphilox_u53(uint32_t hi, uint32_t lo) {
  return (double)((((uint64_t)hi << 32) | lo) >> 11) * 0x1p-53;
}

/* lo + (hi - lo) u rounded to float, kept in [lo, hi) (lo == hi gives
 * lo): philox.c's rnd_uniform_f32 for one element. */
CUPHILOX_FN float cuphilox_uniform_f32(double u, double lo, double hi) {
  const float tlo = (float)lo, thi = (float)hi;
  float x = (float)CUPHILOX_DADD(lo, CUPHILOX_DMUL(hi - lo, u));

  if (x >= thi && thi > tlo)
    x = nextafterf(thi, tlo);
  if (x < tlo)
    x = tlo;
  return x;
}

CUPHILOX_FN double cuphilox_uniform_f64(double u, double lo, double hi) {
  double x = CUPHILOX_DADD(lo, CUPHILOX_DMUL(hi - lo, u));

  if (x >= hi && hi > lo)
    x = nextafter(hi, lo);
  if (x < lo)
    x = lo;
  return x;
}

/* Elements 4b .. 4b+3 of a uniform float32 output (element i uses word
 * i % 4 of block i / 4). */
CUPHILOX_FN void cuphilox_uniform_block_f32(const cuphilox *s, uint64_t b,
                                            double lo, double hi,
                                            float out[4]) {
  uint32_t w[4];

  cuphilox_block(s, b, 0, w);
  for (int k = 0; k < 4; k++)
    out[k] = cuphilox_uniform_f32(cuphilox_u24(w[k]), lo, hi);
}

/* Elements 2b, 2b+1 of a uniform float64 output (element i uses words
 * 2j, 2j+1 of block i / 2, j = i % 2). */
CUPHILOX_FN void cuphilox_uniform_block_f64(const cuphilox *s, uint64_t b,
                                            double lo, double hi,
                                            double out[2]) {
  uint32_t w[4];

  cuphilox_block(s, b, 0, w);
  for (int k = 0; k < 2; k++)
    out[k] = cuphilox_uniform_f64(cuphilox_u53(w[2 * k], w[2 * k + 1]), lo,
                                  hi);
}

#endif /* WF_PLUGINS_DEVICES_CUDA_CUDA_PHILOX_H */
