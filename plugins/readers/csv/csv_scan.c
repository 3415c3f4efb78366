/* plugins/readers/csv/csv_scan.c — RFC 4180 field scanning over bytes in
 * memory. Strict where the RFC is (a quote inside an unquoted field, or
 * anything but a delimiter or a row end after a closing quote, is an
 * error); lenient only about row ends (LF as well as CRLF) and blank lines
 * (skipped). It does not trim spaces: that is the caller's business. */
#include <config.h>

#include <string.h>

#include "csv_scan.h"

void csv_scan_init(csv_scanner *sc, const char *data, size_t size,
                   char delim) {
  memset(sc, 0, sizeof *sc);
  sc->data = data;
  sc->size = size;
  sc->line = 1;
  sc->delim = delim;
}

void csv_scan_deinit(csv_scanner *sc) {
  wfx_host->free(sc->buf);
  sc->buf = NULL;
  sc->cap = sc->len = 0;
}

static uint64_t count_lf(const char *p, const char *e) {
  uint64_t n = 0;

  while (p < e && (p = memchr(p, '\n', (size_t)(e - p))) != NULL) {
    n++;
    p++;
  }
  return n;
}

uint64_t csv_scan_line_of(const csv_scanner *sc, size_t pos) {
  return 1 + count_lf(sc->data, sc->data + pos);
}

int csv_scan_row_start(csv_scanner *sc) {
  const char *d = sc->data;

  while (sc->pos < sc->size) {
    if (d[sc->pos] == '\n') {
      sc->pos++;
      sc->line++;
    } else if (d[sc->pos] == '\r' &&
               (sc->pos + 1 == sc->size || d[sc->pos + 1] == '\n')) {
      sc->pos++;
    } else {
      return 1;
    }
  }
  return 0;
}

/* Appends p[0..n) to the field; the buffer grows by doubling, so it never
 * holds more than twice the longest field of the file. */
static int append(csv_scanner *sc, const char *p, size_t n, wf_status *st) {

  if (sc->len + n + 1 > sc->cap) {
    size_t cap = sc->cap ? sc->cap : 64;
    char *b;
    while (cap < sc->len + n + 1)
      cap *= 2;
    if (!(b = wfx_host->alloc(cap, 0))) {
      wfx_host->status_set(
          st, WF_RESOURCE_EXHAUSTED,
          "out of memory for a csv field of %zu bytes on line %llu",
          sc->len + n, (unsigned long long)sc->line);
      return -WF_RESOURCE_EXHAUSTED;
    }
    if (sc->len)
      memcpy(b, sc->buf, sc->len);
    wfx_host->free(sc->buf);
    sc->buf = b;
    sc->cap = cap;
  }
  memcpy(sc->buf + sc->len, p, n);
  sc->len += n;
  sc->buf[sc->len] = 0;
  return 0;
}

/* Moves past the line break after p (or to the end): recovery after a
 * quoting error, so the next row starts on the next line. */
static void skip_line(csv_scanner *sc, const char *p) {
  const char *e = sc->data + sc->size;
  const char *nl = memchr(p, '\n', (size_t)(e - p));

  if (nl) {
    sc->pos = (size_t)(nl + 1 - sc->data);
    sc->line++;
  } else {
    sc->pos = sc->size;
  }
}

/* What follows a field at p decides how it ends. */
static int field_end(csv_scanner *sc, const char *p, const char **why) {
  const char *e = sc->data + sc->size;

  if (p == e) {
    sc->pos = sc->size;
    return CSV_FIELD_LAST;
  }
  if (*p == sc->delim) {
    sc->pos = (size_t)(p + 1 - sc->data);
    return CSV_FIELD_NEXT;
  }
  if (*p == '\n' || (*p == '\r' && (p + 1 == e || p[1] == '\n'))) {
    p += *p == '\r' ? 1 : 0;
    if (p < e) {
      p++;
      sc->line++;
    }
    sc->pos = (size_t)(p - sc->data);
    return CSV_FIELD_LAST;
  }
  *why = "a closing quote is followed by something other than a delimiter "
         "or a line break";
  skip_line(sc, p);
  return CSV_FIELD_BAD;
}

int csv_scan_field(csv_scanner *sc, const char **why, wf_status *st) {
  const char *d = sc->data, *e = d + sc->size, *p = d + sc->pos, *q;

  sc->len = 0;
  sc->quoted = 0;
  if (sc->buf)
    sc->buf[0] = 0;
  if (p < e && *p == '"') {
    sc->quoted = 1;
    for (p++;; p = q + 2) {
      q = memchr(p, '"', (size_t)(e - p));
      if (!q) {
        sc->line += count_lf(p, e);
        sc->pos = sc->size;
        *why = "a quoted field is still open at the end of the file";
        return CSV_FIELD_BAD;
      }
      sc->line += count_lf(p, q);
      /* A doubled quote stands for one quote and keeps the field open. */
      if (append(sc, p, (size_t)(q - p) + (q + 1 < e && q[1] == '"'), st))
        return -WF_RESOURCE_EXHAUSTED;
      if (!(q + 1 < e && q[1] == '"'))
        break;
    }
    return field_end(sc, q + 1, why);
  }

  for (q = p; q < e && *q != sc->delim && *q != '\n' && *q != '"'; q++)
    ;
  if (q < e && *q == '"') {
    *why = "a quote inside an unquoted field";
    skip_line(sc, q);
    return CSV_FIELD_BAD;
  }
  /* A CR that ends the row is not part of the field. */
  if (q > p && q[-1] == '\r' && (q == e || *q == '\n'))
    q--;
  if (append(sc, p, (size_t)(q - p), st))
    return -WF_RESOURCE_EXHAUSTED;
  return field_end(sc, q, why);
}
