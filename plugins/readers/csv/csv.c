/* plugins/readers/csv/csv.c — the csv reader plugin (module reader_csv):
 * RFC 4180 files (csv_scan.c) with an optional header, typed columns from
 * a schema, and policies for missing values and bad rows. Each selected
 * column becomes one scalar field per record.
 *
 * Hand-written rather than built on libcsv (Debian's libcsv-dev): libcsv's
 * callback interface hides where a row starts, which tell/seek need as a
 * byte offset and messages need as a line number, and it is not among
 * weft's dependencies. The file is memory-mapped; it is not decompressed,
 * and columns of text (weft has no string dtype) can only be skipped. */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <float.h>
#include <inttypes.h>
#include <locale.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <weft/plugin_aux.h>

#include "csv_scan.h"

enum { MISSING_ERROR, MISSING_DEFAULT, MISSING_SKIP };
enum { BAD_ERROR, BAD_SKIP };

typedef union csv_value {
  double f;
  int64_t i;
} csv_value;

typedef struct csv_type {
  const char *name;
  int32_t dtype; /* WF_DTYPE_INVALID: "skip", the column is not emitted */
} csv_type;

static const csv_type csv_types[] = {
    {"float32", WF_FLOAT32}, {"float64", WF_FLOAT64}, {"int8", WF_INT8},
    {"uint8", WF_UINT8},     {"int32", WF_INT32},     {"int64", WF_INT64},
    {"bool", WF_BOOL},       {"skip", WF_DTYPE_INVALID},
};
#define TYPE_NAMES "float32, float64, int8, uint8, int32, int64, bool, skip"

/* One emitted column. */
typedef struct csv_col {
  char name[64];
  int32_t dtype;
  int src;       /* its field in each row */
  csv_value def; /* with missing = "default" */
} csv_col;

typedef struct csv_reader {
  char *path;
  int fd;
  char *map; /* the file, or NULL when it is empty */
  size_t size;
  csv_scanner sc;
  int header, missing, bad_rows;
  int nfields;   /* fields per row */
  int *slot;     /* per field of a row: its column, or -1 */
  csv_col *cols; /* emitted columns */
  int ncols;
  csv_value *vals;
  size_t data_start; /* the first row after the header */
  uint64_t data_line;
  uint64_t bad_skipped, missing_skipped;
  /* Numbers are parsed in the C locale whatever the program's locale is
   * (a decimal comma would otherwise change what a file means). */
  locale_t c_locale;
} csv_reader;

/* ---- values -------------------------------------------------------------- */

static const char *dtype_name(int32_t dtype) {
  for (size_t i = 0; i < sizeof csv_types / sizeof csv_types[0]; i++)
    if (csv_types[i].dtype == dtype)
      return csv_types[i].name;
  return "?";
}

/* Parses s[0..size) (mutable: trimmed in place; s[size] == 0) as dtype.
 * Returns 0, 1 when it is empty (a missing value), or -1 with a
 * description in why[0..n). A NUL byte inside the field is refused: the
 * C parsers would stop at it and take "3\0x" for 3. */
static int parse_value(char *s, size_t size, int32_t dtype, locale_t loc,
                       csv_value *out, char *why, size_t n) {
  size_t len = strlen(s);
  char *end;

  if (len != size) {
    snprintf(why, n, "a NUL byte at byte %zu of the field", len + 1);
    return -1;
  }
  while (len > 0 && (s[len - 1] == ' ' || s[len - 1] == '\t'))
    s[--len] = 0;
  while (*s == ' ' || *s == '\t')
    s++;
  if (!*s)
    return 1;
  errno = 0;
  if (dtype == WF_FLOAT32 || dtype == WF_FLOAT64) {
    out->f = strtod_l(s, &end, loc);
    if (end == s || *end) {
      snprintf(why, n, "\"%.40s\" is not a number", s);
      return -1;
    }
    if ((errno == ERANGE && fabs(out->f) == HUGE_VAL) ||
        (dtype == WF_FLOAT32 && isfinite(out->f) && fabs(out->f) > FLT_MAX)) {
      snprintf(why, n, "%.40s is out of range for %s", s, dtype_name(dtype));
      return -1;
    }
    return 0;
  }
  if (dtype == WF_BOOL) {
    if (strcasecmp(s, "true") == 0 || strcmp(s, "1") == 0)
      out->i = 1;
    else if (strcasecmp(s, "false") == 0 || strcmp(s, "0") == 0)
      out->i = 0;
    else {
      snprintf(why, n, "\"%.40s\" is not a bool (true, false, 1 or 0)", s);
      return -1;
    }
    return 0;
  }
  out->i = strtoll(s, &end, 10);
  if (end == s || *end) {
    snprintf(why, n, "\"%.40s\" is not an integer", s);
    return -1;
  }
  if (errno == ERANGE || (dtype == WF_INT8 && (out->i < -128 || out->i > 127)) ||
      (dtype == WF_UINT8 && (out->i < 0 || out->i > 255)) ||
      (dtype == WF_INT32 && (out->i < INT32_MIN || out->i > INT32_MAX))) {
    snprintf(why, n, "%.40s is out of range for %s", s, dtype_name(dtype));
    return -1;
  }
  return 0;
}

static void store(void *data, int32_t dtype, csv_value v) {
  switch (dtype) {
  case WF_FLOAT32:
    *(float *)data = (float)v.f;
    break;
  case WF_FLOAT64:
    *(double *)data = v.f;
    break;
  case WF_INT8:
    *(int8_t *)data = (int8_t)v.i;
    break;
  case WF_UINT8:
  case WF_BOOL:
    *(uint8_t *)data = (uint8_t)v.i;
    break;
  case WF_INT32:
    *(int32_t *)data = (int32_t)v.i;
    break;
  default:
    *(int64_t *)data = v.i;
    break;
  }
}

/* ---- options --------------------------------------------------------------- */

#define OPTION_NAMES "columns, header, delimiter, missing, defaults, bad_rows"

static int opt_error(const wf_attr_item *it, const char *what,
                     wf_status *st) {
  wfx_host->status_set(st, WF_INVALID_ARGUMENT, "csv reader: option '%s' %s",
                       it->name, what);
  return WF_INVALID_ARGUMENT;
}

/* A list of texts: the option's strings or numbers, or one string split at
 * commas. *out is one host allocation: the pointers, then the texts. */
static int opt_list(const wf_attr_item *it, char ***out, int *n,
                    wf_status *st) {
  const wf_attr_value *v = &it->value;
  int base = WF_ATTR_BASE(v->type), count;
  size_t bytes = 0;
  char **items, *text;

  *out = NULL;
  *n = 0;
  if (base != WF_ATTR_STRING && base != WF_ATTR_INT && base != WF_ATTR_FLOAT)
    return opt_error(it, "must be a string or a list of strings or numbers",
                     st);
  if (!WF_ATTR_IS_LIST(v->type)) {
    if (base == WF_ATTR_STRING) {
      if (!v->u.s)
        return opt_error(it, "is a NULL string", st);
      count = 1;
      for (const char *p = v->u.s; *p; p++)
        count += *p == ',';
      bytes = strlen(v->u.s) + 1;
    } else {
      count = 1;
      bytes = 32;
    }
  } else {
    if (v->count < 0 || v->count > INT32_MAX / 2)
      return opt_error(it, "has a bad item count", st);
    count = (int)v->count;
    for (int i = 0; i < count; i++) {
      if (base == WF_ATTR_STRING && (!v->u.strings || !v->u.strings[i]))
        return opt_error(it, "holds a NULL string", st);
      bytes += base == WF_ATTR_STRING ? strlen(v->u.strings[i]) + 1 : 32;
    }
  }
  items = wfx_host->alloc((size_t)(count + 1) * sizeof *items + bytes + 1, 0);
  if (!items) {
    wfx_host->status_set(st, WF_RESOURCE_EXHAUSTED,
                         "csv reader: out of memory for option '%s'", it->name);
    return WF_RESOURCE_EXHAUSTED;
  }
  text = (char *)(items + count + 1);
  for (int i = 0; i < count; i++) {
    items[i] = text;
    if (!WF_ATTR_IS_LIST(v->type) && base == WF_ATTR_STRING) {
      const char *s = v->u.s;
      for (int k = 0; k < i; k++)
        s = strchr(s, ',') + 1;
      size_t len = strcspn(s, ",");
      memcpy(text, s, len);
      text[len] = 0;
      text += len + 1;
      continue;
    }
    if (base == WF_ATTR_STRING)
      text += 1 + (size_t)sprintf(text, "%s", v->u.strings[i]);
    else if (base == WF_ATTR_INT)
      text += 1 + (size_t)snprintf(
                      text, 32, "%" PRId64,
                      WF_ATTR_IS_LIST(v->type) ? v->u.ints[i] : v->u.i);
    else
      text += 1 + (size_t)snprintf(
                      text, 32, "%.17g",
                      WF_ATTR_IS_LIST(v->type) ? v->u.floats[i] : v->u.f);
  }
  items[count] = NULL;
  *out = items;
  *n = count;
  return 0;
}

static int opt_bool(const wf_attr_item *it, int *out, wf_status *st) {
  const wf_attr_value *v = &it->value;

  if (v->type == WF_ATTR_BOOL)
    *out = v->u.b != 0;
  else if (v->type == WF_ATTR_INT && (v->u.i == 0 || v->u.i == 1))
    *out = (int)v->u.i;
  else if (v->type == WF_ATTR_STRING && v->u.s &&
           (strcmp(v->u.s, "true") == 0 || strcmp(v->u.s, "false") == 0))
    *out = strcmp(v->u.s, "true") == 0;
  else
    return opt_error(it, "must be a bool (or \"true\"/\"false\")", st);
  return 0;
}

/* The index of option string value in the NULL-terminated words. */
static int opt_word(const wf_attr_item *it, const char *const *words,
                    const char *expect, int *out, wf_status *st) {
  if (it->value.type == WF_ATTR_STRING && it->value.u.s)
    for (int i = 0; words[i]; i++)
      if (strcmp(it->value.u.s, words[i]) == 0) {
        *out = i;
        return 0;
      }
  return opt_error(it, expect, st);
}

/* ---- the schema --------------------------------------------------------------- */

static int find_type(const char *name, size_t len, const csv_type **out) {
  for (size_t i = 0; i < sizeof csv_types / sizeof csv_types[0]; i++)
    if (strlen(csv_types[i].name) == len &&
        strncmp(csv_types[i].name, name, len) == 0) {
      *out = &csv_types[i];
      return 0;
    }
  return -1;
}

static int set_col_name(csv_reader *r, csv_col *c, const char *name,
                        wf_status *st) {
  size_t n = strlen(name);

  if (n == 0 || n >= sizeof c->name) {
    wfx_host->status_set(st, WF_INVALID_ARGUMENT,
                         "%s: the header's field %d needs a name of 1 to 63 "
                         "bytes to be a column",
                         r->path, c->src + 1);
    return WF_INVALID_ARGUMENT;
  }
  memcpy(c->name, name, n + 1);
  return 0;
}

/* Builds the columns from the `columns` entries (NULL: every header
 * field as float32) and the header's names (NULL without a header). */
static int build_schema(csv_reader *r, char **entries, int nentries,
                        char **names, int nnames, wf_status *st) {
  int n = entries ? nentries : nnames;

  r->nfields = names ? nnames : nentries;
  if (r->nfields <= 0) {
    wfx_host->status_set(st, WF_INVALID_ARGUMENT, "%s: rows have no fields",
                         r->path);
    return WF_INVALID_ARGUMENT;
  }
  r->cols = wfx_host->alloc((size_t)n * sizeof *r->cols + 1, 0);
  r->slot = wfx_host->alloc((size_t)r->nfields * sizeof *r->slot, 0);
  if (!r->cols || !r->slot) {
    wfx_host->status_set(st, WF_RESOURCE_EXHAUSTED,
                         "%s: out of memory for %d columns", r->path, n);
    return WF_RESOURCE_EXHAUSTED;
  }
  for (int i = 0; i < r->nfields; i++)
    r->slot[i] = -1;

  for (int i = 0; i < n; i++) {
    csv_col *c = &r->cols[r->ncols];
    const csv_type *type = &csv_types[0];
    const char *colon = entries ? strrchr(entries[i], ':') : NULL;
    const char *tname = entries ? (colon ? colon + 1 : entries[i]) : NULL;
    char name[64];

    memset(c, 0, sizeof *c);
    if (tname && find_type(tname, strlen(tname), &type)) {
      wfx_host->status_set(st, WF_INVALID_ARGUMENT,
                           "csv reader: column entry \"%s\": unknown dtype "
                           "\"%s\" (known: " TYPE_NAMES ")",
                           entries[i], tname);
      return WF_INVALID_ARGUMENT;
    }
    c->dtype = type->dtype;
    c->src = i;
    if (colon && names) {
      /* "name:dtype" with a header: found by name. */
      size_t len = (size_t)(colon - entries[i]);
      c->src = -1;
      for (int k = 0; k < nnames; k++)
        if (strlen(names[k]) == len && strncmp(names[k], entries[i], len) == 0) {
          if (c->src >= 0) {
            wfx_host->status_set(st, WF_INVALID_ARGUMENT,
                                 "%s: the header names column \"%.*s\" twice "
                                 "(fields %d and %d)",
                                 r->path, (int)len, entries[i], c->src + 1,
                                 k + 1);
            return WF_INVALID_ARGUMENT;
          }
          c->src = k;
        }
      if (c->src < 0) {
        wfx_host->status_set(st, WF_INVALID_ARGUMENT,
                             "%s: the header has no column \"%.*s\"", r->path,
                             (int)len, entries[i]);
        return WF_INVALID_ARGUMENT;
      }
    } else if (c->src >= r->nfields) {
      wfx_host->status_set(
          st, WF_INVALID_ARGUMENT,
          "%s: column entry %d (\"%s\") is past the header's %d "
          "fields",
          r->path, i + 1, entries[i], r->nfields);
      return WF_INVALID_ARGUMENT;
    }
    if (colon) {
      size_t len = (size_t)(colon - entries[i]);
      if (len == 0 || len >= sizeof name) {
        wfx_host->status_set(st, WF_INVALID_ARGUMENT,
                             "csv reader: column entry \"%.80s\": a name has 1 "
                             "to 63 bytes",
                             entries[i]);
        return WF_INVALID_ARGUMENT;
      }
      memcpy(name, entries[i], len);
      name[len] = 0;
    } else if (names) {
      snprintf(name, sizeof name, "%s", names[c->src]);
      if (strlen(names[c->src]) >= sizeof name)
        name[0] = 0; /* refused by set_col_name */
    } else {
      snprintf(name, sizeof name, "column%d", c->src);
    }
    if (c->dtype == WF_DTYPE_INVALID)
      continue; /* "skip" */
    if (set_col_name(r, c, name, st))
      return WF_INVALID_ARGUMENT;
    if (r->slot[c->src] >= 0) {
      wfx_host->status_set(st, WF_INVALID_ARGUMENT,
                           "%s: field %d is selected twice (as '%s' and '%s')",
                           r->path, c->src + 1, r->cols[r->slot[c->src]].name,
                           c->name);
      return WF_INVALID_ARGUMENT;
    }
    for (int k = 0; k < r->ncols; k++)
      if (strcmp(r->cols[k].name, c->name) == 0) {
        wfx_host->status_set(st, WF_INVALID_ARGUMENT,
                             "%s: two columns are named '%s'", r->path,
                             c->name);
        return WF_INVALID_ARGUMENT;
      }
    r->slot[c->src] = r->ncols++;
  }
  if (r->ncols == 0) {
    wfx_host->status_set(st, WF_INVALID_ARGUMENT,
                         "%s: every column is skipped: records would be empty",
                         r->path);
    return WF_INVALID_ARGUMENT;
  }
  return 0;
}

/* The header's fields as a host allocation like opt_list's. */
static int read_header(csv_reader *r, char ***out, int *n, wf_status *st) {
  csv_scanner *sc = &r->sc;
  const char *why = NULL;
  size_t bytes = 0, start;
  int rc, count = 0;
  char **names = NULL, *text = NULL;

  *out = NULL;
  if (!csv_scan_row_start(sc)) {
    wfx_host->status_set(st, WF_INVALID_ARGUMENT,
                         "%s: no header row: the file is empty", r->path);
    return WF_INVALID_ARGUMENT;
  }
  /* Two passes: count and size, then copy. */
  start = sc->pos;
  for (int pass = 0; pass < 2; pass++) {
    sc->pos = start;
    sc->line = csv_scan_line_of(sc, start);
    for (int i = 0;; i++) {
      rc = csv_scan_field(sc, &why, st);
      if (rc < 0)
        return -rc;
      if (rc == CSV_FIELD_BAD) {
        wfx_host->status_set(st, WF_INVALID_ARGUMENT,
                             "%s:%" PRIu64 ": header: %s", r->path,
                             csv_scan_line_of(sc, start), why);
        return WF_INVALID_ARGUMENT;
      }
      if (pass == 0) {
        count++;
        bytes += sc->len + 1;
      } else {
        names[i] = text;
        memcpy(text, sc->buf, sc->len + 1);
        text += sc->len + 1;
      }
      if (rc == CSV_FIELD_LAST)
        break;
    }
    if (pass == 0) {
      names = wfx_host->alloc((size_t)(count + 1) * sizeof *names + bytes, 0);
      if (!names) {
        wfx_host->status_set(st, WF_RESOURCE_EXHAUSTED,
                             "%s: out of memory for the header", r->path);
        return WF_RESOURCE_EXHAUSTED;
      }
      text = (char *)(names + count + 1);
    }
  }
  names[count] = NULL;
  *out = names;
  *n = count;
  return 0;
}

/* ---- the reader ------------------------------------------------------------- */

static void csv_close(void *rd) {
  csv_reader *r = rd;

  if (!r)
    return;
  if (r->bad_skipped || r->missing_skipped)
    wfx_host->log(r->bad_skipped ? WF_LOG_WARNING : WF_LOG_INFO, "reader-csv",
                  "%s: skipped %" PRIu64 " bad rows and %" PRIu64
                  " rows with missing values",
                  r->path, r->bad_skipped, r->missing_skipped);
  csv_scan_deinit(&r->sc);
  if (r->map)
    munmap(r->map, r->size);
  if (r->fd >= 0)
    close(r->fd);
  if (r->c_locale)
    freelocale(r->c_locale);
  wfx_host->free(r->vals);
  wfx_host->free(r->cols);
  wfx_host->free(r->slot);
  wfx_host->free(r->path);
  wfx_host->free(r);
}

static int map_file(csv_reader *r, wf_status *st) {
  struct stat sb;
  int code;

  r->fd = open(r->path, O_RDONLY | O_CLOEXEC);
  if (r->fd < 0) {
    code = errno == ENOENT    ? WF_NOT_FOUND
           : errno == EACCES ? WF_PERMISSION_DENIED
                             : WF_UNAVAILABLE;
    wfx_host->status_set(st, code, "%s: cannot open: %s", r->path,
                         strerror(errno));
    return code;
  }
  if (fstat(r->fd, &sb) != 0) {
    wfx_host->status_set(st, WF_UNAVAILABLE, "%s: cannot stat: %s", r->path,
                         strerror(errno));
    return WF_UNAVAILABLE;
  }
  if (!S_ISREG(sb.st_mode)) {
    wfx_host->status_set(st, WF_FAILED_PRECONDITION, "%s: not a regular file",
                         r->path);
    return WF_FAILED_PRECONDITION;
  }
  r->size = (size_t)sb.st_size;
  if (r->size == 0)
    return 0;
  r->map = mmap(NULL, r->size, PROT_READ, MAP_PRIVATE, r->fd, 0);
  if (r->map == MAP_FAILED) {
    r->map = NULL;
    wfx_host->status_set(st, WF_UNAVAILABLE, "%s: cannot map %zu bytes: %s",
                         r->path, r->size, strerror(errno));
    return WF_UNAVAILABLE;
  }
  madvise(r->map, r->size, MADV_SEQUENTIAL);
  return 0;
}

/* The delimiter from its option: one byte, or "\t" spelt with a backslash. */
static int opt_delim(const wf_attr_item *it, char *out, wf_status *st) {
  const char *s = it->value.type == WF_ATTR_STRING ? it->value.u.s : NULL;

  if (s && strcmp(s, "\\t") == 0)
    s = "\t";
  if (!s || strlen(s) != 1 || *s == '"' || *s == '\r' || *s == '\n')
    return opt_error(it,
                     "must be one character other than a quote or a line "
                     "break (\"\\t\" for a tab)",
                     st);
  *out = *s;
  return 0;
}

static int csv_open(const char *path, const wf_attr_item *options,
                    int32_t nopts, void **rd, wf_status *st) {
  static const char *const missing_words[] = {"error", "default", "skip",
                                              NULL};
  static const char *const bad_words[] = {"error", "skip", NULL};
  size_t plen = strlen(path);
  csv_reader *r;
  char **entries = NULL, **defaults = NULL, **names = NULL;
  int nentries = 0, ndefaults = 0, nnames = 0, have_missing = 0;
  char delim = plen > 4 && strcmp(path + plen - 4, ".tsv") == 0 ? '\t' : ',';

  *rd = NULL;
  if ((r = wfx_host->alloc(sizeof *r, 0)) != NULL) {
    memset(r, 0, sizeof *r);
    r->fd = -1;
    r->path = wfx_host->alloc(plen + 1, 0);
  }
  if (!r || !r->path) {
    wfx_host->free(r);
    wfx_host->status_set(st, WF_RESOURCE_EXHAUSTED,
                         "csv reader: out of memory opening %s", path);
    return WF_RESOURCE_EXHAUSTED;
  }
  memcpy(r->path, path, plen + 1);
  if (!(r->c_locale = newlocale(LC_ALL_MASK, "C", (locale_t)0))) {
    wfx_host->status_set(st, WF_RESOURCE_EXHAUSTED,
                         "csv reader: cannot make the C locale to parse %s",
                         path);
    goto fail;
  }

  for (int32_t i = 0; i < nopts; i++) {
    const wf_attr_item *it = &options[i];
    int rc;
    if (strcmp(it->name, "columns") == 0) {
      wfx_host->free(entries);
      rc = opt_list(it, &entries, &nentries, st);
    } else if (strcmp(it->name, "header") == 0) {
      rc = opt_bool(it, &r->header, st);
    } else if (strcmp(it->name, "delimiter") == 0) {
      rc = opt_delim(it, &delim, st);
    } else if (strcmp(it->name, "missing") == 0) {
      rc = opt_word(it, missing_words,
                    "must be \"error\", \"default\" or \"skip\"", &r->missing,
                    st);
      have_missing = 1;
    } else if (strcmp(it->name, "defaults") == 0) {
      wfx_host->free(defaults);
      rc = opt_list(it, &defaults, &ndefaults, st);
    } else if (strcmp(it->name, "bad_rows") == 0) {
      rc = opt_word(it, bad_words, "must be \"error\" or \"skip\"",
                    &r->bad_rows, st);
    } else {
      wfx_host->status_set(
          st, WF_INVALID_ARGUMENT,
          "csv reader: unknown option '%s' (known: " OPTION_NAMES ")",
          it->name);
      rc = WF_INVALID_ARGUMENT;
    }
    if (rc)
      goto fail;
  }
  if (defaults && !have_missing)
    r->missing = MISSING_DEFAULT;
  if (!entries && !r->header) {
    wfx_host->status_set(
        st, WF_INVALID_ARGUMENT,
        "%s: the csv reader needs option 'columns' (\"name:dtype\" "
        "entries) when the file has no header",
        path);
    goto fail;
  }

  if (map_file(r, st))
    goto fail;
  csv_scan_init(&r->sc, r->map, r->size, delim);
  if (r->header && read_header(r, &names, &nnames, st))
    goto fail;
  if (build_schema(r, entries, nentries, names, nnames, st))
    goto fail;
  r->vals = wfx_host->alloc((size_t)r->ncols * sizeof *r->vals, 0);
  if (!r->vals) {
    wfx_host->status_set(st, WF_RESOURCE_EXHAUSTED,
                         "%s: out of memory for %d columns", path, r->ncols);
    goto fail;
  }

  if (defaults) {
    if (ndefaults != 1 && ndefaults != r->ncols) {
      wfx_host->status_set(st, WF_INVALID_ARGUMENT,
                           "%s: option 'defaults' has %d values for %d columns "
                           "(give one, or one per column)",
                           path, ndefaults, r->ncols);
      goto fail;
    }
    for (int i = 0; i < r->ncols; i++) {
      char why[128];
      char *text = defaults[ndefaults == 1 ? 0 : i];
      char copy[128];
      if (strlen(text) >= sizeof copy) {
        wfx_host->status_set(st, WF_INVALID_ARGUMENT,
                             "%s: default for column '%s' is too long", path,
                             r->cols[i].name);
        goto fail;
      }
      memcpy(copy, text, strlen(text) + 1);
      if (parse_value(copy, strlen(copy), r->cols[i].dtype, r->c_locale,
                      &r->cols[i].def, why, sizeof why) != 0) {
        wfx_host->status_set(st, WF_INVALID_ARGUMENT,
                             "%s: default for column '%s': %s", path,
                             r->cols[i].name, *copy ? why : "it is empty");
        goto fail;
      }
    }
  }
  r->data_start = r->sc.pos;
  r->data_line = r->sc.line;
  wfx_host->free(entries);
  wfx_host->free(defaults);
  wfx_host->free(names);
  *rd = r;
  return 0;

fail:
  wfx_host->free(entries);
  wfx_host->free(defaults);
  wfx_host->free(names);
  csv_close(r);
  return wfx_code(st);
}

static int32_t csv_num_fields(void *rd) { return ((csv_reader *)rd)->ncols; }

static void csv_field(void *rd, int32_t i, wf_reader_field *out) {
  const csv_col *c = &((csv_reader *)rd)->cols[i];

  /* The core zeroed *out and set its header (plugin.h). */
  memcpy(out->name, c->name, sizeof out->name);
  out->dtype = c->dtype;
  out->shape.rank = 0;
}

/* Scans one row into r->vals. Returns 1 for a record, 2 for a row skipped
 * for a missing value, or 0 with `err` describing a bad row; the scanner
 * ends after the row. Negative: -code with st set (out of memory). */
static int scan_row(csv_reader *r, char *err, size_t errlen, wf_status *st) {
  csv_scanner *sc = &r->sc;
  const char *why = NULL;
  int rc, nf = 0, skip = 0;

  err[0] = 0;
  for (;;) {
    rc = csv_scan_field(sc, &why, st);
    if (rc < 0)
      return rc;
    if (rc == CSV_FIELD_BAD) {
      snprintf(err, errlen, "%s", why);
      return 0;
    }
    if (nf < r->nfields && r->slot[nf] >= 0 && !err[0]) {
      int k = r->slot[nf];
      char why_value[160];
      int pv = parse_value(sc->buf, sc->len, r->cols[k].dtype, r->c_locale,
                           &r->vals[k], why_value, sizeof why_value);
      if (pv < 0)
        snprintf(err, errlen, "column '%s' (field %d): %s", r->cols[k].name,
                 nf + 1, why_value);
      else if (pv > 0 && r->missing == MISSING_ERROR)
        snprintf(err, errlen,
                 "column '%s' (field %d) is empty (a missing value; see "
                 "option 'missing')",
                 r->cols[k].name, nf + 1);
      else if (pv > 0 && r->missing == MISSING_DEFAULT)
        r->vals[k] = r->cols[k].def;
      else if (pv > 0)
        skip = 1;
    }
    nf++;
    if (rc == CSV_FIELD_LAST)
      break;
  }
  /* A wrong field count explains any value error it causes. */
  if (nf != r->nfields) {
    snprintf(err, errlen, "%d fields, expected %d", nf, r->nfields);
    return 0;
  }
  if (err[0])
    return 0;
  return skip ? 2 : 1;
}

static int csv_next(void *rd, wf_tensor **fields, wf_status *st) {
  static const wf_shape scalar = {.rank = 0};
  csv_reader *r = rd;
  csv_scanner *sc = &r->sc;
  char err[320];

  for (;;) {
    size_t row_pos;
    uint64_t row_line;
    int rc;

    if (!csv_scan_row_start(sc))
      return WF_READER_END;
    row_pos = sc->pos;
    row_line = sc->line;
    rc = scan_row(r, err, sizeof err, st);
    if (rc == 2) {
      r->missing_skipped++;
      continue;
    }
    if (rc == 0 && r->bad_rows == BAD_SKIP) {
      r->bad_skipped++;
      wfx_host->status_set(st, WF_DATA_LOSS,
                           "%s:%" PRIu64 ": skipped a bad row: %s (%" PRIu64
                           " skipped so far)",
                           r->path, row_line, err, r->bad_skipped);
      return -WF_DATA_LOSS;
    }
    if (rc == 0)
      wfx_host->status_set(st, WF_INVALID_ARGUMENT, "%s:%" PRIu64 ": %s",
                           r->path, row_line, err);
    for (int i = 0; rc == 1 && i < r->ncols; i++) {
      if (!(fields[i] = wfx_host->tensor_new(r->cols[i].dtype, &scalar, st))) {
        while (i-- > 0) {
          wfx_host->tensor_release(fields[i]);
          fields[i] = NULL;
        }
        rc = -WF_RESOURCE_EXHAUSTED;
        break;
      }
      store(wfx_data(fields[i]), r->cols[i].dtype, r->vals[i]);
    }
    if (rc == 1)
      return WF_READER_RECORD;
    /* Fatal: stay at the row, so the error repeats rather than vanishes. */
    sc->pos = row_pos;
    sc->line = row_line;
    return -wfx_code(st);
  }
}

static uint64_t csv_tell(void *rd) {
  const csv_reader *r = rd;

  return r->sc.pos == r->data_start ? 0 : r->sc.pos;
}

static int csv_seek(void *rd, uint64_t pos, wf_status *st) {
  csv_reader *r = rd;

  if (pos == 0) {
    r->sc.pos = r->data_start;
    r->sc.line = r->data_line;
    return 0;
  }
  if (pos < r->data_start || pos > r->size ||
      (pos < r->size && r->map[pos - 1] != '\n')) {
    wfx_host->status_set(st, WF_INVALID_ARGUMENT,
                         "%s: offset %" PRIu64
                         " is not the start of a row (rows span offsets %zu to "
                         "%zu; use a position from tell)",
                         r->path, pos, r->data_start, r->size);
    return WF_INVALID_ARGUMENT;
  }
  r->sc.pos = (size_t)pos;
  r->sc.line = csv_scan_line_of(&r->sc, (size_t)pos);
  return 0;
}

/* ---- the plugin -------------------------------------------------------------- */

static const wf_reader_def csv_reader_def = {
    WF_STRUCT_INIT(wf_reader_def),
    .name = "csv",
    .formats = "csv,tsv",
    .doc =
        "RFC 4180 csv files (quoted fields with delimiters, doubled quotes "
        "and line breaks; LF or CRLF row ends; blank lines skipped). Each "
        "selected column is a scalar field. Options: columns — \"name:dtype\" "
        "entries (a list, or one string of comma-separated entries); with a "
        "header a name selects the header's column of that name, without "
        "one entries are the row's fields in order; a bare \"dtype\" takes "
        "the field at the entry's position, named from the header (or "
        "columnN); dtypes: " TYPE_NAMES " (skip: not emitted); absent: every "
        "header column as float32. header (bool, default false) — the first "
        "row names the columns. delimiter — one character (default \",\", "
        "or a tab for .tsv; \"\\t\" spells a tab). missing — what an empty "
        "field does: \"error\" (default), \"default\" (use defaults) or "
        "\"skip\" (the row is dropped silently and counted). defaults — one "
        "value for every column or one per column (implies missing = "
        "\"default\"; without it the default is 0). bad_rows — a malformed "
        "row (quoting, field count, a value that does not parse, with "
        "trailing garbage, or out of the dtype's range) is \"error\" "
        "(default: INVALID_ARGUMENT naming file and line) or \"skip\" (next "
        "returns DATA_LOSS naming file and line, and reading goes on). "
        "Numbers are parsed in the C locale; spaces and tabs around a value "
        "are ignored; bools are true/false/1/0. Skipped rows are counted in "
        "the log when the file is closed. Position: the byte offset of the "
        "next row (seeking there counts the lines before it again). count is "
        "not known without reading.",
    .open = csv_open,
    .num_fields = csv_num_fields,
    .field = csv_field,
    .next = csv_next,
    .tell = csv_tell,
    .seek = csv_seek,
    .close = csv_close,
    .count = NULL,
};

static const wf_reader_def *const readers[] = {&csv_reader_def, NULL};

/* The host table, for every file of the plugin: ABI 1.0 has every entry
 * it uses. */
WFX_HOST_DEFINE(1, 0);

static int csv_init(const wf_host *host, void **state, wf_status *st) {
  if (WFX_HOST_INIT(host, "reader-csv", st))
    return WF_FAILED_PRECONDITION;
  *state = NULL;
  return 0;
}

static const wf_plugin_desc desc = {
    WF_STRUCT_INIT(wf_plugin_desc),
    .name = "reader-csv",
    .version = PACKAGE_VERSION,
    .license = "MIT",
    .description = "RFC 4180 csv files with typed columns and policies for "
                   "missing values and bad rows",
    .readers = readers,
    .init = csv_init,
};

WF_PLUGIN(reader_csv, desc)
