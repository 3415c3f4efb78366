/* plugins/ops/string/to_number.c — StringToNumber, as TensorFlow defines
 * it: every element of a string tensor read as a number of out_type.
 * Floats in decimal or scientific notation, or inf, infinity and nan in
 * any case, each with an optional sign, valued as strtof or strtod values
 * them (a value past the largest float is an infinity, as there);
 * integers in decimal with an optional sign, refused out of range; ASCII
 * whitespace around either. Anything else refuses the run, naming the
 * element. Its shape function and its reference CPU kernel.
 *
 * Read in the C locale whatever the process's: "1.5" is one and a half
 * and "1,5" is refused under a locale with a decimal comma too. Hex
 * floats and "nan(...)", which strtod also takes, are refused: TensorFlow
 * takes neither. Not differentiable. */
#include <config.h>

#include "strops.h"

#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Messages do not name the node: the core prefixes them with it. */

/* The most bytes of an element a message shows. */
#define TN_SHOW 48

#define TN_DTYPES                                                              \
  (WF_DTYPE_BIT(WF_FLOAT32) | WF_DTYPE_BIT(WF_FLOAT64) |                       \
   WF_DTYPE_BIT(WF_INT32) | WF_DTYPE_BIT(WF_INT64))

static int is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' ||
         c == '\r';
}

static int is_digit(char c) { return c >= '0' && c <= '9'; }

/* 1 when the n bytes at p are word (lower case ASCII) in any case. */
static int is_word(const char *p, size_t n, const char *word) {
  if (strlen(word) > n)
    return 0;
  for (size_t i = 0; word[i]; i++) {
    char c = p[i] >= 'A' && p[i] <= 'Z' ? (char)(p[i] - 'A' + 'a') : p[i];
    if (c != word[i])
      return 0;
  }
  return 1;
}

/* The number in s[0..len) without its surrounding whitespace: [*b, *e). */
static void trim(const char *s, size_t len, size_t *b, size_t *e) {
  *b = 0;
  *e = len;
  while (*b < *e && is_space(s[*b]))
    ++*b;
  while (*e > *b && is_space(s[*e - 1]))
    --*e;
}

/* 1 when s[0..n) is a float as this op takes it: [sign] then inf,
 * infinity or nan in any case, or digits with at most one point (a digit
 * on either side) and an optional exponent ([eE] [sign] digits). */
static int is_float_text(const char *s, size_t n) {
  size_t i = 0, digits = 0;

  if (i < n && (s[i] == '+' || s[i] == '-'))
    i++;
  if ((n - i == 8 && is_word(s + i, n - i, "infinity")) ||
      (n - i == 3 &&
       (is_word(s + i, n - i, "inf") || is_word(s + i, n - i, "nan"))))
    return 1;
  for (; i < n && is_digit(s[i]); i++)
    digits++;
  if (i < n && s[i] == '.')
    for (i++; i < n && is_digit(s[i]); i++)
      digits++;
  if (digits == 0)
    return 0;
  if (i < n && (s[i] == 'e' || s[i] == 'E')) {
    size_t first;
    i++;
    if (i < n && (s[i] == '+' || s[i] == '-'))
      i++;
    for (first = i; i < n && is_digit(s[i]); i++)
      ;
    if (i == first)
      return 0;
  }
  return i == n;
}

/* s[0..n) as a decimal integer in [lo, hi]: 0, -1 when it is none, 1
 * when it is out of range. */
static int parse_int(const char *s, size_t n, int64_t lo, int64_t hi,
                     int64_t *out) {
  uint64_t v = 0, limit;
  size_t i = 0;
  int neg = 0;

  if (i < n && (s[i] == '+' || s[i] == '-'))
    neg = s[i++] == '-';
  if (i == n)
    return -1;
  limit = neg ? (uint64_t)(-(lo + 1)) + 1 : (uint64_t)hi;
  for (; i < n; i++) {
    if (!is_digit(s[i]))
      return -1;
    if (v > (limit - (uint64_t)(s[i] - '0')) / 10) {
      /* Out of range, if the rest are digits. */
      while (++i < n)
        if (!is_digit(s[i]))
          return -1;
      return 1;
    }
    v = v * 10 + (uint64_t)(s[i] - '0');
  }
  *out = neg ? (v == 0 ? 0 : -(int64_t)(v - 1) - 1) : (int64_t)v;
  return 0;
}

/* s (len bytes) quoted for a message, C escapes for what is not
 * printable ASCII, the first TN_SHOW bytes only. */
static char *quote(const char *s, size_t len, char *buf, size_t size) {
  size_t used = 0, i;

  assert(size >= 4 * TN_SHOW + 8);
  buf[used++] = '"';
  for (i = 0; i < len && i < TN_SHOW; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c == '"' || c == '\\')
      used += (size_t)snprintf(buf + used, size - used, "\\%c", c);
    else if (c >= 0x20 && c < 0x7f)
      buf[used++] = (char)c;
    else
      used += (size_t)snprintf(buf + used, size - used, "\\x%02x", c);
  }
  snprintf(buf + used, size - used, "\"%s", i < len ? "..." : "");
  return buf;
}

/* INVALID_ARGUMENT for element i of n, s (len bytes), and why. */
static int bad(int64_t i, int64_t n, const char *s, size_t len, const char *why,
               wf_status *st) {
  char q[4 * TN_SHOW + 8];

  return wfx_fail(st, WF_INVALID_ARGUMENT,
                  "element %" PRId64 " (of %" PRId64 ") of input "
                  "'string_tensor' is %s (%zu bytes): %s",
                  i, n, quote(s, len, q, sizeof q), len, why);
}

/* ---- kernel -------------------------------------------------------------- */

/* The C locale that strtod runs in, made once per node. */
static int create(wf_kernel_ctx *ctx, void **state, wf_status *st) {
  locale_t c = newlocale(LC_ALL_MASK, "C", (locale_t)0);

  if (c == (locale_t)0)
    return wfx_fail(st, WF_RESOURCE_EXHAUSTED,
                    "the C locale cannot be made (newlocale)");
  *state = c;
  return 0;
}

static void destroy(void *state) { freelocale((locale_t)state); }

/* Reads element i of n (s, len bytes, NUL-terminated) as dtype into
 * out[i]. Runs in the C locale. */
static int convert(int32_t dtype, const char *s, size_t len, int64_t i,
                   int64_t n, void *out, wf_status *st) {
  size_t b, e;
  char *end;
  int64_t v = 0;
  int rc;

  trim(s, len, &b, &e);
  if (dtype == WF_FLOAT32 || dtype == WF_FLOAT64) {
    if (!is_float_text(s + b, e - b))
      return bad(i, n, s, len,
                 dtype == WF_FLOAT32
                     ? "not a float32: expected decimal or scientific "
                       "notation, inf, infinity or nan, with an optional "
                       "sign and ASCII whitespace around"
                     : "not a float64: expected decimal or scientific "
                       "notation, inf, infinity or nan, with an optional "
                       "sign and ASCII whitespace around",
                 st);
    /* Checked above, so strtod reads exactly [b, e); a value past the
     * range gives an infinity or zero (ERANGE), as TensorFlow's does. */
    if (dtype == WF_FLOAT32)
      ((float *)out)[i] = strtof(s + b, &end);
    else
      ((double *)out)[i] = strtod(s + b, &end);
    assert(end == s + e);
    return 0;
  }
  if (dtype == WF_INT32)
    rc = parse_int(s + b, e - b, INT32_MIN, INT32_MAX, &v);
  else
    rc = parse_int(s + b, e - b, INT64_MIN, INT64_MAX, &v);
  if (rc < 0)
    return bad(i, n, s, len,
               dtype == WF_INT32
                   ? "not an int32: expected decimal digits with an "
                     "optional sign and ASCII whitespace around"
                   : "not an int64: expected decimal digits with an "
                     "optional sign and ASCII whitespace around",
               st);
  if (rc > 0)
    return bad(i, n, s, len,
               dtype == WF_INT32
                   ? "out of range for int32 (-2147483648 to 2147483647)"
                   : "out of range for int64 (-9223372036854775808 to "
                     "9223372036854775807)",
               st);
  if (dtype == WF_INT32)
    ((int32_t *)out)[i] = (int32_t)v;
  else
    ((int64_t *)out)[i] = v;
  return 0;
}

/* string_tensor (...) -> output (...) of out_type. */
static int compute(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  const wf_tensor *x;
  wf_tensor *y;
  wf_shape xs;
  int32_t dtype;
  int64_t n;
  locale_t old;
  int rc = 0;

  if (wfx_kernel_input_check(ctx, 0, WF_STRING, -1, &x, &xs, st) ||
      wfx_kernel_attr_dtype(ctx, "out_type", &dtype, st) ||
      wfx_kernel_output(ctx, 0, &xs, &y, st))
    return wfx_code(st);
  if (dtype != WF_FLOAT32 && dtype != WF_FLOAT64 && dtype != WF_INT32 &&
      dtype != WF_INT64)
    return wfx_fail(st, WF_UNIMPLEMENTED,
                    "no kernel for out_type %s (float32, float64, int32 and "
                    "int64 only)",
                    wfx_dtype_name(dtype));
  n = wfx_count(x);
  old = uselocale((locale_t)state);
  for (int64_t i = 0; i < n && rc == 0; i++) {
    size_t len;
    const char *s = wfx_host->tensor_string(x, i, &len);

    assert(s);
    rc = convert(dtype, s, len, i, n, wfx_data(y), st);
  }
  uselocale(old);
  return rc;
}

/* ---- definitions --------------------------------------------------------- */

static const wf_attr_def attrs[] = {
    {WF_STRUCT_INIT(wf_attr_def), .name = "out_type", .type = WF_ATTR_DTYPE,
     .has_default = 1,
     .default_value = {.type = WF_ATTR_DTYPE,
                       .count = 1,
                       .u = {.dtype = WF_FLOAT32}},
     .allowed_dtypes = TN_DTYPES,
     .doc = "element type of output: float32 (default), float64, int32 or "
            "int64"},
    WF_ATTR_END};

const wf_op_def str_to_number_op = {
    WF_STRUCT_INIT(wf_op_def),
    .name = "StringToNumber",
    .inputs =
        WFX_ARGS(WF_ARG_FIXED("string_tensor", WF_STRING, "(...) strings")),
    .outputs = WFX_ARGS(
        WF_ARG_T("output", "out_type", "(...) string_tensor's shape: numbers")),
    .attrs = attrs,
    .shape_fn = wfx_shape_like_input0,
    .doc = "TensorFlow's StringToNumber: each element read as a number of "
           "out_type. Floats as strtof/strtod value them: decimal or "
           "scientific notation, inf, infinity or nan in any case, with an "
           "optional sign (too large: an infinity); integers in decimal "
           "with an optional sign, refused out of range; ASCII whitespace "
           "around either. Anything else (an empty string, bytes after "
           "the number, a NUL byte, hex) fails the run, naming the "
           "element. Always in the C locale (a decimal point)."};

const wf_kernel_def str_to_number_kernel =
    WFX_CPU_REFERENCE("StringToNumber", "out_type", TN_DTYPES, compute,
                      .create = create, .destroy = destroy);

const wf_gradient_def str_to_number_gradient = {
    WF_STRUCT_INIT(wf_gradient_def), .op = "StringToNumber",
    .flags = WF_GRAD_NOT_DIFFERENTIABLE};
