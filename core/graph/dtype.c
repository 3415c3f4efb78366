/* core/graph/dtype.c — element types and shapes as plain values (the dtype and
 * shape functions of weft/tensor.h).
 *
 * Nothing here allocates; tensors themselves live in core/graph/tensor.c. */
#include <config.h>

#include <weft/tensor.h>

#include "graph/tensor_internal.h"

#include <assert.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

static const struct {
  const char *name;
  size_t size;
} dtypes[WF__DTYPE_END] = {
    [WF_FLOAT32] = {"float32", 4}, [WF_FLOAT64] = {"float64", 8},
    [WF_FLOAT16] = {"float16", 2}, [WF_BFLOAT16] = {"bfloat16", 2},
    [WF_INT8] = {"int8", 1},       [WF_UINT8] = {"uint8", 1},
    [WF_INT32] = {"int32", 4},     [WF_INT64] = {"int64", 8},
    [WF_BOOL] = {"bool", 1},       [WF_RESOURCE] = {"resource", sizeof(void *)},
    [WF_STRING] = {"string", 0},
};

/* Short and C-like spellings accepted by wf_dtype_from_name. */
static const struct {
  const char *alias;
  wf_dtype dtype;
} aliases[] = {
    {"f32", WF_FLOAT32},    {"float", WF_FLOAT32}, {"f64", WF_FLOAT64},
    {"double", WF_FLOAT64}, {"f16", WF_FLOAT16},   {"half", WF_FLOAT16},
    {"bf16", WF_BFLOAT16},  {"i8", WF_INT8},       {"u8", WF_UINT8},
    {"i32", WF_INT32},      {"int", WF_INT32},     {"i64", WF_INT64},
    {"long", WF_INT64},     {"str", WF_STRING},
};

size_t wf_dtype_size(wf_dtype dtype) {
  if ((unsigned)dtype >= WF__DTYPE_END)
    return 0;
  return dtypes[dtype].size;
}

const char *wf_dtype_name(wf_dtype dtype) {
  if ((unsigned)dtype >= WF__DTYPE_END)
    return NULL;
  return dtypes[dtype].name;
}

wf_dtype wf_dtype_from_name(const char *name) {
  if (!name)
    return WF_DTYPE_INVALID;
  for (int t = 1; t < WF__DTYPE_END; t++)
    if (strcasecmp(name, dtypes[t].name) == 0)
      return (wf_dtype)t;
  for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++)
    if (strcasecmp(name, aliases[i].alias) == 0)
      return aliases[i].dtype;
  return WF_DTYPE_INVALID;
}

void wf_shape_init(wf_shape *s, const int64_t *dims, int rank) {
  assert(rank >= WF_UNKNOWN_RANK && rank <= WF_MAX_RANK);
  assert(rank <= 0 || dims);
  memset(s, 0, sizeof *s);
  s->rank = rank < 0 ? WF_UNKNOWN_RANK : rank;
  for (int i = 0; i < rank; i++)
    s->dims[i] = dims[i] < 0 ? WF_UNKNOWN_DIM : dims[i];
}

void wf_shape_unknown(wf_shape *s) {
  memset(s, 0, sizeof *s);
  s->rank = WF_UNKNOWN_RANK;
}

int wf_shape_is_known(const wf_shape *s) {
  if (s->rank < 0 || s->rank > WF_MAX_RANK)
    return 0;
  for (int i = 0; i < s->rank; i++)
    if (s->dims[i] < 0)
      return 0;
  return 1;
}

/* -1 as well when the product does not fit in int64_t. */
int64_t wf_shape_count(const wf_shape *s) {
  int64_t n = 1;
  if (!wf_shape_is_known(s))
    return -1;
  for (int i = 0; i < s->rank; i++) {
    if (s->dims[i] != 0 && n > INT64_MAX / s->dims[i])
      return -1;
    n *= s->dims[i];
  }
  return n;
}

int wf_shape_compatible(const wf_shape *a, const wf_shape *b) {
  if (a->rank < 0 || b->rank < 0)
    return 1;
  if (a->rank != b->rank)
    return 0;
  for (int i = 0; i < a->rank; i++)
    if (a->dims[i] >= 0 && b->dims[i] >= 0 && a->dims[i] != b->dims[i])
      return 0;
  return 1;
}

int wf_shape_equal(const wf_shape *a, const wf_shape *b) {
  if (a->rank != b->rank)
    return 0;
  for (int i = 0; i < a->rank; i++)
    if (a->dims[i] != b->dims[i])
      return 0;
  return 1;
}

char *wf_shape_str(const wf_shape *s, char *buf, size_t len) {
  size_t used = 0;
  int n;

  if (len == 0)
    return buf;
  buf[0] = '\0';
  if (s->rank < 0 || s->rank > WF_MAX_RANK) {
    snprintf(buf, len, "<unknown>");
    return buf;
  }
  n = snprintf(buf, len, "(");
  for (int i = 0; i < s->rank && n >= 0; i++) {
    used += (size_t)n;
    if (used >= len)
      break;
    if (s->dims[i] < 0)
      n = snprintf(buf + used, len - used, "%s?", i ? ", " : "");
    else
      n = snprintf(buf + used, len - used, "%s%lld", i ? ", " : "",
                   (long long)s->dims[i]);
  }
  if (n >= 0)
    used += (size_t)n;
  if (used < len)
    snprintf(buf + used, len - used, ")");
  return buf;
}

/* ---- 16-bit floats ---------------------------------------------------------- */

float wf__half_to_float(uint16_t h) {
  uint32_t sign = (uint32_t)(h >> 15) << 31, exp = (h >> 10) & 0x1f,
           man = h & 0x3ff, bits;
  if (exp == 0) {
    if (man == 0) {
      bits = sign;
    } else { /* subnormal: normalise */
      int e = -1;
      do {
        e++;
        man <<= 1;
      } while (!(man & 0x400));
      bits = sign | (uint32_t)(127 - 15 - e) << 23 | (man & 0x3ff) << 13;
    }
  } else if (exp == 0x1f) {
    bits = sign | 0x7f800000u | man << 13;
  } else {
    bits = sign | (exp + 127 - 15) << 23 | man << 13;
  }
  float f;
  memcpy(&f, &bits, sizeof f);
  return f;
}

uint16_t wf__float_to_half(float f) {
  uint32_t x;
  memcpy(&x, &f, sizeof x);
  uint32_t sign = (x >> 16) & 0x8000, exp = (x >> 23) & 0xff,
           man = x & 0x7fffff;
  if (exp == 0xff) /* inf, nan (kept quiet) */
    return (uint16_t)(sign | 0x7c00 | (man ? 0x200 : 0));
  int e = (int)exp - 127 + 15;
  if (e >= 0x1f)
    return (uint16_t)(sign | 0x7c00);
  if (e <= 0) {
    if (e < -10)
      return (uint16_t)sign;
    man |= 0x800000;
    uint32_t shift = (uint32_t)(14 - e);
    uint32_t half = man >> shift, rest = man & ((1u << shift) - 1),
             mid = 1u << (shift - 1);
    if (rest > mid || (rest == mid && (half & 1)))
      half++;
    return (uint16_t)(sign | half);
  }
  uint32_t half = sign | (uint32_t)e << 10 | man >> 13;
  uint32_t rest = man & 0x1fff;
  if (rest > 0x1000 || (rest == 0x1000 && (half & 1)))
    half++; /* may carry into the exponent, which rounds up correctly */
  return (uint16_t)half;
}

float wf__bf16_to_float(uint16_t h) {
  uint32_t bits = (uint32_t)h << 16;
  float f;
  memcpy(&f, &bits, sizeof f);
  return f;
}

uint16_t wf__float_to_bf16(float f) {
  uint32_t x;
  memcpy(&x, &f, sizeof x);
  if ((x & 0x7fffffff) > 0x7f800000) /* nan: keep it a nan */
    return (uint16_t)((x >> 16) | 0x40);
  x += 0x7fff + ((x >> 16) & 1); /* round to nearest even */
  return (uint16_t)(x >> 16);
}
