/* plugins/numerics/philox.c — Philox-4x32-10, weft's stream keys and the
 * conversions to uniform, normal and truncated normal values (contracts in
 * philox.h). Written from the published algorithm; nothing here knows about
 * ops, tensors or the host table. */
#include <config.h>

#include "philox.h"

#include <assert.h>
#include <math.h>

/* The round multipliers and key increments of Philox-4x32. */
#define PHILOX_M0 UINT32_C(0xD2511F53)
#define PHILOX_M1 UINT32_C(0xCD9E8D57)
#define PHILOX_W0 UINT32_C(0x9E3779B9)
#define PHILOX_W1 UINT32_C(0xBB67AE85)

static void mulhilo(uint32_t a, uint32_t b, uint32_t *hi, uint32_t *lo) {
  uint64_t p = (uint64_t)a * (uint64_t)b;
  *hi = (uint32_t)(p >> 32);
  *lo = (uint32_t)p;
}

void rnd_philox4x32_10(const uint32_t ctr[4], const uint32_t key[2],
                       uint32_t out[4]) {
  uint32_t c0 = ctr[0], c1 = ctr[1], c2 = ctr[2], c3 = ctr[3];
  uint32_t k0 = key[0], k1 = key[1];

  for (int r = 0; r < 10; r++) {
    uint32_t hi0, lo0, hi1, lo1;

    if (r > 0) { /* the key schedule bumps before every round but the first */
      k0 += PHILOX_W0;
      k1 += PHILOX_W1;
    }
    mulhilo(PHILOX_M0, c0, &hi0, &lo0);
    mulhilo(PHILOX_M1, c2, &hi1, &lo1);
    c0 = hi1 ^ c1 ^ k0;
    c1 = lo1;
    c2 = hi0 ^ c3 ^ k1;
    c3 = lo0;
  }
  out[0] = c0;
  out[1] = c1;
  out[2] = c2;
  out[3] = c3;
}

uint64_t rnd_mix64(uint64_t x) {
  uint64_t z = x + UINT64_C(0x9E3779B97F4A7C15);
  z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
  z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
  return z ^ (z >> 31);
}

uint64_t rnd_key_from_seeds(int64_t seed, int64_t seed2) {
  return rnd_mix64(rnd_mix64((uint64_t)seed) ^ (uint64_t)seed2);
}

uint64_t rnd_key_from_name(const char *name) {
  uint64_t h = UINT64_C(0xCBF29CE484222325); /* FNV-1a 64 */

  for (const unsigned char *p = (const unsigned char *)name; *p; p++) {
    h ^= *p;
    h *= UINT64_C(0x100000001B3);
  }
  return rnd_mix64(h);
}

void rnd_stream_init(rnd_stream *s, uint64_t key, int64_t step) {
  s->key[0] = (uint32_t)key;
  s->key[1] = (uint32_t)(key >> 32);
  s->step[0] = (uint32_t)(uint64_t)step;
  s->step[1] = (uint32_t)((uint64_t)step >> 32);
}

void rnd_stream_block(const rnd_stream *s, uint64_t b, uint32_t d,
                      uint32_t out[4]) {
  uint32_t ctr[4];

  assert(b < RND_MAX_BLOCKS && d < RND_MAX_SUBSTREAMS);
  ctr[0] = (uint32_t)b;
  ctr[1] = (uint32_t)(b >> 32) | d << 16;
  ctr[2] = s->step[0];
  ctr[3] = s->step[1];
  rnd_philox4x32_10(ctr, s->key, out);
}

double rnd_u24(uint32_t w) { return (double)(w >> 8) * 0x1p-24; }

double rnd_u53(uint32_t hi, uint32_t lo) {
  return (double)((((uint64_t)hi << 32) | lo) >> 11) * 0x1p-53;
}

void rnd_normal_pair(const uint32_t w[4], double *z0, double *z1) {
  /* u1 in (0, 1] keeps the logarithm finite. */
  double u1 = 1.0 - rnd_u53(w[0], w[1]);
  double u2 = rnd_u53(w[2], w[3]);
  double r = sqrt(-2.0 * log(u1));
  double t = 2.0 * M_PI * u2;

  *z0 = r * cos(t);
  *z1 = r * sin(t);
}

/* ---- fills ------------------------------------------------------------- */

/* Rounds lo + (hi - lo) u to the element type, kept inside [lo, hi). */
#define DEF_UNIFORM(T, sfx, NEXT, PER_BLOCK, UNIT)                             \
  void rnd_uniform_##sfx(T *out, int64_t n, const rnd_stream *s, double lo,    \
                         double hi) {                                          \
    const T tlo = (T)lo, thi = (T)hi;                                          \
    uint32_t w[4];                                                             \
    assert(n >= 0 && lo <= hi);                                                \
    for (int64_t i = 0; i < n; i++) {                                          \
      int k = (int)(i % PER_BLOCK);                                            \
      T x;                                                                     \
      if (k == 0)                                                              \
        rnd_stream_block(s, (uint64_t)(i / PER_BLOCK), 0, w);                  \
      x = (T)(lo + (hi - lo) * (UNIT));                                        \
      if (x >= thi && thi > tlo)                                               \
        x = NEXT(thi, tlo);                                                    \
      if (x < tlo)                                                             \
        x = tlo;                                                               \
      out[i] = x;                                                              \
    }                                                                          \
  }
DEF_UNIFORM(float, f32, nextafterf, 4, rnd_u24(w[k]))
DEF_UNIFORM(double, f64, nextafter, 2, rnd_u53(w[2 * k], w[2 * k + 1]))

#define DEF_NORMAL(T, sfx)                                                     \
  void rnd_normal_##sfx(T *out, int64_t n, const rnd_stream *s, double mean,   \
                        double stddev) {                                       \
    uint32_t w[4];                                                             \
    double z[2];                                                               \
    assert(n >= 0);                                                            \
    for (int64_t i = 0; i < n; i++) {                                          \
      if (i % 2 == 0) {                                                        \
        rnd_stream_block(s, (uint64_t)(i / 2), 0, w);                          \
        rnd_normal_pair(w, &z[0], &z[1]);                                      \
      }                                                                        \
      out[i] = (T)(mean + stddev * z[i % 2]);                                  \
    }                                                                          \
  }
DEF_NORMAL(float, f32)
DEF_NORMAL(double, f64)

/* The standard truncated normal value of element i. */
static double truncated_z(const rnd_stream *s, uint64_t i) {
  uint32_t w[4];
  double z0, z1;

  for (uint32_t d = 0; d < RND_MAX_SUBSTREAMS; d++) {
    rnd_stream_block(s, i, d, w);
    rnd_normal_pair(w, &z0, &z1);
    if (fabs(z0) <= 2.0)
      return z0;
    if (fabs(z1) <= 2.0)
      return z1;
  }
  return 0.0; /* every one of 2^17 draws missed: see philox.h */
}

#define DEF_TRUNCATED(T, sfx)                                                  \
  void rnd_truncated_##sfx(T *out, int64_t n, const rnd_stream *s,             \
                           double mean, double stddev) {                       \
    assert(n >= 0);                                                            \
    for (int64_t i = 0; i < n; i++)                                            \
      out[i] = (T)(mean + stddev * truncated_z(s, (uint64_t)i));               \
  }
DEF_TRUNCATED(float, f32)
DEF_TRUNCATED(double, f64)

/* ---- fans of weight shapes ------------------------------------------------ */

void rnd_fans(const wf_shape *s, double *fan_in, double *fan_out) {
  double in = 1, out = 1;

  if (s->rank == 1) {
    in = out = (double)s->dims[0];
  } else if (s->rank >= 2) {
    double receptive = 1;
    for (int i = 0; i < s->rank - 2; i++)
      receptive *= (double)s->dims[i];
    in = (double)s->dims[s->rank - 2] * receptive;
    out = (double)s->dims[s->rank - 1] * receptive;
  }
  *fan_in = in < 1 ? 1 : in;
  *fan_out = out < 1 ? 1 : out;
}
