/* plugins/readers/tfrecord/example.c — tf.train.Example payloads into
 * tensors: feature specs ("name:dtype:shape[:default]"), a protobuf-c
 * decoder whose message tree lives in a reused arena, and a schema
 * inferred from one payload.
 *
 * It does not read files or framing, and it ignores features no spec
 * names. SequenceExample is not supported. */
#include <config.h>

#include "tfrecord.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* An arena block larger than this is given back after its record. */
#define ARENA_KEEP ((size_t)16 << 20)
#define ARENA_MIN ((size_t)4 << 10)

/* ---- specs ------------------------------------------------------------ */

static const char *kind_name(int kind) {
  switch (kind) {
  case TENSORFLOW__FEATURE__KIND_BYTES_LIST:
    return "bytes";
  case TENSORFLOW__FEATURE__KIND_FLOAT_LIST:
    return "float";
  case TENSORFLOW__FEATURE__KIND_INT64_LIST:
    return "int64";
  default:
    return "no";
  }
}

static int dtype_kind(int32_t dtype) {
  switch (dtype) {
  case WF_FLOAT32:
    return TENSORFLOW__FEATURE__KIND_FLOAT_LIST;
  case WF_INT64:
    return TENSORFLOW__FEATURE__KIND_INT64_LIST;
  default:
    return TENSORFLOW__FEATURE__KIND_BYTES_LIST;
  }
}

static const char *dtype_word(int32_t dtype) {
  switch (dtype) {
  case WF_FLOAT32:
    return "float32";
  case WF_INT64:
    return "int64";
  default:
    return "string";
  }
}

static size_t dtype_bytes(int32_t dtype) {
  return dtype == WF_UINT8 ? 1 : dtype == WF_FLOAT32 ? 4 : 8;
}

static int spec_fail(const char *text, size_t len, wf_status *st,
                     const char *why) {
  wfx_host->status_set(
      st, WF_INVALID_ARGUMENT,
      "tfrecord: feature spec \"%.*s\": %s (the form is "
      "name:dtype:shape[:default], dtype float32, int64 or string, shape "
      "like 28,28 or -1 for variable length)",
      (int)(len > 200 ? 200 : len), text, why);
  return WF_INVALID_ARGUMENT;
}

/* Copies [p, p+n) into buf as a C string; 0 when it does not fit. */
static int cstr(const char *p, size_t n, char *buf, size_t cap) {
  if (n >= cap)
    return 0;
  memcpy(buf, p, n);
  buf[n] = '\0';
  return 1;
}

static int parse_shape(const char *p, size_t n, tfr_spec *out) {
  out->shape.rank = 0;
  out->var_dim = -1;
  out->known = 1;
  if (n == 0)
    return 1; /* a scalar */
  while (1) {
    const char *comma = memchr(p, ',', n);
    size_t k = comma ? (size_t)(comma - p) : n;
    char num[32], *end;
    long long v;

    if (out->shape.rank == WF_MAX_RANK || !cstr(p, k, num, sizeof num) ||
        k == 0)
      return 0;
    errno = 0;
    v = strtoll(num, &end, 10);
    if (*end || errno || v < -1)
      return 0;
    if (v == -1) {
      if (out->var_dim >= 0)
        return 0;
      out->var_dim = out->shape.rank;
      out->shape.dims[out->shape.rank++] = WF_UNKNOWN_DIM;
    } else {
      if (v != 0 && out->known > INT64_MAX / 8 / v)
        return 0;
      out->known *= v;
      out->shape.dims[out->shape.rank++] = v;
    }
    if (!comma)
      return 1;
    p = comma + 1;
    n -= k + 1;
  }
}

/* Parses the numeric default list [p, p+n) into out->def. */
static int parse_numbers(const char *text, size_t tlen, const char *p,
                         size_t n, tfr_spec *out, wf_status *st) {
  int64_t count = n == 0 ? 0 : 1;
  size_t es = dtype_bytes(out->dtype);

  for (size_t i = 0; i < n; i++)
    count += p[i] == ',';
  out->def_count = count;
  if (count == 0)
    return 0;
  out->def = wfx_host->alloc((size_t)count * es, 0);
  if (!out->def) {
    wfx_host->status_set(st, WF_RESOURCE_EXHAUSTED,
                         "tfrecord: out of memory for a default value");
    return WF_RESOURCE_EXHAUSTED;
  }
  for (int64_t i = 0; i < count; i++) {
    const char *comma = memchr(p, ',', n);
    size_t k = comma ? (size_t)(comma - p) : n;
    char num[64], *end;

    if (k == 0 || !cstr(p, k, num, sizeof num))
      return spec_fail(text, tlen, st, "a default value is empty or too long");
    errno = 0;
    if (out->dtype == WF_FLOAT32) {
      float v = strtof(num, &end);
      if (*end || (errno == ERANGE && isinf(v)))
        return spec_fail(text, tlen, st, "a default is not a float32 number");
      ((float *)out->def)[i] = v;
    } else {
      long long v = strtoll(num, &end, 10);
      if (*end || errno)
        return spec_fail(text, tlen, st, "a default is not an int64 number");
      ((int64_t *)out->def)[i] = v;
    }
    if (comma) {
      n -= k + 1;
      p = comma + 1;
    }
  }
  return 0;
}

int tfr_spec_parse(const char *text, size_t len, tfr_spec *out,
                       wf_status *st) {
  const char *end = text + len;
  const char *c1, *c2, *c3;
  char word[16];
  size_t nlen;

  memset(out, 0, sizeof *out);
  out->var_dim = -1;
  c1 = memchr(text, ':', len);
  c2 = c1 ? memchr(c1 + 1, ':', (size_t)(end - c1 - 1)) : NULL;
  if (!c2)
    return spec_fail(text, len, st, "it needs at least name:dtype:shape");
  c3 = memchr(c2 + 1, ':', (size_t)(end - c2 - 1));
  nlen = (size_t)(c1 - text);
  if (nlen == 0)
    return spec_fail(text, len, st, "the name is empty");
  if (nlen >= sizeof out->name)
    return spec_fail(text, len, st, "the name is longer than 63 bytes");
  if (memchr(text, '\0', nlen))
    return spec_fail(text, len, st, "the name holds a NUL byte");
  memcpy(out->name, text, nlen);

  if (!cstr(c1 + 1, (size_t)(c2 - c1 - 1), word, sizeof word))
    return spec_fail(text, len, st, "unknown dtype");
  if (strcmp(word, "float32") == 0 || strcmp(word, "float") == 0)
    out->dtype = WF_FLOAT32;
  else if (strcmp(word, "int64") == 0)
    out->dtype = WF_INT64;
  else if (strcmp(word, "string") == 0 || strcmp(word, "bytes") == 0 ||
           strcmp(word, "uint8") == 0)
    out->dtype = WF_UINT8;
  else
    return spec_fail(text, len, st,
                     "unknown dtype (use float32, int64 or string)");

  if (!parse_shape(c2 + 1, (size_t)((c3 ? c3 : end) - c2 - 1), out))
    return spec_fail(text, len, st,
                     "bad shape: up to 8 comma-separated sizes >= 0, at most "
                     "one of them -1");
  if (!c3)
    return 0;

  out->has_default = 1;
  if (out->dtype == WF_UINT8) {
    out->def_count = (int64_t)(end - c3 - 1);
    if (out->def_count > 0) {
      out->def = wfx_host->alloc((size_t)out->def_count, 0);
      if (!out->def) {
        wfx_host->status_set(st, WF_RESOURCE_EXHAUSTED,
                             "tfrecord: out of memory for a default value");
        return WF_RESOURCE_EXHAUSTED;
      }
      memcpy(out->def, c3 + 1, (size_t)out->def_count);
    }
  } else if (parse_numbers(text, len, c3 + 1, (size_t)(end - c3 - 1), out,
                           st)) {
    goto fail;
  }
  if (out->var_dim < 0 ? !(out->def_count == out->known ||
                           (out->def_count == 1 && out->dtype != WF_UINT8))
                       : (out->known == 0 ? out->def_count != 0
                                          : out->def_count % out->known != 0)) {
    spec_fail(text, len, st,
              "the default does not fit the shape (give one value or as "
              "many as the shape holds; for string, as many bytes)");
    goto fail;
  }
  return 0;

fail:
  tfr_spec_deinit(out);
  return wfx_code(st);
}

void tfr_spec_deinit(tfr_spec *spec) {
  wfx_host->free(spec->def);
  spec->def = NULL;
  spec->def_count = 0;
}

/* ---- the arena -------------------------------------------------------- */

static void *arena_alloc(void *data, size_t size) {
  tfr_arena *a = data;
  void *p;

  if (size > SIZE_MAX / 4)
    goto fail;
  size = (size + 15) & ~(size_t)15;
  if (a->cap - a->used < size) {
    size_t cap = a->cap * 2;
    uint8_t *nb;
    if (cap < size)
      cap = size;
    if (cap < ARENA_MIN)
      cap = ARENA_MIN;
    if (a->block && a->num_retired == a->cap_retired) {
      size_t nc = a->cap_retired ? a->cap_retired * 2 : 8;
      void **nr = wfx_host->alloc(nc * sizeof *nr, 0);
      if (!nr)
        goto fail;
      if (a->num_retired)
        memcpy(nr, a->retired, a->num_retired * sizeof *nr);
      wfx_host->free(a->retired);
      a->retired = nr;
      a->cap_retired = nc;
    }
    nb = wfx_host->alloc(cap, 16);
    if (!nb)
      goto fail;
    if (a->block)
      a->retired[a->num_retired++] = a->block;
    a->block = nb;
    a->cap = cap;
    a->used = 0;
  }
  p = a->block + a->used;
  a->used += size;
  return p;

fail:
  a->failed = 1;
  return NULL;
}

/* Everything is given back at once by arena_reset. */
static void arena_free(void *data, void *p) {
  (void)data;
  (void)p;
}

static void arena_reset(tfr_arena *a) {
  for (size_t i = 0; i < a->num_retired; i++)
    wfx_host->free(a->retired[i]);
  a->num_retired = 0;
  a->used = 0;
  a->failed = 0;
  if (a->cap > ARENA_KEEP) {
    wfx_host->free(a->block);
    a->block = NULL;
    a->cap = 0;
  }
}

static void arena_deinit(tfr_arena *a) {
  arena_reset(a);
  wfx_host->free(a->block);
  wfx_host->free(a->retired);
  memset(a, 0, sizeof *a);
}

/* Unpacks one payload into the arena (reset first). NULL with st set:
 * DATA_LOSS for a payload that is not an Example, RESOURCE_EXHAUSTED. */
static Tensorflow__Example *unpack(tfr_arena *a, ProtobufCAllocator *pa,
                                   const uint8_t *data, size_t len,
                                   const tfr_where *w, wf_status *st) {
  Tensorflow__Example *ex;
  char at[1024];

  arena_reset(a);
  ex = tensorflow__example__unpack(pa, len, data);
  if (ex)
    return ex;
  if (a->failed)
    wfx_host->status_set(st, WF_RESOURCE_EXHAUSTED,
                         "%s: out of memory parsing its %zu-byte "
                         "tf.train.Example",
                         tfr_where_str(w, at, sizeof at), len);
  else
    wfx_host->status_set(st, WF_DATA_LOSS,
                         "%s: the %zu-byte payload is not a valid "
                         "tf.train.Example protobuf",
                         tfr_where_str(w, at, sizeof at), len);
  return NULL;
}

/* ---- the decoder ------------------------------------------------------ */

static uint32_t name_hash(const char *s) {
  uint32_t h = 2166136261u;
  while (*s)
    h = (h ^ (uint8_t)*s++) * 16777619u;
  return h;
}

static int lookup(const tfr_decoder *d, const char *name) {
  for (uint32_t i = name_hash(name) & d->slot_mask;; i = (i + 1) & d->slot_mask) {
    int32_t k = d->slots[i];
    if (k < 0 || strcmp(d->specs[k].name, name) == 0)
      return k;
  }
}

int tfr_decoder_init(tfr_decoder *d, tfr_spec *specs, int num, wf_status *st) {
  uint32_t nslots = 8;

  memset(d, 0, sizeof *d);
  d->specs = specs;
  d->num_specs = num;
  d->pballoc.alloc = arena_alloc;
  d->pballoc.free = arena_free;
  d->pballoc.allocator_data = &d->arena;
  while (nslots < 2 * (uint32_t)num)
    nslots *= 2;
  d->slot_mask = nslots - 1;
  d->slots = wfx_host->alloc(nslots * sizeof *d->slots, 0);
  d->found = wfx_host->alloc((size_t)(num ? num : 1) * sizeof *d->found, 0);
  d->seen = wfx_host->alloc((size_t)(num ? num : 1), 0);
  if (!d->slots || !d->found || !d->seen) {
    wfx_host->status_set(st, WF_RESOURCE_EXHAUSTED,
                         "tfrecord: out of memory for %d feature specs", num);
    goto fail;
  }
  for (uint32_t i = 0; i < nslots; i++)
    d->slots[i] = -1;
  for (int k = 0; k < num; k++) {
    uint32_t i = name_hash(specs[k].name) & d->slot_mask;
    while (d->slots[i] >= 0) {
      if (strcmp(specs[d->slots[i]].name, specs[k].name) == 0) {
        wfx_host->status_set(st, WF_INVALID_ARGUMENT,
                             "tfrecord: feature '%s' is named by two specs",
                             specs[k].name);
        goto fail;
      }
      i = (i + 1) & d->slot_mask;
    }
    d->slots[i] = k;
  }
  return 0;

fail:
  tfr_decoder_deinit(d);
  return wfx_code(st);
}

void tfr_decoder_deinit(tfr_decoder *d) {
  for (int i = 0; i < d->num_specs; i++)
    tfr_spec_deinit(&d->specs[i]);
  wfx_host->free(d->specs);
  wfx_host->free(d->slots);
  wfx_host->free(d->found);
  wfx_host->free(d->seen);
  arena_deinit(&d->arena);
  memset(d, 0, sizeof *d);
}

/* "'a', 'b', 'c'" of the payload's feature names, for messages. */
static const char *present_names(const Tensorflow__Example *ex, char *buf,
                                 size_t len) {
  size_t count = ex->features ? ex->features->n_feature : 0, n = 0;

  if (count == 0)
    return "none";
  buf[0] = '\0';
  for (size_t i = 0; i < count; i++) {
    int w;
    if (i == 8) {
      snprintf(buf + n, len - n, ", ... (%zu in all)", count);
      break;
    }
    w = snprintf(buf + n, len - n, "%s'%.40s'", i ? ", " : "",
                 ex->features->feature[i]->key);
    if (w < 0 || (size_t)w >= len - n)
      break;
    n += (size_t)w;
  }
  return buf;
}

/* Fills t's count elements from spec's default: all of it, or one value
 * repeated. */
static void fill_default(const tfr_spec *spec, void *out, int64_t count) {
  size_t es = dtype_bytes(spec->dtype);
  if (count == 0)
    return;
  if (spec->def_count == count) {
    memcpy(out, spec->def, (size_t)count * es);
    return;
  }
  for (int64_t i = 0; i < count; i++)
    memcpy((uint8_t *)out + (size_t)i * es, spec->def, es);
}

/* The tensor for spec from feature f (seen: the record names it). */
static int make_field(const tfr_decoder *d, const tfr_spec *spec,
                      const Tensorflow__Example *ex,
                      const Tensorflow__Feature *f, int seen,
                      const tfr_where *w, wf_tensor **out, wf_status *st) {
  int kind = f ? (int)f->kind_case : TENSORFLOW__FEATURE__KIND__NOT_SET;
  int want = dtype_kind(spec->dtype);
  int64_t count = 0;
  wf_shape shape = spec->shape;
  char at[1024], buf[512];
  uint8_t *dst;

  (void)d;
  if (!seen && !spec->has_default) {
    wfx_host->status_set(st, WF_DATA_LOSS,
                         "%s: feature '%s' is missing and its spec has no "
                         "default (the record's features: %s)",
                         tfr_where_str(w, at, sizeof at), spec->name,
                         present_names(ex, buf, sizeof buf));
    return WF_DATA_LOSS;
  }
  if (seen && kind != TENSORFLOW__FEATURE__KIND__NOT_SET && kind != want) {
    wfx_host->status_set(st, WF_DATA_LOSS,
                         "%s: feature '%s' holds a %s list; its spec asks for "
                         "%s (a %s list)",
                         tfr_where_str(w, at, sizeof at), spec->name,
                         kind_name(kind), dtype_word(spec->dtype),
                         kind_name(want));
    return WF_DATA_LOSS;
  }
  if (!seen)
    count = spec->var_dim < 0 ? spec->known : spec->def_count;
  else if (kind == TENSORFLOW__FEATURE__KIND_FLOAT_LIST)
    count = (int64_t)f->float_list->n_value;
  else if (kind == TENSORFLOW__FEATURE__KIND_INT64_LIST)
    count = (int64_t)f->int64_list->n_value;
  else if (kind == TENSORFLOW__FEATURE__KIND_BYTES_LIST)
    for (size_t i = 0; i < f->bytes_list->n_value; i++)
      count += (int64_t)f->bytes_list->value[i].len;

  if (spec->var_dim < 0 ? count != spec->known
                        : (spec->known == 0 ? count != 0
                                            : count % spec->known != 0)) {
    wfx_host->status_set(st, WF_DATA_LOSS,
                         "%s: feature '%s' has %" PRId64 " %s; its shape %s "
                         "cannot hold them",
                         tfr_where_str(w, at, sizeof at), spec->name, count,
                         spec->dtype == WF_UINT8 ? "bytes" : "values",
                         wfx_shape_str(&spec->shape, buf, sizeof buf));
    return WF_DATA_LOSS;
  }
  if (spec->var_dim >= 0)
    shape.dims[spec->var_dim] = spec->known ? count / spec->known : 0;

  *out = wfx_host->tensor_new(spec->dtype, &shape, st);
  if (!*out)
    return wfx_code(st);
  dst = wfx_data(*out);
  if (!seen)
    fill_default(spec, dst, count);
  else if (kind == TENSORFLOW__FEATURE__KIND_FLOAT_LIST && count)
    memcpy(dst, f->float_list->value, (size_t)count * sizeof(float));
  else if (kind == TENSORFLOW__FEATURE__KIND_INT64_LIST && count)
    memcpy(dst, f->int64_list->value, (size_t)count * sizeof(int64_t));
  else if (kind == TENSORFLOW__FEATURE__KIND_BYTES_LIST)
    for (size_t i = 0; i < f->bytes_list->n_value; i++) {
      size_t n = f->bytes_list->value[i].len;
      if (n)
        memcpy(dst, f->bytes_list->value[i].data, n);
      dst += n;
    }
  return 0;
}

int tfr_decoder_decode(tfr_decoder *d, const uint8_t *data, size_t len,
                       const tfr_where *w, wf_tensor **fields, wf_status *st) {
  Tensorflow__Example *ex;
  int i = 0;

  ex = unpack(&d->arena, &d->pballoc, data, len, w, st);
  if (!ex)
    return -wfx_code(st);
  memset(d->found, 0, (size_t)d->num_specs * sizeof *d->found);
  memset(d->seen, 0, (size_t)d->num_specs);
  /* A name given twice keeps its last value, as protobuf maps do. */
  if (ex->features)
    for (size_t e = 0; e < ex->features->n_feature; e++) {
      const Tensorflow__Features__FeatureEntry *entry =
          ex->features->feature[e];
      int k = lookup(d, entry->key);
      if (k >= 0) {
        d->found[k] = entry->value;
        d->seen[k] = 1;
      }
    }
  for (i = 0; i < d->num_specs; i++)
    if (make_field(d, &d->specs[i], ex, d->found[i], d->seen[i], w,
                   &fields[i], st))
      goto fail;
  return 0;

fail:
  for (int j = 0; j < i; j++) {
    wfx_host->tensor_release(fields[j]);
    fields[j] = NULL;
  }
  fields[i] = NULL;
  return -wfx_code(st);
}

/* ---- schema inference ------------------------------------------------- */

typedef struct entry_ref {
  const char *key;
  size_t index;
  const Tensorflow__Feature *value;
} entry_ref;

/* By name, then by position, so the last of equal names sorts last. */
static int entry_cmp(const void *a, const void *b) {
  const entry_ref *x = a, *y = b;
  int c = strcmp(x->key, y->key);
  if (c)
    return c;
  return x->index < y->index ? -1 : x->index > y->index;
}

int tfr_infer_specs(const uint8_t *data, size_t len, const tfr_where *w,
                    tfr_spec **specs, int *num, wf_status *st) {
  tfr_arena arena = {0};
  ProtobufCAllocator pa = {arena_alloc, arena_free, &arena};
  Tensorflow__Example *ex;
  tfr_spec *out = NULL;
  entry_ref *refs = NULL;
  size_t count, n = 0;
  char at[1024];

  *specs = NULL;
  *num = 0;
  ex = unpack(&arena, &pa, data, len, w, st);
  if (!ex)
    goto fail;
  count = ex->features ? ex->features->n_feature : 0;
  if (count > INT32_MAX / 2) {
    wfx_host->status_set(st, WF_INVALID_ARGUMENT, "%s: too many features",
                         tfr_where_str(w, at, sizeof at));
    goto fail;
  }
  out = wfx_host->alloc((count ? count : 1) * sizeof *out, 0);
  refs = wfx_host->alloc((count ? count : 1) * sizeof *refs, 0);
  if (!out || !refs) {
    wfx_host->status_set(st, WF_RESOURCE_EXHAUSTED,
                         "tfrecord: out of memory for %zu feature specs",
                         count);
    goto fail;
  }
  for (size_t e = 0; e < count; e++) {
    refs[e].key = ex->features->feature[e]->key;
    refs[e].index = e;
    refs[e].value = ex->features->feature[e]->value;
  }
  qsort(refs, count, sizeof *refs, entry_cmp);
  for (size_t e = 0; e < count; e++) {
    const Tensorflow__Feature *f = refs[e].value;
    size_t klen = strlen(refs[e].key);
    tfr_spec *s;

    /* A name given twice: its last value counts. */
    if (e + 1 < count && strcmp(refs[e].key, refs[e + 1].key) == 0)
      continue;
    if (!f || f->kind_case == TENSORFLOW__FEATURE__KIND__NOT_SET)
      continue; /* nothing says what type it holds */
    if (klen == 0 || klen >= sizeof out->name) {
      wfx_host->status_set(st, WF_INVALID_ARGUMENT,
                           "%s: feature name '%.80s' cannot name a field (1 to "
                           "63 bytes); select features with the 'features' "
                           "option",
                           tfr_where_str(w, at, sizeof at), refs[e].key);
      goto fail;
    }
    s = &out[n++];
    memset(s, 0, sizeof *s);
    memcpy(s->name, refs[e].key, klen);
    s->dtype = f->kind_case == TENSORFLOW__FEATURE__KIND_FLOAT_LIST ? WF_FLOAT32
               : f->kind_case == TENSORFLOW__FEATURE__KIND_INT64_LIST
                   ? WF_INT64
                   : WF_UINT8;
    s->shape.rank = 1;
    s->shape.dims[0] = WF_UNKNOWN_DIM;
    s->var_dim = 0;
    s->known = 1;
  }
  wfx_host->free(refs);
  arena_deinit(&arena);
  *specs = out;
  *num = (int)n;
  return 0;

fail:
  wfx_host->free(refs);
  wfx_host->free(out);
  arena_deinit(&arena);
  return wfx_code(st);
}
