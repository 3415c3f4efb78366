/* tests/data/test_reader.c — the "test-reader" plugin: reader "tst" for
 * small text files written by the pipeline tests, one record per line.
 *
 *   <n>      a record with index n
 *   bad      a bad record: next reports DATA_LOSS naming file and line
 *   fatal    an unreadable record: next fails with INVALID_ARGUMENT
 *   corrupt  (first line only) the file cannot be opened: DATA_LOSS
 *   #pixels P  (first line only) this file's records have P pixels
 *   # ...    a comment; blank lines are skipped too
 *
 * Fields: index int64 (), label int32 () = index % 10, pixels uint8 (P)
 * with pixels[k] = (index + k) % 256. Options: pixels (int, P, default 4),
 * path_in_errors (bool, default true: messages name the file; false leaves
 * that to the pipeline), delay_us (int: sleep before each record),
 * no_count (bool: count() answers "unknown"), prefix (string put before
 * every field name). Positions are tokens holding
 * the byte offset (low 40 bits) and the line number (high 24 bits).
 *
 * It counts calls of open and next so that tests can tell whether the
 * reader was touched. */
#define _GNU_SOURCE /* getline, usleep: plugins do not see config.h */

#include "test_reader.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const wf_host *host;
static atomic_long next_calls, open_calls;

long test_reader_next_calls(void) { return atomic_load(&next_calls); }
long test_reader_open_calls(void) { return atomic_load(&open_calls); }

typedef struct tst {
  FILE *f;
  char *path;
  int64_t pixels;
  int path_in_errors, no_count;
  int64_t delay_us;
  char prefix[32];
  uint64_t offset; /* of the next line */
  uint64_t line;   /* number of the next line, from 1 */
  char *buf;
  size_t cap;
} tst;

#define OFFSET_BITS 40
#define OFFSET_MASK ((UINT64_C(1) << OFFSET_BITS) - 1)

static void tst_close(void *rd) {
  tst *t = rd;
  if (!t)
    return;
  if (t->f)
    fclose(t->f);
  free(t->path);
  free(t->buf);
  free(t);
}

/* Sets st with the file named or not, as the option says. */
static int fail(tst *t, wf_status *st, int32_t code, uint64_t line,
                const char *what) {
  if (t->path_in_errors)
    host->status_set(st, code, "%s:%llu: %s", t->path,
                     (unsigned long long)line, what);
  else
    host->status_set(st, code, "line %llu: %s", (unsigned long long)line,
                     what);
  return -code;
}

/* The next line that is not blank or a comment, without its newline;
 * NULL at the end. *at receives its line number. */
static const char *read_line(tst *t, uint64_t *at) {
  for (;;) {
    ssize_t n = getline(&t->buf, &t->cap, t->f);
    if (n < 0)
      return NULL;
    *at = t->line++;
    t->offset += (uint64_t)n;
    while (n > 0 && (t->buf[n - 1] == '\n' || t->buf[n - 1] == '\r'))
      t->buf[--n] = '\0';
    if (n > 0 && t->buf[0] != '#')
      return t->buf;
  }
}

static int tst_open(const char *path, const wf_attr_item *options,
                    int32_t nopts, void **rd, wf_status *st) {
  tst *t = calloc(1, sizeof *t);
  atomic_fetch_add(&open_calls, 1);
  if (!t) {
    host->status_set(st, WF_RESOURCE_EXHAUSTED, "%s: out of memory", path);
    return WF_RESOURCE_EXHAUSTED;
  }
  t->pixels = 4;
  t->path_in_errors = 1;
  t->line = 1;
  for (int32_t i = 0; i < nopts; i++) {
    const wf_attr_item *o = &options[i];
    int type = o->value.type;
    if (strcmp(o->name, "pixels") == 0 && type == WF_ATTR_INT &&
        o->value.u.i >= 1 && o->value.u.i <= 1 << 20) {
      t->pixels = o->value.u.i;
    } else if (strcmp(o->name, "delay_us") == 0 && type == WF_ATTR_INT &&
               o->value.u.i >= 0) {
      t->delay_us = o->value.u.i;
    } else if (strcmp(o->name, "path_in_errors") == 0 &&
               type == WF_ATTR_BOOL) {
      t->path_in_errors = o->value.u.b != 0;
    } else if (strcmp(o->name, "no_count") == 0 && type == WF_ATTR_BOOL) {
      t->no_count = o->value.u.b != 0;
    } else if (strcmp(o->name, "prefix") == 0 && type == WF_ATTR_STRING &&
               strlen(o->value.u.s) < sizeof t->prefix) {
      snprintf(t->prefix, sizeof t->prefix, "%s", o->value.u.s);
    } else {
      host->status_set(st, WF_INVALID_ARGUMENT,
                       "%s: reader tst has no option '%s' of that type and "
                       "value (pixels: int >= 1, delay_us: int >= 0, "
                       "path_in_errors: bool, no_count: bool, prefix: "
                       "string)",
                       path, o->name);
      free(t);
      return WF_INVALID_ARGUMENT;
    }
  }
  t->path = strdup(path);
  t->f = t->path ? fopen(path, "r") : NULL;
  if (!t->f) {
    int code = !t->path            ? WF_RESOURCE_EXHAUSTED
               : errno == ENOENT   ? WF_NOT_FOUND
               : errno == EACCES   ? WF_PERMISSION_DENIED
                                   : WF_UNKNOWN;
    host->status_set(st, code, "%s: cannot open: %s", path, strerror(errno));
    tst_close(t);
    return code;
  }
  /* The first line may make the file unreadable or set its pixels. */
  if (getline(&t->buf, &t->cap, t->f) > 0) {
    long long px;
    if (strncmp(t->buf, "corrupt", 7) == 0) {
      fail(t, st, WF_DATA_LOSS, 1, "the file is corrupt");
      tst_close(t);
      return WF_DATA_LOSS;
    }
    if (sscanf(t->buf, "#pixels %lld", &px) == 1 && px >= 1 &&
        px <= 1 << 20)
      t->pixels = px;
  }
  rewind(t->f);
  t->offset = 0;
  t->line = 1;
  *rd = t;
  return 0;
}

static int32_t tst_num_fields(void *rd) {
  (void)rd;
  return 3;
}

static void tst_field(void *rd, int32_t i, wf_reader_field *out) {
  tst *t = rd;
  static const char *const names[] = {"index", "label", "pixels"};
  static const int32_t dtypes[] = {WF_INT64, WF_INT32, WF_UINT8};
  snprintf(out->name, sizeof out->name, "%s%s", t->prefix, names[i]);
  out->dtype = dtypes[i];
  out->shape.rank = i == 2 ? 1 : 0;
  out->shape.dims[0] = t->pixels;
}

static int tst_next(void *rd, wf_tensor **fields, wf_status *st) {
  tst *t = rd;
  uint64_t at;
  atomic_fetch_add(&next_calls, 1);
  if (t->delay_us > 0)
    usleep((useconds_t)t->delay_us);
  const char *s = read_line(t, &at);
  if (!s)
    return WF_READER_END;
  if (strcmp(s, "bad") == 0)
    return fail(t, st, WF_DATA_LOSS, at, "bad record");
  char *end;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (strcmp(s, "fatal") == 0 || *end != '\0' || errno || v < 0)
    return fail(t, st, WF_INVALID_ARGUMENT, at, "unreadable record");
  wf_shape scalar = {.rank = 0}, vec = {.rank = 1, .dims = {t->pixels}};
  fields[0] = host->tensor_new(WF_INT64, &scalar, st);
  fields[1] = host->tensor_new(WF_INT32, &scalar, st);
  fields[2] = host->tensor_new(WF_UINT8, &vec, st);
  if (!fields[0] || !fields[1] || !fields[2]) {
    for (int i = 0; i < 3; i++) {
      host->tensor_release(fields[i]);
      fields[i] = NULL;
    }
    return -host->status_code(st);
  }
  *(int64_t *)host->tensor_data(fields[0]) = v;
  *(int32_t *)host->tensor_data(fields[1]) = (int32_t)(v % 10);
  uint8_t *px = host->tensor_data(fields[2]);
  for (int64_t k = 0; k < t->pixels; k++)
    px[k] = (uint8_t)((v + k) % 256);
  return WF_READER_RECORD;
}

static uint64_t tst_tell(void *rd) {
  tst *t = rd;
  return t->offset | t->line << OFFSET_BITS;
}

static int tst_seek(void *rd, uint64_t pos, wf_status *st) {
  tst *t = rd;
  uint64_t off = pos & OFFSET_MASK;
  if (fseeko(t->f, (off_t)off, SEEK_SET) != 0) {
    host->status_set(st, WF_OUT_OF_RANGE, "%s: cannot seek to byte %llu",
                     t->path, (unsigned long long)off);
    return WF_OUT_OF_RANGE;
  }
  t->offset = off;
  t->line = pos >> OFFSET_BITS ? pos >> OFFSET_BITS : 1;
  return 0;
}

/* Lines that are records or bad records, without decoding them. */
static int64_t tst_count(void *rd, wf_status *st) {
  tst *t = rd;
  (void)st;
  if (t->no_count)
    return -1;
  FILE *f = fopen(t->path, "r");
  char *buf = NULL;
  size_t cap = 0;
  int64_t n = 0;
  if (!f)
    return -1;
  while (getline(&buf, &cap, f) >= 0)
    if (buf[0] != '#' && buf[0] != '\n' && buf[0] != '\r' &&
        strncmp(buf, "bad", 3) != 0)
      n++;
  free(buf);
  fclose(f);
  return n;
}

static int init(const wf_host *h, void **state, wf_status *st) {
  (void)state;
  (void)st;
  host = h;
  return 0;
}

static const wf_reader_def tst_reader = {
    WF_STRUCT_INIT(wf_reader_def),
    .name = "tst",
    .formats = "tst,tst.txt",
    .doc = "test records, one per line (tests/data/test_reader.c); options "
           "pixels, path_in_errors, delay_us, no_count",
    .open = tst_open,
    .num_fields = tst_num_fields,
    .field = tst_field,
    .next = tst_next,
    .tell = tst_tell,
    .seek = tst_seek,
    .close = tst_close,
    .count = tst_count,
};

static const wf_reader_def *const readers[] = {&tst_reader, NULL};

static const wf_plugin_desc desc = {
    WF_STRUCT_INIT(wf_plugin_desc),
    .name = "test-reader",
    .version = "1.0",
    .license = "MIT",
    .description = "a reader of test records for the pipeline tests",
    .readers = readers,
    .init = init,
};

const wf_plugin_desc *test_reader_desc(void) { return &desc; }

WF_PLUGIN(test_reader, desc)
