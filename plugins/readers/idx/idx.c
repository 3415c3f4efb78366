/* plugins/readers/idx/idx.c — the idx reader plugin (module reader_idx):
 * MNIST-style idx files, raw or gzip, optionally paired with a labels file
 * so that records are (image, label). The header is validated against the
 * file before any record is read; records are converted from big-endian.
 *
 * It does not shuffle, shard or batch (the core's pipeline does) and does
 * not write idx files. One reader is used by one thread at a time. */
#include <config.h>

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <weft/plugin_aux.h>

#include "idx_stream.h"

/* A deflate stream never expands data more than 1032 times (zlib's FAQ);
 * a header that promises more than that is lying, and is refused before
 * anything is allocated for it. */
#define GZIP_MAX_RATIO 1032
/* Records of gzip files larger than this are inflated into a buffer that
 * grows with the data actually there before their tensor is made, so a
 * header within that ratio still cannot make the reader allocate memory the
 * file does not fill. */
#define DIRECT_MAX ((uint64_t)1 << 24)

/* The idx element types. int16 has no weft dtype: it widens to int32. */
typedef struct idx_type {
  int code;
  int size;      /* bytes per element in the file */
  int32_t dtype; /* weft dtype of the field */
  const char *name;
} idx_type;

static const idx_type idx_types[] = {
    {0x08, 1, WF_UINT8, "ubyte"},   {0x09, 1, WF_INT8, "sbyte"},
    {0x0B, 2, WF_INT32, "short"},   {0x0C, 4, WF_INT32, "int"},
    {0x0D, 4, WF_FLOAT32, "float"}, {0x0E, 8, WF_FLOAT64, "double"},
};

/* One idx file and its header. */
typedef struct idx_file {
  char *path;
  idx_stream *s;
  const idx_type *type;
  char name[64];       /* the field's name */
  wf_shape shape;      /* per record */
  int64_t elems;       /* per record */
  uint64_t rec_bytes;  /* per record, in the file */
  uint64_t data_off;   /* the header's size */
  uint64_t count;      /* records */
  int staged;          /* records go through `stage` (see DIRECT_MAX) */
  unsigned char *wide; /* int16, not staged: rec_bytes of scratch */
  unsigned char *stage;
  size_t stage_cap;
} idx_file;

typedef struct idx_reader {
  idx_file f[2];
  int nfiles;
  uint64_t next;    /* index of the next record */
  int end_checked;  /* the data was found to end after the last record */
  int broken;       /* a fatal error happened; only seek recovers */
} idx_reader;

/* ---- the header -------------------------------------------------------- */

static uint32_t be32(const unsigned char *p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 |
         (uint32_t)p[3];
}

/* Reads and checks f's header; leaves the stream at the first record. */
static int read_header(idx_file *f, wf_status *st) {
  unsigned char m[4], d[4 * (WF_MAX_RANK + 1)];
  uint64_t size = idx_stream_file_size(f->s), data;
  int gz = idx_stream_is_gzip(f->s), rank;
  const char *kind = gz ? "decompressed data" : "file";
  size_t got;

  if (idx_stream_read(f->s, m, 4, &got, st))
    return wfx_code(st);
  if (got < 4) {
    wfx_host->status_set(st, WF_INVALID_ARGUMENT,
                         "%s: the %s has %zu bytes, too few for an idx header "
                         "(4 bytes of magic at offset 0)",
                         f->path, kind, got);
    return WF_INVALID_ARGUMENT;
  }
  if (m[0] != 0 || m[1] != 0) {
    wfx_host->status_set(st, WF_INVALID_ARGUMENT,
                         "%s: bad magic 0x%02x%02x%02x%02x at offset 0: an idx "
                         "file starts with two zero bytes%s",
                         f->path, m[0], m[1], m[2], m[3],
                         gz ? " (after gunzip)" : "");
    return WF_INVALID_ARGUMENT;
  }
  for (size_t i = 0; i < sizeof idx_types / sizeof idx_types[0]; i++)
    if (idx_types[i].code == m[2])
      f->type = &idx_types[i];
  if (!f->type) {
    wfx_host->status_set(st, WF_INVALID_ARGUMENT,
                         "%s: unknown idx type code 0x%02x at offset 2 (known: "
                         "0x08 ubyte, 0x09 sbyte, 0x0b short, 0x0c int, 0x0d "
                         "float, 0x0e double)",
                         f->path, m[2]);
    return WF_INVALID_ARGUMENT;
  }
  rank = m[3];
  if (rank == 0) {
    wfx_host->status_set(st, WF_INVALID_ARGUMENT,
                         "%s: rank 0 at offset 3: an idx file has at least one "
                         "dimension (the record count)",
                         f->path);
    return WF_INVALID_ARGUMENT;
  }
  if (rank - 1 > WF_MAX_RANK) {
    wfx_host->status_set(st, WF_INVALID_ARGUMENT,
                         "%s: rank %d at offset 3: records of rank %d exceed "
                         "weft's maximum rank %d",
                         f->path, rank, rank - 1, WF_MAX_RANK);
    return WF_INVALID_ARGUMENT;
  }
  if (idx_stream_read(f->s, d, (size_t)rank * 4, &got, st))
    return wfx_code(st);
  if (got < (size_t)rank * 4) {
    wfx_host->status_set(st, WF_INVALID_ARGUMENT,
                         "%s: truncated header: the %s ends at offset %zu, but "
                         "%d dimensions need bytes 4 to %d",
                         f->path, kind, 4 + got, rank, 4 + 4 * rank);
    return WF_INVALID_ARGUMENT;
  }
  f->data_off = 4 + 4 * (uint64_t)rank;
  f->count = be32(d);
  f->shape.rank = rank - 1;
  f->elems = 1;
  for (int i = 1; i < rank; i++) {
    uint32_t v = be32(d + 4 * i);
    if (v == 0) {
      wfx_host->status_set(
          st, WF_INVALID_ARGUMENT,
          "%s: dimension %d (offset %d) is 0: records would be "
          "empty",
          f->path, i, 4 + 4 * i);
      return WF_INVALID_ARGUMENT;
    }
    f->shape.dims[i - 1] = v;
    /* At most 8 factors below 2^32 each: checked, not assumed. */
    if (__builtin_mul_overflow(f->elems, (int64_t)v, &f->elems))
      goto too_big;
  }
  if (__builtin_mul_overflow((uint64_t)f->elems, (uint64_t)f->type->size,
                             &f->rec_bytes) ||
      __builtin_mul_overflow(f->count, f->rec_bytes, &data) ||
      data > UINT64_MAX - f->data_off)
    goto too_big;

  if (gz) {
    /* The decompressed size is unknown until the end; it is checked as the
     * records stream in, and bounded here by deflate's best ratio. */
    if (data / GZIP_MAX_RATIO > size) {
      wfx_host->status_set(st, WF_INVALID_ARGUMENT,
                           "%s: the header promises %" PRIu64
                           " records of %" PRIu64 " bytes (%" PRIu64
                           " bytes), more than a gzip file of %" PRIu64
                           " bytes can hold",
                           f->path, f->count, f->rec_bytes, data, size);
      return WF_INVALID_ARGUMENT;
    }
  } else if (size < f->data_off + data) {
    wfx_host->status_set(
        st, WF_INVALID_ARGUMENT,
        "%s: truncated: the header promises %" PRIu64 " records of %" PRIu64
        " bytes, ending at offset %" PRIu64
        ", but the file ends at offset %" PRIu64 " (in record %" PRIu64 ")",
        f->path, f->count, f->rec_bytes, f->data_off + data, size,
        (size - f->data_off) / f->rec_bytes);
    return WF_INVALID_ARGUMENT;
  } else if (size > f->data_off + data) {
    wfx_host->status_set(
        st, WF_INVALID_ARGUMENT,
        "%s: %" PRIu64 " unexpected bytes at offset %" PRIu64
        ", after the last of the %" PRIu64 " records the header promises",
        f->path, size - f->data_off - data, f->data_off + data, f->count);
    return WF_INVALID_ARGUMENT;
  }
  return 0;

too_big:
  wfx_host->status_set(st, WF_INVALID_ARGUMENT,
                       "%s: the %d dimensions in the header (offsets 4 to %d) "
                       "give a data size beyond 64 bits",
                       f->path, rank, 4 + 4 * rank);
  return WF_INVALID_ARGUMENT;
}

/* ---- records ------------------------------------------------------------ */

static void to_host_order(void *data, int64_t elems, int size) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  if (size == 4) {
    uint32_t *p = data;
    for (int64_t i = 0; i < elems; i++)
      p[i] = __builtin_bswap32(p[i]);
  } else if (size == 8) {
    uint64_t *p = data;
    for (int64_t i = 0; i < elems; i++)
      p[i] = __builtin_bswap64(p[i]);
  }
#else
  (void)data, (void)elems, (void)size;
#endif
}

static int truncated(const idx_file *f, uint64_t index, uint64_t at,
                     uint64_t got, wf_status *st) {
  wfx_host->status_set(
      st, WF_INVALID_ARGUMENT,
      "%s: truncated: record %" PRIu64 " of %" PRIu64 " needs %" PRIu64
      " bytes from offset %" PRIu64 " of the %s, which ends at offset %" PRIu64,
      f->path, index, f->count, f->rec_bytes, at,
      idx_stream_is_gzip(f->s) ? "decompressed data" : "file", at + got);
  return WF_INVALID_ARGUMENT;
}

/* Inflates one record of f into f->stage, growing it only as data comes. */
static int read_staged(idx_file *f, uint64_t index, wf_status *st) {
  uint64_t at = idx_stream_offset(f->s), have = 0;
  size_t got;

  while (have < f->rec_bytes) {
    if (have == f->stage_cap) {
      uint64_t cap = f->stage_cap ? 2 * (uint64_t)f->stage_cap : DIRECT_MAX;
      unsigned char *n;
      if (cap > f->rec_bytes)
        cap = f->rec_bytes;
      if (!(n = wfx_host->alloc((size_t)cap, 0))) {
        wfx_host->status_set(st, WF_RESOURCE_EXHAUSTED,
                             "%s: out of memory for record %" PRIu64
                             " (%" PRIu64 " bytes)",
                             f->path, index, f->rec_bytes);
        return WF_RESOURCE_EXHAUSTED;
      }
      if (have)
        memcpy(n, f->stage, (size_t)have);
      wfx_host->free(f->stage);
      f->stage = n;
      f->stage_cap = (size_t)cap;
    }
    if (idx_stream_read(f->s, f->stage + have, f->stage_cap - (size_t)have,
                        &got, st))
      return wfx_code(st);
    if (got == 0)
      return truncated(f, index, at, have, st);
    have += got;
  }
  return 0;
}

/* Reads record `index` of f (the stream is there) into a new tensor. */
static int read_record(idx_file *f, uint64_t index, wf_tensor **out,
                       wf_status *st) {
  wf_tensor *t = NULL;
  unsigned char *data, *src;
  uint64_t at = idx_stream_offset(f->s);
  size_t got;

  if (f->staged && read_staged(f, index, st))
    return wfx_code(st);
  if (!(t = wfx_host->tensor_new(f->type->dtype, &f->shape, st)))
    return wfx_code(st);
  data = wfx_data(t);
  src = f->staged ? f->stage : f->wide ? f->wide : data;
  if (!f->staged) {
    if (idx_stream_read(f->s, src, (size_t)f->rec_bytes, &got, st))
      goto fail;
    if (got < f->rec_bytes) {
      truncated(f, index, at, got, st);
      goto fail;
    }
  }
  if (f->type->size == 2) {
    int32_t *w = (int32_t *)(void *)data;
    for (int64_t i = 0; i < f->elems; i++)
      w[i] = (int16_t)(uint16_t)(src[2 * i] << 8 | src[2 * i + 1]);
  } else {
    if (src != data)
      memcpy(data, src, (size_t)f->rec_bytes);
    to_host_order(data, f->elems, f->type->size);
  }
  *out = t;
  return 0;

fail:
  wfx_host->tensor_release(t);
  return wfx_code(st);
}

/* ---- options ------------------------------------------------------------- */

#define OPTION_NAMES "name, label_file, label_name"

static int opt_string(const wf_attr_item *it, const char **out,
                      wf_status *st) {
  if (it->value.type != WF_ATTR_STRING || !it->value.u.s) {
    wfx_host->status_set(st, WF_INVALID_ARGUMENT,
                         "idx reader: option '%s' must be a string", it->name);
    return WF_INVALID_ARGUMENT;
  }
  *out = it->value.u.s;
  return 0;
}

static int set_name(char *dst, const char *name, const char *option,
                    wf_status *st) {
  size_t n = strlen(name);

  if (n == 0 || n >= 64) {
    wfx_host->status_set(st, WF_INVALID_ARGUMENT,
                         "idx reader: option '%s' must be a field name of 1 to "
                         "63 bytes, not \"%s\"",
                         option, name);
    return WF_INVALID_ARGUMENT;
  }
  memcpy(dst, name, n + 1);
  return 0;
}

/* The labels file for images file `path`: label_file as given when
 * absolute; relative to path's directory otherwise; "auto": path with the
 * last "images-idx3" of its file name made "labels-idx1" (MNIST naming).
 * A new string from wfx_host->alloc. */
static char *label_path(const char *path, const char *label_file,
                        wf_status *st) {
  const char *slash = strrchr(path, '/');
  size_t dir = slash ? (size_t)(slash - path) + 1 : 0;
  size_t plen = strlen(path), llen = strlen(label_file);
  char *out;

  if (strcmp(label_file, "auto") == 0) {
    const char *at = NULL, *p = path + dir;
    while ((p = strstr(p, "images-idx3")) != NULL)
      at = p++;
    if (!at) {
      wfx_host->status_set(
          st, WF_INVALID_ARGUMENT,
          "idx reader: label_file \"auto\" needs \"images-idx3\" "
          "in the file name of %s",
          path);
      return NULL;
    }
    out = wfx_host->alloc(plen + 1, 0);
    if (!out)
      goto oom;
    memcpy(out, path, plen + 1);
    memcpy(out + (at - path), "labels-idx1", 11);
    return out;
  }
  if (label_file[0] == '/')
    dir = 0;
  out = wfx_host->alloc(dir + llen + 1, 0);
  if (!out)
    goto oom;
  memcpy(out, path, dir);
  memcpy(out + dir, label_file, llen + 1);
  return out;

oom:
  wfx_host->status_set(st, WF_RESOURCE_EXHAUSTED,
                       "idx reader: out of memory opening %s", path);
  return NULL;
}

/* ---- the reader --------------------------------------------------------- */

static void idx_close(void *rd) {
  idx_reader *r = rd;

  if (!r)
    return;
  for (int i = 0; i < 2; i++) {
    idx_stream_close(r->f[i].s);
    wfx_host->free(r->f[i].wide);
    wfx_host->free(r->f[i].stage);
    wfx_host->free(r->f[i].path);
  }
  wfx_host->free(r);
}

static int open_file(idx_file *f, char *path, wf_status *st) {
  f->path = path;
  if (idx_stream_open(path, &f->s, st) || read_header(f, st))
    return wfx_code(st);
  f->staged = idx_stream_is_gzip(f->s) && f->rec_bytes > DIRECT_MAX;
  if (f->type->size == 2 && !f->staged && f->count > 0) {
    f->wide = wfx_host->alloc((size_t)f->rec_bytes, 0);
    if (!f->wide) {
      wfx_host->status_set(st, WF_RESOURCE_EXHAUSTED,
                           "%s: out of memory for a record of %" PRIu64
                           " bytes",
                           path, f->rec_bytes);
      return WF_RESOURCE_EXHAUSTED;
    }
  }
  return 0;
}

static int idx_open(const char *path, const wf_attr_item *options,
                    int32_t nopts, void **rd, wf_status *st) {
  const char *name = NULL, *label_file = NULL, *label_name = "label";
  idx_reader *r = NULL;
  char *p;
  size_t plen = strlen(path);

  *rd = NULL;
  for (int32_t i = 0; i < nopts; i++) {
    const wf_attr_item *it = &options[i];
    const char **dst = strcmp(it->name, "name") == 0         ? &name
                       : strcmp(it->name, "label_file") == 0 ? &label_file
                       : strcmp(it->name, "label_name") == 0 ? &label_name
                                                             : NULL;
    if (!dst) {
      wfx_host->status_set(
          st, WF_INVALID_ARGUMENT,
          "idx reader: unknown option '%s' (known: " OPTION_NAMES ")",
          it->name);
      return WF_INVALID_ARGUMENT;
    }
    if (opt_string(it, dst, st))
      return WF_INVALID_ARGUMENT;
  }

  r = wfx_host->alloc(sizeof *r, 0);
  p = wfx_host->alloc(plen + 1, 0);
  if (!r || !p) {
    wfx_host->free(r);
    wfx_host->free(p);
    wfx_host->status_set(st, WF_RESOURCE_EXHAUSTED,
                         "idx reader: out of memory opening %s", path);
    return WF_RESOURCE_EXHAUSTED;
  }
  memset(r, 0, sizeof *r);
  memcpy(p, path, plen + 1);
  r->nfiles = 1;
  if (open_file(&r->f[0], p, st))
    goto fail;
  if (set_name(r->f[0].name,
               name ? name : r->f[0].shape.rank > 0 ? "image" : "label",
               "name", st))
    goto fail;

  if (label_file) {
    idx_file *lf = &r->f[1];
    r->nfiles = 2;
    if (!(p = label_path(path, label_file, st)) || open_file(lf, p, st) ||
        set_name(lf->name, label_name, "label_name", st))
      goto fail;
    if (strcmp(lf->name, r->f[0].name) == 0) {
      wfx_host->status_set(st, WF_INVALID_ARGUMENT,
                           "idx reader: both fields of %s are named '%s'; set "
                           "'name' or 'label_name'",
                           path, lf->name);
      goto fail;
    }
    if (lf->count != r->f[0].count) {
      wfx_host->status_set(st, WF_INVALID_ARGUMENT,
                           "%s has %" PRIu64
                           " records but its label file %s has %" PRIu64,
                           path, r->f[0].count, lf->path, lf->count);
      goto fail;
    }
  }
  *rd = r;
  return 0;

fail:
  idx_close(r);
  return wfx_code(st);
}

static int32_t idx_num_fields(void *rd) { return ((idx_reader *)rd)->nfiles; }

static void idx_field(void *rd, int32_t i, wf_reader_field *out) {
  const idx_file *f = &((idx_reader *)rd)->f[i];

  /* The core zeroed *out and set its header (plugin.h). */
  memcpy(out->name, f->name, sizeof out->name);
  out->dtype = f->type->dtype;
  out->shape = f->shape;
}

static int idx_next(void *rd, wf_tensor **fields, wf_status *st) {
  idx_reader *r = rd;
  int at_end, i;

  if (r->broken) {
    wfx_host->status_set(
        st, WF_FAILED_PRECONDITION,
        "%s: reading stopped at an earlier error; seek to go on", r->f[0].path);
    return -WF_FAILED_PRECONDITION;
  }
  if (r->next >= r->f[0].count) {
    for (i = 0; i < r->nfiles && !r->end_checked; i++) {
      idx_file *f = &r->f[i];
      uint64_t at = idx_stream_offset(f->s);
      if (idx_stream_at_end(f->s, &at_end, st))
        goto fail;
      if (!at_end) {
        wfx_host->status_set(
            st, WF_INVALID_ARGUMENT,
            "%s: the decompressed data goes on at offset %" PRIu64
            ", after the last of the %" PRIu64 " records the header promises",
            f->path, at, f->count);
        goto fail;
      }
    }
    r->end_checked = 1;
    return WF_READER_END;
  }
  for (i = 0; i < r->nfiles; i++)
    if (read_record(&r->f[i], r->next, &fields[i], st)) {
      while (i-- > 0) {
        wfx_host->tensor_release(fields[i]);
        fields[i] = NULL;
      }
      goto fail;
    }
  r->next++;
  return WF_READER_RECORD;

fail:
  r->broken = 1;
  return -wfx_code(st);
}

static uint64_t idx_tell(void *rd) { return ((idx_reader *)rd)->next; }

static int idx_seek(void *rd, uint64_t pos, wf_status *st) {
  idx_reader *r = rd;

  if (pos > r->f[0].count) {
    wfx_host->status_set(st, WF_OUT_OF_RANGE,
                         "%s: cannot seek to record %" PRIu64
                         ": the file has %" PRIu64 " records",
                         r->f[0].path, pos, r->f[0].count);
    return WF_OUT_OF_RANGE;
  }
  for (int i = 0; i < r->nfiles; i++) {
    idx_file *f = &r->f[i];
    if (idx_stream_seek(f->s, f->data_off + pos * f->rec_bytes, st)) {
      r->broken = 1;
      return wfx_code(st);
    }
  }
  r->next = pos;
  r->end_checked = 0;
  r->broken = 0;
  return 0;
}

static int64_t idx_count(void *rd, wf_status *st) {
  (void)st;
  return (int64_t)((idx_reader *)rd)->f[0].count;
}

/* ---- the plugin ----------------------------------------------------------- */

static const wf_reader_def idx_reader_def = {
    WF_STRUCT_INIT(wf_reader_def),
    .name = "idx",
    .formats = "idx,idx.gz,ubyte,ubyte.gz",
    .doc =
        "MNIST-style idx files, raw or gzip (recognised by their magic, not "
        "their name). Element types: ubyte -> uint8, sbyte -> int8, short -> "
        "int32 (widened), int -> int32, float -> float32, double -> float64, "
        "all converted from big-endian. The first dimension counts records; "
        "a record has the remaining dimensions as its shape. Position: the "
        "record number (seeking in gzip files inflates from the start or "
        "the current record to the target). Options (strings): "
        "name — the field's name (default \"image\", or \"label\" for "
        "scalar records); label_file — a second idx file with as many "
        "records, read alongside as a second field (a path relative to the "
        "first file's directory, absolute, or \"auto\" for MNIST naming: "
        "images-idx3 -> labels-idx1); label_name — that field's name "
        "(default \"label\"). Fashion-MNIST's train-images-idx3-ubyte.gz with "
        "label_file = \"auto\" reads as {image: uint8 (28, 28), label: uint8 "
        "()}.",
    .open = idx_open,
    .num_fields = idx_num_fields,
    .field = idx_field,
    .next = idx_next,
    .tell = idx_tell,
    .seek = idx_seek,
    .close = idx_close,
    .count = idx_count,
};

static const wf_reader_def *const readers[] = {&idx_reader_def, NULL};

/* The host table, for every file of the plugin: ABI 1.0 has every entry
 * it uses. */
WFX_HOST_DEFINE(1, 0);

static int idx_init(const wf_host *host, void **state, wf_status *st) {
  if (WFX_HOST_INIT(host, "reader-idx", st))
    return WF_FAILED_PRECONDITION;
  *state = NULL;
  return 0;
}

static const wf_plugin_desc desc = {
    WF_STRUCT_INIT(wf_plugin_desc),
    .name = "reader-idx",
    .version = PACKAGE_VERSION,
    .license = "MIT",
    .description = "idx (MNIST, Fashion-MNIST) files, raw or gzip, with "
                   "image/label pairing",
    .readers = readers,
    .init = idx_init,
};

WF_PLUGIN(reader_idx, desc)
