/* plugins/readers/fixed/fixed.c — the fixed-record reader plugin (module
 * reader_fixed): binary files of equal-sized records after an optional
 * header, memory-mapped, with the record's fields (name, dtype, shape)
 * given as options. Fields are copied out of the mapping into new
 * tensors, converted from the file's byte order.
 *
 * It does not read compressed files, variable-length records, or headers
 * that describe the records (give the layout as options). */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <weft/plugin_aux.h>

typedef struct fixed_type {
  const char *name;
  int32_t dtype;
  int size;
} fixed_type;

static const fixed_type fixed_types[] = {
    {"float32", WF_FLOAT32, 4}, {"float64", WF_FLOAT64, 8},
    {"float16", WF_FLOAT16, 2}, {"bfloat16", WF_BFLOAT16, 2},
    {"int8", WF_INT8, 1},       {"uint8", WF_UINT8, 1},
    {"int32", WF_INT32, 4},     {"int64", WF_INT64, 8},
    {"bool", WF_BOOL, 1},
};
#define TYPE_NAMES                                                             \
  "float32, float64, float16, bfloat16, int8, uint8, int32, int64, bool"

typedef struct fixed_field {
  char name[64];
  const fixed_type *type;
  wf_shape shape;
  int64_t elems;
  uint64_t offset; /* within the record */
  uint64_t bytes;
} fixed_field;

enum { PARTIAL_ERROR, PARTIAL_REPORT };

typedef struct fixed_reader {
  char *path;
  int fd;
  unsigned char *map; /* the file, or NULL when it is empty */
  uint64_t size;
  fixed_field *fields;
  int nfields;
  uint64_t header, rec_bytes, count;
  uint64_t partial;  /* bytes of a trailing partial record (with "report") */
  int swap;          /* the file's byte order is not the host's */
  uint64_t next;     /* index of the next record */
  int partial_done;  /* the partial record was reported */
} fixed_reader;

/* ---- options ------------------------------------------------------------ */

#define OPTION_NAMES "fields, header_bytes, record_bytes, byte_order, partial"

static int opt_error(const wf_attr_item *it, const char *what,
                     wf_status *st) {
  wfx_host->status_set(st, WF_INVALID_ARGUMENT, "fixed reader: option '%s' %s",
                       it->name, what);
  return WF_INVALID_ARGUMENT;
}

/* A non-negative integer, given as an int or a decimal string. */
static int opt_size(const wf_attr_item *it, uint64_t *out, wf_status *st) {
  const wf_attr_value *v = &it->value;

  if (v->type == WF_ATTR_INT && v->u.i >= 0) {
    *out = (uint64_t)v->u.i;
    return 0;
  }
  if (v->type == WF_ATTR_STRING && v->u.s && *v->u.s >= '0' &&
      *v->u.s <= '9') {
    char *end;
    errno = 0;
    *out = strtoull(v->u.s, &end, 10);
    if (!*end && errno == 0)
      return 0;
  }
  return opt_error(it, "must be a non-negative integer", st);
}

/* Parses one field spec, "name:dtype" or "name:dtype:D1xD2x...", of
 * length len at s. */
static int parse_field(const char *s, size_t len, fixed_field *f,
                       wf_status *st) {
  const char *c1 = memchr(s, ':', len), *c2, *e = s + len, *p;
  size_t tlen;

  memset(f, 0, sizeof *f);
  if (!c1 || c1 == s || (size_t)(c1 - s) >= sizeof f->name)
    goto bad;
  memcpy(f->name, s, (size_t)(c1 - s));
  c2 = memchr(c1 + 1, ':', (size_t)(e - c1 - 1));
  tlen = (size_t)((c2 ? c2 : e) - c1 - 1);
  for (size_t i = 0; i < sizeof fixed_types / sizeof fixed_types[0]; i++)
    if (strlen(fixed_types[i].name) == tlen &&
        strncmp(fixed_types[i].name, c1 + 1, tlen) == 0)
      f->type = &fixed_types[i];
  if (!f->type) {
    wfx_host->status_set(st, WF_INVALID_ARGUMENT,
                         "fixed reader: field \"%.*s\": unknown dtype \"%.*s\" "
                         "(known: " TYPE_NAMES ")",
                         (int)len, s, (int)tlen, c1 + 1);
    return WF_INVALID_ARGUMENT;
  }
  f->elems = 1;
  for (p = c2 ? c2 + 1 : e; p < e;) {
    char *end;
    unsigned long long d;
    if (*p < '0' || *p > '9')
      goto bad;
    errno = 0;
    d = strtoull(p, &end, 10);
    if (end > e || (end < e && *end != 'x') || errno || d == 0 ||
        d > INT64_MAX || f->shape.rank == WF_MAX_RANK ||
        __builtin_mul_overflow(f->elems, (int64_t)d, &f->elems))
      goto bad;
    f->shape.dims[f->shape.rank++] = (int64_t)d;
    p = end < e ? end + 1 : e;
    if (end < e && p == e)
      goto bad; /* a trailing 'x' */
  }
  if (__builtin_mul_overflow((uint64_t)f->elems, (uint64_t)f->type->size,
                             &f->bytes))
    goto bad;
  return 0;

bad:
  wfx_host->status_set(
      st, WF_INVALID_ARGUMENT,
      "fixed reader: field \"%.*s\" is not name:dtype or "
      "name:dtype:D1xD2x... (a name of 1 to 63 bytes, up to %d "
      "dimensions, each at least 1)",
      (int)len, s, WF_MAX_RANK);
  return WF_INVALID_ARGUMENT;
}

/* The fields from option `it`: a list of specs, or one string of specs
 * separated by commas. */
static int opt_fields(fixed_reader *r, const wf_attr_item *it,
                      wf_status *st) {
  const wf_attr_value *v = &it->value;
  const char *one = NULL;
  int n;

  if (v->type == WF_ATTR_STRING && v->u.s) {
    one = v->u.s;
    n = 1;
    for (const char *p = one; *p; p++)
      n += *p == ',';
  } else if (v->type == (WF_ATTR_LIST | WF_ATTR_STRING) && v->u.strings &&
             v->count > 0 && v->count < INT32_MAX / 2) {
    n = (int)v->count;
  } else {
    return opt_error(it, "must be a string or a non-empty list of strings",
                     st);
  }
  wfx_host->free(r->fields);
  r->nfields = 0;
  if (!(r->fields = wfx_host->alloc((size_t)n * sizeof *r->fields, 0))) {
    wfx_host->status_set(st, WF_RESOURCE_EXHAUSTED,
                         "fixed reader: out of memory for %d fields", n);
    return WF_RESOURCE_EXHAUSTED;
  }
  for (int i = 0; i < n; i++) {
    const char *s = one;
    size_t len;
    if (one) {
      len = strcspn(one, ",");
      one += len + (one[len] == ',');
    } else {
      if (!(s = v->u.strings[i]))
        return opt_error(it, "holds a NULL string", st);
      len = strlen(s);
    }
    if (parse_field(s, len, &r->fields[i], st))
      return WF_INVALID_ARGUMENT;
    for (int k = 0; k < i; k++)
      if (strcmp(r->fields[k].name, r->fields[i].name) == 0) {
        wfx_host->status_set(st, WF_INVALID_ARGUMENT,
                             "fixed reader: two fields are named '%s'",
                             r->fields[i].name);
        return WF_INVALID_ARGUMENT;
      }
    r->nfields++;
  }
  return 0;
}

/* ---- the reader ----------------------------------------------------------- */

static void fixed_close(void *rd) {
  fixed_reader *r = rd;

  if (!r)
    return;
  if (r->map)
    munmap(r->map, (size_t)r->size);
  if (r->fd >= 0)
    close(r->fd);
  wfx_host->free(r->fields);
  wfx_host->free(r->path);
  wfx_host->free(r);
}

static int map_file(fixed_reader *r, wf_status *st) {
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
  r->size = (uint64_t)sb.st_size;
  if (r->size == 0 || r->size > SIZE_MAX)
    return 0;
  r->map = mmap(NULL, (size_t)r->size, PROT_READ, MAP_PRIVATE, r->fd, 0);
  if (r->map == MAP_FAILED) {
    r->map = NULL;
    wfx_host->status_set(st, WF_UNAVAILABLE,
                         "%s: cannot map %" PRIu64 " bytes: %s", r->path,
                         r->size, strerror(errno));
    return WF_UNAVAILABLE;
  }
  madvise(r->map, (size_t)r->size, MADV_SEQUENTIAL);
  return 0;
}

static int fixed_open(const char *path, const wf_attr_item *options,
                      int32_t nopts, void **rd, wf_status *st) {
  size_t plen = strlen(path);
  uint64_t record_bytes = 0, sum = 0, body;
  int have_record_bytes = 0, big = 0, partial = PARTIAL_ERROR;
  fixed_reader *r;

  *rd = NULL;
  if ((r = wfx_host->alloc(sizeof *r, 0)) != NULL) {
    memset(r, 0, sizeof *r);
    r->fd = -1;
    r->path = wfx_host->alloc(plen + 1, 0);
  }
  if (!r || !r->path) {
    wfx_host->free(r);
    wfx_host->status_set(st, WF_RESOURCE_EXHAUSTED,
                         "fixed reader: out of memory opening %s", path);
    return WF_RESOURCE_EXHAUSTED;
  }
  memcpy(r->path, path, plen + 1);

  for (int32_t i = 0; i < nopts; i++) {
    const wf_attr_item *it = &options[i];
    const char *s = it->value.type == WF_ATTR_STRING ? it->value.u.s : NULL;
    int rc = 0;
    if (strcmp(it->name, "fields") == 0) {
      rc = opt_fields(r, it, st);
    } else if (strcmp(it->name, "header_bytes") == 0) {
      rc = opt_size(it, &r->header, st);
    } else if (strcmp(it->name, "record_bytes") == 0) {
      rc = opt_size(it, &record_bytes, st);
      have_record_bytes = 1;
    } else if (strcmp(it->name, "byte_order") == 0) {
      if (s && (strcmp(s, "little") == 0 || strcmp(s, "big") == 0))
        big = strcmp(s, "big") == 0;
      else
        rc = opt_error(it, "must be \"little\" or \"big\"", st);
    } else if (strcmp(it->name, "partial") == 0) {
      if (s && (strcmp(s, "error") == 0 || strcmp(s, "report") == 0))
        partial = strcmp(s, "report") == 0 ? PARTIAL_REPORT : PARTIAL_ERROR;
      else
        rc = opt_error(it, "must be \"error\" or \"report\"", st);
    } else {
      wfx_host->status_set(
          st, WF_INVALID_ARGUMENT,
          "fixed reader: unknown option '%s' (known: " OPTION_NAMES ")",
          it->name);
      rc = WF_INVALID_ARGUMENT;
    }
    if (rc)
      goto fail;
  }
  if (r->nfields == 0) {
    wfx_host->status_set(st, WF_INVALID_ARGUMENT,
                         "%s: the fixed reader needs option 'fields' "
                         "(\"name:dtype[:D1xD2...]\" entries)",
                         path);
    goto fail;
  }
  for (int i = 0; i < r->nfields; i++) {
    r->fields[i].offset = sum;
    if (__builtin_add_overflow(sum, r->fields[i].bytes, &sum)) {
      wfx_host->status_set(st, WF_INVALID_ARGUMENT,
                           "fixed reader: the fields' sizes overflow 64 bits");
      goto fail;
    }
  }
  if (have_record_bytes && record_bytes < sum) {
    wfx_host->status_set(st, WF_INVALID_ARGUMENT,
                         "fixed reader: record_bytes %" PRIu64
                         " is smaller than the fields' %" PRIu64 " bytes",
                         record_bytes, sum);
    goto fail;
  }
  r->rec_bytes = have_record_bytes ? record_bytes : sum;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  r->swap = !big;
#else
  r->swap = big;
#endif

  if (map_file(r, st))
    goto fail;
  if (r->size > SIZE_MAX) {
    wfx_host->status_set(
        st, WF_UNIMPLEMENTED,
        "%s: %" PRIu64 " bytes do not fit in the address space", path, r->size);
    goto fail;
  }
  if (r->size < r->header) {
    wfx_host->status_set(st, WF_INVALID_ARGUMENT,
                         "%s: the file has %" PRIu64
                         " bytes, fewer than its header of %" PRIu64,
                         path, r->size, r->header);
    goto fail;
  }
  body = r->size - r->header;
  r->count = body / r->rec_bytes;
  r->partial = body % r->rec_bytes;
  if (r->partial && partial == PARTIAL_ERROR) {
    wfx_host->status_set(st, WF_INVALID_ARGUMENT,
                         "%s: size %" PRIu64 " is not a header of %" PRIu64
                         " bytes plus whole records of %" PRIu64
                         " bytes: %" PRIu64 " bytes are left at offset %" PRIu64
                         " (option partial = \"report\" reads the whole ones)",
                         path, r->size, r->header, r->rec_bytes, r->partial,
                         r->size - r->partial);
    goto fail;
  }
  *rd = r;
  return 0;

fail:
  fixed_close(r);
  return wfx_code(st);
}

static int32_t fixed_num_fields(void *rd) {
  return ((fixed_reader *)rd)->nfields;
}

static void fixed_field_info(void *rd, int32_t i, wf_reader_field *out) {
  const fixed_field *f = &((fixed_reader *)rd)->fields[i];

  /* The core zeroed *out and set its header (plugin.h). */
  memcpy(out->name, f->name, sizeof out->name);
  out->dtype = f->type->dtype;
  out->shape = f->shape;
}

static void swap_bytes(unsigned char *p, int64_t elems, int size) {
  if (size == 2) {
    uint16_t *q = (uint16_t *)(void *)p;
    for (int64_t i = 0; i < elems; i++)
      q[i] = __builtin_bswap16(q[i]);
  } else if (size == 4) {
    uint32_t *q = (uint32_t *)(void *)p;
    for (int64_t i = 0; i < elems; i++)
      q[i] = __builtin_bswap32(q[i]);
  } else if (size == 8) {
    uint64_t *q = (uint64_t *)(void *)p;
    for (int64_t i = 0; i < elems; i++)
      q[i] = __builtin_bswap64(q[i]);
  }
}

static int fixed_next(void *rd, wf_tensor **out, wf_status *st) {
  fixed_reader *r = rd;
  const unsigned char *rec;

  if (r->next >= r->count) {
    if (r->partial && !r->partial_done) {
      r->partial_done = 1;
      wfx_host->status_set(
          st, WF_DATA_LOSS,
          "%s: a partial record of %" PRIu64 " bytes (of %" PRIu64
          ") at offset %" PRIu64 " after record %" PRIu64 " was skipped",
          r->path, r->partial, r->rec_bytes, r->size - r->partial, r->count);
      return -WF_DATA_LOSS;
    }
    return WF_READER_END;
  }
  rec = r->map + r->header + r->next * r->rec_bytes;
  for (int i = 0; i < r->nfields; i++) {
    const fixed_field *f = &r->fields[i];
    unsigned char *data;
    if (!(out[i] = wfx_host->tensor_new(f->type->dtype, &f->shape, st))) {
      while (i-- > 0) {
        wfx_host->tensor_release(out[i]);
        out[i] = NULL;
      }
      return -wfx_code(st);
    }
    data = wfx_data(out[i]);
    memcpy(data, rec + f->offset, (size_t)f->bytes);
    if (r->swap)
      swap_bytes(data, f->elems, f->type->size);
  }
  r->next++;
  return WF_READER_RECORD;
}

static uint64_t fixed_tell(void *rd) { return ((fixed_reader *)rd)->next; }

static int fixed_seek(void *rd, uint64_t pos, wf_status *st) {
  fixed_reader *r = rd;

  if (pos > r->count) {
    wfx_host->status_set(st, WF_OUT_OF_RANGE,
                         "%s: cannot seek to record %" PRIu64
                         ": the file has %" PRIu64 " records",
                         r->path, pos, r->count);
    return WF_OUT_OF_RANGE;
  }
  r->next = pos;
  r->partial_done = 0;
  return 0;
}

static int64_t fixed_count(void *rd, wf_status *st) {
  (void)st;
  return (int64_t)((fixed_reader *)rd)->count;
}

/* ---- the plugin ----------------------------------------------------------- */

static const wf_reader_def fixed_reader_def = {
    WF_STRUCT_INIT(wf_reader_def),
    .name = "fixed",
    .formats = "bin,fixed",
    .doc =
        "Fixed-size binary records, memory-mapped: an optional header, then "
        "records laid out field after field with no gaps (padding at a "
        "record's end with record_bytes). Options: fields — \"name:dtype\" "
        "(a scalar) or \"name:dtype:D1xD2x...\" entries, a list or one "
        "string of comma-separated entries (dtypes: " TYPE_NAMES
        "); header_bytes — bytes to skip at the start (default 0); "
        "record_bytes — a record's size if larger than its fields' (default: "
        "their sum); byte_order — \"little\" (default) or \"big\"; partial — "
        "a file whose size is not header + k records is \"error\" (default, "
        "refused at open naming file and size) or \"report\" (the whole "
        "records are read, then next returns DATA_LOSS once naming the "
        "partial record's offset). Position: the record number. count is "
        "exact.",
    .open = fixed_open,
    .num_fields = fixed_num_fields,
    .field = fixed_field_info,
    .next = fixed_next,
    .tell = fixed_tell,
    .seek = fixed_seek,
    .close = fixed_close,
    .count = fixed_count,
};

static const wf_reader_def *const readers[] = {&fixed_reader_def, NULL};

/* The host table, for every file of the plugin: ABI 1.0 has every entry
 * it uses. */
WFX_HOST_DEFINE(1, 0);

static int fixed_init(const wf_host *host, void **state, wf_status *st) {
  if (WFX_HOST_INIT(host, "reader-fixed", st))
    return WF_FAILED_PRECONDITION;
  *state = NULL;
  return 0;
}

static const wf_plugin_desc desc = {
    WF_STRUCT_INIT(wf_plugin_desc),
    .name = "reader-fixed",
    .version = PACKAGE_VERSION,
    .license = "MIT",
    .description = "fixed-size binary records, memory-mapped, with the "
                   "layout given as options",
    .readers = readers,
    .init = fixed_init,
};

WF_PLUGIN(reader_fixed, desc)
