/* lib/serve/json_read.c — the request bodies' JSON reader (json_read.h):
 * a recursive descent over the text that pushes each value on a stack and,
 * when an array or object closes, moves its items into the arena in one
 * piece. Strings are checked to be UTF-8 and unescaped; numbers with at
 * most 19 digits and a small exponent are converted exactly from their
 * digits (both factors are exact doubles), the rest with strtod. */
#include <config.h>

#include "json_read.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DEPTH 64
#define BLOCK 65536

typedef struct block {
  struct block *next;
  size_t used, cap;
  max_align_t data[];
} block;

struct srv_json_doc {
  block *blocks;
  srv_json root;
};

typedef struct parser {
  const char *start, *p, *end;
  srv_json_doc *doc;
  srv_json *stack;
  size_t top, cap;
  char *err;
  size_t errlen;
  int failed;
} parser;

static void *arena_alloc(srv_json_doc *doc, size_t n) {
  n = (n + 15) & ~(size_t)15;
  block *b = doc->blocks;
  if (!b || b->cap - b->used < n) {
    size_t cap = n > BLOCK ? n : BLOCK;
    b = malloc(sizeof *b + cap);
    if (!b)
      return NULL;
    b->used = 0;
    b->cap = cap;
    b->next = doc->blocks;
    doc->blocks = b;
  }
  void *p = (char *)b->data + b->used;
  b->used += n;
  return p;
}

void srv_json_doc_free(srv_json_doc *doc) {
  if (!doc)
    return;
  for (block *b = doc->blocks, *n; b; b = n) {
    n = b->next;
    free(b);
  }
  free(doc);
}

static int fail(parser *ps, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static int fail(parser *ps, const char *fmt, ...) {
  if (ps->failed)
    return -1;
  ps->failed = 1;
  int line = 1, col = 1;
  for (const char *q = ps->start; q < ps->p && q < ps->end; q++) {
    if (*q == '\n')
      line++, col = 1;
    else
      col++;
  }
  char what[160];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  snprintf(ps->err, ps->errlen, "line %d, column %d: %s", line, col, what);
  return -1;
}

static srv_json *push(parser *ps) {
  if (ps->top == ps->cap) {
    size_t cap = ps->cap ? ps->cap * 2 : 256;
    srv_json *s = realloc(ps->stack, cap * sizeof *s);
    if (!s) {
      fail(ps, "out of memory");
      return NULL;
    }
    ps->stack = s;
    ps->cap = cap;
  }
  srv_json *v = &ps->stack[ps->top++];
  memset(v, 0, sizeof *v);
  return v;
}

static void skip_space(parser *ps) {
  while (ps->p < ps->end &&
         (*ps->p == ' ' || *ps->p == '\n' || *ps->p == '\r' || *ps->p == '\t'))
    ps->p++;
}

static int literal(parser *ps, const char *word) {
  size_t n = strlen(word);
  if ((size_t)(ps->end - ps->p) < n || memcmp(ps->p, word, n))
    return 0;
  const char *after = ps->p + n;
  if (after < ps->end &&
      ((*after >= 'a' && *after <= 'z') || (*after >= 'A' && *after <= 'Z') ||
       (*after >= '0' && *after <= '9') || *after == '_'))
    return 0;
  ps->p = after;
  return 1;
}

/* Length of the UTF-8 sequence at p (< end), or 0 when it is malformed. */
static int utf8_len(const unsigned char *p, const unsigned char *end) {
  unsigned c = p[0];
  int n;
  unsigned lo = 0x80, hi = 0xBF;
  if (c < 0x80)
    return 1;
  if (c >= 0xC2 && c <= 0xDF)
    n = 2;
  else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    if (c == 0xE0)
      lo = 0xA0;
    if (c == 0xED)
      hi = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    if (c == 0xF0)
      lo = 0x90;
    if (c == 0xF4)
      hi = 0x8F;
  } else
    return 0;
  if (end - p < n || p[1] < lo || p[1] > hi)
    return 0;
  for (int i = 2; i < n; i++)
    if (p[i] < 0x80 || p[i] > 0xBF)
      return 0;
  return n;
}

static int hex4(const char *p, unsigned *out) {
  unsigned v = 0;
  for (int i = 0; i < 4; i++) {
    char c = p[i];
    v <<= 4;
    if (c >= '0' && c <= '9')
      v |= (unsigned)(c - '0');
    else if (c >= 'a' && c <= 'f')
      v |= (unsigned)(c - 'a' + 10);
    else if (c >= 'A' && c <= 'F')
      v |= (unsigned)(c - 'A' + 10);
    else
      return -1;
  }
  *out = v;
  return 0;
}

static size_t put_utf8(char *o, unsigned cp) {
  if (cp < 0x80) {
    o[0] = (char)cp;
    return 1;
  }
  if (cp < 0x800) {
    o[0] = (char)(0xC0 | (cp >> 6));
    o[1] = (char)(0x80 | (cp & 0x3F));
    return 2;
  }
  if (cp < 0x10000) {
    o[0] = (char)(0xE0 | (cp >> 12));
    o[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
    o[2] = (char)(0x80 | (cp & 0x3F));
    return 3;
  }
  o[0] = (char)(0xF0 | (cp >> 18));
  o[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
  o[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
  o[3] = (char)(0x80 | (cp & 0x3F));
  return 4;
}

/* A string starting at the opening quote; the decoded text goes to v. */
static int parse_string(parser *ps, srv_json *v) {
  const char *p = ps->p + 1;
  /* The decoded text is never longer than the source. */
  const char *q = p;
  while (q < ps->end && *q != '"') {
    if (*q == '\\')
      q++;
    q++;
  }
  if (q >= ps->end)
    return fail(ps, "a string is not closed");
  char *out = arena_alloc(ps->doc, (size_t)(q - p) + 1);
  if (!out)
    return fail(ps, "out of memory");
  size_t n = 0;
  while (*p != '"') {
    unsigned char c = (unsigned char)*p;
    if (c < 0x20) {
      ps->p = p;
      return fail(ps, "a control character in a string");
    }
    if (c == '\\') {
      char e = p[1];
      p += 2;
      switch (e) {
      case '"':
        out[n++] = '"';
        break;
      case '\\':
        out[n++] = '\\';
        break;
      case '/':
        out[n++] = '/';
        break;
      case 'b':
        out[n++] = '\b';
        break;
      case 'f':
        out[n++] = '\f';
        break;
      case 'n':
        out[n++] = '\n';
        break;
      case 'r':
        out[n++] = '\r';
        break;
      case 't':
        out[n++] = '\t';
        break;
      case 'u': {
        unsigned cp, lo;
        if (q - p < 4 || hex4(p, &cp)) {
          ps->p = p;
          return fail(ps, "a bad \\u escape");
        }
        p += 4;
        if (cp >= 0xD800 && cp <= 0xDBFF) {
          if (q - p < 6 || p[0] != '\\' || p[1] != 'u' || hex4(p + 2, &lo) ||
              lo < 0xDC00 || lo > 0xDFFF) {
            ps->p = p;
            return fail(ps, "a lone surrogate in a \\u escape");
          }
          p += 6;
          cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
        } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
          ps->p = p;
          return fail(ps, "a lone surrogate in a \\u escape");
        }
        /* Six source bytes make at most four. */
        n += put_utf8(out + n, cp);
        break;
      }
      default:
        ps->p = p - 2;
        return fail(ps, "an unknown escape '\\%c'", e);
      }
      continue;
    }
    int len = utf8_len((const unsigned char *)p, (const unsigned char *)q);
    if (!len) {
      ps->p = p;
      return fail(ps, "a string that is not UTF-8");
    }
    memcpy(out + n, p, (size_t)len);
    n += (size_t)len;
    p += len;
  }
  out[n] = '\0';
  if (n > UINT32_MAX)
    return fail(ps, "a string is too long");
  v->type = SRV_JSON_STRING;
  v->n = (uint32_t)n;
  v->u.s = out;
  ps->p = q + 1;
  return 0;
}

static const double pow10_exact[] = {
    1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
    1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

static int parse_number(parser *ps, srv_json *v) {
  const char *p = ps->p, *s = p;
  int neg = 0, digits = 0, frac = 0, exact = 1, is_int = 1;
  uint64_t m = 0;
  if (*p == '-')
    neg = 1, p++;
  if (p >= ps->end || *p < '0' || *p > '9')
    return fail(ps, "a bad number");
  if (*p == '0') {
    p++;
    if (p < ps->end && *p >= '0' && *p <= '9')
      return fail(ps, "a number with a leading zero");
  } else {
    while (p < ps->end && *p >= '0' && *p <= '9') {
      if (digits < 19)
        m = m * 10 + (uint64_t)(*p - '0');
      else
        exact = 0;
      digits += m != 0;
      p++;
    }
  }
  int lead = digits; /* significant integer digits */
  if (p < ps->end && *p == '.') {
    is_int = 0;
    p++;
    if (p >= ps->end || *p < '0' || *p > '9') {
      ps->p = p;
      return fail(ps, "a bad number: no digit after '.'");
    }
    while (p < ps->end && *p >= '0' && *p <= '9') {
      if (digits < 19) {
        m = m * 10 + (uint64_t)(*p - '0');
        frac++;
        digits += m != 0;
      } else {
        exact = 0;
      }
      p++;
    }
  }
  int exp = 0;
  if (p < ps->end && (*p == 'e' || *p == 'E')) {
    is_int = 0;
    p++;
    int eneg = 0;
    if (p < ps->end && (*p == '+' || *p == '-'))
      eneg = *p++ == '-';
    if (p >= ps->end || *p < '0' || *p > '9') {
      ps->p = p;
      return fail(ps, "a bad number: no digit in the exponent");
    }
    while (p < ps->end && *p >= '0' && *p <= '9') {
      if (exp < 100000)
        exp = exp * 10 + (*p - '0');
      p++;
    }
    if (eneg)
      exp = -exp;
  }
  (void)lead;
  v->type = SRV_JSON_NUMBER;
  int e10 = exp - frac;
  if (exact && m <= (UINT64_C(1) << 53) && e10 >= -22 && e10 <= 22) {
    double d = (double)m;
    d = e10 < 0 ? d / pow10_exact[-e10] : d * pow10_exact[e10];
    v->d = neg ? -d : d;
  } else {
    char small[64], *buf = small;
    size_t len = (size_t)(p - s);
    if (len >= sizeof small && !(buf = malloc(len + 1)))
      return fail(ps, "out of memory");
    memcpy(buf, s, len);
    buf[len] = '\0';
    v->d = strtod(buf, NULL);
    if (buf != small)
      free(buf);
  }
  if (is_int && exact) {
    /* m holds every digit (at most 19): within int64? */
    if (!neg && m <= (uint64_t)INT64_MAX) {
      v->is_int = 1;
      v->u.i = (int64_t)m;
    } else if (neg && m <= (uint64_t)INT64_MAX + 1) {
      v->is_int = 1;
      v->u.i = m == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)m;
    }
  }
  ps->p = p;
  return 0;
}

static int parse_value(parser *ps, int depth);

/* Moves the values pushed since base into the arena as v's items. */
static int close_container(parser *ps, size_t base, int type) {
  size_t count = ps->top - base;
  srv_json *items = NULL;
  if (count) {
    items = arena_alloc(ps->doc, count * sizeof *items);
    if (!items)
      return fail(ps, "out of memory");
    memcpy(items, ps->stack + base, count * sizeof *items);
  }
  ps->top = base;
  srv_json *v = push(ps);
  if (!v)
    return -1;
  v->type = (uint8_t)type;
  v->n = (uint32_t)(type == SRV_JSON_OBJECT ? count / 2 : count);
  v->u.items = items;
  return 0;
}

static int parse_value(parser *ps, int depth) {
  skip_space(ps);
  if (ps->p >= ps->end)
    return fail(ps, "the text ends where a value should be");
  if (depth > MAX_DEPTH)
    return fail(ps, "nested deeper than %d", MAX_DEPTH);
  char c = *ps->p;
  if (c == '[' || c == '{') {
    int obj = c == '{';
    size_t base = ps->top;
    ps->p++;
    skip_space(ps);
    if (ps->p < ps->end && *ps->p == (obj ? '}' : ']')) {
      ps->p++;
      return close_container(ps, base, obj ? SRV_JSON_OBJECT : SRV_JSON_ARRAY);
    }
    for (;;) {
      if (obj) {
        skip_space(ps);
        if (ps->p >= ps->end || *ps->p != '"')
          return fail(ps, "an object key must be a string");
        srv_json *k = push(ps);
        if (!k || parse_string(ps, k))
          return -1;
        skip_space(ps);
        if (ps->p >= ps->end || *ps->p != ':')
          return fail(ps, "':' expected after an object key");
        ps->p++;
      }
      if (parse_value(ps, depth + 1))
        return -1;
      if ((ps->top - base) / (obj ? 2 : 1) > UINT32_MAX)
        return fail(ps, "too many items");
      skip_space(ps);
      if (ps->p < ps->end && *ps->p == ',') {
        ps->p++;
        continue;
      }
      if (ps->p < ps->end && *ps->p == (obj ? '}' : ']')) {
        ps->p++;
        return close_container(ps, base,
                               obj ? SRV_JSON_OBJECT : SRV_JSON_ARRAY);
      }
      if (ps->p >= ps->end)
        return fail(ps, "the text ends inside %s",
                    obj ? "an object" : "a list");
      return fail(ps, "',' or '%c' expected", obj ? '}' : ']');
    }
  }
  srv_json *v = push(ps);
  if (!v)
    return -1;
  if (c == '"')
    return parse_string(ps, v);
  if (c == '-' || (c >= '0' && c <= '9')) {
    if (c == '-' && ps->p + 1 < ps->end && ps->p[1] == 'I' &&
        literal(ps, "-Infinity")) {
      v->type = SRV_JSON_NUMBER;
      v->d = -INFINITY;
      return 0;
    }
    return parse_number(ps, v);
  }
  if (literal(ps, "true"))
    v->type = SRV_JSON_TRUE;
  else if (literal(ps, "false"))
    v->type = SRV_JSON_FALSE;
  else if (literal(ps, "null"))
    v->type = SRV_JSON_NULL;
  else if (literal(ps, "NaN"))
    v->type = SRV_JSON_NUMBER, v->d = NAN;
  else if (literal(ps, "Infinity"))
    v->type = SRV_JSON_NUMBER, v->d = INFINITY;
  else
    return fail(ps, "unexpected '%c'", c);
  return 0;
}

const srv_json *srv_json_parse(const char *text, size_t len, srv_json_doc **doc,
                               char *err, size_t errlen) {
  parser ps = {.start = text,
               .p = text,
               .end = text + len,
               .err = err,
               .errlen = errlen};
  if (errlen)
    err[0] = '\0';
  *doc = ps.doc = calloc(1, sizeof **doc);
  if (!ps.doc) {
    snprintf(err, errlen, "out of memory");
    return NULL;
  }
  int rc = parse_value(&ps, 0);
  if (!rc) {
    skip_space(&ps);
    if (ps.p < ps.end)
      rc = fail(&ps, "text after the value");
  }
  if (!rc)
    ps.doc->root = ps.stack[0];
  free(ps.stack);
  return rc ? NULL : &ps.doc->root;
}

const srv_json *srv_json_get(const srv_json *obj, const char *key) {
  if (!obj || obj->type != SRV_JSON_OBJECT)
    return NULL;
  size_t klen = strlen(key);
  for (uint32_t i = 0; i < obj->n; i++) {
    const srv_json *k = &obj->u.items[2 * i];
    if (k->n == klen && !memcmp(k->u.s, key, klen))
      return &obj->u.items[2 * i + 1];
  }
  return NULL;
}
