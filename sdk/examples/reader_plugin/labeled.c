/* labeled.c — an out-of-tree weft reader plugin (module labeled.so, plugin
 * "example-labeled"): text files (suffix .lbl) of "LABEL: V1 V2 ... VD"
 * lines, read as records of two fields, label (int64, ()) and values
 * (float32, (D,)). Blank lines and lines starting with '#' are skipped; a
 * malformed line is a bad record (DATA_LOSS naming file, line and column)
 * and reading goes on with the next line.
 *
 * The whole file is read into memory when opened: the format is meant for
 * small files. There is no compressed input, no quoting, and no cheap
 * count (the optional count entry is left out). Numbers are read with
 * strtod, so a program that changes LC_NUMERIC changes the decimal point. */
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <weft/plugin_aux.h>

#define MAX_DIM 1048576 /* the most values option dim accepts */

typedef struct labeled_reader {
  char *path;     /* as opened, for messages */
  char *text;     /* the file; each '\n' replaced by '\0', one more '\0' at
                     the end */
  size_t size;    /* bytes of the file */
  size_t pos;     /* start of the next unread line: the reader's position */
  long long line; /* number of the line at pos, from 1 */
  int64_t dim;    /* values per record; -1 while unknown (no good record) */
  int dim_given;  /* dim came from the option, not from the first record */
} labeled_reader;

/* ---- parsing one line ---------------------------------------------------- */

static int is_blank(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

static const char *skip_blanks(const char *s) {
  while (is_blank(*s))
    s++;
  return s;
}

/* 1 for a line that holds no record: blank, or a '#' comment. */
static int is_skipped(const char *line) {
  const char *s = skip_blanks(line);
  return *s == '\0' || *s == '#';
}

/* Parses the record line `line` (NUL-terminated): *label gets the label,
 * values[0..max-1] the first max values (values may be NULL), *n how many
 * values there are. Returns NULL, or what is wrong with the line with *col
 * set to where (1-based). */
static const char *parse_line(const char *line, long long *label, float *values,
                              int64_t max, int64_t *n, size_t *col) {
  const char *s = skip_blanks(line);
  char *end;

  *n = 0;
  *col = (size_t)(s - line) + 1;
  if (*s != '-' && *s != '+' && (*s < '0' || *s > '9'))
    return "the line does not start with an integer label";
  errno = 0;
  *label = strtoll(s, &end, 10);
  if (end == s)
    return "the line does not start with an integer label";
  if (errno == ERANGE)
    return "the label does not fit in 64 bits";
  s = skip_blanks(end);
  *col = (size_t)(s - line) + 1;
  if (*s != ':')
    return "no ':' after the label";
  for (s = skip_blanks(s + 1); *s; s = skip_blanks(end)) {
    double v;
    *col = (size_t)(s - line) + 1;
    v = strtod(s, &end);
    if (end == s)
      return "a value is not a number";
    if (*end && !is_blank(*end))
      return "a value is followed by something other than a blank";
    if (isfinite(v) && fabs(v) > FLT_MAX)
      return "a value is outside the float32 range";
    if (values && *n < max)
      values[*n] = (float)v;
    ++*n;
  }
  if (*n == 0)
    return "no values after the label";
  return NULL;
}

/* ---- opening ------------------------------------------------------------- */

static int fail_errno(const char *path, const char *what, wf_status *st) {
  int code = errno == ENOENT   ? WF_NOT_FOUND
             : errno == EACCES ? WF_PERMISSION_DENIED
                               : WF_UNAVAILABLE;
  return wfx_fail(st, code, "%s: cannot %s: %s", path, what, strerror(errno));
}

/* Reads the file into r->text, growing the buffer by doubling (the file
 * may be a pipe: its size is not asked for). */
static int read_file(labeled_reader *r, wf_status *st) {
  size_t cap = 4096, got;
  char *grown;
  FILE *f = fopen(r->path, "rb");

  if (!f)
    return fail_errno(r->path, "open", st);
  r->text = wfx_host->alloc(cap, 0);
  while (r->text && (got = fread(r->text + r->size, 1, cap - r->size - 1, f))) {
    r->size += got;
    if (r->size + 1 < cap)
      continue;
    grown = cap <= SIZE_MAX / 2 ? wfx_host->alloc(cap * 2, 0) : NULL;
    if (grown)
      memcpy(grown, r->text, r->size);
    wfx_host->free(r->text);
    r->text = grown;
    cap *= 2;
  }
  if (!r->text) {
    fclose(f);
    return wfx_fail(st, WF_RESOURCE_EXHAUSTED,
                    "%s: out of memory reading %zu bytes", r->path, r->size);
  }
  if (ferror(f)) {
    fail_errno(r->path, "read", st);
    fclose(f);
    return wfx_code(st);
  }
  fclose(f);
  r->text[r->size] = '\0';
  return 0;
}

/* Cuts the text into lines; refuses a file holding a NUL byte (not text). */
static int split_lines(labeled_reader *r, wf_status *st) {
  const char *nul = memchr(r->text, '\0', r->size);

  if (nul)
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "%s: a NUL byte at offset %zu: not a text file", r->path,
                    (size_t)(nul - r->text));
  for (size_t i = 0; i < r->size; i++)
    if (r->text[i] == '\n')
      r->text[i] = '\0'; /* a '\r' before it stays: a blank */
  return 0;
}

/* The number of values of the first good record, or -1 when none is. */
static int64_t first_dim(const labeled_reader *r) {
  for (size_t pos = 0; pos < r->size;) {
    const char *line = r->text + pos;
    long long label;
    int64_t n;
    size_t col;
    if (!is_skipped(line) && !parse_line(line, &label, NULL, 0, &n, &col))
      return n;
    pos += strlen(line) + 1;
  }
  return -1;
}

static void labeled_close(void *rd) {
  labeled_reader *r = rd;

  if (!r)
    return;
  wfx_host->free(r->text);
  wfx_host->free(r->path);
  wfx_host->free(r);
}

static int labeled_open(const char *path, const wf_attr_item *options,
                        int32_t nopts, void **rd, wf_status *st) {
  size_t len = strlen(path);
  labeled_reader *r = wfx_host->alloc(sizeof *r, 0);

  *rd = NULL;
  if (r) {
    memset(r, 0, sizeof *r);
    r->dim = -1;
    r->line = 1;
    r->path = wfx_host->alloc(len + 1, 0);
  }
  if (!r || !r->path) {
    wfx_host->free(r);
    return wfx_fail(st, WF_RESOURCE_EXHAUSTED,
                    "labeled reader: out of memory opening %s", path);
  }
  memcpy(r->path, path, len + 1);
  for (int32_t i = 0; i < nopts; i++) {
    const wf_attr_value *v = &options[i].value;
    if (strcmp(options[i].name, "dim") != 0) {
      wfx_fail(st, WF_INVALID_ARGUMENT,
               "labeled reader: unknown option '%s' (known: dim)",
               options[i].name);
      goto fail;
    }
    if (v->type != WF_ATTR_INT || v->u.i < 1 || v->u.i > MAX_DIM) {
      wfx_fail(st, WF_INVALID_ARGUMENT,
               "labeled reader: option 'dim' must be an integer from 1 to %d",
               MAX_DIM);
      goto fail;
    }
    r->dim = v->u.i;
    r->dim_given = 1;
  }
  if (read_file(r, st) || split_lines(r, st))
    goto fail;
  if (r->dim < 0)
    r->dim = first_dim(r);
  *rd = r;
  return 0;

fail:
  labeled_close(r);
  return wfx_code(st);
}

/* ---- the records --------------------------------------------------------- */

static int32_t labeled_num_fields(void *rd) { return 2; }

/* The core set out's header and zeroed the rest: only members its size
 * covers may be written (all of these exist since ABI 1.0). */
static void labeled_field(void *rd, int32_t i, wf_reader_field *out) {
  const labeled_reader *r = rd;

  if (!WF_STRUCT_HAS(out, wf_reader_field, shape))
    return;
  if (i == 0) {
    snprintf(out->name, sizeof out->name, "label");
    out->dtype = WF_INT64;
    out->shape.rank = 0;
  } else {
    snprintf(out->name, sizeof out->name, "values");
    out->dtype = WF_FLOAT32;
    out->shape.rank = 1;
    out->shape.dims[0] = r->dim; /* -1 (unknown) in a file of no record */
  }
}

static int bad_line(const labeled_reader *r, long long line, size_t col,
                    const char *why, wf_status *st) {
  return -wfx_fail(st, WF_DATA_LOSS, "%s:%lld:%zu: %s", r->path, line, col,
                   why);
}

static int labeled_next(void *rd, wf_tensor **fields, wf_status *st) {
  labeled_reader *r = rd;

  while (r->pos < r->size) {
    const char *line = r->text + r->pos;
    long long number = r->line, label;
    wf_shape shape = {.rank = 1};
    wf_tensor *values;
    const char *why;
    int64_t n;
    size_t col;

    r->pos += strlen(line) + 1;
    if (r->pos > r->size)
      r->pos = r->size; /* the last line had no '\n' */
    r->line++;
    if (is_skipped(line))
      continue;
    if (r->dim < 0) { /* no line of this file parses, so neither does this */
      why = parse_line(line, &label, NULL, 0, &n, &col);
      return bad_line(r, number, col, why ? why : "malformed record", st);
    }
    shape.dims[0] = r->dim;
    values = wfx_host->tensor_new(WF_FLOAT32, &shape, st);
    if (!values)
      return -wfx_code(st);
    why = parse_line(line, &label, wfx_data(values), r->dim, &n, &col);
    if (why || n != r->dim) {
      wfx_host->tensor_release(values);
      if (why)
        return bad_line(r, number, col, why, st);
      return -wfx_fail(st, WF_DATA_LOSS,
                       "%s:%lld: %lld values, expected %lld %s", r->path,
                       number, (long long)n, (long long)r->dim,
                       r->dim_given ? "(option dim)"
                                    : "(as in the file's first good record)");
    }
    shape.rank = 0;
    fields[0] = wfx_host->tensor_new(WF_INT64, &shape, st);
    if (!fields[0]) {
      wfx_host->tensor_release(values);
      return -wfx_code(st);
    }
    *(int64_t *)wfx_data(fields[0]) = label;
    fields[1] = values;
    return WF_READER_RECORD;
  }
  return WF_READER_END;
}

/* Positions are byte offsets of line starts, as tell gives them. */
static uint64_t labeled_tell(void *rd) { return ((labeled_reader *)rd)->pos; }

static int labeled_seek(void *rd, uint64_t pos, wf_status *st) {
  labeled_reader *r = rd;
  long long line = 1;

  if (pos > r->size || (pos > 0 && r->text[pos - 1] != '\0'))
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "%s: cannot seek to byte %llu: not the start of a line "
                    "of this %zu-byte file",
                    r->path, (unsigned long long)pos, r->size);
  for (size_t i = 0; i < pos; i++)
    line += r->text[i] == '\0';
  r->pos = (size_t)pos;
  r->line = line;
  return 0;
}

/* ---- the plugin ---------------------------------------------------------- */

static const wf_reader_def labeled_def = {
    WF_STRUCT_INIT(wf_reader_def),
    .name = "labeled",
    .formats = "lbl",
    .doc = "Text lines \"LABEL: V1 V2 ... VD\" (an integer label, then D "
           "numbers separated by blanks) as records of label (int64, ()) "
           "and values (float32, (D,)). Blank lines and lines starting "
           "with '#' are skipped; a malformed line, or one with another "
           "number of values, is a bad record naming file, line and "
           "column. Options: dim (int) - the number of values; default: "
           "that of the file's first good record. Position: the byte "
           "offset of the next line.",
    .open = labeled_open,
    .num_fields = labeled_num_fields,
    .field = labeled_field,
    .next = labeled_next,
    .tell = labeled_tell,
    .seek = labeled_seek,
    .close = labeled_close,
};

/* The plugin and its host table (wfx_host), needing ABI 1.0. */
WFX_PLUGIN(labeled, 1, 0, .name = "example-labeled", .version = "1.0.0",
           .license = "MIT",
           .description = "text files of \"label: v1 v2 ...\" lines: the "
                          "SDK's example reader plugin",
           .readers = WFX_LIST(wf_reader_def, &labeled_def));
