/* plugins/readers/tfrecord/reader.c — the "reader-tfrecord" plugin: the
 * "tfrecord" reader (options, records as tensors, byte-offset positions,
 * counting) over the stream, framing and Example decoder.
 *
 * It reads one file; globs, sharding, shuffling and batching are the
 * core pipeline's. It does not write TFRecord files. */
#include <config.h>

#include "tfrecord.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#define PLUGIN_NAME "reader-tfrecord"
#define DEFAULT_MAX_RECORD ((uint64_t)1 << 30)
#define LIMIT_MAX_RECORD ((uint64_t)1 << 56)

typedef struct reader {
  char *path;
  tfr_stream s;
  uint64_t number;  /* of the record at s.pos */
  uint64_t max_len; /* max_record_bytes */
  int raw;
  int validate;
  tfr_decoder dec; /* unused when raw */
} reader;

typedef struct options {
  int raw, validate, codec;
  uint64_t max_len;
  const wf_attr_value *features; /* NULL when not given */
} options;

/* ---- options ------------------------------------------------------------ */

static int opt_fail(const char *path, const char *name, const char *why,
                    wf_status *st) {
  wfx_host->status_set(st, WF_INVALID_ARGUMENT, "tfrecord: %s: option '%s' %s",
                       path, name, why);
  return WF_INVALID_ARGUMENT;
}

/* A boolean given as a bool, an int 0/1 or "true"/"false". */
static int opt_bool(const char *path, const wf_attr_item *it, int *out,
                    wf_status *st) {
  const wf_attr_value *v = &it->value;
  if (v->type == WF_ATTR_BOOL)
    *out = v->u.b != 0;
  else if (v->type == WF_ATTR_INT && (v->u.i == 0 || v->u.i == 1))
    *out = (int)v->u.i;
  else if (v->type == WF_ATTR_STRING && v->u.s &&
           (strcasecmp(v->u.s, "true") == 0 || strcmp(v->u.s, "1") == 0))
    *out = 1;
  else if (v->type == WF_ATTR_STRING && v->u.s &&
           (strcasecmp(v->u.s, "false") == 0 || strcmp(v->u.s, "0") == 0))
    *out = 0;
  else
    return opt_fail(path, it->name, "must be true or false", st);
  return 0;
}

static int parse_options(const char *path, const wf_attr_item *opts,
                         int32_t n, options *o, wf_status *st) {
  memset(o, 0, sizeof *o);
  o->codec = WF__TFR_CODEC_AUTO;
  o->max_len = DEFAULT_MAX_RECORD;
  for (int32_t i = 0; i < n; i++) {
    const wf_attr_item *it = &opts[i];
    const wf_attr_value *v = &it->value;
    const char *name = it->name ? it->name : "";

    if (strcmp(name, "features") == 0) {
      if (!(v->type == (WF_ATTR_LIST | WF_ATTR_STRING) ||
            (v->type == WF_ATTR_STRING && v->u.s)))
        return opt_fail(path, name,
                        "must be a list of strings (or one string of specs "
                        "separated by ';')",
                        st);
      o->features = v;
    } else if (strcmp(name, "raw") == 0) {
      if (opt_bool(path, it, &o->raw, st))
        return WF_INVALID_ARGUMENT;
    } else if (strcmp(name, "validate") == 0) {
      if (opt_bool(path, it, &o->validate, st))
        return WF_INVALID_ARGUMENT;
    } else if (strcmp(name, "compression") == 0) {
      const char *c = v->type == WF_ATTR_STRING ? v->u.s : NULL;
      if (c && (strcmp(c, "auto") == 0))
        o->codec = WF__TFR_CODEC_AUTO;
      else if (c && (strcmp(c, "none") == 0 || *c == '\0'))
        o->codec = WF__TFR_CODEC_NONE;
      else if (c && strcasecmp(c, "gzip") == 0)
        o->codec = WF__TFR_CODEC_GZIP;
      else if (c && strcasecmp(c, "zlib") == 0)
        o->codec = WF__TFR_CODEC_ZLIB;
      else
        return opt_fail(path, name, "must be auto, none, gzip or zlib", st);
    } else if (strcmp(name, "max_record_bytes") == 0) {
      if (v->type != WF_ATTR_INT || v->u.i < 1 ||
          (uint64_t)v->u.i > LIMIT_MAX_RECORD)
        return opt_fail(path, name, "must be an int from 1 to 2^56", st);
      o->max_len = (uint64_t)v->u.i;
    } else {
      return opt_fail(path, name,
                      "is unknown (options: features, raw, compression, "
                      "validate, max_record_bytes)",
                      st);
    }
  }
  if (o->raw && o->features)
    return opt_fail(path, "raw",
                    "yields whole records; it cannot be combined with "
                    "'features'",
                    st);
  return 0;
}

/* Specs from the 'features' option: list items, or one string split at
 * ';'. *specs is host-allocated. */
static int specs_from_option(const wf_attr_value *v, tfr_spec **specs,
                             int *num, wf_status *st) {
  int64_t count;
  tfr_spec *out;
  int n = 0;

  if (v->type == WF_ATTR_STRING) {
    count = 1;
    for (const char *p = v->u.s; *p; p++)
      count += *p == ';';
  } else {
    count = v->count;
  }
  if (count < 1 || count > INT32_MAX / 2) {
    wfx_host->status_set(st, WF_INVALID_ARGUMENT,
                         "tfrecord: option 'features' names no feature");
    return WF_INVALID_ARGUMENT;
  }
  out = wfx_host->alloc((size_t)count * sizeof *out, 0);
  if (!out) {
    wfx_host->status_set(
        st, WF_RESOURCE_EXHAUSTED,
        "tfrecord: out of memory for %" PRId64 " feature specs", count);
    return WF_RESOURCE_EXHAUSTED;
  }
  if (v->type == WF_ATTR_STRING) {
    const char *p = v->u.s;
    for (; n < count; n++) {
      const char *semi = strchr(p, ';');
      size_t len = semi ? (size_t)(semi - p) : strlen(p);
      if (tfr_spec_parse(p, len, &out[n], st))
        goto fail;
      p = semi ? semi + 1 : p + len;
    }
  } else {
    for (; n < count; n++) {
      const char *s = v->u.strings[n] ? v->u.strings[n] : "";
      if (tfr_spec_parse(s, strlen(s), &out[n], st))
        goto fail;
    }
  }
  *specs = out;
  *num = n;
  return 0;

fail:
  for (int i = 0; i < n; i++)
    tfr_spec_deinit(&out[i]);
  wfx_host->free(out);
  return wfx_code(st);
}

/* ---- the reader ---------------------------------------------------------- */

static tfr_where where_now(const reader *r) {
  tfr_where w = {r->path, r->number, r->s.pos,
                     r->s.codec != WF__TFR_CODEC_NONE};
  return w;
}

/* Specs for every feature of the first record, which stays unread. */
static int infer(reader *r, tfr_spec **specs, int *num, wf_status *st) {
  tfr_record rec;
  tfr_where w = where_now(r);
  char why[1024];
  int rc;

  *specs = NULL;
  *num = 0;
  rc = tfr_record_read(&r->s, 0, r->max_len, &rec, st);
  if (rc == WF_READER_END)
    return 0;
  if (rc == WF_READER_RECORD &&
      tfr_infer_specs(rec.data, (size_t)rec.len, &w, specs, num, st) == 0)
    return 0;
  snprintf(why, sizeof why, "%s", wfx_host->status_message(st));
  rc = wfx_code(st);
  wfx_host->status_set(st, rc == WF_DATA_LOSS ? WF_INVALID_ARGUMENT : rc,
                       "%s; the schema comes from the first record when "
                       "'features' is not given (or use raw=true)",
                       why);
  return wfx_code(st);
}

static void tfr_close(void *rd) {
  reader *r = rd;
  if (!r)
    return;
  tfr_decoder_deinit(&r->dec);
  tfr_stream_close(&r->s);
  wfx_host->free(r->path);
  wfx_host->free(r);
}

static int tfr_open(const char *path, const wf_attr_item *opts, int32_t nopts,
                    void **rd, wf_status *st) {
  reader *r = NULL;
  tfr_spec *specs = NULL;
  int nspecs = 0;
  size_t plen = strlen(path);
  options o;

  *rd = NULL;
  if (parse_options(path, opts, nopts, &o, st))
    return wfx_code(st);
  r = wfx_host->alloc(sizeof *r, 0);
  if (r) {
    memset(r, 0, sizeof *r);
    r->s.fd = -1;
    r->path = wfx_host->alloc(plen + 1, 0);
  }
  if (!r || !r->path) {
    wfx_host->status_set(st, WF_RESOURCE_EXHAUSTED,
                         "tfrecord: %s: out of memory opening a reader", path);
    goto fail;
  }
  memcpy(r->path, path, plen + 1);
  r->raw = o.raw;
  r->validate = o.validate;
  r->max_len = o.max_len;
  if (!o.raw && o.features && specs_from_option(o.features, &specs, &nspecs, st))
    goto fail;
  if (tfr_stream_open(&r->s, r->path, o.codec, st))
    goto fail;
  if (!o.raw && !o.features && infer(r, &specs, &nspecs, st))
    goto fail;
  if (!o.raw) {
    tfr_spec *taken = specs;
    specs = NULL;
    if (tfr_decoder_init(&r->dec, taken, nspecs, st))
      goto fail;
  }
  *rd = r;
  return 0;

fail:
  if (specs) {
    for (int i = 0; i < nspecs; i++)
      tfr_spec_deinit(&specs[i]);
    wfx_host->free(specs);
  }
  tfr_close(r);
  return wfx_code(st);
}

static int32_t tfr_num_fields(void *rd) {
  const reader *r = rd;
  return r->raw ? 1 : r->dec.num_specs;
}

static void tfr_field(void *rd, int32_t i, wf_reader_field *out) {
  const reader *r = rd;
  /* The core zeroed *out and set its header (plugin.h). */
  if (r->raw) {
    snprintf(out->name, sizeof out->name, "record");
    out->dtype = WF_UINT8;
    out->shape.rank = 1;
    out->shape.dims[0] = WF_UNKNOWN_DIM;
    return;
  }
  if (i < 0 || i >= r->dec.num_specs)
    return;
  memcpy(out->name, r->dec.specs[i].name, sizeof out->name);
  out->dtype = r->dec.specs[i].dtype;
  out->shape = r->dec.specs[i].shape;
}

static int tfr_next(void *rd, wf_tensor **fields, wf_status *st) {
  reader *r = rd;
  tfr_record rec;
  tfr_where w = where_now(r);
  int rc;

  rc = tfr_record_read(&r->s, r->number, r->max_len, &rec, st);
  if (rc == WF_READER_END || (rc < 0 && rc != -WF_DATA_LOSS))
    return rc;
  if (rc == WF_READER_RECORD && r->raw) {
    wf_shape shape = {.rank = 1, .dims = {(int64_t)rec.len}};
    wf_tensor *t = wfx_host->tensor_new(WF_UINT8, &shape, st);
    if (!t)
      return -wfx_code(st);
    if (rec.len)
      memcpy(wfx_data(t), rec.data, (size_t)rec.len);
    fields[0] = t;
  } else if (rc == WF_READER_RECORD) {
    rc = tfr_decoder_decode(&r->dec, rec.data, (size_t)rec.len, &w,
                                fields, st);
    if (rc < 0 && rc != -WF_DATA_LOSS)
      return rc; /* out of memory: the record stays unread */
    if (rc == 0)
      rc = WF_READER_RECORD;
  }
  tfr_stream_skip(&r->s, rec.size);
  r->number++;
  return rc;
}

static uint64_t tfr_tell(void *rd) { return ((const reader *)rd)->s.pos; }

/* Walks the framing forward from the current position to offset target,
 * which must start a record (or be the end of the data). */
static int walk_to(reader *r, uint64_t target, wf_status *st) {
  while (r->s.pos < target) {
    uint64_t at = r->s.pos;
    int rc = tfr_record_pass(&r->s, r->number, r->max_len, 0, st);
    if (rc == WF_READER_END) {
      wfx_host->status_set(st, WF_INVALID_ARGUMENT,
                           "%s: cannot seek to offset %" PRIu64
                           ": the data ends at offset %" PRIu64 " (%" PRIu64
                           " records)",
                           r->path, target, r->s.pos, r->number);
      return WF_INVALID_ARGUMENT;
    }
    if (rc < 0) {
      char why[1024];
      snprintf(why, sizeof why, "%s", wfx_host->status_message(st));
      wfx_host->status_set(st, -rc, "cannot seek to offset %" PRIu64 ": %s",
                           target, why);
      return -rc;
    }
    if (r->s.pos > target) {
      wfx_host->status_set(st, WF_INVALID_ARGUMENT,
                           "%s: cannot seek to offset %" PRIu64
                           ": it is inside record %" PRIu64 " (offsets %" PRIu64
                           " to %" PRIu64 "), not at the start of a record",
                           r->path, target, r->number, at, r->s.pos);
      return WF_INVALID_ARGUMENT;
    }
    r->number++;
  }
  return 0;
}

static int tfr_seek(void *rd, uint64_t pos, wf_status *st) {
  reader *r = rd;
  uint64_t old_pos = r->s.pos, old_number = r->number;
  char why[1024];
  int code;

  if (pos == r->s.pos)
    return 0;
  if (pos < r->s.pos) {
    if (tfr_stream_rewind(&r->s, st))
      return wfx_code(st);
    r->number = 0;
  }
  if (walk_to(r, pos, st) == 0)
    return 0;

  /* Back to where the reader was; the walk's error is what is reported. */
  code = wfx_code(st);
  snprintf(why, sizeof why, "%s", wfx_host->status_message(st));
  if (r->s.codec == WF__TFR_CODEC_NONE) {
    r->s.pos = old_pos;
    r->number = old_number;
  } else if (tfr_stream_rewind(&r->s, st) == 0) {
    r->number = 0;
    walk_to(r, old_pos, st);
  }
  wfx_host->status_set(st, code, "%s", why);
  return code;
}

static int64_t tfr_count(void *rd, wf_status *st) {
  const reader *r = rd;
  tfr_stream s;
  int64_t n = 0;

  if (tfr_stream_open(&s, r->path, r->s.codec, st))
    return -1;
  for (;;) {
    int rc = tfr_record_pass(&s, (uint64_t)n, r->max_len, r->validate, st);
    if (rc == WF_READER_END)
      break;
    if (rc < 0) {
      n = -1;
      break;
    }
    n++;
  }
  tfr_stream_close(&s);
  return n;
}

/* ---- the plugin ------------------------------------------------------- */

static const wf_reader_def tfrecord_reader = {
    WF_STRUCT_INIT(wf_reader_def),
    .name = "tfrecord",
    .formats = "tfrecord,tfrecords,tfrecord.gz,tfrecords.gz,tfrecord.zlib,"
               "tfrecords.zlib,tfrecord.zz,tfrecords.zz",
    .doc =
        "TensorFlow's TFRecord files (framing with masked CRC-32C of length "
        "and data; plain, or the whole file gzip- or zlib-compressed), "
        "payloads parsed as tf.train.Example. Positions are byte offsets "
        "of the next record in the uncompressed data; records count from 0. "
        "Options: features (list of \"name:dtype:shape[:default]\", or one "
        "string of them separated by ';': dtype float32, int64 or string "
        "(bytes as uint8, a list's values joined); shape like \"28,28\", "
        "\"\" for a scalar, one dim -1 for variable length; the default, "
        "used when the feature is missing, is one value filling the shape "
        "or a comma-separated list, for string the bytes themselves; "
        "without features, every feature of the first record becomes a "
        "variable-length field, sorted by name); raw (bool: each record's "
        "bytes as one uint8 field \"record\", unparsed); compression "
        "(auto (default: detected), none, gzip, zlib); validate (bool: "
        "count also checks every data CRC); max_record_bytes (int, default "
        "2^30: longer records are an error). A bad data CRC, a payload "
        "that is not an Example and a feature that does not match its spec "
        "skip the record (DATA_LOSS); a bad length CRC, a length past the "
        "end of the data, truncation and corrupt compression are fatal.",
    .open = tfr_open,
    .num_fields = tfr_num_fields,
    .field = tfr_field,
    .next = tfr_next,
    .tell = tfr_tell,
    .seek = tfr_seek,
    .close = tfr_close,
    .count = tfr_count,
};

static const wf_reader_def *const readers[] = {&tfrecord_reader, NULL};

/* The host table, for every file of the plugin: ABI 1.0 has every entry
 * it uses. */
WFX_HOST_DEFINE(1, 0);

static int tfr_init(const wf_host *host, void **state, wf_status *st) {
  if (WFX_HOST_INIT(host, PLUGIN_NAME, st))
    return WF_FAILED_PRECONDITION;
  *state = NULL;
  return 0;
}

static const wf_plugin_desc desc = {
    WF_STRUCT_INIT(wf_plugin_desc),
    .name = PLUGIN_NAME,
    .version = PACKAGE_VERSION,
    .license = "MIT",
    .description = "TFRecord reader: TensorFlow's framing with CRC-32C "
                   "checks (SSE4.2 when available), gzip/zlib files, "
                   "tf.train.Example payloads through protobuf-c",
    .readers = readers,
    .init = tfr_init,
};

WF_PLUGIN(reader_tfrecord, desc)
