/* plugins/ops/string/strops.h — what the files of the string op plugin
 * share: UTF-8 case mapping through a C locale (casemap.c), floats
 * written as NumPy writes them (shortest.c) and the op, kernel and
 * gradient definitions plugin.c lists (normalizer.c, as_string.c,
 * to_number.c).
 *
 * String tensors (WF_STRING) are read and made through the host table
 * alone (tensor_string, tensor_new_strings); nothing here touches their
 * buffer layout. */
#ifndef WF_OPS_STROPS_H
#define WF_OPS_STROPS_H

#include <locale.h>
#include <stddef.h>

#include <weft/plugin_aux.h>

/* ---- UTF-8 case mapping (casemap.c) -------------------------------------- */

/* What str_map does to each code point. */
typedef enum str_case {
  STR_CASE_NONE,  /* nothing: the bytes are only checked to be UTF-8 */
  STR_CASE_LOWER, /* towlower_l */
  STR_CASE_UPPER, /* towupper_l */
  /* towlower_l(towupper_l(c)): one spelling for every case variant of a
   * letter with 1:1 mappings, so that "ſ", "s" and "S", or "ς", "σ" and
   * "Σ", fold alike; for case-insensitive comparison. */
  STR_CASE_FOLD
} str_case;

/* A locale's LC_CTYPE for the case mappings, by the name an op attribute
 * gives: "" means C.UTF-8; otherwise name as given, then name + ".UTF-8"
 * ("en_US" finds "en_US.UTF-8"). The caller frees *out with freelocale.
 * Returns 0, or NOT_FOUND with st naming `what` (where the name came
 * from: "attribute 'locale'"), the locale and both names tried (*out is
 * then (locale_t)0). Thread-safe. */
int str_locale_load(const char *name, const char *what, locale_t *out,
                    wf_status *st);

/* Maps the n bytes at s, strict UTF-8 (RFC 3629: no overlong forms, no
 * surrogates, nothing past U+10FFFF; NUL bytes are U+0000 and kept), code
 * point by code point through loc as `how` says. With out NULL only
 * measures; otherwise writes the result to out, which must have room
 * for it: the length a measuring call gave, or 4 * n bytes, which always
 * suffice. Returns 0 with the
 * result's length in *len, or -1 with *bad the offset of the first byte
 * that does not decode. A mapping that gives no Unicode scalar value
 * leaves the code point as it was. */
int str_map(const char *s, size_t n, str_case how, locale_t loc, char *out,
            size_t *len, size_t *bad);

/* ---- attributes (normalizer.c) ------------------------------------------- */

/* Reads attribute name, checked to be of type, through a shape function's
 * context (str_shape_attr) or a kernel's (str_kernel_attr), so that one
 * function checks a node's attributes for both. Errors as
 * wfx_shape_attr's. */
typedef int str_attr_fn(const void *ctx, const char *name, int32_t type,
                        wf_attr_value *v, wf_status *st);
str_attr_fn str_shape_attr, str_kernel_attr;

/* ---- floats as NumPy writes them (shortest.c) ---------------------------- */

/* Bytes that always hold str_shortest_*'s text and its terminator. */
#define STR_SHORTEST_MAX 32

/* Writes v to out (STR_SHORTEST_MAX bytes) as NumPy's str() writes a
 * numpy.float32 (str_shortest_f32) or numpy.float64 scalar: the fewest
 * significant digits that strtof (strtod) reads back as v, the nearer of
 * two such (ties to an even last digit); positional when 1e-4 <= |v| <
 * 1e16, with at least one digit after the point ("1.0", "100000.0",
 * "0.0001", "-0.0"), else scientific with the exponent's sign and at
 * least two of its digits ("1e-05", "1.2345679e+08"); "nan" (whatever
 * its sign), "inf", "-inf". Returns the length. Locale-independent and
 * thread-safe. */
size_t str_shortest_f32(float v, char *out);
size_t str_shortest_f64(double v, char *out);

/* ---- the ops (normalizer.c, as_string.c, to_number.c) -------------------- */

extern const wf_op_def str_normalizer_op;
extern const wf_kernel_def str_normalizer_kernel;
extern const wf_gradient_def str_normalizer_gradient;

extern const wf_op_def str_as_string_op;
extern const wf_kernel_def str_as_string_kernel;
extern const wf_gradient_def str_as_string_gradient;

extern const wf_op_def str_to_number_op;
extern const wf_kernel_def str_to_number_kernel;
extern const wf_gradient_def str_to_number_gradient;

#endif /* WF_OPS_STROPS_H */
