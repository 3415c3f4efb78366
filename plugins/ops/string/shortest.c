/* plugins/ops/string/shortest.c — floats written as NumPy's str() writes
 * a numpy.float32 or numpy.float64 scalar: the fewest significant digits
 * that read back to the same value, found exactly on big integers by the
 * free-format algorithm of Steele & White as NumPy's Dragon4 runs it
 * (bounds included for an even significand, as strtod's round-half-even
 * reads them; of two shortest candidates the nearer, ties to the even
 * digit), then placed positionally or in scientific notation.
 *
 * Not printf: no precision, width, fill or locale applies here (AsString
 * pads the result itself), and nothing is allocated. */
#include <config.h>

#include "strops.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

/* ---- unsigned big integers ----------------------------------------------- */

/* 40 words of 32 bits: the largest value met is below 2^1090 (the
 * smallest subnormal double, 2 * 2^-1074, scaled by 10^324, times 10 for
 * the next digit, times 2 to round). */
#define BN_WORDS 40

/* w[0..n) little-endian, no zero word at the top (zero: n == 0). */
typedef struct bn {
  int n;
  uint32_t w[BN_WORDS];
} bn;

static void bn_set(bn *a, uint64_t v) {
  a->w[0] = (uint32_t)v;
  a->w[1] = (uint32_t)(v >> 32);
  a->n = a->w[1] ? 2 : a->w[0] ? 1 : 0;
}

/* a <<= bits */
static void bn_shl(bn *a, int bits) {
  int words = bits / 32, r = bits % 32;

  assert(bits >= 0);
  if (a->n == 0)
    return;
  assert(a->n + words + 1 <= BN_WORDS);
  a->w[a->n + words] = 0;
  for (int i = a->n - 1; i >= 0; i--) {
    uint64_t v = (uint64_t)a->w[i] << r;
    a->w[i + words + 1] |= (uint32_t)(v >> 32);
    a->w[i + words] = (uint32_t)v;
  }
  for (int i = 0; i < words; i++)
    a->w[i] = 0;
  a->n += words + 1;
  while (a->n > 0 && a->w[a->n - 1] == 0)
    a->n--;
}

/* a = 2^k */
static void bn_pow2(bn *a, int k) {
  bn_set(a, 1);
  bn_shl(a, k);
}

/* a *= m */
static void bn_mul_small(bn *a, uint32_t m) {
  uint64_t carry = 0;

  for (int i = 0; i < a->n; i++) {
    uint64_t v = (uint64_t)a->w[i] * m + carry;
    a->w[i] = (uint32_t)v;
    carry = v >> 32;
  }
  if (carry) {
    assert(a->n < BN_WORDS);
    a->w[a->n++] = (uint32_t)carry;
  }
}

/* a *= 10^k, k >= 0 */
static void bn_mul_pow10(bn *a, int k) {
  static const uint32_t p10[] = {1,      10,      100,      1000,     10000,
                                 100000, 1000000, 10000000, 100000000};

  for (; k >= 9; k -= 9)
    bn_mul_small(a, 1000000000u);
  if (k > 0)
    bn_mul_small(a, p10[k]);
}

static int bn_cmp(const bn *a, const bn *b) {
  if (a->n != b->n)
    return a->n < b->n ? -1 : 1;
  for (int i = a->n - 1; i >= 0; i--)
    if (a->w[i] != b->w[i])
      return a->w[i] < b->w[i] ? -1 : 1;
  return 0;
}

/* out = a + b */
static void bn_add(bn *out, const bn *a, const bn *b) {
  const bn *big = a->n >= b->n ? a : b, *small = big == a ? b : a;
  uint64_t carry = 0;

  for (int i = 0; i < big->n; i++) {
    uint64_t v = (uint64_t)big->w[i] + (i < small->n ? small->w[i] : 0) + carry;
    out->w[i] = (uint32_t)v;
    carry = v >> 32;
  }
  out->n = big->n;
  if (carry) {
    assert(out->n < BN_WORDS);
    out->w[out->n++] = 1;
  }
}

/* a -= b, for a >= b */
static void bn_sub(bn *a, const bn *b) {
  int64_t borrow = 0;

  assert(bn_cmp(a, b) >= 0);
  for (int i = 0; i < a->n; i++) {
    int64_t v = (int64_t)a->w[i] - (i < b->n ? b->w[i] : 0) - borrow;
    borrow = v < 0;
    a->w[i] = (uint32_t)(v + (borrow ? INT64_C(1) << 32 : 0));
  }
  while (a->n > 0 && a->w[a->n - 1] == 0)
    a->n--;
}

/* ---- the shortest digits ------------------------------------------------- */

/* The shortest digits of m * 2^e (m > 0, its top bit at mbit) into
 * digits (no terminator; 17 at most for a double), their count returned
 * and the decimal exponent of the first in *exp10: the value reads
 * digits[0].digits[1..] * 10^*exp10. unequal: m is a power of two above
 * the smallest normal, so the gap to the float below is half the gap
 * above. */
static int shortest_digits(uint64_t m, int e, int mbit, int unequal,
                           char *digits, int *exp10) {
  /* value = r / s; the bounds of the values that read back as it are
   * value - mlow / s and value + mhigh / s (each half a gap), everything
   * scaled by 2 (4 with unequal gaps) to stay in integers. */
  bn r, s, mlow, mhigh, top;
  int even = (m & 1) == 0, n = 0, k, c, low, high, down;
  unsigned digit;

  assert(m > 0);
  bn_set(&r, m);
  if (e >= 0) {
    bn_shl(&r, e + 1 + unequal);
    bn_set(&s, 2u << unequal);
    bn_pow2(&mlow, e);
  } else {
    bn_shl(&r, 1 + unequal);
    bn_pow2(&s, -e + 1 + unequal);
    bn_set(&mlow, 1);
  }

  /* k = floor(log10(value)) + 1: the estimate is that or one less. */
  k = (int)ceil((double)(mbit + e) * 0.30102999566398119521 - 0.69);
  if (k > 0) {
    bn_mul_pow10(&s, k);
  } else if (k < 0) {
    bn_mul_pow10(&r, -k);
    bn_mul_pow10(&mlow, -k);
  }
  if (bn_cmp(&r, &s) >= 0) {
    k++;
  } else {
    bn_mul_small(&r, 10);
    bn_mul_small(&mlow, 10);
  }
  mhigh = mlow;
  if (unequal)
    bn_shl(&mhigh, 1);
  *exp10 = k - 1;

  /* One digit a round, until the digits so far, rounded down or up, read
   * back as the value. */
  for (;;) {
    digit = 0;
    while (bn_cmp(&r, &s) >= 0) {
      bn_sub(&r, &s);
      digit++;
    }
    assert(digit < 10);
    bn_add(&top, &r, &mhigh);
    c = bn_cmp(&r, &mlow);
    low = even ? c <= 0 : c < 0;
    c = bn_cmp(&top, &s);
    high = even ? c >= 0 : c > 0;
    if (low || high)
      break;
    assert(n < 24);
    digits[n++] = (char)('0' + digit);
    bn_mul_small(&r, 10);
    bn_mul_small(&mlow, 10);
    bn_mul_small(&mhigh, 10);
  }

  /* The last digit: down or up as allowed; both allowed, the nearer
   * (remainder against half of s), ties to the even digit. */
  down = low;
  if (low == high) {
    bn_shl(&r, 1);
    c = bn_cmp(&r, &s);
    down = c < 0 || (c == 0 && digit % 2 == 0);
  }
  if (down) {
    digits[n++] = (char)('0' + digit);
  } else if (digit < 9) {
    digits[n++] = (char)('0' + digit + 1);
  } else {
    /* ...9 rounds up: drop the nines, carry into the digit before. */
    while (n > 0 && digits[n - 1] == '9')
      n--;
    if (n == 0) {
      digits[n++] = '1';
      ++*exp10;
    } else {
      digits[n - 1]++;
    }
  }
  return n;
}

/* ---- NumPy's layout ------------------------------------------------------ */

/* Writes the finite value -1^neg * digits * 10^exp10 (n digits, none
 * zero at the end) to out as NumPy does: positional with at least one
 * digit after the point when positional, else d[.ddd]e±XX. */
static size_t layout(int neg, const char *digits, int n, int exp10,
                     int positional, char *out) {
  char *p = out;

  if (neg)
    *p++ = '-';
  if (positional && exp10 >= 0) {
    for (int i = 0; i <= exp10; i++)
      *p++ = i < n ? digits[i] : '0';
    *p++ = '.';
    if (n > exp10 + 1) {
      memcpy(p, digits + exp10 + 1, (size_t)(n - exp10 - 1));
      p += n - exp10 - 1;
    } else {
      *p++ = '0';
    }
  } else if (positional) {
    *p++ = '0';
    *p++ = '.';
    for (int i = 0; i < -exp10 - 1; i++)
      *p++ = '0';
    memcpy(p, digits, (size_t)n);
    p += n;
  } else {
    int x = exp10 < 0 ? -exp10 : exp10;

    *p++ = digits[0];
    if (n > 1) {
      *p++ = '.';
      memcpy(p, digits + 1, (size_t)(n - 1));
      p += n - 1;
    }
    *p++ = 'e';
    *p++ = exp10 < 0 ? '-' : '+';
    if (x >= 100)
      *p++ = (char)('0' + x / 100);
    *p++ = (char)('0' + x / 10 % 10);
    *p++ = (char)('0' + x % 10);
  }
  *p = '\0';
  assert((size_t)(p - out) < STR_SHORTEST_MAX);
  return (size_t)(p - out);
}

/* The value (bits frac, biased exponent bexp of a format with fbits
 * fraction bits and bias) written as NumPy writes it; v is the value as
 * a double (exact for both formats), for the choice of layout. */
static size_t shortest(double v, uint64_t frac, int bexp, int fbits, int bias,
                       char *out) {
  char digits[24];
  double a = fabs(v);
  int neg = signbit(v) != 0, n, exp10, mbit = fbits;
  uint64_t m = frac;
  int e;

  if (isnan(v)) {
    memcpy(out, "nan", 4);
    return 3;
  }
  if (isinf(v)) {
    memcpy(out, neg ? "-inf" : "inf", neg ? 5 : 4);
    return neg ? 4u : 3u;
  }
  if (a == 0) {
    memcpy(out, neg ? "-0.0" : "0.0", neg ? 5 : 4);
    return neg ? 4u : 3u;
  }
  if (bexp == 0) { /* subnormal */
    e = 1 - bias - fbits;
    for (mbit = 63; !(m >> mbit & 1); mbit--)
      ;
  } else {
    m |= UINT64_C(1) << fbits;
    e = bexp - bias - fbits;
  }
  n = shortest_digits(m, e, mbit, bexp > 1 && frac == 0, digits, &exp10);
  return layout(neg, digits, n, exp10, a >= 1e-4 && a < 1e16, out);
}

size_t str_shortest_f64(double v, char *out) {
  uint64_t bits;

  memcpy(&bits, &v, sizeof bits);
  return shortest(v, bits & ((UINT64_C(1) << 52) - 1),
                  (int)(bits >> 52 & 0x7ff), 52, 1023, out);
}

size_t str_shortest_f32(float v, char *out) {
  uint32_t bits;

  memcpy(&bits, &v, sizeof bits);
  return shortest((double)v, bits & ((UINT32_C(1) << 23) - 1),
                  (int)(bits >> 23 & 0xff), 23, 127, out);
}
