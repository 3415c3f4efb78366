/* core/data/dataset.c — dataset descriptions: the file source (glob expansion,
 * choosing a reader by name or suffix, the record schema), every stage's
 * checks and element schema, fingerprints for saved positions, counting.
 *
 * Nothing here reads records for iteration: iterators build their stages
 * from these descriptions (core/data/iterator.c). */
#include <config.h>

#include <glob.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "base/alloc.h"
#include "graph/attr.h"
#include "data/dataset.h"
#include "graph/graph_internal.h"
#include "plugin/runtime_internal.h"
#include "base/status_internal.h"

/* Bounds that keep a broken reader from making us allocate absurdly. */
#define MAX_FIELDS 1024
/* A prefetch queue is allocated whole: its size is bounded. */
#define MAX_PREFETCH 65536

/* ---- fingerprints ------------------------------------------------------------- */

static uint64_t fnv(uint64_t h, const void *p, size_t n) {
  const unsigned char *b = p;
  for (size_t i = 0; i < n; i++) {
    h ^= b[i];
    h *= 1099511628211ULL;
  }
  return h;
}

static uint64_t fnv_u64(uint64_t h, uint64_t v) { return fnv(h, &v, sizeof v); }

static uint64_t fnv_str(uint64_t h, const char *s) {
  return fnv(h, s, strlen(s) + 1);
}

/* The chain's fingerprint: this stage's kind and parameters over its
 * inputs'. Graph maps contribute their tensor names, not the graph. */
static void fingerprint(wf_dataset *ds) {
  uint64_t h = 1469598103934665603ULL;
  h = fnv_u64(h, (uint64_t)ds->kind);
  if (ds->input)
    h = fnv_u64(h, ds->input->fingerprint);
  if (ds->input2)
    h = fnv_u64(h, ds->input2->fingerprint);
  switch (ds->kind) {
  case WF__DS_FILES:
    for (int i = 0; i < ds->u.files.nfiles; i++) {
      h = fnv_str(h, ds->u.files.paths[i]);
      h = fnv_str(h, ds->u.files.readers[i]->def.name);
    }
    for (int i = 0; i < ds->u.files.nopts; i++) {
      h = fnv_str(h, ds->u.files.options[i].name);
      h = wf__attr_hash(&ds->u.files.options[i].value, h);
    }
    h = fnv_u64(h, (uint64_t)ds->u.files.cycle);
    h = fnv_u64(h, (uint64_t)ds->u.files.block);
    break;
  case WF__DS_SHARD:
    h = fnv_u64(h, (uint64_t)ds->u.shard.n);
    h = fnv_u64(h, (uint64_t)ds->u.shard.index);
    break;
  case WF__DS_SHUFFLE:
    h = fnv_u64(h, (uint64_t)ds->u.shuffle.size);
    h = fnv_u64(h, ds->u.shuffle.seed);
    break;
  case WF__DS_MAP:
    h = fnv_u64(h, (uint64_t)ds->u.map.kind);
    h = fnv_u64(h, (uint64_t)ds->u.map.field);
    h = fnv(h, &ds->u.map.a, sizeof ds->u.map.a);
    h = fnv(h, &ds->u.map.b, sizeof ds->u.map.b);
    h = fnv_u64(h, (uint64_t)ds->u.map.dtype);
    h = fnv_u64(h, (uint64_t)ds->u.map.depth);
    for (int i = 0; i < ds->u.map.nin; i++) {
      h = fnv_str(h, wf_node_name(ds->u.map.inputs[i].node));
      h = fnv_u64(h, (uint64_t)ds->u.map.inputs[i].index);
      h = fnv_u64(h, (uint64_t)ds->u.map.in_fields[i]);
    }
    for (int i = 0; i < ds->u.map.nout; i++) {
      h = fnv_str(h, wf_node_name(ds->u.map.outputs[i].node));
      h = fnv_u64(h, (uint64_t)ds->u.map.outputs[i].index);
      h = fnv_u64(h, (uint64_t)ds->u.map.out_slot[i]);
    }
    break;
  case WF__DS_BATCH:
    h = fnv_u64(h, (uint64_t)ds->u.batch.size);
    h = fnv_u64(h, (uint64_t)ds->u.batch.drop);
    break;
  case WF__DS_PREFETCH:
    h = fnv_u64(h, (uint64_t)ds->u.prefetch.size);
    break;
  case WF__DS_REPEAT:
    h = fnv_u64(h, (uint64_t)ds->u.repeat.count);
    break;
  case WF__DS_ZIP:
  case WF__DS_CACHE:
    break;
  }
  for (int i = 0; i < ds->nfields; i++) {
    h = fnv_str(h, ds->fields[i].name);
    h = fnv_u64(h, (uint64_t)ds->fields[i].dtype);
  }
  ds->fingerprint = h;
}

/* ---- life --------------------------------------------------------------------- */

static void fields_free(wf__field *f, int n) {
  for (int i = 0; f && i < n; i++)
    wf__free(f[i].name);
  wf__free(f);
}

/* A copy of n fields, or NULL when out of memory. */
static wf__field *fields_copy(const wf__field *src, int n) {
  wf__field *f = wf__calloc((size_t)(n > 0 ? n : 1), sizeof *f);
  if (!f)
    return NULL;
  for (int i = 0; i < n; i++) {
    f[i] = src[i];
    f[i].name = wf__strdup(src[i].name);
    if (!f[i].name) {
      fields_free(f, i);
      return NULL;
    }
  }
  return f;
}

static void ds_free(wf_dataset *ds) {
  switch (ds->kind) {
  case WF__DS_FILES:
    for (int i = 0; i < ds->u.files.nfiles; i++)
      wf__free(ds->u.files.paths ? ds->u.files.paths[i] : NULL);
    wf__free(ds->u.files.paths);
    wf__free((void *)ds->u.files.readers);
    for (int i = 0; i < ds->u.files.nopts; i++) {
      wf__free((char *)ds->u.files.options[i].name);
      wf__attr_clear(&ds->u.files.options[i].value);
    }
    wf__free(ds->u.files.options);
    break;
  case WF__DS_MAP:
    wf__free(ds->u.map.inputs);
    wf__free(ds->u.map.in_fields);
    wf__free(ds->u.map.outputs);
    wf__free(ds->u.map.out_slot);
    break;
  default:
    break;
  }
  fields_free(ds->fields, ds->nfields);
  wf_dataset_release(ds->input);
  wf_dataset_release(ds->input2);
  wf__free(ds);
}

wf_dataset *wf_dataset_retain(wf_dataset *ds) {
  atomic_fetch_add(&ds->refs, 1);
  return ds;
}

void wf_dataset_release(wf_dataset *ds) {
  if (ds && atomic_fetch_sub(&ds->refs, 1) == 1)
    ds_free(ds);
}

/* A new stage over `in` (whose reference it takes over) with in's fields
 * copied; NULL with st set when out of memory (in released). */
static wf_dataset *stage_new(wf_dataset *in, wf__ds_kind kind,
                             const char *what, wf_status *st) {
  wf_dataset *ds = wf__calloc(1, sizeof *ds);
  if (!ds) {
    wf_dataset_release(in);
    wf_status_set(st, WF_RESOURCE_EXHAUSTED, "dataset %s: out of memory",
                  what);
    return NULL;
  }
  atomic_init(&ds->refs, 1);
  ds->kind = kind;
  ds->rt = in->rt;
  ds->input = in;
  ds->forever = in->forever;
  ds->nfields = in->nfields;
  ds->fields = fields_copy(in->fields, in->nfields);
  if (!ds->fields) {
    ds->nfields = 0;
    ds_free(ds);
    wf_status_set(st, WF_RESOURCE_EXHAUSTED, "dataset %s: out of memory",
                  what);
    return NULL;
  }
  return ds;
}

/* Finishes a stage: computes its fingerprint and returns it. */
static wf_dataset *stage_done(wf_dataset *ds) {
  fingerprint(ds);
  return ds;
}

/* Fails a stage under construction: frees it (and its input) and returns
 * NULL; st is already set. */
static wf_dataset *stage_fail(wf_dataset *ds) {
  if (ds)
    ds_free(ds);
  return NULL;
}

static int find_field(const wf_dataset *ds, const char *name) {
  for (int i = 0; name && i < ds->nfields; i++)
    if (strcmp(ds->fields[i].name, name) == 0)
      return i;
  return -1;
}

/* Appends the field names of ds ("'a', 'b'") to buf, for messages. */
static const char *field_list(const wf_dataset *ds, char *buf, size_t len) {
  size_t used = 0;
  buf[0] = '\0';
  for (int i = 0; i < ds->nfields; i++) {
    int w = snprintf(buf + used, len - used, "%s'%s'", i ? ", " : "",
                     ds->fields[i].name);
    if (w < 0 || (size_t)w >= len - used)
      break;
    used += (size_t)w;
  }
  return buf;
}

/* The field of `in` called name, or -1 with NOT_FOUND naming the stage and
 * the fields there are. */
static int need_field(const wf_dataset *in, const char *name,
                      const char *what, wf_status *st) {
  char list[512];
  int f = find_field(in, name);
  if (f < 0)
    wf_status_set(st, WF_NOT_FOUND,
                  "dataset %s: no field named '%s' (the fields are %s)", what,
                  name ? name : "(null)", field_list(in, list, sizeof list));
  return f;
}

/* ---- readers ----------------------------------------------------------------- */

/* Calls fn(suffix, len, arg) for each suffix in a reader's formats list
 * (comma-separated, spaces and a leading '.' ignored); stops when fn
 * returns non-zero and returns that. */
static int each_format(const wf__reader *r,
                       int (*fn)(const char *, size_t, void *), void *arg) {
  const char *p = r->def.formats;
  while (p && *p) {
    while (*p == ',' || *p == ' ')
      p++;
    if (*p == '.')
      p++;
    size_t n = strcspn(p, ", ");
    if (n > 0) {
      int rc = fn(p, n, arg);
      if (rc)
        return rc;
    }
    p += n;
  }
  return 0;
}

typedef struct match_arg {
  const char *name; /* file base name, or the format asked for */
  size_t len;
  size_t best;      /* length of the longest match so far (suffix mode) */
  int exact;        /* format mode: compare whole strings */
} match_arg;

static int match_one(const char *sfx, size_t n, void *arg) {
  match_arg *m = arg;
  if (m->exact)
    return n == m->len && memcmp(sfx, m->name, n) == 0 ? 1 : 0;
  /* The suffix ends the name and starts it or follows a separator, so "gz"
   * does not match "x.tgz". */
  if (n > m->len || memcmp(m->name + m->len - n, sfx, n) != 0)
    return 0;
  if (n < m->len) {
    char before = m->name[m->len - n - 1];
    if (before != '.' && before != '-' && before != '_')
      return 0;
  }
  if (n > m->best)
    m->best = n;
  return 0;
}

typedef struct fmt_buf {
  char *buf;
  size_t len, used;
  int first;
} fmt_buf;

static int append_format(const char *sfx, size_t n, void *arg) {
  fmt_buf *b = arg;
  int w = snprintf(b->buf + b->used, b->len - b->used, "%s%.*s",
                   b->first ? "" : ", ", (int)n, sfx);
  b->first = 0;
  if (w < 0 || (size_t)w >= b->len - b->used) {
    b->used = b->len - 1;
    return 1;
  }
  b->used += (size_t)w;
  return 0;
}

/* "idx (idx, idx.gz), csv (csv)" into buf, for messages; returns buf. */
static const char *known_formats(const wf_runtime *rt, char *buf,
                                 size_t len) {
  fmt_buf b = {buf, len, 0, 1};
  int n = wf__registry_reader_count(rt->reg);
  buf[0] = '\0';
  for (int i = 0; i < n && b.used + 1 < len; i++) {
    const wf__reader *r = wf__registry_reader_at(rt->reg, i);
    int w = snprintf(buf + b.used, len - b.used, "%s%s (", i ? ", " : "",
                     r->def.name);
    if (w < 0 || (size_t)w >= len - b.used)
      break;
    b.used += (size_t)w;
    b.first = 1;
    if (each_format(r, append_format, &b))
      break;
    w = snprintf(buf + b.used, len - b.used, ")");
    if (w < 0 || (size_t)w >= len - b.used)
      break;
    b.used += (size_t)w;
  }
  return buf[0] ? buf : "none loaded";
}

const wf__reader *wf__reader_for(const wf_runtime *rt, const char *path,
                                 const char *format, wf_status *st) {
  int n = wf__registry_reader_count(rt->reg);
  const wf__reader *best = NULL, *tie = NULL;
  size_t best_len = 0;
  char known[512];

  if (format) {
    for (int i = 0; i < n; i++) {
      const wf__reader *r = wf__registry_reader_at(rt->reg, i);
      if (strcmp(r->def.name, format) == 0)
        return r;
    }
    match_arg m = {format, strlen(format), 0, 1};
    for (int i = 0; i < n; i++) {
      const wf__reader *r = wf__registry_reader_at(rt->reg, i);
      if (each_format(r, match_one, &m)) {
        if (best) {
          wf_status_set(st, WF_INVALID_ARGUMENT,
                        "format '%s' is declared by readers '%s' (plugin "
                        "'%s') and '%s' (plugin '%s'); name the reader",
                        format, best->def.name, best->plugin, r->def.name,
                        r->plugin);
          return NULL;
        }
        best = r;
      }
    }
    if (best)
      return best;
    wf_status_set(st, WF_NOT_FOUND,
                  "%s: no reader is named '%s' or declares it as a format "
                  "(readers: %s)",
                  path, format, known_formats(rt, known, sizeof known));
    return NULL;
  }

  const char *base = strrchr(path, '/');
  base = base ? base + 1 : path;
  for (int i = 0; i < n; i++) {
    const wf__reader *r = wf__registry_reader_at(rt->reg, i);
    match_arg m = {base, strlen(base), 0, 0};
    each_format(r, match_one, &m);
    if (m.best == 0)
      continue;
    if (m.best > best_len) {
      best = r;
      best_len = m.best;
      tie = NULL;
    } else if (m.best == best_len) {
      tie = r;
    }
  }
  if (best && tie) {
    wf_status_set(st, WF_INVALID_ARGUMENT,
                  "%s: readers '%s' (plugin '%s') and '%s' (plugin '%s') "
                  "both handle this file name; choose one with a format",
                  path, best->def.name, best->plugin, tie->def.name,
                  tie->plugin);
    return NULL;
  }
  if (best)
    return best;
  wf_status_set(st, WF_NOT_FOUND,
                "%s: no reader handles this file name (readers: %s); name a "
                "format",
                path, known_formats(rt, known, sizeof known));
  return NULL;
}

int wf__reader_error(const wf__reader *r, const char *path, int rc,
                     const wf_status *rst, wf_status *st) {
  int code = rc < 0 ? -rc : WF_INTERNAL;
  const char *msg = wf_status_message(rst);
  if (code <= WF_OK || code > WF_UNAUTHENTICATED)
    code = WF_UNKNOWN;
  if (!msg || !*msg)
    wf_status_set(st, (wf_code)code,
                  "%s: reader '%s' failed without a message", path,
                  r->def.name);
  else if (strstr(msg, path))
    wf_status_set(st, (wf_code)code, "%s", msg);
  else
    wf_status_set(st, (wf_code)code, "%s: %s", path, msg);
  return -code;
}

int wf__reader_open(const wf__reader *r, const char *path,
                    const wf_attr_item *options, int nopts, void **rd,
                    wf_status *st) {
  const wf_reader_def *d = &r->def;
  const char *missing = !d->open         ? "open"
                        : !d->num_fields ? "num_fields"
                        : !d->field      ? "field"
                        : !d->next       ? "next"
                        : !d->tell       ? "tell"
                        : !d->seek       ? "seek"
                        : !d->close      ? "close"
                                         : NULL;
  wf_status rst = {WF_OK, NULL};
  *rd = NULL;
  if (missing)
    return -wf_status_set(st, WF_FAILED_PRECONDITION,
                          "%s: reader '%s' of plugin '%s' lacks its %s "
                          "function",
                          path, d->name, r->plugin, missing);
  int rc = d->open(path, options, nopts, rd, &rst);
  if (rc || !*rd) {
    if (!rc)
      wf_status_set(&rst, WF_INTERNAL, "open returned no reader state");
    rc = wf__reader_error(r, path, rc > 0 ? -rc : (rc ? rc : -WF_INTERNAL),
                          &rst, st);
    if (*rd)
      d->close(*rd);
    *rd = NULL;
  }
  wf_status_reset(&rst);
  return rc;
}

/* Reads the record schema of an open reader into fields. */
static int read_schema(const wf__reader *r, void *rd, const char *path,
                       wf__field **out, int *nout, wf_status *st) {
  int32_t n = r->def.num_fields(rd);
  wf__field *f = NULL;
  if (n < 1 || n > MAX_FIELDS)
    return wf_status_set(st, WF_INTERNAL,
                         "%s: reader '%s' reports %d fields (1 to %d "
                         "expected)",
                         path, r->def.name, (int)n, MAX_FIELDS);
  f = wf__calloc((size_t)n, sizeof *f);
  if (!f)
    return wf_status_set(st, WF_RESOURCE_EXHAUSTED,
                         "%s: out of memory reading the schema", path);
  for (int32_t i = 0; i < n; i++) {
    wf_reader_field rf;
    memset(&rf, 0, sizeof rf);
    rf.struct_size = (uint32_t)sizeof rf;
    rf.abi_major = WF_ABI_MAJOR;
    rf.abi_minor = WF_ABI_MINOR;
    rf.shape.rank = WF_UNKNOWN_RANK;
    r->def.field(rd, i, &rf);
    rf.name[sizeof rf.name - 1] = '\0';
    if (!rf.name[0] || rf.dtype <= WF_DTYPE_INVALID ||
        rf.dtype >= WF_DTYPE_COUNT || rf.dtype == WF_RESOURCE ||
        rf.shape.rank < WF_UNKNOWN_RANK || rf.shape.rank > WF_MAX_RANK) {
      wf_status_set(st, WF_INTERNAL,
                    "%s: reader '%s' describes field %d badly (name '%s', "
                    "dtype %d, rank %d)",
                    path, r->def.name, (int)i, rf.name, (int)rf.dtype,
                    (int)rf.shape.rank);
      goto fail;
    }
    for (int32_t j = 0; j < i; j++)
      if (strcmp(f[j].name, rf.name) == 0) {
        wf_status_set(st, WF_INTERNAL,
                      "%s: reader '%s' names two fields '%s'", path,
                      r->def.name, rf.name);
        goto fail;
      }
    f[i].name = wf__strdup(rf.name);
    f[i].dtype = (wf_dtype)rf.dtype;
    f[i].shape = rf.shape;
    if (!f[i].name) {
      wf_status_set(st, WF_RESOURCE_EXHAUSTED,
                    "%s: out of memory reading the schema", path);
      goto fail;
    }
  }
  *out = f;
  *nout = n;
  return WF_OK;

fail:
  fields_free(f, n);
  return wf_status_code(st);
}

/* ---- the file source ---------------------------------------------------------- */

/* The files pattern names, sorted; a path that exists is taken as is. */
static int expand(const char *pattern, char ***paths, int *n, wf_status *st) {
  struct stat sb;
  glob_t g;
  *paths = NULL;
  *n = 0;
  if (stat(pattern, &sb) == 0) {
    char **p = wf__calloc(1, sizeof *p);
    if (!p || !(p[0] = wf__strdup(pattern))) {
      wf__free(p);
      return wf_status_set(st, WF_RESOURCE_EXHAUSTED,
                           "%s: out of memory", pattern);
    }
    *paths = p;
    *n = 1;
    return WF_OK;
  }
  memset(&g, 0, sizeof g);
  int rc = glob(pattern, 0, NULL, &g);
  if (rc == GLOB_NOMATCH || (rc == 0 && g.gl_pathc == 0)) {
    globfree(&g);
    return wf_status_set(st, WF_NOT_FOUND, "%s: no such file%s", pattern,
                         strpbrk(pattern, "*?[") ? " matches this pattern"
                                                 : "");
  }
  if (rc != 0) {
    globfree(&g);
    return wf_status_set(st, rc == GLOB_NOSPACE ? WF_RESOURCE_EXHAUSTED
                                                : WF_UNKNOWN,
                         "%s: expanding the pattern failed", pattern);
  }
  if (g.gl_pathc > (size_t)INT32_MAX) {
    globfree(&g);
    return wf_status_set(st, WF_INVALID_ARGUMENT,
                         "%s: the pattern matches too many files", pattern);
  }
  char **p = wf__calloc(g.gl_pathc, sizeof *p);
  if (!p)
    goto oom;
  for (size_t i = 0; i < g.gl_pathc; i++) {
    p[i] = wf__strdup(g.gl_pathv[i]);
    if (!p[i]) {
      for (size_t j = 0; j < i; j++)
        wf__free(p[j]);
      wf__free(p);
      goto oom;
    }
  }
  *paths = p;
  *n = (int)g.gl_pathc;
  globfree(&g);
  return WF_OK;

oom:
  globfree(&g);
  return wf_status_set(st, WF_RESOURCE_EXHAUSTED, "%s: out of memory",
                       pattern);
}

wf_dataset *wf_dataset_from_files(wf_runtime *rt, const char *pattern,
                                  const char *format,
                                  const wf_attr_item *options, int noptions,
                                  wf_status *st) {
  wf_dataset *ds = NULL;
  void *rd = NULL;

  if (!rt || !pattern || !*pattern || noptions < 0 ||
      (noptions > 0 && !options)) {
    wf_status_set(st, WF_INVALID_ARGUMENT,
                  "dataset from files: %s",
                  !rt ? "no runtime" : (!pattern || !*pattern)
                                           ? "no file name or pattern"
                                           : "bad options");
    return NULL;
  }
  ds = wf__calloc(1, sizeof *ds);
  if (!ds)
    goto oom;
  atomic_init(&ds->refs, 1);
  ds->kind = WF__DS_FILES;
  ds->rt = rt;
  ds->u.files.cycle = 1;
  ds->u.files.block = 1;
  if (expand(pattern, &ds->u.files.paths, &ds->u.files.nfiles, st))
    goto fail;
  ds->u.files.readers =
      wf__calloc((size_t)ds->u.files.nfiles, sizeof *ds->u.files.readers);
  if (!ds->u.files.readers)
    goto oom;
  for (int i = 0; i < ds->u.files.nfiles; i++) {
    ds->u.files.readers[i] =
        wf__reader_for(rt, ds->u.files.paths[i], format, st);
    if (!ds->u.files.readers[i])
      goto fail;
  }
  if (noptions > 0) {
    ds->u.files.options = wf__calloc((size_t)noptions, sizeof(wf_attr_item));
    if (!ds->u.files.options)
      goto oom;
    for (int i = 0; i < noptions; i++) {
      if (!options[i].name || !*options[i].name) {
        wf_status_set(st, WF_INVALID_ARGUMENT,
                      "dataset from files %s: reader option %d has no name",
                      pattern, i);
        goto fail;
      }
      wf_attr_item *o = &ds->u.files.options[ds->u.files.nopts];
      o->name = wf__strdup(options[i].name);
      if (!o->name)
        goto oom;
      ds->u.files.nopts++;
      if (wf__attr_copy(&o->value, &options[i].value))
        goto oom;
    }
  }

  /* The schema comes from the first file. */
  const wf__reader *r0 = ds->u.files.readers[0];
  const char *p0 = ds->u.files.paths[0];
  if (wf__reader_open(r0, p0, ds->u.files.options, ds->u.files.nopts, &rd,
                      st))
    goto fail;
  if (read_schema(r0, rd, p0, &ds->fields, &ds->nfields, st))
    goto fail;
  r0->def.close(rd);
  rd = NULL;
  fingerprint(ds);
  return ds;

oom:
  wf_status_set(st, WF_RESOURCE_EXHAUSTED, "dataset from files %s: out of "
                "memory", pattern);
fail:
  if (rd)
    ds->u.files.readers[0]->def.close(rd);
  if (ds)
    ds_free(ds);
  return NULL;
}

/* ---- stages -------------------------------------------------------------------- */

wf_dataset *wf_dataset_interleave(wf_dataset *in, int cycle_length,
                                  int block_length, wf_status *st) {
  if (!in)
    return NULL;
  if (in->kind != WF__DS_FILES || in->u.files.cycle != 1 ||
      cycle_length < 1 || block_length < 1) {
    wf_status_set(st, WF_INVALID_ARGUMENT,
                  "dataset interleave: %s",
                  in->kind != WF__DS_FILES
                      ? "applies to a file source (wf_dataset_from_files) "
                        "only"
                  : in->u.files.cycle != 1
                      ? "the file source is interleaved already"
                      : "cycle_length and block_length must be at least 1");
    wf_dataset_release(in);
    return NULL;
  }
  /* A copy of the source with the cycle set: the description stays
   * immutable for whoever else holds `in`. */
  wf_dataset *ds = wf__calloc(1, sizeof *ds);
  if (!ds)
    goto oom;
  atomic_init(&ds->refs, 1);
  ds->kind = WF__DS_FILES;
  ds->rt = in->rt;
  ds->u.files.cycle = cycle_length;
  ds->u.files.block = block_length;
  int nf = in->u.files.nfiles, no = in->u.files.nopts;
  ds->u.files.paths = wf__calloc((size_t)nf, sizeof(char *));
  ds->u.files.readers = wf__calloc((size_t)nf, sizeof(wf__reader *));
  ds->u.files.options = no ? wf__calloc((size_t)no, sizeof(wf_attr_item))
                           : NULL;
  ds->fields = fields_copy(in->fields, in->nfields);
  if (ds->fields)
    ds->nfields = in->nfields;
  if (!ds->u.files.paths || !ds->u.files.readers ||
      (no && !ds->u.files.options) || !ds->fields)
    goto oom;
  for (int i = 0; i < nf; i++) {
    ds->u.files.paths[i] = wf__strdup(in->u.files.paths[i]);
    ds->u.files.readers[i] = in->u.files.readers[i];
    ds->u.files.nfiles++;
    if (!ds->u.files.paths[i])
      goto oom;
  }
  for (int i = 0; i < no; i++) {
    wf_attr_item *o = &ds->u.files.options[i];
    o->name = wf__strdup(in->u.files.options[i].name);
    if (!o->name)
      goto oom;
    ds->u.files.nopts++;
    if (wf__attr_copy(&o->value, &in->u.files.options[i].value))
      goto oom;
  }
  wf_dataset_release(in);
  return stage_done(ds);

oom:
  wf_dataset_release(in);
  wf_status_set(st, WF_RESOURCE_EXHAUSTED,
                "dataset interleave: out of memory");
  return stage_fail(ds);
}

wf_dataset *wf_dataset_zip(wf_dataset *a, wf_dataset *b, wf_status *st) {
  if (!a || !b) {
    wf_dataset_release(a);
    wf_dataset_release(b);
    return NULL;
  }
  if (a->rt != b->rt) {
    wf_status_set(st, WF_INVALID_ARGUMENT,
                  "dataset zip: the two inputs come from different runtimes");
    wf_dataset_release(a);
    wf_dataset_release(b);
    return NULL;
  }
  for (int i = 0; i < b->nfields; i++)
    if (find_field(a, b->fields[i].name) >= 0) {
      wf_status_set(st, WF_INVALID_ARGUMENT,
                    "dataset zip: both inputs have a field named '%s'",
                    b->fields[i].name);
      wf_dataset_release(a);
      wf_dataset_release(b);
      return NULL;
    }
  wf_dataset *ds = stage_new(a, WF__DS_ZIP, "zip", st);
  if (!ds) {
    wf_dataset_release(b);
    return NULL;
  }
  ds->input2 = b;
  ds->forever = a->forever && b->forever;
  wf__field *f = wf__realloc(ds->fields, (size_t)(a->nfields + b->nfields) *
                                             sizeof *f);
  if (!f) {
    wf_status_set(st, WF_RESOURCE_EXHAUSTED, "dataset zip: out of memory");
    return stage_fail(ds);
  }
  ds->fields = f;
  for (int i = 0; i < b->nfields; i++) {
    f[ds->nfields] = b->fields[i];
    f[ds->nfields].name = wf__strdup(b->fields[i].name);
    if (!f[ds->nfields].name) {
      wf_status_set(st, WF_RESOURCE_EXHAUSTED, "dataset zip: out of memory");
      return stage_fail(ds);
    }
    ds->nfields++;
  }
  return stage_done(ds);
}

wf_dataset *wf_dataset_shard(wf_dataset *in, int64_t num_shards,
                             int64_t index, wf_status *st) {
  if (!in)
    return NULL;
  if (num_shards < 1 || index < 0 || index >= num_shards) {
    wf_status_set(st, WF_INVALID_ARGUMENT,
                  "dataset shard: index %lld of %lld shards (need 0 <= "
                  "index < num_shards)",
                  (long long)index, (long long)num_shards);
    wf_dataset_release(in);
    return NULL;
  }
  wf_dataset *ds = stage_new(in, WF__DS_SHARD, "shard", st);
  if (!ds)
    return NULL;
  ds->u.shard.n = num_shards;
  ds->u.shard.index = index;
  return stage_done(ds);
}

wf_dataset *wf_dataset_shuffle(wf_dataset *in, int64_t buffer_size,
                               uint64_t seed, wf_status *st) {
  if (!in)
    return NULL;
  if (buffer_size < 1) {
    wf_status_set(st, WF_INVALID_ARGUMENT,
                  "dataset shuffle: buffer size %lld (must be at least 1)",
                  (long long)buffer_size);
    wf_dataset_release(in);
    return NULL;
  }
  wf_dataset *ds = stage_new(in, WF__DS_SHUFFLE, "shuffle", st);
  if (!ds)
    return NULL;
  ds->u.shuffle.size = buffer_size;
  ds->u.shuffle.seed = seed;
  return stage_done(ds);
}

/* A built-in map of `field` to a field of dtype out_dtype and shape
 * out_shape. */
static wf_dataset *map_new(wf_dataset *in, wf__map_kind kind, int field,
                           wf_dtype out_dtype, const wf_shape *out_shape,
                           const char *what, wf_status *st) {
  wf_dataset *ds = stage_new(in, WF__DS_MAP, what, st);
  if (!ds)
    return NULL;
  ds->u.map.kind = kind;
  ds->u.map.field = field;
  ds->fields[field].dtype = out_dtype;
  ds->fields[field].shape = *out_shape;
  return ds;
}

static int is_int_dtype(wf_dtype t) {
  return (WF_DTYPE_BIT(t) & WF_DTYPES_INT) != 0;
}

wf_dataset *wf_dataset_map_scale(wf_dataset *in, const char *field, double a,
                                 double b, wf_status *st) {
  if (!in)
    return NULL;
  int f = need_field(in, field, "map scale", st);
  if (f >= 0 && !(WF_DTYPE_BIT(in->fields[f].dtype) & WF_DTYPES_NUMBER)) {
    wf_status_set(st, WF_INVALID_ARGUMENT,
                  "dataset map scale: field '%s' is %s, not a number type",
                  field, wf_dtype_name(in->fields[f].dtype));
    f = -1;
  }
  if (f < 0) {
    wf_dataset_release(in);
    return NULL;
  }
  wf_shape shape = in->fields[f].shape;
  wf_dataset *ds = map_new(in, WF__MAP_SCALE, f, WF_FLOAT32, &shape,
                           "map scale", st);
  if (!ds)
    return NULL;
  ds->u.map.a = a;
  ds->u.map.b = b;
  return stage_done(ds);
}

wf_dataset *wf_dataset_map_cast(wf_dataset *in, const char *field,
                                wf_dtype dtype, wf_status *st) {
  if (!in)
    return NULL;
  int f = need_field(in, field, "map cast", st);
  if (f >= 0 && !(WF_DTYPE_BIT(dtype) & WF_DTYPES_ALL)) {
    wf_status_set(st, WF_INVALID_ARGUMENT,
                  "dataset map cast: field '%s' cannot be cast to dtype %d",
                  field, (int)dtype);
    f = -1;
  }
  if (f < 0) {
    wf_dataset_release(in);
    return NULL;
  }
  wf_shape shape = in->fields[f].shape;
  wf_dataset *ds = map_new(in, WF__MAP_CAST, f, dtype, &shape, "map cast",
                           st);
  if (!ds)
    return NULL;
  ds->u.map.dtype = dtype;
  return stage_done(ds);
}

wf_dataset *wf_dataset_map_one_hot(wf_dataset *in, const char *field,
                                   int64_t depth, wf_status *st) {
  if (!in)
    return NULL;
  int f = need_field(in, field, "map one_hot", st);
  const wf__field *x = f >= 0 ? &in->fields[f] : NULL;
  if (x && !is_int_dtype(x->dtype)) {
    wf_status_set(st, WF_INVALID_ARGUMENT,
                  "dataset map one_hot: field '%s' is %s, not an integer "
                  "type",
                  field, wf_dtype_name(x->dtype));
    x = NULL;
  } else if (x && depth < 1) {
    wf_status_set(st, WF_INVALID_ARGUMENT,
                  "dataset map one_hot: depth %lld (must be at least 1)",
                  (long long)depth);
    x = NULL;
  } else if (x && x->shape.rank >= WF_MAX_RANK) {
    wf_status_set(st, WF_INVALID_ARGUMENT,
                  "dataset map one_hot: field '%s' has rank %d; one more "
                  "dimension would exceed %d",
                  field, (int)x->shape.rank, WF_MAX_RANK);
    x = NULL;
  }
  if (!x) {
    wf_dataset_release(in);
    return NULL;
  }
  wf_shape shape = x->shape;
  if (shape.rank >= 0)
    shape.dims[shape.rank++] = depth;
  wf_dataset *ds = map_new(in, WF__MAP_ONE_HOT, f, WF_FLOAT32, &shape,
                           "map one_hot", st);
  if (!ds)
    return NULL;
  ds->u.map.depth = depth;
  return stage_done(ds);
}

wf_dataset *wf_dataset_map_graph(wf_dataset *in, wf_graph *g,
                                 const char *const *in_fields,
                                 const wf_output *inputs, int ninputs,
                                 const char *const *out_fields,
                                 const wf_output *outputs, int noutputs,
                                 wf_status *st) {
  char want[96], got[96];
  wf_dataset *ds = NULL;
  if (!in)
    return NULL;
  if (!g || ninputs < 0 || noutputs < 1 || (ninputs && (!in_fields || !inputs)) ||
      !out_fields || !outputs) {
    wf_status_set(st, WF_INVALID_ARGUMENT,
                  "dataset map graph: %s",
                  !g ? "no graph" : noutputs < 1 ? "no outputs"
                                                 : "missing names or tensors");
    wf_dataset_release(in);
    return NULL;
  }
  if (wf_graph_runtime(g) != in->rt) {
    wf_status_set(st, WF_INVALID_ARGUMENT,
                  "dataset map graph: the graph belongs to another runtime "
                  "than the dataset");
    wf_dataset_release(in);
    return NULL;
  }
  ds = stage_new(in, WF__DS_MAP, "map graph", st);
  if (!ds)
    return NULL;
  ds->u.map.kind = WF__MAP_GRAPH;
  ds->u.map.g = g;
  ds->u.map.field = -1;
  ds->u.map.inputs = wf__calloc((size_t)(ninputs + 1), sizeof(wf_output));
  ds->u.map.in_fields = wf__calloc((size_t)(ninputs + 1), sizeof(int));
  ds->u.map.outputs = wf__calloc((size_t)noutputs, sizeof(wf_output));
  ds->u.map.out_slot = wf__calloc((size_t)noutputs, sizeof(int));
  if (!ds->u.map.inputs || !ds->u.map.in_fields || !ds->u.map.outputs ||
      !ds->u.map.out_slot) {
    wf_status_set(st, WF_RESOURCE_EXHAUSTED,
                  "dataset map graph: out of memory");
    return stage_fail(ds);
  }
  for (int i = 0; i < ninputs; i++) {
    wf_output x = inputs[i];
    int f = need_field(in, in_fields[i], "map graph", st);
    if (f < 0)
      return stage_fail(ds);
    if (!x.node || wf_node_id(x.node) >= wf_graph_num_nodes(g) ||
        wf_graph_node(g, wf_node_id(x.node)) != x.node || x.index < 0 ||
        x.index >= wf_node_num_outputs(x.node)) {
      wf_status_set(st, WF_INVALID_ARGUMENT,
                    "dataset map graph: input %d (for field '%s') is not an "
                    "output of the graph",
                    i, in_fields[i]);
      return stage_fail(ds);
    }
    wf_shape xs;
    wf_node_output_shape(x.node, x.index, &xs);
    if (wf_node_output_dtype(x.node, x.index) != in->fields[f].dtype ||
        !wf_shape_compatible(&xs, &in->fields[f].shape)) {
      wf_status_set(st, WF_INVALID_ARGUMENT,
                    "dataset map graph: field '%s' is %s %s but input "
                    "'%s:%d' takes %s %s",
                    in_fields[i], wf_dtype_name(in->fields[f].dtype),
                    wf_shape_str(&in->fields[f].shape, got, sizeof got),
                    wf_node_name(x.node), (int)x.index,
                    wf_dtype_name(wf_node_output_dtype(x.node, x.index)),
                    wf_shape_str(&xs, want, sizeof want));
      return stage_fail(ds);
    }
    ds->u.map.inputs[i] = x;
    ds->u.map.in_fields[i] = f;
    ds->u.map.nin++;
  }
  for (int j = 0; j < noutputs; j++) {
    wf_output y = outputs[j];
    const char *name = out_fields[j];
    if (!name || !*name) {
      wf_status_set(st, WF_INVALID_ARGUMENT,
                    "dataset map graph: output %d has no field name", j);
      return stage_fail(ds);
    }
    for (int k = 0; k < j; k++)
      if (strcmp(out_fields[k], name) == 0) {
        wf_status_set(st, WF_INVALID_ARGUMENT,
                      "dataset map graph: two outputs are named '%s'", name);
        return stage_fail(ds);
      }
    if (!y.node || wf_node_id(y.node) >= wf_graph_num_nodes(g) ||
        wf_graph_node(g, wf_node_id(y.node)) != y.node || y.index < 0 ||
        y.index >= wf_node_num_outputs(y.node) ||
        wf_node_output_dtype(y.node, y.index) == WF_RESOURCE) {
      wf_status_set(st, WF_INVALID_ARGUMENT,
                    "dataset map graph: output %d (field '%s') is not a "
                    "data output of the graph",
                    j, name);
      return stage_fail(ds);
    }
    int slot = find_field(in, name);
    if (slot < 0) {
      wf__field *grown =
          wf__realloc(ds->fields, (size_t)(ds->nfields + 1) * sizeof *grown);
      if (!grown) {
        wf_status_set(st, WF_RESOURCE_EXHAUSTED,
                      "dataset map graph: out of memory");
        return stage_fail(ds);
      }
      ds->fields = grown;
      slot = ds->nfields;
      ds->fields[slot].name = wf__strdup(name);
      if (!ds->fields[slot].name) {
        wf_status_set(st, WF_RESOURCE_EXHAUSTED,
                      "dataset map graph: out of memory");
        return stage_fail(ds);
      }
      ds->nfields++;
    }
    ds->fields[slot].dtype = wf_node_output_dtype(y.node, y.index);
    wf_node_output_shape(y.node, y.index, &ds->fields[slot].shape);
    ds->u.map.outputs[j] = y;
    ds->u.map.out_slot[j] = slot;
    ds->u.map.nout++;
  }
  return stage_done(ds);
}

wf_dataset *wf_dataset_batch(wf_dataset *in, int64_t batch_size,
                             int drop_remainder, wf_status *st) {
  if (!in)
    return NULL;
  if (batch_size < 1) {
    wf_status_set(st, WF_INVALID_ARGUMENT,
                  "dataset batch: size %lld (must be at least 1)",
                  (long long)batch_size);
    wf_dataset_release(in);
    return NULL;
  }
  for (int i = 0; i < in->nfields; i++)
    if (in->fields[i].shape.rank >= WF_MAX_RANK) {
      wf_status_set(st, WF_INVALID_ARGUMENT,
                    "dataset batch: field '%s' has rank %d; a batch "
                    "dimension would exceed %d",
                    in->fields[i].name, (int)in->fields[i].shape.rank,
                    WF_MAX_RANK);
      wf_dataset_release(in);
      return NULL;
    }
  wf_dataset *ds = stage_new(in, WF__DS_BATCH, "batch", st);
  if (!ds)
    return NULL;
  ds->u.batch.size = batch_size;
  ds->u.batch.drop = drop_remainder != 0;
  for (int i = 0; i < ds->nfields; i++) {
    wf_shape *s = &ds->fields[i].shape;
    if (s->rank < 0)
      continue;
    memmove(&s->dims[1], &s->dims[0], (size_t)s->rank * sizeof s->dims[0]);
    s->dims[0] = ds->u.batch.drop ? batch_size : WF_UNKNOWN_DIM;
    s->rank++;
  }
  return stage_done(ds);
}

wf_dataset *wf_dataset_prefetch(wf_dataset *in, int buffer_size,
                                wf_status *st) {
  if (!in)
    return NULL;
  if (buffer_size < 1 || buffer_size > MAX_PREFETCH) {
    wf_status_set(st, WF_INVALID_ARGUMENT,
                  "dataset prefetch: buffer size %d (must be 1 to %d)",
                  buffer_size, MAX_PREFETCH);
    wf_dataset_release(in);
    return NULL;
  }
  wf_dataset *ds = stage_new(in, WF__DS_PREFETCH, "prefetch", st);
  if (!ds)
    return NULL;
  ds->u.prefetch.size = buffer_size;
  return stage_done(ds);
}

wf_dataset *wf_dataset_cache(wf_dataset *in, wf_status *st) {
  if (!in)
    return NULL;
  wf_dataset *ds = stage_new(in, WF__DS_CACHE, "cache", st);
  return ds ? stage_done(ds) : NULL;
}

wf_dataset *wf_dataset_repeat(wf_dataset *in, int64_t count, wf_status *st) {
  if (!in)
    return NULL;
  if (count < -1) {
    wf_status_set(st, WF_INVALID_ARGUMENT,
                  "dataset repeat: count %lld (-1 for forever, else >= 0)",
                  (long long)count);
    wf_dataset_release(in);
    return NULL;
  }
  wf_dataset *ds = stage_new(in, WF__DS_REPEAT, "repeat", st);
  if (!ds)
    return NULL;
  ds->u.repeat.count = count;
  if (count == -1)
    ds->forever = 1;
  return stage_done(ds);
}

/* ---- reading a description ------------------------------------------------------ */

int wf_dataset_num_fields(const wf_dataset *ds) { return ds->nfields; }

void wf_dataset_field(const wf_dataset *ds, int i, wf_data_field *out) {
  out->name = ds->fields[i].name;
  out->dtype = ds->fields[i].dtype;
  out->shape = ds->fields[i].shape;
}

int wf_dataset_find_field(const wf_dataset *ds, const char *name) {
  return find_field(ds, name);
}

int wf_dataset_num_files(const wf_dataset *ds) {
  return ds->kind == WF__DS_FILES ? ds->u.files.nfiles : 0;
}

const char *wf_dataset_file(const wf_dataset *ds, int i, const char **reader) {
  if (ds->kind != WF__DS_FILES || i < 0 || i >= ds->u.files.nfiles) {
    if (reader)
      *reader = NULL;
    return NULL;
  }
  if (reader)
    *reader = ds->u.files.readers[i]->def.name;
  return ds->u.files.paths[i];
}

/* ---- counting ----------------------------------------------------------------- */

/* Records of one file: the reader's count when it has one, else read. */
static int count_file(const wf_dataset *ds, int i, int64_t *n, wf_status *st) {
  const wf__reader *r = ds->u.files.readers[i];
  const char *path = ds->u.files.paths[i];
  wf_status rst = {WF_OK, NULL};
  wf_tensor **f = NULL;
  void *rd = NULL;
  int rc;

  *n = 0;
  rc = wf__reader_open(r, path, ds->u.files.options, ds->u.files.nopts, &rd,
                       st);
  if (rc)
    return -rc;
  if (r->def.count) {
    int64_t c = r->def.count(rd, &rst);
    if (c >= 0) {
      *n = c;
      goto out;
    }
    if (wf_status_code(&rst) != WF_OK) {
      rc = -wf__reader_error(r, path, -(int)wf_status_code(&rst), &rst, st);
      goto out;
    }
  }
  int32_t nf = r->def.num_fields(rd);
  f = wf__calloc((size_t)(nf > 0 ? nf : 1), sizeof *f);
  if (!f) {
    rc = wf_status_set(st, WF_RESOURCE_EXHAUSTED, "%s: out of memory", path);
    goto out;
  }
  for (;;) {
    int got = r->def.next(rd, f, &rst);
    if (got == WF_READER_RECORD) {
      wf__element_clear(f, nf);
      (*n)++;
    } else if (got == WF_READER_END) {
      break;
    } else if (got == -WF_DATA_LOSS) {
      wf_status_reset(&rst);
    } else {
      rc = -wf__reader_error(r, path, got < 0 ? got : -WF_INTERNAL, &rst, st);
      break;
    }
  }

out:
  wf__free(f);
  wf_status_reset(&rst);
  r->def.close(rd);
  return rc;
}

int wf_dataset_count(wf_dataset *ds, int64_t *count, wf_status *st) {
  *count = 0;
  if (ds->forever)
    return wf_status_set(st, WF_INVALID_ARGUMENT,
                         "dataset count: the dataset repeats forever");
  if (ds->kind == WF__DS_FILES) {
    for (int i = 0; i < ds->u.files.nfiles; i++) {
      int64_t n;
      int rc = count_file(ds, i, &n, st);
      if (rc)
        return rc;
      *count += n;
    }
    return WF_OK;
  }
  wf_iterator *it = wf_iterator_new(ds, NULL, st);
  if (!it)
    return wf_status_code(st);
  wf_tensor **f = wf__calloc((size_t)ds->nfields, sizeof *f);
  int rc;
  if (!f) {
    rc = wf_status_set(st, WF_RESOURCE_EXHAUSTED,
                       "dataset count: out of memory");
  } else {
    /* Bad records are passed over, not counted. */
    while ((rc = wf_iterator_next(it, f, st)) == WF_OK ||
           rc == WF_DATA_LOSS) {
      if (rc == WF_OK) {
        wf__element_clear(f, ds->nfields);
        (*count)++;
      }
    }
    if (rc == WF_OUT_OF_RANGE) {
      wf_status_reset(st);
      rc = WF_OK;
    }
  }
  wf__free(f);
  wf_iterator_free(it);
  return rc;
}
