/* plugins/ops/string/as_string.c — AsString, as TensorFlow defines it:
 * every element of a number or bool tensor written as a string, through
 * printf's %f, %e, %d and %u with TensorFlow's attributes (precision,
 * scientific, width, and fill, which is one printf flag). Its attribute
 * checks, its shape function and its reference CPU kernel.
 *
 * One deliberate difference: `shortest` writes floats as NumPy's str()
 * writes a numpy.float32 or numpy.float64 (shortest.c), the shortest
 * round trip that ONNX's Cast to string expects, where TensorFlow writes
 * %g (six significant digits); and it is accepted, changing nothing,
 * for integers and bools, which ONNX casts the same way. Written in the C
 * locale whatever the process's: a decimal point, never a comma. Not
 * differentiable. */
#include <config.h>

#include "strops.h"

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* Messages do not name the node: the core prefixes them with it. */

/* The largest width and precision taken: enough for every digit of a
 * double written by %f (1074 after the point), and a bound on the text
 * each element may need. */
#define AS_LIMIT 4096

/* The printf flags TensorFlow takes as `fill`. */
#define AS_FLAGS " +-0#"

/* A node's attributes, checked: made by spec_read, read-only afterwards. */
typedef struct as_spec {
  int32_t dtype;
  int shortest;
  int width;     /* 0: none */
  int precision; /* < 0: none */
  char fill;     /* '\0' or one of AS_FLAGS */
  char fmt[16];  /* printf format of a number: "%<fill>*.*f", "%*" PRId64 */
} as_spec;

/* A node's state for its kernel: the attributes and the C locale that
 * printf runs in. */
typedef struct as_state {
  as_spec spec;
  locale_t c_locale;
} as_state;

static int is_float(int32_t dt) { return dt == WF_FLOAT32 || dt == WF_FLOAT64; }

/* Reads and checks the attributes of a node (get on ctx) into *s, with
 * TensorFlow's refusals (INVALID_ARGUMENT): scientific or precision for
 * an integer or bool T; a fill of more than one byte, or not one of the
 * flags ' ', '+', '-', '0', '#'; scientific with shortest. Also refused:
 * shortest with a precision (the shortest round trip has its own number
 * of digits), a width or precision above AS_LIMIT. */
static int spec_read(str_attr_fn *get, const void *ctx, as_spec *s,
                     wf_status *st) {
  wf_attr_value t, precision, scientific, shortest, width, fill;
  const char *f;
  char *p;

  memset(s, 0, sizeof *s);
  if (get(ctx, "T", WF_ATTR_DTYPE, &t, st) ||
      get(ctx, "precision", WF_ATTR_INT, &precision, st) ||
      get(ctx, "scientific", WF_ATTR_BOOL, &scientific, st) ||
      get(ctx, "shortest", WF_ATTR_BOOL, &shortest, st) ||
      get(ctx, "width", WF_ATTR_INT, &width, st) ||
      get(ctx, "fill", WF_ATTR_STRING, &fill, st))
    return wfx_code(st);
  f = fill.u.s ? fill.u.s : "";
  if (!is_float(t.u.dtype) && scientific.u.b)
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "attribute 'scientific' is not supported for datatype "
                    "%s (T); only float32 and float64 are written in "
                    "scientific notation",
                    wfx_dtype_name(t.u.dtype));
  if (!is_float(t.u.dtype) && precision.u.i >= 0)
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "attribute 'precision' (%" PRId64 ") is not supported "
                    "for datatype %s (T); only float32 and float64 have "
                    "digits after the point",
                    precision.u.i, wfx_dtype_name(t.u.dtype));
  if (strlen(f) > 1)
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "attribute 'fill' is \"%.16s\" (%zu bytes); it must be "
                    "one character or none",
                    f, strlen(f));
  if (scientific.u.b && shortest.u.b)
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "attributes 'scientific' and 'shortest' are both set; "
                    "select one notation");
  if (shortest.u.b && precision.u.i >= 0)
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "attribute 'precision' (%" PRId64 ") cannot be used "
                    "with 'shortest', which writes the fewest digits that "
                    "read back as the same value",
                    precision.u.i);
  if (f[0] && !strchr(AS_FLAGS, f[0]))
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "attribute 'fill' is '%c' (0x%02x); it must be one of "
                    "the printf flags ' ', '+', '-', '0' or '#', or empty",
                    f[0] > 0x20 && f[0] < 0x7f ? f[0] : '?',
                    (unsigned)(unsigned char)f[0]);
  if (width.u.i > AS_LIMIT || precision.u.i > AS_LIMIT)
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "attribute '%s' is %" PRId64 "; at most %d is taken",
                    width.u.i > AS_LIMIT ? "width" : "precision",
                    width.u.i > AS_LIMIT ? width.u.i : precision.u.i, AS_LIMIT);

  s->dtype = t.u.dtype;
  s->shortest = shortest.u.b != 0;
  s->width = width.u.i > 0 ? (int)width.u.i : 0;
  s->precision = precision.u.i >= 0 ? (int)precision.u.i : -1;
  s->fill = f[0];

  /* The format of a number: '#' means nothing to %d and %u (and is
   * undefined there in C), so it is dropped for integers. */
  p = s->fmt;
  *p++ = '%';
  if (s->fill && (is_float(s->dtype) || s->fill != '#'))
    *p++ = s->fill;
  *p++ = '*';
  if (is_float(s->dtype)) {
    snprintf(p, sizeof s->fmt - (size_t)(p - s->fmt), ".*%c",
             scientific.u.b ? 'e' : 'f');
  } else if (s->dtype == WF_UINT8) {
    snprintf(p, sizeof s->fmt - (size_t)(p - s->fmt), "u");
  } else {
    snprintf(p, sizeof s->fmt - (size_t)(p - s->fmt), "%s", PRId64);
  }
  return 0;
}

/* ---- shape function ------------------------------------------------------ */

/* output has input's shape. */
static int shape(wf_shape_ctx *ctx, wf_status *st) {
  as_spec s;

  if (spec_read(str_shape_attr, ctx, &s, st))
    return wfx_code(st);
  return wfx_shape_like_input0(ctx, st);
}

/* ---- writing one element ------------------------------------------------- */

/* A growing text buffer of host memory. */
typedef struct as_text {
  char *p;
  size_t len, cap;
} as_text;

/* Room for `more` bytes past len; RESOURCE_EXHAUSTED otherwise. */
static int text_reserve(as_text *t, size_t more, wf_status *st) {
  size_t cap = t->cap ? t->cap : 256;
  char *p;

  if (t->cap - t->len >= more)
    return 0;
  while (cap - t->len < more) {
    if (cap > SIZE_MAX / 2)
      return wfx_fail(st, WF_RESOURCE_EXHAUSTED,
                      "output strings of more than %zu bytes", t->len);
    cap *= 2;
  }
  p = wfx_host->alloc(cap, 0);
  if (!p)
    return wfx_fail(st, WF_RESOURCE_EXHAUSTED,
                    "out of memory for %zu bytes of output strings", cap);
  if (t->len)
    memcpy(p, t->p, t->len);
  if (t->p)
    wfx_host->free(t->p);
  t->p = p;
  t->cap = cap;
  return 0;
}

/* Writes the shortest text of a float (n bytes at num) padded as printf
 * pads a number with flag `fill` to `width`: '+' or ' ' before a number
 * without sign, '-' to the left, '0' with zeros after the sign (not for
 * inf and nan), else spaces in front. '#' changes nothing. Returns the
 * length; out must have room for width + STR_SHORTEST_MAX bytes. */
static size_t pad(const char *num, size_t n, char fill, int width, char *out) {
  char sign = num[0] == '-' ? '-' : (fill == '+' || fill == ' ') ? fill : 0;
  const char *digits = num[0] == '-' ? num + 1 : num;
  size_t nd = num[0] == '-' ? n - 1 : n, len = nd + (sign != 0), gap;
  int finite = strcmp(digits, "inf") != 0 && strcmp(digits, "nan") != 0;
  char *p = out;

  gap = (size_t)width > len ? (size_t)width - len : 0;
  if (fill != '-' && (fill != '0' || !finite)) {
    memset(p, ' ', gap);
    p += gap;
  }
  if (sign)
    *p++ = sign;
  if (fill == '0' && finite) {
    memset(p, '0', gap);
    p += gap;
  }
  memcpy(p, digits, nd);
  p += nd;
  if (fill == '-') {
    memset(p, ' ', gap);
    p += gap;
  }
  *p = '\0';
  return (size_t)(p - out);
}

/* Appends element i of x (of the spec's dtype) to t, written as the spec
 * says. */
static int put(const as_spec *s, const wf_tensor *x, int64_t i, as_text *t,
               wf_status *st) {
  const void *data = wfx_data(x);
  char num[STR_SHORTEST_MAX];
  size_t room = (size_t)s->width + STR_SHORTEST_MAX;
  int n;

  if (s->dtype == WF_BOOL) {
    /* TensorFlow's: no width, no fill. */
    const char *b = ((const wfx_bool *)data)[i] ? "true" : "false";
    if (text_reserve(t, 6, st))
      return wfx_code(st);
    memcpy(t->p + t->len, b, strlen(b) + 1);
    t->len += strlen(b) + 1;
    return 0;
  }
  if (s->shortest && is_float(s->dtype)) {
    size_t len = s->dtype == WF_FLOAT32
                     ? str_shortest_f32(((const float *)data)[i], num)
                     : str_shortest_f64(((const double *)data)[i], num);
    if (text_reserve(t, room, st))
      return wfx_code(st);
    t->len += pad(num, len, s->fill, s->width, t->p + t->len) + 1;
    return 0;
  }

  /* printf, measured first where the room may not do. */
  for (;;) {
    size_t avail = t->cap - t->len;
    char *at = avail ? t->p + t->len : NULL;

    switch (s->dtype) {
    case WF_FLOAT32:
      n = snprintf(at, avail, s->fmt, s->width, s->precision,
                   (double)((const float *)data)[i]);
      break;
    case WF_FLOAT64:
      n = snprintf(at, avail, s->fmt, s->width, s->precision,
                   ((const double *)data)[i]);
      break;
    case WF_UINT8:
      n = snprintf(at, avail, s->fmt, s->width,
                   (unsigned)((const uint8_t *)data)[i]);
      break;
    case WF_INT8:
      n = snprintf(at, avail, s->fmt, s->width,
                   (int64_t)((const int8_t *)data)[i]);
      break;
    case WF_INT32:
      n = snprintf(at, avail, s->fmt, s->width,
                   (int64_t)((const int32_t *)data)[i]);
      break;
    case WF_INT64:
      n = snprintf(at, avail, s->fmt, s->width, ((const int64_t *)data)[i]);
      break;
    default:
      return wfx_fail(st, WF_UNIMPLEMENTED,
                      "no kernel for dtype %s (float32, float64, int8, "
                      "uint8, int32, int64 and bool only)",
                      wfx_dtype_name(s->dtype));
    }
    if (n < 0)
      return wfx_fail(st, WF_INTERNAL,
                      "printf failed to write element %" PRId64 " with '%s'", i,
                      s->fmt);
    if ((size_t)n < avail) {
      t->len += (size_t)n + 1;
      return 0;
    }
    if (text_reserve(t, (size_t)n + 1, st))
      return wfx_code(st);
  }
}

/* ---- kernel -------------------------------------------------------------- */

static void destroy(void *state) {
  as_state *s = state;

  if (!s)
    return;
  if (s->c_locale != (locale_t)0)
    freelocale(s->c_locale);
  wfx_host->free(s);
}

static int create(wf_kernel_ctx *ctx, void **state, wf_status *st) {
  as_state *s = wfx_host->alloc(sizeof *s, 0);

  if (!s)
    return wfx_fail(st, WF_RESOURCE_EXHAUSTED,
                    "out of memory for the kernel's state");
  s->c_locale = (locale_t)0;
  if (spec_read(str_kernel_attr, ctx, &s->spec, st))
    goto fail;
  s->c_locale = newlocale(LC_ALL_MASK, "C", (locale_t)0);
  if (s->c_locale == (locale_t)0) {
    wfx_fail(st, WF_RESOURCE_EXHAUSTED,
             "the C locale cannot be made (newlocale)");
    goto fail;
  }
  *state = s;
  return 0;

fail:
  destroy(s);
  return wfx_code(st);
}

/* input (...) -> output (...) strings, element by element. */
static int compute(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  const as_state *s = state;
  const wf_tensor *x;
  wf_tensor *y = NULL;
  wf_shape xs;
  as_text text = {NULL, 0, 0};
  size_t *offs = NULL;
  const char **strs = NULL;
  int64_t n;
  locale_t old = (locale_t)0;
  int rc = -1;

  if (wfx_kernel_input_check(ctx, 0, s->spec.dtype, -1, &x, &xs, st))
    return wfx_code(st);
  n = wfx_count(x);
  offs = wfx_host->alloc((size_t)(n + 1) * (sizeof *offs + sizeof *strs), 0);
  if (!offs) {
    wfx_fail(st, WF_RESOURCE_EXHAUSTED,
             "out of memory for the %" PRId64 " elements of input 'input'", n);
    goto fail;
  }
  strs = (const char **)(offs + n + 1);

  /* printf in the C locale: this thread's, for this call only. */
  old = uselocale(s->c_locale);
  for (int64_t i = 0; i < n; i++) {
    offs[i] = text.len;
    if (put(&s->spec, x, i, &text, st))
      goto fail;
  }
  uselocale(old);
  old = (locale_t)0;

  /* The buffer moved as it grew: point into it only now. */
  offs[n] = text.len;
  for (int64_t i = 0; i < n; i++)
    strs[i] = text.p + offs[i];
  for (int64_t i = 0; i < n; i++)
    offs[i] = offs[i + 1] - offs[i] - 1; /* each length, NUL not counted */
  y = wfx_host->tensor_new_strings(&xs, strs, offs, st);
  if (y && wfx_host->kernel_output_set(ctx, 0, y, st) == 0)
    rc = 0;

fail:
  if (old != (locale_t)0)
    uselocale(old);
  if (y)
    wfx_host->tensor_release(y);
  if (text.p)
    wfx_host->free(text.p);
  if (offs)
    wfx_host->free(offs);
  return rc ? wfx_code(st) : 0;
}

/* ---- definitions --------------------------------------------------------- */

static const wf_attr_def attrs[] = {
    WFX_ATTR_DTYPE("T", WFX_DTYPES_ALL,
                   "element type of input: float32, float64, int8, uint8, "
                   "int32, int64 or bool"),
    WFX_ATTR_INT("precision", -1,
                 "floats: digits after the point (printf's precision); "
                 "-1: printf's default, 6. Not with shortest, nor for "
                 "integers and bools. At most 4096"),
    WFX_ATTR_BOOL("scientific", 0,
                  "floats: scientific notation (%e) instead of %f; not "
                  "with shortest"),
    WFX_ATTR_BOOL("shortest", 0,
                  "floats: written as NumPy's str() writes a numpy.float32 "
                  "or numpy.float64 (the fewest digits that read back as "
                  "the same value; positional for 1e-4 <= |x| < 1e16, else "
                  "scientific), not TensorFlow's %g; integers and bools "
                  "are written as always"),
    WFX_ATTR_INT("width", -1,
                 "numbers: the least number of bytes, padded as fill says "
                 "(with spaces in front by default); -1: no padding. "
                 "Ignored for bools. At most 4096"),
    {WF_STRUCT_INIT(wf_attr_def), .name = "fill", .type = WF_ATTR_STRING,
     .has_default = 1,
     .default_value = {.type = WF_ATTR_STRING, .count = 1, .u = {.s = ""}},
     .doc = "one printf flag or none: ' ' (a space for the sign of a "
            "number >= 0), '+' (its sign always), '-' (padding to the "
            "left), '0' (zeros after the sign), '#' (floats: the point "
            "always)"},
    WF_ATTR_END};

const wf_op_def str_as_string_op = {
    WF_STRUCT_INIT(wf_op_def),
    .name = "AsString",
    .inputs = WFX_ARGS(WF_ARG_T("input", "T", "(...) numbers or bools")),
    .outputs = WFX_ARGS(
        WF_ARG_FIXED("output", WF_STRING, "(...) input's shape: strings")),
    .attrs = attrs,
    .shape_fn = shape,
    .doc = "TensorFlow's AsString: each element written as text. Floats "
           "as printf's %f (or %e with scientific) with precision, width "
           "and fill (a printf flag), or, with shortest, as NumPy's str() "
           "writes them ('0.1', '1e-05', 'nan', 'inf'); integers in "
           "decimal; bools 'true' and 'false'. Always in the C locale (a "
           "decimal point)."};

const wf_kernel_def str_as_string_kernel =
    WFX_CPU_REFERENCE("AsString", "T", WFX_DTYPES_ALL, compute,
                      .create = create, .destroy = destroy);

const wf_gradient_def str_as_string_gradient = {
    WF_STRUCT_INIT(wf_gradient_def), .op = "AsString",
    .flags = WF_GRAD_NOT_DIFFERENTIABLE};
