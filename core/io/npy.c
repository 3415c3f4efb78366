/* core/io/npy.c — NumPy .npy files (weft/npy.h): a strict parser for the
 * preamble and the header's Python dict literal, byte swapping and Fortran
 * to row-major reordering on read, and writing numpy.save's bytes (atomically,
 * through core/io/file_io.h's atomic files).
 *
 * Not here: .npz archives, memory mapping, pickled (object) or structured
 * arrays, and numpy dtypes weft has no dtype for. */
#include <config.h>

#include <weft/npy.h>

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/alloc.h"
#include "io/file_io.h"
#include "base/status_internal.h"
#include "graph/tensor_internal.h"

#define MAGIC "\x93NUMPY"
#define MAGIC_LEN 6
/* numpy pads the header so the data starts at a multiple of this. */
#define DATA_ALIGN 64
#define SUPPORTED                                                              \
  "float16, float32, float64, int8, uint8, int32, int64, bool, str_ and "     \
  "bytes_"

/* What the preamble and header say about the data that follows. */
typedef struct npy_header {
  wf_dtype dtype;
  int swap;    /* stored in the other byte order than the machine's */
  int fortran; /* stored column-major */
  int rank;
  int64_t dims[WF_MAX_RANK];
  size_t data_offset; /* bytes before the data: preamble and header */
  size_t nbytes;      /* bytes of data the shape and dtype call for */
  /* WF_STRING: numpy's fixed-width kind, 'U' (UCS-4 code points) or 'S'
   * (bytes), and the bytes of one element in the file. */
  char text_kind;
  size_t itemsize;
} npy_header;

static int little_endian(void) {
  const uint16_t one = 1;
  unsigned char first;
  memcpy(&first, &one, 1);
  return first == 1;
}

static const char *what_or_default(const char *what) {
  return what ? what : "npy buffer";
}

static uint32_t load_le(const unsigned char *p, int n) {
  uint32_t v = 0;
  for (int i = n - 1; i >= 0; i--)
    v = v << 8 | p[i];
  return v;
}

/* ---- preamble ----------------------------------------------------------
 *
 * Magic, a major and a minor version byte, and the header's length: two
 * bytes little-endian in 1.0, four in 2.0 and 3.0 (3.0 only allows UTF-8
 * in the header, which changes nothing for the dicts weft accepts). p holds
 * the first n bytes of a file of total bytes. */
static int parse_preamble(const unsigned char *p, size_t n, size_t total,
                          const char *what, size_t *header_at,
                          size_t *header_len, wf_status *st) {
  size_t prefix;
  uint32_t hlen;

  if (n >= 4 && memcmp(p, "PK\x03\x04", 4) == 0)
    return wf_status_set(st, WF_DATA_LOSS,
                         "%s: a zip archive (.npz?), not an .npy file", what);
  if (n < MAGIC_LEN + 2 || memcmp(p, MAGIC, MAGIC_LEN) != 0) {
    if (n >= MAGIC_LEN && memcmp(p, MAGIC, MAGIC_LEN) != 0)
      return wf_status_set(st, WF_DATA_LOSS,
                           "%s: not an .npy file (no \\x93NUMPY magic at "
                           "byte 0)",
                           what);
    return wf_status_set(st, WF_DATA_LOSS,
                         "%s: %zu bytes is too short for an .npy file", what,
                         total);
  }
  if (p[7] != 0 || p[6] < 1 || p[6] > 3)
    return wf_status_set(st, WF_UNIMPLEMENTED,
                         "%s: .npy format version %u.%u; weft reads 1.0, 2.0 "
                         "and 3.0",
                         what, p[6], p[7]);
  prefix = p[6] == 1 ? MAGIC_LEN + 4 : MAGIC_LEN + 6;
  if (n < prefix)
    return wf_status_set(st, WF_DATA_LOSS,
                         "%s: %zu bytes is too short for an .npy %u.0 "
                         "preamble (%zu bytes)",
                         what, total, p[6], prefix);
  hlen = load_le(p + MAGIC_LEN + 2, p[6] == 1 ? 2 : 4);
  if (hlen > total - prefix)
    return wf_status_set(st, WF_DATA_LOSS,
                         "%s: the .npy header of %lu bytes runs past the end "
                         "of the file (%zu bytes)",
                         what, (unsigned long)hlen, total);
  *header_at = prefix;
  *header_len = hlen;
  return WF_OK;
}

/* ---- header ------------------------------------------------------------
 *
 * A Python dict literal with exactly the keys 'descr' (a dtype string),
 * 'fortran_order' (True or False) and 'shape' (a tuple of ints), in any
 * order, with an optional trailing comma, then spaces and a newline. */
typedef struct hparser {
  const char *s;
  size_t n, i;
  size_t base; /* file offset of s[0], for messages */
  const char *what;
  wf_status *st;
} hparser;

/* Sets st to "what: .npy header, byte N: <fmt>" (N = the parser's offset in
 * the file) and returns code. */
static int herr(hparser *p, wf_code code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int herr(hparser *p, wf_code code, const char *fmt, ...) {
  char why[256];
  va_list ap;

  va_start(ap, fmt);
  vsnprintf(why, sizeof why, fmt, ap);
  va_end(ap);
  return wf_status_set(p->st, code, "%s: .npy header, byte %zu: %s", p->what,
                       p->base + p->i, why);
}

static void skip_ws(hparser *p) {
  while (p->i < p->n && (p->s[p->i] == ' ' || p->s[p->i] == '\t' ||
                         p->s[p->i] == '\n' || p->s[p->i] == '\r'))
    p->i++;
}

static int peek(const hparser *p) {
  return p->i < p->n ? (unsigned char)p->s[p->i] : -1;
}

/* Describes the byte at the parser's position for messages. */
static const char *found(const hparser *p, char *buf, size_t len) {
  int c = peek(p);
  if (c < 0)
    snprintf(buf, len, "the end of the header");
  else if (c >= 0x20 && c < 0x7f)
    snprintf(buf, len, "'%c'", c);
  else
    snprintf(buf, len, "byte 0x%02x", (unsigned)c);
  return buf;
}

static int expect(hparser *p, char c, const char *where) {
  char buf[32];
  skip_ws(p);
  if (peek(p) != (unsigned char)c)
    return herr(p, WF_DATA_LOSS, "expected '%c' %s, found %s", c, where,
                found(p, buf, sizeof buf));
  p->i++;
  return WF_OK;
}

/* A quoted string without escapes; *s and *len point into the header. */
static int parse_string(hparser *p, const char **s, size_t *len,
                        const char *where) {
  char buf[32];
  int q;
  size_t start;

  skip_ws(p);
  q = peek(p);
  if (q != '\'' && q != '"')
    return herr(p, WF_DATA_LOSS, "expected a quoted string %s, found %s",
                where, found(p, buf, sizeof buf));
  start = ++p->i;
  while (p->i < p->n && p->s[p->i] != q) {
    if (p->s[p->i] == '\\' || p->s[p->i] == '\n')
      return herr(p, WF_DATA_LOSS,
                  "escapes and line breaks in strings are not allowed %s",
                  where);
    p->i++;
  }
  if (p->i >= p->n)
    return herr(p, WF_DATA_LOSS, "unterminated string %s", where);
  *s = p->s + start;
  *len = p->i - start;
  p->i++;
  return WF_OK;
}

/* s[0..n) for a message: printable ASCII as it is, other bytes as \xNN,
 * cut after 40 bytes. buf needs 4 * 40 + 4 bytes. */
static const char *printable(const char *s, size_t n, char *buf) {
  size_t o = 0;
  for (size_t k = 0; k < n && k < 40; k++) {
    unsigned char c = (unsigned char)s[k];
    if (c >= 0x20 && c < 0x7f)
      buf[o++] = (char)c;
    else
      o += (size_t)sprintf(buf + o, "\\x%02x", c);
  }
  strcpy(buf + o, n > 40 ? "..." : "");
  return buf;
}

static int is_ident(int c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         (c >= '0' && c <= '9') || c == '_';
}

static int parse_bool(hparser *p, int *out) {
  char buf[32];
  size_t start;

  skip_ws(p);
  start = p->i;
  while (p->i < p->n && is_ident((unsigned char)p->s[p->i]))
    p->i++;
  if (p->i - start == 4 && memcmp(p->s + start, "True", 4) == 0)
    *out = 1;
  else if (p->i - start == 5 && memcmp(p->s + start, "False", 5) == 0)
    *out = 0;
  else {
    p->i = start;
    return herr(p, WF_DATA_LOSS,
                "'fortran_order' must be True or False, found %s",
                found(p, buf, sizeof buf));
  }
  return WF_OK;
}

/* One shape entry: a non-negative decimal int64 (no sign, no leading
 * zeros, no underscores). */
static int parse_dim(hparser *p, int index, int64_t *out) {
  char buf[32];
  int64_t v = 0;
  size_t start;

  skip_ws(p);
  start = p->i;
  if (peek(p) == '-') {
    size_t end = start + 1;
    while (end < p->n && p->s[end] >= '0' && p->s[end] <= '9')
      end++;
    if (end > start + 1)
      return herr(p, WF_DATA_LOSS,
                  "'shape' entry %d is negative (%.*s); dims must be >= 0",
                  index, (int)(end - start > 24 ? 24 : end - start),
                  p->s + start);
  }
  if (peek(p) < '0' || peek(p) > '9')
    return herr(p, WF_DATA_LOSS, "'shape' entry %d is not an integer: %s",
                index, found(p, buf, sizeof buf));
  while (p->i < p->n && p->s[p->i] >= '0' && p->s[p->i] <= '9') {
    int d = p->s[p->i] - '0';
    if (v > (INT64_MAX - d) / 10) {
      p->i = start;
      return herr(p, WF_DATA_LOSS,
                  "'shape' entry %d does not fit in 64 bits", index);
    }
    v = v * 10 + d;
    p->i++;
  }
  if (p->i - start > 1 && p->s[start] == '0') {
    p->i = start;
    return herr(p, WF_DATA_LOSS,
                "'shape' entry %d has a leading zero (not a Python int)",
                index);
  }
  if (is_ident(peek(p)) || peek(p) == '.')
    return herr(p, WF_DATA_LOSS, "'shape' entry %d is not an integer: %s",
                index, found(p, buf, sizeof buf));
  *out = v;
  return WF_OK;
}

/* A tuple of ints: (), (3,), (3, 4), (3, 4,). */
static int parse_shape(hparser *p, npy_header *h) {
  char buf[32];
  int commas = 0, rc;

  if ((rc = expect(p, '(', "to open the 'shape' tuple")))
    return rc;
  h->rank = 0;
  for (;;) {
    skip_ws(p);
    if (peek(p) == ')')
      break;
    if (h->rank == WF_MAX_RANK)
      return herr(p, WF_UNIMPLEMENTED,
                  "'shape' has more than %d dims, the most a weft tensor has",
                  WF_MAX_RANK);
    if ((rc = parse_dim(p, h->rank, &h->dims[h->rank])))
      return rc;
    h->rank++;
    skip_ws(p);
    if (peek(p) == ',') {
      p->i++;
      commas++;
    } else if (peek(p) != ')') {
      return herr(p, WF_DATA_LOSS,
                  "expected ',' or ')' in the 'shape' tuple, found %s",
                  found(p, buf, sizeof buf));
    }
  }
  if (h->rank == 1 && commas == 0)
    return herr(p, WF_DATA_LOSS,
                "'shape' (%lld) is an int, not a tuple (write (%lld,))",
                (long long)h->dims[0], (long long)h->dims[0]);
  p->i++;
  return WF_OK;
}

/* The numpy name of a dtype code weft does not have, for messages; NULL if
 * the code is no numpy dtype at all. */
static const char *numpy_name(char kind, unsigned long size, int sized) {
  switch (kind) {
  case 'i':
    return size == 1 ? "int8" : size == 2 ? "int16" : size == 4 ? "int32"
           : size == 8 ? "int64" : NULL;
  case 'u':
    return size == 1 ? "uint8" : size == 2 ? "uint16" : size == 4 ? "uint32"
           : size == 8 ? "uint64" : NULL;
  case 'f':
    return size == 2 ? "float16" : size == 4 ? "float32" : size == 8
           ? "float64" : size == 10 || size == 12 || size == 16 ? "longdouble"
           : NULL;
  case 'c':
    return size == 8 ? "complex64" : size == 16 ? "complex128"
           : size == 20 || size == 24 || size == 32 ? "clongdouble" : NULL;
  case 'b':
    return size == 1 ? "bool" : NULL;
  case 'O':
    return "object";
  case 'M':
    return size == 8 ? "datetime64" : NULL;
  case 'm':
    return size == 8 ? "timedelta64" : NULL;
  case 'S':
  case 'a':
    return "bytes_";
  case 'U':
    return sized ? "str_" : NULL;
  case 'V':
    return sized ? "void" : NULL;
  default:
    return NULL;
  }
}

/* A simple dtype string: an optional byte order and a kind and item size
 * ('<f4', '|b1', '>i8'). '<' and '>' are little- and big-endian; '|' (no
 * order: numpy writes it for one-byte types), '=' and none mean the
 * machine's own. */
static int parse_descr(hparser *p, const char *s, size_t len, npy_header *h) {
  static const struct {
    char kind;
    unsigned size;
    wf_dtype dtype;
  } table[] = {
      {'f', 2, WF_FLOAT16}, {'f', 4, WF_FLOAT32}, {'f', 8, WF_FLOAT64},
      {'i', 1, WF_INT8},    {'u', 1, WF_UINT8},   {'i', 4, WF_INT32},
      {'i', 8, WF_INT64},   {'b', 1, WF_BOOL},
  };
  const char *q = s, *end = s + len, *name;
  char order = '=', kind, text[4 * 40 + 4];
  unsigned long size = 0;
  int sized = 0;

  printable(s, len, text);
  if (q < end && *q && strchr("<>|=", *q))
    order = *q++;
  if (q == end)
    return herr(p, WF_DATA_LOSS, "'descr' '%s' names no dtype", text);
  kind = *q++;
  while (q < end && *q >= '0' && *q <= '9' && size < 100000) {
    size = size * 10 + (unsigned long)(*q++ - '0');
    sized = 1;
  }
  if (kind == 'O' && !sized)
    size = sizeof(void *), sized = 1;
  name = q == end ? numpy_name(kind, size, sized) : NULL;
  if (!name && (kind == 'M' || kind == 'm') && q < end && *q == '[')
    name = kind == 'M' ? "datetime64" : "timedelta64";
  if (!name)
    return herr(p, WF_DATA_LOSS, "'descr' '%s' is not a numpy dtype", text);
  if (kind == 'O')
    return herr(p, WF_UNIMPLEMENTED,
                "'descr' '%s' is an object array (pickled Python objects), "
                "which weft does not read",
                text);
  if ((kind == 'U' || kind == 'S' || kind == 'a') && sized) {
    /* fixed-width text: a string tensor */
    h->dtype = WF_STRING;
    h->text_kind = kind == 'U' ? 'U' : 'S';
    h->itemsize = kind == 'U' ? size * 4 : size;
    h->swap = kind == 'U' && ((order == '<' && !little_endian()) ||
                              (order == '>' && little_endian()));
    return WF_OK;
  }
  for (size_t k = 0; k < sizeof table / sizeof table[0]; k++)
    if (table[k].kind == kind && table[k].size == size && sized) {
      h->dtype = table[k].dtype;
      h->swap = size > 1 && ((order == '<' && !little_endian()) ||
                             (order == '>' && little_endian()));
      return WF_OK;
    }
  return herr(p, WF_UNIMPLEMENTED,
              "numpy dtype %s ('%s') has no weft dtype; weft reads " SUPPORTED,
              name, text);
}

static int parse_header(const char *s, size_t n, size_t base, const char *what,
                        npy_header *h, wf_status *st) {
  hparser p = {s, n, 0, base, what, st};
  int have_descr = 0, have_fortran = 0, have_shape = 0, rc;
  char buf[32];

  if (n == 0 || s[n - 1] != '\n') {
    p.i = n ? n - 1 : 0;
    return herr(&p, WF_DATA_LOSS, "the header does not end in a newline");
  }
  p.n = n - 1;
  if ((rc = expect(&p, '{', "to open the header dict")))
    return rc;
  for (;;) {
    const char *key;
    size_t klen, at;
    char text[4 * 40 + 4];

    skip_ws(&p);
    if (peek(&p) == '}')
      break;
    at = p.i;
    if ((rc = parse_string(&p, &key, &klen, "as a key of the header dict")) ||
        (rc = expect(&p, ':', "after a key of the header dict")))
      return rc;
    if (klen == 5 && memcmp(key, "descr", 5) == 0 && !have_descr) {
      const char *d;
      size_t dlen;
      skip_ws(&p);
      if (peek(&p) == '[')
        return herr(&p, WF_UNIMPLEMENTED,
                    "'descr' is a list of fields (a structured dtype); weft "
                    "reads plain arrays of " SUPPORTED);
      at = p.i;
      if ((rc = parse_string(&p, &d, &dlen, "as the value of 'descr'")))
        return rc;
      p.i = at; /* messages point at the dtype */
      if ((rc = parse_descr(&p, d, dlen, h)))
        return rc;
      p.i += dlen + 2;
      have_descr = 1;
    } else if (klen == 13 && memcmp(key, "fortran_order", 13) == 0 &&
               !have_fortran) {
      if ((rc = parse_bool(&p, &h->fortran)))
        return rc;
      have_fortran = 1;
    } else if (klen == 5 && memcmp(key, "shape", 5) == 0 && !have_shape) {
      if ((rc = parse_shape(&p, h)))
        return rc;
      have_shape = 1;
    } else {
      int dup = (klen == 5 && memcmp(key, "descr", 5) == 0) ||
                (klen == 13 && memcmp(key, "fortran_order", 13) == 0) ||
                (klen == 5 && memcmp(key, "shape", 5) == 0);
      p.i = at;
      return herr(&p, WF_DATA_LOSS,
                  dup ? "key '%s' appears twice"
                      : "unknown key '%s' (an .npy header has 'descr', "
                        "'fortran_order' and 'shape')",
                  printable(key, klen, text));
    }
    skip_ws(&p);
    if (peek(&p) == ',')
      p.i++;
    else if (peek(&p) != '}')
      return herr(&p, WF_DATA_LOSS,
                  "expected ',' or '}' in the header dict, found %s",
                  found(&p, buf, sizeof buf));
  }
  p.i++;
  skip_ws(&p);
  if (p.i < p.n)
    return herr(&p, WF_DATA_LOSS,
                "only spaces may follow the header dict, found %s",
                found(&p, buf, sizeof buf));
  if (!have_descr || !have_fortran || !have_shape)
    return herr(&p, WF_DATA_LOSS, "the header dict lacks the key '%s'",
                !have_descr ? "descr" : !have_fortran ? "fortran_order"
                                                      : "shape");
  return WF_OK;
}

/* Sets h->nbytes from dtype and shape, refusing shapes whose element count
 * or byte size does not fit (also when another dim is 0), and text 0
 * characters wide that holds elements: numpy writes none (its arrays of
 * empty strings are 1 wide), and the file would hold none of the bytes
 * that weft's tensor of so many empty strings needs. */
static int data_size(npy_header *h, const char *what, wf_status *st) {
  uint64_t size =
      h->dtype == WF_STRING ? h->itemsize : wf_dtype_size(h->dtype);
  const uint64_t limit = SIZE_MAX < INT64_MAX ? SIZE_MAX : INT64_MAX;
  uint64_t count = 1;
  int empty = 0;

  for (int i = 0; i < h->rank; i++) {
    uint64_t d = (uint64_t)h->dims[i];
    if (d == 0) {
      empty = 1;
      continue;
    }
    if (size > limit / d || count > limit / d) {
      char sb[256];
      wf_shape s;
      wf_shape_init(&s, h->dims, h->rank);
      return wf_status_set(st, WF_DATA_LOSS,
                           "%s: .npy shape %s of %s is too large to address",
                           what, wf_shape_str(&s, sb, sizeof sb),
                           wf_dtype_name(h->dtype));
    }
    size *= d;
    count *= d;
  }
  if (h->dtype == WF_STRING && h->itemsize == 0 && !empty)
    return wf_status_set(st, WF_DATA_LOSS,
                         "%s: .npy text 0 characters wide holds %llu "
                         "elements (numpy writes empty strings 1 wide)",
                         what, (unsigned long long)count);
  h->nbytes = empty ? 0 : (size_t)size;
  return WF_OK;
}

/* Parses the header (header_len bytes at p + header_at, where
 * parse_preamble found it) into h, with the data's offset and size. */
static int parse_all(const unsigned char *p, size_t header_at,
                     size_t header_len, const char *what, npy_header *h,
                     wf_status *st) {
  int rc;

  memset(h, 0, sizeof *h);
  if ((rc = parse_header((const char *)p + header_at, header_len, header_at,
                         what, h, st)) ||
      (rc = data_size(h, what, st)))
    return rc;
  h->data_offset = header_at + header_len;
  return WF_OK;
}

static int check_data_len(const npy_header *h, size_t have, const char *what,
                          wf_status *st) {
  char sb[256];
  wf_shape s;

  if (have == h->nbytes)
    return WF_OK;
  wf_shape_init(&s, h->dims, h->rank);
  wf_shape_str(&s, sb, sizeof sb);
  if (have < h->nbytes)
    return wf_status_set(st, WF_DATA_LOSS,
                         "%s: data truncated: %zu bytes from byte %zu, but "
                         "shape %s of %s needs %zu",
                         what, have, h->data_offset, sb,
                         wf_dtype_name(h->dtype), h->nbytes);
  return wf_status_set(st, WF_DATA_LOSS,
                       "%s: %zu trailing bytes: the data from byte %zu is "
                       "%zu bytes, but shape %s of %s needs only %zu",
                       what, have - h->nbytes, h->data_offset, have, sb,
                       wf_dtype_name(h->dtype), h->nbytes);
}

static void swap_bytes(unsigned char *p, size_t n, size_t esize) {
  for (size_t i = 0; i + esize <= n; i += esize)
    for (size_t a = 0, b = esize - 1; a < b; a++, b--) {
      unsigned char c = p[i + a];
      p[i + a] = p[i + b];
      p[i + b] = c;
    }
}

/* Column-major src to row-major dst, both of shape dims[0..rank). */
static void fortran_to_c(unsigned char *dst, const unsigned char *src,
                         const int64_t *dims, int rank, size_t esize,
                         size_t count) {
  int64_t idx[WF_MAX_RANK] = {0}, stride[WF_MAX_RANK];
  int64_t off = 0, s = 1;

  assert(rank >= 1 && rank <= WF_MAX_RANK);
  for (int k = 0; k < rank; k++) {
    stride[k] = s;
    s *= dims[k];
  }
  for (size_t i = 0; i < count; i++) {
    memcpy(dst + i * esize, src + (size_t)off * esize, esize);
    for (int k = rank - 1; k >= 0; k--) {
      off += stride[k];
      if (++idx[k] < dims[k])
        break;
      off -= stride[k] * dims[k];
      idx[k] = 0;
    }
  }
}

/* Turns t, holding the file's data as stored, into the row-major tensor in
 * the machine's byte order. Takes over the reference to t; returns the
 * result or NULL (t released) when out of memory. */
/* Appends code point c to out as UTF-8; 0, or -1 for a value that is no
 * Unicode scalar value. */
static int put_utf8(unsigned char *out, size_t *n, uint32_t c) {
  if (c < 0x80) {
    out[(*n)++] = (unsigned char)c;
  } else if (c < 0x800) {
    out[(*n)++] = (unsigned char)(0xC0 | c >> 6);
    out[(*n)++] = (unsigned char)(0x80 | (c & 0x3F));
  } else if (c < 0x10000) {
    if (c >= 0xD800 && c < 0xE000)
      return -1;
    out[(*n)++] = (unsigned char)(0xE0 | c >> 12);
    out[(*n)++] = (unsigned char)(0x80 | (c >> 6 & 0x3F));
    out[(*n)++] = (unsigned char)(0x80 | (c & 0x3F));
  } else if (c < 0x110000) {
    out[(*n)++] = (unsigned char)(0xF0 | c >> 18);
    out[(*n)++] = (unsigned char)(0x80 | (c >> 12 & 0x3F));
    out[(*n)++] = (unsigned char)(0x80 | (c >> 6 & 0x3F));
    out[(*n)++] = (unsigned char)(0x80 | (c & 0x3F));
  } else {
    return -1;
  }
  return 0;
}

/* The string tensor of fixed-width text raw (row-major, the machine's byte
 * order): 'S' elements lose their trailing NUL bytes and 'U' ones their
 * trailing zero code points, as numpy reads them; 'U' becomes UTF-8. */
static wf_tensor *strings_of_text(const unsigned char *raw,
                                  const npy_header *h, const char *what,
                                  wf_status *st) {
  size_t w = h->itemsize, count = w ? h->nbytes / w : 0;
  wf_shape s;
  wf_shape_init(&s, h->dims, h->rank);
  if (!w)
    count = (size_t)wf_shape_count(&s);
  /* UTF-8 takes at most 4 bytes per code point: as many as UCS-4 */
  unsigned char *text = wf__alloc(h->nbytes ? h->nbytes : 1, 0);
  const char **strs = wf__alloc((count ? count : 1) * sizeof *strs, 0);
  size_t *lens = wf__alloc((count ? count : 1) * sizeof *lens, 0);
  wf_tensor *t = NULL;
  size_t used = 0;
  if (!text || !strs || !lens) {
    wf_status_set(st, WF_RESOURCE_EXHAUSTED,
                  "%s: out of memory for %zu strings", what, count);
    goto done;
  }
  for (size_t i = 0; i < count; i++) {
    const unsigned char *e = raw + i * w;
    size_t at = used;
    if (h->text_kind == 'S') {
      size_t n = w;
      while (n > 0 && e[n - 1] == 0)
        n--;
      memcpy(text + used, e, n);
      used += n;
    } else {
      size_t n = w / 4;
      uint32_t c;
      while (n > 0 && (memcpy(&c, e + (n - 1) * 4, 4), c == 0))
        n--;
      for (size_t k = 0; k < n; k++) {
        memcpy(&c, e + k * 4, 4);
        if (put_utf8(text, &used, c)) {
          wf_status_set(st, WF_DATA_LOSS,
                        "%s: string %zu holds 0x%lx at character %zu, "
                        "which is no Unicode character",
                        what, i, (unsigned long)c, k);
          goto done;
        }
      }
    }
    strs[i] = (const char *)text + at;
    lens[i] = used - at;
  }
  t = wf_tensor_new_strings(h->dims, h->rank, strs, lens, st);
  if (!t)
    wf_status_prefix(st, "%s", what);
done:
  wf__free(text);
  wf__free(strs);
  wf__free(lens);
  return t;
}

static wf_tensor *finish(wf_tensor *t, const npy_header *h, const char *what,
                         wf_status *st) {
  unsigned char *d = wf_tensor_data(t);
  size_t esize = h->dtype == WF_STRING ? h->itemsize : wf_dtype_size(h->dtype);
  size_t count = esize ? h->nbytes / esize : 0;

  if (h->swap) /* text: each UCS-4 code point */
    swap_bytes(d, h->nbytes, h->dtype == WF_STRING ? 4 : esize);
  if (h->dtype == WF_BOOL)
    for (size_t i = 0; i < count; i++)
      d[i] = d[i] != 0;
  if (h->fortran && h->rank > 1 && count > 1) {
    int64_t n = (int64_t)h->nbytes;
    wf_tensor *c = h->dtype == WF_STRING
                       ? wf_tensor_new(WF_UINT8, &n, 1, st)
                       : wf_tensor_new(h->dtype, h->dims, h->rank, st);
    if (!c) {
      wf_status_prefix(st, "%s: reordering Fortran-order data", what);
      wf_tensor_release(t);
      return NULL;
    }
    fortran_to_c(wf_tensor_data(c), d, h->dims, h->rank, esize, count);
    wf_tensor_release(t);
    t = c;
  }
  if (h->dtype == WF_STRING) {
    wf_tensor *strs = strings_of_text(wf_tensor_data(t), h, what, st);
    wf_tensor_release(t);
    t = strs;
  }
  return t;
}

/* A tensor for the file's data as stored: for text, bytes to decode. */
static wf_tensor *new_tensor(const npy_header *h, const char *what,
                             wf_status *st) {
  int64_t n = (int64_t)h->nbytes;
  wf_tensor *t = h->dtype == WF_STRING
                     ? wf_tensor_new(WF_UINT8, &n, 1, st)
                     : wf_tensor_new(h->dtype, h->dims, h->rank, st);
  if (!t)
    wf_status_prefix(st, "%s", what);
  return t;
}

wf_tensor *wf_npy_parse(const void *buf, size_t len, const char *what,
                        wf_status *st) {
  const unsigned char *p = buf;
  size_t header_at, header_len;
  npy_header h;
  wf_tensor *t;

  assert(buf || len == 0);
  what = what_or_default(what);
  if (parse_preamble(p, len, len, what, &header_at, &header_len, st) ||
      parse_all(p, header_at, header_len, what, &h, st) ||
      check_data_len(&h, len - h.data_offset, what, st))
    return NULL;
  if (!(t = new_tensor(&h, what, st)))
    return NULL;
  if (h.nbytes)
    memcpy(wf_tensor_data(t), p + h.data_offset, h.nbytes);
  return finish(t, &h, what, st);
}

/* ---- reading files ----------------------------------------------------- */

/* Reads n bytes at off; returns how many it got (fewer at the end of the
 * file), or -1 with errno set. */
static ssize_t pread_full(int fd, void *buf, size_t n, off_t off) {
  size_t got = 0;
  while (got < n) {
    ssize_t r = pread(fd, (char *)buf + got, n - got, off + (off_t)got);
    if (r < 0 && errno == EINTR)
      continue;
    if (r < 0)
      return -1;
    if (r == 0)
      break;
    got += (size_t)r;
  }
  return (ssize_t)got;
}

/* Sets st from errno for doing ("open", "write", ...) on path. */
static int io_failed(const char *path, const char *doing, wf_status *st) {
  int e = errno;
  return wf_status_set(st, wf__errno_code(e), "%s: cannot %s: %s", path, doing,
                       strerror(e));
}

/* Pipes and other streams: read to the end, then parse the bytes. */
static wf_tensor *read_stream(int fd, const char *path, wf_status *st) {
  unsigned char *buf = NULL, *grown;
  size_t len = 0, cap = 0;
  wf_tensor *t = NULL;

  for (;;) {
    ssize_t r;
    if (len == cap) {
      if (cap > SIZE_MAX / 2 ||
          !(grown = wf__realloc(buf, cap = cap ? cap * 2 : 65536))) {
        wf_status_set(st, WF_RESOURCE_EXHAUSTED,
                      "%s: out of memory after reading %zu bytes", path, len);
        goto fail;
      }
      buf = grown;
    }
    r = read(fd, buf + len, cap - len);
    if (r < 0 && errno == EINTR)
      continue;
    if (r < 0) {
      io_failed(path, "read", st);
      goto fail;
    }
    if (r == 0)
      break;
    len += (size_t)r;
  }
  t = wf_npy_parse(buf, len, path, st);
fail:
  wf__free(buf);
  return t;
}

/* Regular files: the data goes straight into the tensor, after the file's
 * size has been checked against the header. */
static wf_tensor *read_regular(int fd, size_t size, const char *path,
                               wf_status *st) {
  unsigned char pre[MAGIC_LEN + 6];
  unsigned char *head = NULL;
  size_t header_at, header_len;
  ssize_t got;
  npy_header h;
  wf_tensor *t = NULL;

  got = pread_full(fd, pre, size < sizeof pre ? size : sizeof pre, 0);
  if (got < 0) {
    io_failed(path, "read", st);
    goto fail;
  }
  if (parse_preamble(pre, (size_t)got, size, path, &header_at, &header_len,
                     st))
    goto fail;
  if (!(head = wf__alloc(header_at + header_len, 0))) {
    wf_status_set(st, WF_RESOURCE_EXHAUSTED,
                  "%s: out of memory for an .npy header of %zu bytes", path,
                  header_len);
    goto fail;
  }
  got = pread_full(fd, head, header_at + header_len, 0);
  if (got < 0) {
    io_failed(path, "read", st);
    goto fail;
  }
  if ((size_t)got != header_at + header_len) {
    wf_status_set(st, WF_DATA_LOSS, "%s: the file shrank while being read",
                  path);
    goto fail;
  }
  if (parse_all(head, header_at, header_len, path, &h, st) ||
      check_data_len(&h, size - h.data_offset, path, st) ||
      !(t = new_tensor(&h, path, st)))
    goto fail;
  got = pread_full(fd, wf_tensor_data(t), h.nbytes, (off_t)h.data_offset);
  if (got < 0) {
    io_failed(path, "read", st);
    goto fail;
  }
  if ((size_t)got != h.nbytes) {
    wf_status_set(st, WF_DATA_LOSS, "%s: the file shrank while being read",
                  path);
    goto fail;
  }
  wf__free(head);
  return finish(t, &h, path, st);

fail:
  wf_tensor_release(t);
  wf__free(head);
  return NULL;
}

wf_tensor *wf_npy_read(const char *path, wf_status *st) {
  struct stat sb;
  wf_tensor *t = NULL;
  int fd;

  assert(path);
  fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    io_failed(path, "open", st);
    return NULL;
  }
  if (fstat(fd, &sb) != 0)
    io_failed(path, "stat", st);
  else if (S_ISDIR(sb.st_mode))
    wf_status_set(st, WF_FAILED_PRECONDITION, "%s: is a directory", path);
  else if (S_ISREG(sb.st_mode) && (uintmax_t)sb.st_size > SIZE_MAX)
    wf_status_set(st, WF_RESOURCE_EXHAUSTED,
                  "%s: %jd bytes do not fit in memory", path,
                  (intmax_t)sb.st_size);
  else if (S_ISREG(sb.st_mode))
    t = read_regular(fd, (size_t)sb.st_size, path, st);
  else
    t = read_stream(fd, path, st);
  close(fd);
  return t;
}

/* ---- writing ------------------------------------------------------------ */

/* Formats the preamble and header numpy.save writes for t into buf (cap
 * bytes, enough for any weft tensor); *len gets its length. */
/* The UTF-8 sequence at s[k] (of len bytes): its length with its code point
 * in *cp, or 0 where the bytes are no UTF-8 (overlong forms and surrogates
 * included). */
static size_t utf8_at(const unsigned char *s, size_t len, size_t k,
                      uint32_t *cp) {
  unsigned c = s[k];
  size_t n = c < 0x80 ? 1 : c >= 0xC2 && c < 0xE0 ? 2
             : c >= 0xE0 && c < 0xF0 ? 3 : c >= 0xF0 && c < 0xF5 ? 4 : 0;
  if (!n || k + n > len)
    return 0;
  uint32_t v = n == 1 ? c : c & (0x7Fu >> n);
  for (size_t j = 1; j < n; j++) {
    if ((s[k + j] & 0xC0) != 0x80)
      return 0;
    v = v << 6 | (s[k + j] & 0x3Fu);
  }
  if ((n == 3 && (v < 0x800 || (v >= 0xD800 && v < 0xE000))) ||
      (n == 4 && (v < 0x10000 || v > 0x10FFFF)))
    return 0;
  *cp = v;
  return n;
}

/* A string tensor as numpy's fixed-width text: 'U' (UCS-4 in the
 * machine's order) when every element is UTF-8, else 'S' (bytes); each
 * element padded with zeros to the longest (at least one character, as
 * numpy writes them; an empty tensor is written 0 characters wide, which
 * numpy reads too, so that its shape reads back whatever its other dims:
 * weft's reader refuses a shape whose byte size overflows even when
 * another dim is 0). The data is *image (wf__alloc'd), *width characters
 * per element. Trailing NULs of an element do not survive the trip, as
 * with numpy itself. */
static int text_of_strings(const wf_tensor *t, const char *what, char *kind,
                           size_t *width, unsigned char **image,
                           size_t *nbytes, wf_status *st) {
  int64_t count = wf_tensor_count(t);
  size_t widest = count > 0 ? 1 : 0;
  int utf8 = 1;
  for (int64_t i = 0; i < count; i++) {
    size_t len, chars = 0;
    const unsigned char *s = (const unsigned char *)wf_tensor_string(t, i, &len);
    for (size_t k = 0; k < len && utf8; chars++) {
      uint32_t cp;
      size_t n = utf8_at(s, len, k, &cp);
      if (!n)
        utf8 = 0;
      k += n;
    }
    if (chars > widest)
      widest = chars;
  }
  if (!utf8) /* the width in bytes, over all elements */
    for (int64_t i = 0; i < count; i++) {
      size_t len;
      wf_tensor_string(t, i, &len);
      if (len > widest)
        widest = len;
    }
  size_t esize = utf8 ? widest * 4 : widest;
  if (count > 0 && esize > SIZE_MAX / (size_t)count)
    return wf_status_set(st, WF_RESOURCE_EXHAUSTED,
                         "%s: the strings are too long for .npy", what);
  *nbytes = (size_t)count * esize;
  if (!(*image = wf__alloc(*nbytes ? *nbytes : 1, 0)))
    return wf_status_set(st, WF_RESOURCE_EXHAUSTED,
                         "%s: out of memory for %zu bytes of text", what,
                         *nbytes);
  memset(*image, 0, *nbytes);
  for (int64_t i = 0; i < count; i++) {
    size_t len;
    const unsigned char *s = (const unsigned char *)wf_tensor_string(t, i, &len);
    unsigned char *e = *image + (size_t)i * esize;
    if (!utf8) {
      memcpy(e, s, len);
      continue;
    }
    for (size_t k = 0, c = 0; k < len; c++) {
      uint32_t cp;
      k += utf8_at(s, len, k, &cp);
      memcpy(e + c * 4, &cp, 4);
    }
  }
  *kind = utf8 ? 'U' : 'S';
  *width = widest;
  return WF_OK;
}

static int format_header(const wf_tensor *t, char text_kind,
                         size_t text_width, const char *what, char *buf,
                         size_t cap, size_t *len, wf_status *st) {
  static const struct {
    wf_dtype dtype;
    const char *code;
  } codes[] = {
      {WF_FLOAT16, "f2"}, {WF_FLOAT32, "f4"}, {WF_FLOAT64, "f8"},
      {WF_INT8, "i1"},    {WF_UINT8, "u1"},   {WF_INT32, "i4"},
      {WF_INT64, "i8"},   {WF_BOOL, "b1"},
  };
  wf_dtype dtype = wf_tensor_dtype(t);
  const char *code = NULL;
  char dict[512], text_code[32];
  int rank = wf_tensor_rank(t), n, prefix, pad;
  size_t dlen;

  for (size_t k = 0; k < sizeof codes / sizeof codes[0]; k++)
    if (codes[k].dtype == dtype)
      code = codes[k].code;
  if (text_kind) {
    snprintf(text_code, sizeof text_code, "%c%zu", text_kind, text_width);
    code = text_code;
  }
  if (!code)
    return wf_status_set(st, WF_INVALID_ARGUMENT,
                         "%s: a %s tensor cannot be written as .npy: numpy "
                         "has no %s dtype (it has " SUPPORTED ")",
                         what, wf_dtype_name(dtype), wf_dtype_name(dtype));
  n = snprintf(dict, sizeof dict,
               "{'descr': '%c%s', 'fortran_order': False, 'shape': (",
               wf_dtype_size(dtype) == 1 || text_kind == 'S' ? '|'
               : little_endian()                            ? '<'
                                                            : '>',
               code);
  for (int i = 0; i < rank; i++)
    n += snprintf(dict + n, sizeof dict - (size_t)n, "%s%lld",
                  i ? ", " : "", (long long)wf_tensor_dim(t, i));
  n += snprintf(dict + n, sizeof dict - (size_t)n, "%s), }",
                rank == 1 ? "," : "");
  /* numpy.save also leaves spaces for the first dim to grow to 21 digits.
   * The padding below hides them: a shape weft can hold (at most 8 dims,
   * at most 2^63 bytes) spells in at most 40 characters, so the header
   * with them still ends at byte 128, as it does without them. */
  assert(n > 0 && (size_t)n < sizeof dict);
  /* Version 1.0 unless the padded header outgrows its 2-byte length (as
   * numpy decides; weft's rank limit keeps headers far below that). */
  prefix = MAGIC_LEN + 4;
  pad = DATA_ALIGN - (prefix + n + 1) % DATA_ALIGN;
  if (n + pad + 1 > 0xffff) {
    prefix = MAGIC_LEN + 6;
    pad = DATA_ALIGN - (prefix + n + 1) % DATA_ALIGN;
  }
  dlen = (size_t)(n + pad + 1);
  assert((size_t)prefix + dlen <= cap);
  memcpy(buf, MAGIC, MAGIC_LEN);
  buf[MAGIC_LEN] = prefix == MAGIC_LEN + 4 ? 1 : 2;
  buf[MAGIC_LEN + 1] = 0;
  for (int i = 0; i < prefix - MAGIC_LEN - 2; i++)
    buf[MAGIC_LEN + 2 + i] = (char)(dlen >> (8 * i) & 0xff);
  memcpy(buf + prefix, dict, (size_t)n);
  memset(buf + prefix + n, ' ', (size_t)pad);
  buf[prefix + n + pad] = '\n';
  *len = (size_t)prefix + dlen;
  return WF_OK;
}

int wf_npy_to_buffer(const wf_tensor *t, void **buf, size_t *len,
                     wf_status *st) {
  char head[1024];
  size_t hlen, nbytes;
  char *out;
  int rc;

  char kind = 0;
  size_t width = 0;
  unsigned char *image = NULL;
  const void *data = wf_tensor_data(t);

  assert(t && buf && len);
  *buf = NULL;
  *len = 0;
  nbytes = wf_tensor_nbytes(t);
  if (wf_tensor_dtype(t) == WF_STRING) {
    if ((rc = text_of_strings(t, "npy buffer", &kind, &width, &image, &nbytes,
                              st)))
      return rc;
    data = image;
  }
  if ((rc = format_header(t, kind, width, "npy buffer", head, sizeof head,
                          &hlen, st)))
    goto done;
  if (nbytes > SIZE_MAX - hlen || !(out = malloc(hlen + nbytes))) {
    rc = wf_status_set(st, WF_RESOURCE_EXHAUSTED,
                       "npy buffer: out of memory for %zu bytes of %s data",
                       nbytes, wf_dtype_name(wf_tensor_dtype(t)));
    goto done;
  }
  memcpy(out, head, hlen);
  if (nbytes)
    memcpy(out + hlen, data, nbytes);
  *buf = out;
  *len = hlen + nbytes;
done:
  wf__free(image);
  return rc;
}

int wf_npy_write(const char *path, const wf_tensor *t, wf_status *st) {
  char head[1024];
  size_t hlen;
  wf__atomic_file f;
  int rc;

  char kind = 0;
  size_t width = 0, nbytes = wf_tensor_nbytes(t);
  unsigned char *image = NULL;
  const void *data = wf_tensor_data(t);

  assert(path && t);
  if (wf_tensor_dtype(t) == WF_STRING) {
    if ((rc = text_of_strings(t, path, &kind, &width, &image, &nbytes, st)))
      return rc;
    data = image;
  }
  if ((rc = format_header(t, kind, width, path, head, sizeof head, &hlen,
                          st)) ||
      (rc = wf__atomic_open(&f, path, st)))
    goto done;
  if ((rc = wf__atomic_write(&f, head, hlen, st)) ||
      (rc = wf__atomic_write(&f, data, nbytes, st))) {
    wf__atomic_abort(&f);
    goto done;
  }
  rc = wf__atomic_commit(&f, st);
done:
  wf__free(image);
  return rc;
}
