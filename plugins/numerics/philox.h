/* plugins/numerics/philox.h — the counter-based generator behind every
 * random op: Philox-4x32-10 (Salmon, Moraes, Dror and Shaw, "Parallel
 * random numbers: as easy as 1, 2, 3", SC'11), how weft keys its streams,
 * and the conversions from 32-bit words to uniform, normal and truncated
 * normal values. One copy for ops-random, ops-nn's Dropout and the CUDA
 * plugin (whose device code must give these bits).
 *
 * Pure functions of their arguments: no state, no host table, no locks, so
 * they are safe from any thread and the tests link this file directly.
 *
 * Streams. A stream is a 64-bit key K and a step s. Its block (b, d) — b the
 * block index (< 2^48), d a substream (< 2^16, used for redraws) — is
 *   Philox-4x32-10(counter = {lo32(b), hi16(b) | d << 16, lo32(s), hi32(s)},
 *                  key = {lo32(K), hi32(K)})
 * and yields four 32-bit words w0..w3. An op's key is
 *   K = mix64(mix64(seed) ^ seed2)     when seed or seed2 is non-zero,
 *   K = mix64(fnv1a64(node name))      when both are 0,
 * with mix64 SplitMix64's finaliser applied to x + 0x9E3779B97F4A7C15, and
 * its step the session's step counter. Element i of an output depends only
 * on (K, s, i): never on threads, scheduling or execution order.
 *
 * Element layouts (u24(w) = (w >> 8) 2^-24 in [0, 1); u53(a, b) =
 * ((a 2^32 + b) >> 11) 2^-53 in [0, 1)):
 *   uniform float32  element i: block i/4, u = u24(w[i%4])
 *   uniform float64  element i: block i/2, u = u53(w[2j], w[2j+1]), j = i%2
 *   normal (either)  elements 2j, 2j+1: block j, Box-Muller of
 *                    u1 = 1 - u53(w0, w1) in (0, 1] and u2 = u53(w2, w3):
 *                    z0 = r cos(2 pi u2), z1 = r sin(2 pi u2),
 *                    r = sqrt(-2 ln u1); computed in double
 *   truncated        element i: for d = 0, 1, ...: the normal pair of block
 *                    (i, d); the first of z0, z1 with |z| <= 2 is taken. */
#ifndef WF_NUMERICS_PHILOX_H
#define WF_NUMERICS_PHILOX_H

#include <stdint.h>

#include <weft/types.h>

/* Blocks and substreams a stream can address. */
#define RND_MAX_BLOCKS (UINT64_C(1) << 48)
#define RND_MAX_SUBSTREAMS (UINT32_C(1) << 16)

/* One Philox-4x32-10 block: out = the 10-round bijection of ctr under key. */
void rnd_philox4x32_10(const uint32_t ctr[4], const uint32_t key[2],
                       uint32_t out[4]);

/* SplitMix64's finaliser of x + 0x9E3779B97F4A7C15. */
uint64_t rnd_mix64(uint64_t x);
/* The stream key of explicit seeds (not both 0) and of a node name. */
uint64_t rnd_key_from_seeds(int64_t seed, int64_t seed2);
uint64_t rnd_key_from_name(const char *name);

typedef struct rnd_stream {
  uint32_t key[2];
  uint32_t step[2]; /* lo32, hi32 of the step */
} rnd_stream;

void rnd_stream_init(rnd_stream *s, uint64_t key, int64_t step);
/* The four words of block b (< RND_MAX_BLOCKS), substream d
 * (< RND_MAX_SUBSTREAMS). */
void rnd_stream_block(const rnd_stream *s, uint64_t b, uint32_t d,
                      uint32_t out[4]);

double rnd_u24(uint32_t w);
double rnd_u53(uint32_t hi, uint32_t lo);
/* The Box-Muller pair of one block's words (see the layout above). */
void rnd_normal_pair(const uint32_t w[4], double *z0, double *z1);

/* Fill out[0..n-1] (0 <= n <= RND_MAX_BLOCKS) with element values as laid
 * out above:
 *   uniform:   lo + (hi - lo) u, kept in [lo, hi) after rounding to the
 *              element type (lo <= hi; lo == hi gives lo);
 *   normal:    mean + stddev z;
 *   truncated: mean + stddev z with |z| <= 2. An element whose 2^16
 *              substreams all miss (probability below 10^-170000) gets
 *              mean. */
void rnd_uniform_f32(float *out, int64_t n, const rnd_stream *s, double lo,
                     double hi);
void rnd_uniform_f64(double *out, int64_t n, const rnd_stream *s, double lo,
                     double hi);
void rnd_normal_f32(float *out, int64_t n, const rnd_stream *s, double mean,
                    double stddev);
void rnd_normal_f64(double *out, int64_t n, const rnd_stream *s, double mean,
                    double stddev);
void rnd_truncated_f32(float *out, int64_t n, const rnd_stream *s, double mean,
                       double stddev);
void rnd_truncated_f64(double *out, int64_t n, const rnd_stream *s, double mean,
                       double stddev);

/* Fan-in and fan-out of a weight shape (Keras's convention):
 *   rank 0:        1 and 1
 *   rank 1 (D,):   D and D
 *   rank 2 (I, O): I and O (a dense layer's kernel)
 *   rank >= 3 (..., I, O), e.g. a conv filter (KH, KW, C_in, C_out):
 *                  receptive = the product of the leading dims (KH * KW),
 *                  fan_in = I * receptive, fan_out = O * receptive.
 * Fans below 1 (shapes with a 0 dim) are taken as 1. */
void rnd_fans(const wf_shape *s, double *fan_in, double *fan_out);

#endif /* WF_NUMERICS_PHILOX_H */
