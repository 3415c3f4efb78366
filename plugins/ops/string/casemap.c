/* plugins/ops/string/casemap.c — UTF-8 case mapping through a C locale:
 * strict decoding and encoding of UTF-8, and each code point mapped with
 * towlower_l/towupper_l of a locale loaded by name.
 *
 * Mappings are the C library's, one code point to one: "ß" stays "ß" in
 * upper case (no "SS"), and nothing depends on context (no final sigma).
 * Code points are wchar_t values, which glibc defines as UCS-4
 * (__STDC_ISO_10646__) in every locale. */
#include <config.h>

#include "strops.h"

#include <stdint.h>
#include <string.h>
#include <wctype.h>

#if !defined(__STDC_ISO_10646__)
#error "casemap.c needs wchar_t to hold Unicode code points"
#endif

int str_locale_load(const char *name, const char *what, locale_t *out,
                    wf_status *st) {
  char utf8[256];
  const char *first = name[0] ? name : "C.UTF-8";
  int n;

  *out = newlocale(LC_CTYPE_MASK, first, (locale_t)0);
  if (*out)
    return 0;
  n = snprintf(utf8, sizeof utf8, "%s.UTF-8", first);
  if (n < 0 || (size_t)n >= sizeof utf8)
    return wfx_fail(st, WF_NOT_FOUND,
                    "%s: locale '%.64s...' cannot be loaded (a name of %zu "
                    "bytes)",
                    what, first, strlen(first));
  *out = newlocale(LC_CTYPE_MASK, utf8, (locale_t)0);
  if (*out)
    return 0;
  return wfx_fail(st, WF_NOT_FOUND,
                  "%s: locale '%s' cannot be loaded (tried '%s' and '%s'); "
                  "`locale -a` lists the installed ones",
                  what, first, first, utf8);
}

/* The code point at s[*at] (n bytes in all, *at < n), *at moved past it;
 * -1 when the bytes there are not strict UTF-8 (*at unchanged). */
static int32_t utf8_next(const unsigned char *s, size_t n, size_t *at) {
  size_t i = *at, need;
  uint32_t c;
  unsigned char lo = 0x80, hi = 0xbf; /* range of the second byte */

  assert(i < n);
  c = s[i];
  if (c < 0x80) {
    *at = i + 1;
    return (int32_t)c;
  }
  if (c >= 0xc2 && c <= 0xdf) {
    need = 1;
    c &= 0x1f;
  } else if (c >= 0xe0 && c <= 0xef) {
    need = 2;
    lo = c == 0xe0 ? 0xa0 : 0x80; /* no overlong forms */
    hi = c == 0xed ? 0x9f : 0xbf; /* no surrogates */
    c &= 0x0f;
  } else if (c >= 0xf0 && c <= 0xf4) {
    need = 3;
    lo = c == 0xf0 ? 0x90 : 0x80; /* no overlong forms */
    hi = c == 0xf4 ? 0x8f : 0xbf; /* nothing past U+10FFFF */
    c &= 0x07;
  } else {
    return -1;
  }
  if (n - i <= need || s[i + 1] < lo || s[i + 1] > hi)
    return -1;
  for (size_t k = 1; k <= need; k++) {
    if ((s[i + k] & 0xc0) != 0x80)
      return -1;
    c = c << 6 | (s[i + k] & 0x3f);
  }
  *at = i + 1 + need;
  return (int32_t)c;
}

/* Writes c's UTF-8 form to out (when not NULL); returns its length. c is
 * a Unicode scalar value. */
static size_t utf8_put(uint32_t c, unsigned char *out) {
  unsigned char b[4];
  size_t len;

  if (c < 0x80) {
    b[0] = (unsigned char)c;
    len = 1;
  } else if (c < 0x800) {
    b[0] = (unsigned char)(0xc0 | c >> 6);
    b[1] = (unsigned char)(0x80 | (c & 0x3f));
    len = 2;
  } else if (c < 0x10000) {
    b[0] = (unsigned char)(0xe0 | c >> 12);
    b[1] = (unsigned char)(0x80 | (c >> 6 & 0x3f));
    b[2] = (unsigned char)(0x80 | (c & 0x3f));
    len = 3;
  } else {
    b[0] = (unsigned char)(0xf0 | c >> 18);
    b[1] = (unsigned char)(0x80 | (c >> 12 & 0x3f));
    b[2] = (unsigned char)(0x80 | (c >> 6 & 0x3f));
    b[3] = (unsigned char)(0x80 | (c & 0x3f));
    len = 4;
  }
  if (out)
    memcpy(out, b, len);
  return len;
}

static int is_scalar_value(wint_t c) {
  return c <= 0x10ffff && !(c >= 0xd800 && c <= 0xdfff);
}

static uint32_t map_one(uint32_t c, str_case how, locale_t loc) {
  wint_t m;

  switch (how) {
  case STR_CASE_LOWER:
    m = towlower_l((wint_t)c, loc);
    break;
  case STR_CASE_UPPER:
    m = towupper_l((wint_t)c, loc);
    break;
  case STR_CASE_FOLD:
    m = towlower_l(towupper_l((wint_t)c, loc), loc);
    break;
  default:
    return c;
  }
  return is_scalar_value(m) ? (uint32_t)m : c;
}

int str_map(const char *s, size_t n, str_case how, locale_t loc, char *out,
            size_t *len, size_t *bad) {
  const unsigned char *b = (const unsigned char *)s;
  unsigned char *o = (unsigned char *)out;
  size_t at = 0, used = 0;

  assert(how == STR_CASE_NONE || loc != (locale_t)0);
  while (at < n) {
    size_t here = at;
    int32_t c = utf8_next(b, n, &at);

    if (c < 0) {
      *bad = here;
      *len = 0;
      return -1;
    }
    used += utf8_put(map_one((uint32_t)c, how, loc), o ? o + used : NULL);
  }
  *len = used;
  return 0;
}
