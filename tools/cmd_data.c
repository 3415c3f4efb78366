/* tools/cmd_data.c — `weft data head|count|validate`: what data files hold,
 * read through the reader plugins: schema and first records, counts, and every
 * problem with its file and offset or line. Options come parsed from
 * tools/weft.c (tools/inspect.h). */
#include <config.h>

#include <ctype.h>
#include <errno.h>
#include <glob.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <weft/weft.h>

#include "inspect.h"

/* Reader options parsed from --option, and the memory they point into. */
typedef struct data_options {
  wf_attr_item *items;
  int n;
  void **owned;
  int nowned;
} data_options;

static void data_options_free(data_options *d) {
  for (int i = 0; i < d->nowned; i++)
    free(d->owned[i]);
  free(d->owned);
  free(d->items);
}

/* Remembers p (freed with the options); NULL when p is NULL or out of
 * memory (then p is freed). */
static void *keep(data_options *d, void *p) {
  void **grown;
  if (!p)
    return NULL;
  grown = realloc(d->owned, (size_t)(d->nowned + 1) * sizeof *grown);
  if (!grown) {
    free(p);
    return NULL;
  }
  d->owned = grown;
  d->owned[d->nowned++] = p;
  return p;
}

static int parse_int(const char *s, int64_t *v) {
  char *end;
  errno = 0;
  long long x = strtoll(s, &end, 0);
  if (!*s || *end || errno)
    return -1;
  *v = x;
  return 0;
}

static int parse_float(const char *s, double *v) {
  char *end;
  errno = 0;
  double x = strtod(s, &end);
  if (!*s || *end || errno)
    return -1;
  *v = x;
  return 0;
}

static int parse_bool(const char *s, int32_t *v) {
  if (strcmp(s, "true") == 0 || strcmp(s, "1") == 0 || strcmp(s, "yes") == 0)
    *v = 1;
  else if (strcmp(s, "false") == 0 || strcmp(s, "0") == 0 ||
           strcmp(s, "no") == 0)
    *v = 0;
  else
    return -1;
  return 0;
}

/* A comma-separated list as a list attribute of base type. */
static int parse_list(data_options *d, const char *text, int base,
                      wf_attr_value *v) {
  size_t n = 1;
  for (const char *p = text; *p; p++)
    n += *p == ',';
  char *copy = keep(d, strdup(text));
  int64_t *ints = base == WF_ATTR_INT ? keep(d, calloc(n, sizeof *ints)) : NULL;
  double *floats =
      base == WF_ATTR_FLOAT ? keep(d, calloc(n, sizeof *floats)) : NULL;
  const char **strs =
      base == WF_ATTR_STRING ? keep(d, calloc(n, sizeof *strs)) : NULL;
  if (!copy || (!ints && !floats && !strs))
    return -1;
  size_t i = 0;
  for (char *item = copy, *next; item; item = next, i++) {
    next = strchr(item, ',');
    if (next)
      *next++ = '\0';
    if ((ints && parse_int(item, &ints[i])) ||
        (floats && parse_float(item, &floats[i])))
      return -1;
    if (strs)
      strs[i] = item;
  }
  v->type = WF_ATTR_LIST | base;
  v->count = (int64_t)n;
  if (ints)
    v->u.ints = ints;
  else if (floats)
    v->u.floats = floats;
  else
    v->u.strings = strs;
  return 0;
}

/* Parses KEY[:TYPE]=VALUE into the next item of d. */
static int parse_option(data_options *d, const char *text) {
  const char *eq = strchr(text, '=');
  if (!eq || eq == text) {
    fprintf(stderr, "weft data: --option '%s': expected KEY=VALUE\n", text);
    return -1;
  }
  char *key = keep(d, strndup(text, (size_t)(eq - text)));
  if (!key) {
    fprintf(stderr, "weft data: out of memory\n");
    return -1;
  }
  char *type = strchr(key, ':');
  if (type)
    *type++ = '\0';
  const char *value = eq + 1;
  wf_attr_item *it = &d->items[d->n];
  wf_attr_value *v = &it->value;
  int bad = 0;
  it->name = key;
  memset(v, 0, sizeof *v);
  v->count = 1;
  if (!type) {
    if (parse_int(value, &v->u.i) == 0)
      v->type = WF_ATTR_INT;
    else if (parse_float(value, &v->u.f) == 0)
      v->type = WF_ATTR_FLOAT;
    else if (parse_bool(value, &v->u.b) == 0 && isalpha(value[0]))
      v->type = WF_ATTR_BOOL;
    else {
      v->type = WF_ATTR_STRING;
      v->u.s = value;
    }
  } else if (strcmp(type, "int") == 0) {
    v->type = WF_ATTR_INT;
    bad = parse_int(value, &v->u.i);
  } else if (strcmp(type, "float") == 0) {
    v->type = WF_ATTR_FLOAT;
    bad = parse_float(value, &v->u.f);
  } else if (strcmp(type, "bool") == 0) {
    v->type = WF_ATTR_BOOL;
    bad = parse_bool(value, &v->u.b);
  } else if (strcmp(type, "string") == 0) {
    v->type = WF_ATTR_STRING;
    v->u.s = value;
  } else if (strcmp(type, "dtype") == 0) {
    v->type = WF_ATTR_DTYPE;
    v->u.dtype = wf_dtype_from_name(value);
    bad = v->u.dtype == WF_DTYPE_INVALID;
  } else if (strcmp(type, "list(int)") == 0) {
    bad = parse_list(d, value, WF_ATTR_INT, v);
  } else if (strcmp(type, "list(float)") == 0) {
    bad = parse_list(d, value, WF_ATTR_FLOAT, v);
  } else if (strcmp(type, "list(string)") == 0) {
    bad = parse_list(d, value, WF_ATTR_STRING, v);
  } else {
    fprintf(stderr,
            "weft data: --option '%s': unknown type '%s' (int, float, bool, "
            "string, dtype, list(int), list(float), list(string))\n",
            text, type);
    return -1;
  }
  if (bad) {
    fprintf(stderr, "weft data: --option '%s': '%s' is not a valid %s\n", text,
            value, type);
    return -1;
  }
  d->n++;
  return 0;
}

static int data_options_parse(const opts *o, data_options *d) {
  memset(d, 0, sizeof *d);
  d->items = calloc((size_t)(o->noptions + 1), sizeof *d->items);
  if (!d->items) {
    fprintf(stderr, "weft data: out of memory\n");
    return -1;
  }
  for (int i = 0; i < o->noptions; i++)
    if (parse_option(d, o->options[i]))
      return -1;
  return 0;
}

/* The files SOURCE names, as the core expands it (a path that exists is
 * taken as is, else a sorted glob): a new array of *n new strings (free
 * both), NULL when nothing matches or memory runs out. */
static char **expand_source(const char *source, size_t *n) {
  struct stat sb;
  glob_t g;
  char **paths;
  *n = 0;
  if (stat(source, &sb) == 0) {
    paths = malloc(sizeof *paths);
    if (paths && !(paths[0] = strdup(source))) {
      free(paths);
      paths = NULL;
    }
    *n = paths ? 1 : 0;
    return paths;
  }
  if (glob(source, 0, NULL, &g) != 0)
    return NULL;
  paths = calloc(g.gl_pathc, sizeof *paths);
  for (size_t i = 0; paths && i < g.gl_pathc; i++) {
    paths[i] = strdup(g.gl_pathv[i]);
    if (!paths[i]) {
      while (i > 0)
        free(paths[--i]);
      free(paths);
      paths = NULL;
    }
  }
  *n = paths ? g.gl_pathc : 0;
  globfree(&g);
  return paths;
}

static double half_value(uint16_t h) {
  int e = (h >> 10) & 0x1f, m = h & 0x3ff;
  double v = e == 0      ? ldexp(m, -24)
             : e == 0x1f ? (m ? NAN : INFINITY)
                         : ldexp(m | 0x400, e - 25);
  return h & 0x8000 ? -v : v;
}

/* Element i of t as a double; *is_int says whether it is an integer. */
static double element(const wf_tensor *t, int64_t i, int *is_int) {
  const void *p = wf_tensor_data(t);
  *is_int = 1;
  switch (wf_tensor_dtype(t)) {
  case WF_INT8:
    return ((const int8_t *)p)[i];
  case WF_UINT8:
  case WF_BOOL:
    return ((const uint8_t *)p)[i];
  case WF_INT32:
    return ((const int32_t *)p)[i];
  case WF_INT64:
    return (double)((const int64_t *)p)[i];
  default:
    break;
  }
  *is_int = 0;
  switch (wf_tensor_dtype(t)) {
  case WF_FLOAT32:
    return ((const float *)p)[i];
  case WF_FLOAT64:
    return ((const double *)p)[i];
  case WF_FLOAT16:
    return half_value(((const uint16_t *)p)[i]);
  case WF_BFLOAT16: {
    uint32_t bits = (uint32_t)((const uint16_t *)p)[i] << 16;
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
  }
  default:
    return NAN;
  }
}

/* Prints t's values ("3", "[1, 2, 3]", "[0, 0, ..., 0] (784 values)"). */
static void print_values(const wf_tensor *t) {
  enum { SHOWN = 8 };
  int64_t n = wf_tensor_count(t);
  int rank = wf_tensor_rank(t), is_int;
  if (wf_tensor_dtype(t) == WF_INT64 && rank == 0) {
    printf("%" PRId64, *(const int64_t *)wf_tensor_data(t));
    return;
  }
  if (rank > 0)
    putchar('[');
  for (int64_t i = 0; i < n && i < SHOWN; i++) {
    double v = element(t, i, &is_int);
    if (wf_tensor_dtype(t) == WF_INT64)
      printf("%s%" PRId64, i ? ", " : "",
             ((const int64_t *)wf_tensor_data(t))[i]);
    else
      printf(is_int ? "%s%.0f" : "%s%g", i ? ", " : "", v);
  }
  if (n > SHOWN)
    printf(", ...");
  if (rank > 0)
    putchar(']');
  if (n > SHOWN)
    printf(" (%" PRId64 " values)", n);
}

/* Element i of t in JSON (null for NaN and infinities, which JSON lacks). */
static json_t *element_json(const wf_tensor *t, int64_t i) {
  int is_int;
  double v = element(t, i, &is_int);
  if (wf_tensor_dtype(t) == WF_INT64)
    return json_integer(((const int64_t *)wf_tensor_data(t))[i]);
  if (is_int)
    return json_integer((json_int_t)v);
  return isfinite(v) ? json_real(v) : json_null();
}

/* A scalar as a number, anything else as the flat list of its values. */
static json_t *values_json(const wf_tensor *t) {
  if (wf_tensor_rank(t) == 0)
    return element_json(t, 0);
  json_t *arr = json_array();
  int64_t n = wf_tensor_count(t);
  for (int64_t i = 0; arr && i < n; i++)
    json_array_append_new(arr, element_json(t, i));
  return arr;
}

static json_t *shape_json(const wf_shape *s) {
  if (s->rank < 0)
    return json_null();
  json_t *arr = json_array();
  for (int i = 0; arr && i < s->rank; i++)
    json_array_append_new(arr, s->dims[i] < 0 ? json_null()
                                              : json_integer(s->dims[i]));
  return arr;
}

static json_t *files_json(const wf_dataset *ds) {
  json_t *arr = json_array();
  for (int i = 0; arr && i < wf_dataset_num_files(ds); i++) {
    const char *reader;
    const char *path = wf_dataset_file(ds, i, &reader);
    json_array_append_new(
        arr, json_pack("{s:s, s:s}", "path", path, "reader", reader));
  }
  return arr;
}

static void print_files(const wf_dataset *ds) {
  int n = wf_dataset_num_files(ds);
  printf("%d file%s:\n", n, n == 1 ? "" : "s");
  for (int i = 0; i < n; i++) {
    const char *reader;
    const char *path = wf_dataset_file(ds, i, &reader);
    printf("  %s  (reader %s)\n", path, reader);
  }
}

static int data_head(wf_runtime *rt, const opts *o, const data_options *d,
                     wf_status *st) {
  long want = o->records >= 0 ? o->records : 10;
  wf_dataset *ds =
      wf_dataset_from_files(rt, o->source, o->format, d->items, d->n, st);
  if (!ds) {
    fprintf(stderr, "weft data head: %s\n", wf_status_message(st));
    return 1;
  }
  int nf = wf_dataset_num_fields(ds), rc = 0;
  wf_tensor **f = calloc((size_t)nf, sizeof *f);
  wf_iterator *it = f ? wf_iterator_new(ds, NULL, st) : NULL;
  json_t *out = NULL, *records = NULL, *problems = NULL;
  if (!it) {
    fprintf(stderr, "weft data head: %s\n",
            f ? wf_status_message(st) : "out of memory");
    free(f);
    wf_dataset_release(ds);
    return 1;
  }
  if (o->json) {
    json_t *fields = json_array();
    for (int i = 0; fields && i < nf; i++) {
      wf_data_field fd;
      wf_dataset_field(ds, i, &fd);
      json_array_append_new(fields,
                            json_pack("{s:s, s:s, s:o}", "name", fd.name,
                                      "dtype", wf_dtype_name(fd.dtype), "shape",
                                      shape_json(&fd.shape)));
    }
    records = json_array();
    problems = json_array();
    out = json_pack("{s:s, s:o, s:o, s:O, s:O}", "source", o->source, "files",
                    files_json(ds), "fields", fields, "records", records,
                    "problems", problems);
  } else {
    print_files(ds);
    printf("fields:\n");
    for (int i = 0; i < nf; i++) {
      wf_data_field fd;
      char shape[128];
      wf_dataset_field(ds, i, &fd);
      printf("  %-16s %-9s %s\n", fd.name, wf_dtype_name(fd.dtype),
             wf_shape_str(&fd.shape, shape, sizeof shape));
    }
  }
  for (long r = 0; r < want;) {
    int code = wf_iterator_next(it, f, st);
    if (code == WF_OUT_OF_RANGE)
      break;
    if (code == WF_DATA_LOSS) {
      if (problems)
        json_array_append_new(problems, json_string(wf_status_message(st)));
      else
        printf("bad record: %s\n", wf_status_message(st));
      continue;
    }
    if (code) {
      fprintf(stderr, "weft data head: %s\n", wf_status_message(st));
      rc = 1;
      break;
    }
    if (records) {
      json_t *rec = json_object();
      for (int i = 0; rec && i < nf; i++) {
        wf_data_field fd;
        wf_dataset_field(ds, i, &fd);
        json_object_set_new(rec, fd.name, values_json(f[i]));
      }
      json_array_append_new(records, rec);
    } else {
      printf("record %ld:", r);
      for (int i = 0; i < nf; i++) {
        wf_data_field fd;
        wf_dataset_field(ds, i, &fd);
        printf(" %s=", fd.name);
        print_values(f[i]);
      }
      printf("\n");
    }
    for (int i = 0; i < nf; i++)
      wf_tensor_release(f[i]);
    r++;
  }
  if (out) {
    json_decref(records);
    json_decref(problems);
    if (rc)
      json_decref(out);
    else
      rc = weft_emit_json(out);
  }
  wf_iterator_free(it);
  free(f);
  wf_dataset_release(ds);
  return rc;
}

static int data_count(wf_runtime *rt, const opts *o, const data_options *d,
                      wf_status *st) {
  wf_dataset *ds =
      wf_dataset_from_files(rt, o->source, o->format, d->items, d->n, st);
  if (!ds) {
    fprintf(stderr, "weft data count: %s\n", wf_status_message(st));
    return 1;
  }
  int n = wf_dataset_num_files(ds), rc = 0;
  int64_t total = 0;
  json_t *files = o->json ? json_array() : NULL;
  for (int i = 0; i < n && !rc; i++) {
    const char *reader;
    const char *path = wf_dataset_file(ds, i, &reader);
    wf_dataset *one =
        wf_dataset_from_files(rt, path, reader, d->items, d->n, st);
    int64_t count = 0;
    if (!one || wf_dataset_count(one, &count, st)) {
      fprintf(stderr, "weft data count: %s\n", wf_status_message(st));
      rc = 1;
    } else if (files) {
      json_array_append_new(files,
                            json_pack("{s:s, s:s, s:I}", "path", path, "reader",
                                      reader, "records", (json_int_t)count));
    } else {
      printf("%s: %" PRId64 " record%s\n", path, count, count == 1 ? "" : "s");
    }
    total += count;
    wf_dataset_release(one);
  }
  if (!rc && files)
    rc =
        weft_emit_json(json_pack("{s:s, s:O, s:I}", "source", o->source,
                                 "files", files, "records", (json_int_t)total));
  else if (!rc)
    printf("total: %" PRId64 " record%s in %d file%s\n", total,
           total == 1 ? "" : "s", n, n == 1 ? "" : "s");
  json_decref(files);
  wf_dataset_release(ds);
  return rc;
}

/* Reads every record of path; reports and counts each problem. */
static void validate_file(wf_runtime *rt, const opts *o, const data_options *d,
                          const char *path, int64_t *records, int64_t *problems,
                          json_t *files, wf_status *st) {
  json_t *list = files ? json_array() : NULL;
  const char *reader = NULL;
  int64_t n = 0, bad = 0;
  wf_dataset *ds =
      wf_dataset_from_files(rt, path, o->format, d->items, d->n, st);
  wf_iterator *it = ds ? wf_iterator_new(ds, NULL, st) : NULL;
  int nf = ds ? wf_dataset_num_fields(ds) : 0;
  wf_tensor **f = calloc((size_t)(nf > 0 ? nf : 1), sizeof *f);
  if (ds)
    wf_dataset_file(ds, 0, &reader);
  if (!it || !f) {
    bad++;
    if (list)
      json_array_append_new(
          list, json_string(f ? wf_status_message(st) : "out of memory"));
    else
      printf("%s\n", f ? wf_status_message(st) : "out of memory");
  }
  for (int code = WF_OK; it && f;) {
    code = wf_iterator_next(it, f, st);
    if (code == WF_OUT_OF_RANGE)
      break;
    if (code == WF_OK) {
      n++;
      for (int i = 0; i < nf; i++)
        wf_tensor_release(f[i]);
      continue;
    }
    /* A bad record is reported and passed over; anything else ends the
     * file. */
    bad++;
    if (list)
      json_array_append_new(list, json_string(wf_status_message(st)));
    else
      printf("%s\n", wf_status_message(st));
    if (code != WF_DATA_LOSS)
      break;
  }
  if (files)
    json_array_append_new(
        files, json_pack("{s:s, s:o, s:I, s:o}", "path", path, "reader",
                         reader ? json_string(reader) : json_null(), "records",
                         (json_int_t)n, "problems", list));
  else if (bad)
    printf("%s: %" PRId64 " record%s, %" PRId64 " problem%s\n", path, n,
           n == 1 ? "" : "s", bad, bad == 1 ? "" : "s");
  else
    printf("%s: %" PRId64 " record%s, ok\n", path, n, n == 1 ? "" : "s");
  *records += n;
  *problems += bad;
  free(f);
  wf_iterator_free(it);
  wf_dataset_release(ds);
}

static int data_validate(wf_runtime *rt, const opts *o, const data_options *d,
                         wf_status *st) {
  size_t npaths;
  int64_t records = 0, problems = 0;
  char **paths = expand_source(o->source, &npaths);
  if (!paths) {
    fprintf(stderr, "weft data validate: %s: no such file%s\n", o->source,
            strpbrk(o->source, "*?[") ? " matches this pattern" : "");
    return 1;
  }
  json_t *files = o->json ? json_array() : NULL;
  for (size_t i = 0; i < npaths; i++) {
    validate_file(rt, o, d, paths[i], &records, &problems, files, st);
    free(paths[i]);
  }
  free(paths);
  int nfiles = (int)npaths;
  if (files) {
    if (weft_emit_json(json_pack("{s:s, s:o, s:I, s:I, s:b}", "source",
                                 o->source, "files", files, "records",
                                 (json_int_t)records, "problems",
                                 (json_int_t)problems, "ok", problems == 0)))
      return 1;
  } else {
    printf("checked %" PRId64 " record%s in %d file%s: %" PRId64 " problem%s\n",
           records, records == 1 ? "" : "s", nfiles, nfiles == 1 ? "" : "s",
           problems, problems == 1 ? "" : "s");
  }
  return problems ? 1 : 0;
}

static int cmd_data(wf_runtime *rt, const opts *o) {
  data_options d;
  wf_status *st = wf_status_new();
  int rc = 1;
  if (!st) {
    fprintf(stderr, "weft data: out of memory\n");
    return 1;
  }
  if (data_options_parse(o, &d) == 0) {
    if (strcmp(o->action, "head") == 0)
      rc = data_head(rt, o, &d, st);
    else if (strcmp(o->action, "count") == 0)
      rc = data_count(rt, o, &d, st);
    else
      rc = data_validate(rt, o, &d, st);
  }
  data_options_free(&d);
  wf_status_free(st);
  return rc;
}

const weft_inspect_command weft_data_command = {
    "data", cmd_data, 1,
    "look into data files: schema, records, counts, checks",
    "usage: weft data head SOURCE [-n N] [DATA OPTIONS]\n"
    "       weft data count SOURCE [DATA OPTIONS]\n"
    "       weft data validate SOURCE [DATA OPTIONS]\n\n"
    "SOURCE is a file or a glob pattern (quote it); each file is read by\n"
    "the reader plugin its name's suffix selects, or the one --format\n"
    "names.\n\n"
    "  head      prints the files, the record schema and the first N\n"
    "            records (default 10); long fields show their first values\n"
    "  count     prints the number of records of each file and in all\n"
    "  validate  reads every record of every file and reports each problem\n"
    "            with its file and offset, line or record; exits 1 if\n"
    "            there was any (a bad record does not stop it)\n\n"
    "Data options:\n"
    "  -n N                   records to print (head)\n"
    "  --format F             the reader, by name or by one of its suffixes\n"
    "  --option KEY=VALUE     a reader option (repeatable); VALUE is read as\n"
    "                         an int, a float, true/false, or else a string;\n"
    "                         KEY:TYPE=VALUE forces TYPE (int, float, bool,\n"
    "                         string, dtype, or list(int), list(float),\n"
    "                         list(string) with comma-separated items)\n"
    "  --json                 machine-readable output\n"};
