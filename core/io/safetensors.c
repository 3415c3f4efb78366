/* core/io/safetensors.c — safetensors files: the strict header parser, reads
 * of one tensor at a time with its CRC-32C checked, and the atomic writer
 * (temporary file, fsync, rename, directory fsync).
 *
 * It knows nothing of sessions or variables (core/io/checkpoint.c) and keeps
 * no tensor data in memory: the file stays open and tensors are read with
 * pread when asked for. */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/alloc.h"
#include "io/crc32c.h"
#include "io/file_io.h"
#include "io/safetensors.h"
#include "base/status_internal.h"

/* Pieces in which tensors are checksummed and byte-swapped. */
#define CHUNK ((size_t)1 << 20)

static const struct {
  const char *name;
  wf_dtype dtype;
} dtypes[] = {{"F32", WF_FLOAT32},   {"F64", WF_FLOAT64}, {"F16", WF_FLOAT16},
              {"BF16", WF_BFLOAT16}, {"I8", WF_INT8},     {"U8", WF_UINT8},
              {"I32", WF_INT32},     {"I64", WF_INT64},   {"BOOL", WF_BOOL}};
#define NUM_DTYPES (int)(sizeof dtypes / sizeof dtypes[0])
#define DTYPE_LIST "F32, F64, F16, BF16, I8, U8, I32, I64, BOOL"

/* Safetensors dtypes that are well-formed but that weft cannot hold. */
static const char *const foreign_dtypes[] = {
    "I16",     "U16",     "U32",     "U64", "F8_E5M2", "F8_E4M3",
    "F8_E8M0", "F6_E2M3", "F6_E3M2", "F4",  "C64"};

const char *wf__st_dtype_name(wf_dtype dtype) {
  for (int i = 0; i < NUM_DTYPES; i++)
    if (dtypes[i].dtype == dtype)
      return dtypes[i].name;
  return NULL;
}

/* ---- byte order ---------------------------------------------------------- */

/* Files hold little-endian elements; on a big-endian host each element of
 * esize bytes is reversed in place (both directions). */
static void swap_le(void *p, size_t n, size_t esize) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  unsigned char *b = p;
  for (size_t i = 0; esize > 1 && i + esize <= n; i += esize)
    for (size_t k = 0; k < esize / 2; k++) {
      unsigned char t = b[i + k];
      b[i + k] = b[i + esize - 1 - k];
      b[i + esize - 1 - k] = t;
    }
#else
  (void)p, (void)n, (void)esize;
#endif
}

static int host_is_le(void) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  return 0;
#else
  return 1;
#endif
}

/* ---- reading ------------------------------------------------------------- */

/* Reads n bytes at off. Returns 0, an errno value, or -1 when the file ends
 * first. */
static int pread_full(int fd, void *buf, size_t n, uint64_t off) {
  unsigned char *p = buf;
  while (n > 0) {
    size_t want = n > ((size_t)1 << 30) ? (size_t)1 << 30 : n;
    ssize_t got = pread(fd, p, want, (off_t)off);
    if (got < 0) {
      if (errno == EINTR)
        continue;
      return errno;
    }
    if (got == 0)
      return -1;
    p += got;
    n -= (size_t)got;
    off += (uint64_t)got;
  }
  return 0;
}

static uint64_t le64(const unsigned char *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--)
    v = v << 8 | p[i];
  return v;
}

static int bad(wf_status *st, const wf_checkpoint *c, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* DATA_LOSS with "PATH: " in front of the message. */
static int bad(wf_status *st, const wf_checkpoint *c, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  wf__status_vset(st, WF_DATA_LOSS, fmt, ap);
  va_end(ap);
  wf_status_prefix(st, "%s", c->path);
  return WF_DATA_LOSS;
}

static int find_dtype(const char *name, wf_dtype *out) {
  for (int i = 0; i < NUM_DTYPES; i++)
    if (strcmp(dtypes[i].name, name) == 0) {
      *out = dtypes[i].dtype;
      return 1;
    }
  return 0;
}

static int is_foreign_dtype(const char *name) {
  for (size_t i = 0; i < sizeof foreign_dtypes / sizeof *foreign_dtypes; i++)
    if (strcmp(foreign_dtypes[i], name) == 0)
      return 1;
  return 0;
}

static const char *json_kind(const json_t *v) {
  switch (json_typeof(v)) {
  case JSON_OBJECT:
    return "an object";
  case JSON_ARRAY:
    return "an array";
  case JSON_STRING:
    return "a string";
  case JSON_INTEGER:
    return "an integer";
  case JSON_REAL:
    return "a real number";
  case JSON_TRUE:
  case JSON_FALSE:
    return "a boolean";
  default:
    return "null";
  }
}

/* Checks one tensor entry and fills t (name included). */
static int parse_tensor(wf_checkpoint *c, const char *name, json_t *v,
                        uint64_t data_len, wf__st_tensor *t, wf_status *st) {
  const char *key;
  json_t *field, *dtype = NULL, *shape = NULL, *offsets = NULL;
  uint64_t count = 1, nbytes;
  size_t rank;
  char buf[160];

  if (!*name)
    return bad(st, c, "a tensor has an empty name");
  if (!json_is_object(v))
    return bad(st, c, "tensor '%s': its entry is %s, not an object", name,
               json_kind(v));
  json_object_foreach(v, key, field) {
    if (strcmp(key, "dtype") == 0)
      dtype = field;
    else if (strcmp(key, "shape") == 0)
      shape = field;
    else if (strcmp(key, "data_offsets") == 0)
      offsets = field;
    else
      return bad(st, c, "tensor '%s': unexpected field '%s'", name, key);
  }
  if (!dtype || !shape || !offsets)
    return bad(st, c, "tensor '%s': no '%s'", name,
               !dtype   ? "dtype"
               : !shape ? "shape"
                        : "data_offsets");

  if (!json_is_string(dtype))
    return bad(st, c, "tensor '%s': dtype is %s, not a string", name,
               json_kind(dtype));
  if (!find_dtype(json_string_value(dtype), &t->dtype)) {
    if (is_foreign_dtype(json_string_value(dtype)))
      return wf_status_set(st, WF_UNIMPLEMENTED,
                           "%s: tensor '%s': dtype %s is not one weft has "
                           "(" DTYPE_LIST ")",
                           c->path, name, json_string_value(dtype));
    return bad(st, c,
               "tensor '%s': unknown dtype '%s' (weft reads " DTYPE_LIST ")",
               name, json_string_value(dtype));
  }

  if (!json_is_array(shape))
    return bad(st, c, "tensor '%s': shape is %s, not an array", name,
               json_kind(shape));
  rank = json_array_size(shape);
  for (size_t i = 0; i < rank; i++) {
    json_t *d = json_array_get(shape, i);
    json_int_t dim = json_is_integer(d) ? json_integer_value(d) : -1;
    if (!json_is_integer(d) || dim < 0)
      return bad(st, c, "tensor '%s': shape[%zu] is %s%s", name, i,
                 json_is_integer(d) ? "negative" : json_kind(d),
                 json_is_integer(d) ? "" : ", not a dimension");
    if (__builtin_mul_overflow(count, (uint64_t)dim, &count))
      return bad(st, c, "tensor '%s': the shape's element count overflows",
                 name);
    if (i < WF_MAX_RANK)
      t->shape.dims[i] = dim;
  }
  if (rank > WF_MAX_RANK)
    return wf_status_set(st, WF_UNIMPLEMENTED,
                         "%s: tensor '%s': rank %zu is above weft's limit "
                         "of %d",
                         c->path, name, rank, WF_MAX_RANK);
  t->shape.rank = (int32_t)rank;
  if (count > (uint64_t)INT64_MAX ||
      __builtin_mul_overflow(count, (uint64_t)wf_dtype_size(t->dtype),
                             &nbytes) ||
      nbytes > (uint64_t)SIZE_MAX)
    return bad(st, c, "tensor '%s': the shape's byte size overflows", name);

  if (!json_is_array(offsets) || json_array_size(offsets) != 2 ||
      !json_is_integer(json_array_get(offsets, 0)) ||
      !json_is_integer(json_array_get(offsets, 1)))
    return bad(st, c,
               "tensor '%s': data_offsets is not an array of two "
               "integers",
               name);
  json_int_t b = json_integer_value(json_array_get(offsets, 0));
  json_int_t e = json_integer_value(json_array_get(offsets, 1));
  if (b < 0 || e < b)
    return bad(st, c, "tensor '%s': data_offsets [%lld, %lld] is not a range",
               name, (long long)b, (long long)e);
  if ((uint64_t)e > data_len)
    return bad(st, c,
               "tensor '%s': data_offsets [%lld, %lld] run past the "
               "end of the data (%" PRIu64 " bytes)",
               name, (long long)b, (long long)e, data_len);
  if ((uint64_t)(e - b) != nbytes)
    return bad(st, c,
               "tensor '%s': data_offsets [%lld, %lld] hold %lld "
               "bytes, but a %s %s tensor has %" PRIu64,
               name, (long long)b, (long long)e, (long long)(e - b),
               json_string_value(dtype),
               wf_shape_str(&t->shape, buf, sizeof buf), nbytes);
  t->begin = (uint64_t)b;
  t->end = (uint64_t)e;
  t->name = wf__strdup(name);
  if (!t->name)
    return wf_status_set(st, WF_RESOURCE_EXHAUSTED, "%s: out of memory",
                         c->path);
  return WF_OK;
}

static int by_offsets(const void *a, const void *b) {
  const wf__st_tensor *x = *(wf__st_tensor *const *)a;
  const wf__st_tensor *y = *(wf__st_tensor *const *)b;
  if (x->begin != y->begin)
    return x->begin < y->begin ? -1 : 1;
  return x->end < y->end ? -1 : x->end > y->end;
}

static int by_name(const void *a, const void *b) {
  return strcmp(((const wf__st_tensor *)a)->name,
                ((const wf__st_tensor *)b)->name);
}

/* The tensors' bytes must tile the data section: sorted by offset, each
 * starts where the one before it ended, and the last ends at the end. */
static int check_layout(wf_checkpoint *c, uint64_t data_len, wf_status *st) {
  wf__st_tensor **order;
  uint64_t at = 0;
  int code = WF_OK;

  if (c->ntensors == 0)
    goto tail;
  order = wf__calloc((size_t)c->ntensors, sizeof *order);
  if (!order)
    return wf_status_set(st, WF_RESOURCE_EXHAUSTED, "%s: out of memory",
                         c->path);
  for (int i = 0; i < c->ntensors; i++)
    order[i] = &c->tensors[i];
  qsort(order, (size_t)c->ntensors, sizeof *order, by_offsets);
  for (int i = 0; i < c->ntensors && !code; i++) {
    const wf__st_tensor *t = order[i];
    if (t->begin < at)
      code = bad(st, c,
                 "tensor '%s' (data_offsets [%" PRIu64 ", %" PRIu64
                 "]) overlaps tensor '%s' (data_offsets [%" PRIu64 ", %" PRIu64
                 "])",
                 t->name, t->begin, t->end, order[i - 1]->name,
                 order[i - 1]->begin, order[i - 1]->end);
    else if (t->begin > at)
      code = bad(st, c,
                 "tensor '%s' starts at data offset %" PRIu64
                 ", but the tensors before it end at %" PRIu64
                 " (bytes between tensors)",
                 t->name, t->begin, at);
    at = t->end;
  }
  wf__free(order);
  if (code)
    return code;
tail:
  if (at != data_len)
    return bad(st, c,
               "%" PRIu64 " bytes follow the last tensor's data (the data "
               "section has %" PRIu64 ")",
               data_len - at, data_len);
  return WF_OK;
}

static int parse_hex32(const char *s, uint32_t *out) {
  uint32_t v = 0;
  int i;
  for (i = 0; s[i]; i++) {
    int d;
    if (s[i] >= '0' && s[i] <= '9')
      d = s[i] - '0';
    else if (s[i] >= 'a' && s[i] <= 'f')
      d = s[i] - 'a' + 10;
    else if (s[i] >= 'A' && s[i] <= 'F')
      d = s[i] - 'A' + 10;
    else
      return 0;
    if (i >= 8)
      return 0;
    v = v << 4 | (uint32_t)d;
  }
  *out = v;
  return i == 8;
}

static int by_key(const void *a, const void *b) {
  return strcmp(**(char **const *)a, **(char **const *)b);
}

/* Copies the metadata, sorted by key, and attaches the checksums. */
static int parse_meta(wf_checkpoint *c, json_t *meta, wf_status *st) {
  const char *key;
  json_t *v;
  size_t n = json_object_size(meta), k = 0;
  char ***pairs = NULL;
  const char *format;
  int code = WF_OK;

  if (!json_is_object(meta))
    return bad(st, c, "__metadata__ is %s, not an object", json_kind(meta));
  c->meta_keys = wf__calloc(n + 1, sizeof *c->meta_keys);
  c->meta_values = wf__calloc(n + 1, sizeof *c->meta_values);
  pairs = wf__calloc(n + 1, sizeof *pairs);
  if (!c->meta_keys || !c->meta_values || !pairs)
    goto oom;
  json_object_foreach(meta, key, v) {
    if (!json_is_string(v)) {
      code = bad(st, c, "metadata '%s' is %s, not a string", key, json_kind(v));
      goto out;
    }
    c->meta_keys[k] = wf__strdup(key);
    c->meta_values[k] = wf__strdup(json_string_value(v));
    c->nmeta = (int)++k;
    if (!c->meta_keys[k - 1] || !c->meta_values[k - 1])
      goto oom;
  }
  /* Sort the pairs together: sort pointers to keys, then permute. */
  for (size_t i = 0; i < n; i++)
    pairs[i] = &c->meta_keys[i];
  qsort(pairs, n, sizeof *pairs, by_key);
  {
    char **keys = wf__calloc(n + 1, sizeof *keys);
    char **vals = wf__calloc(n + 1, sizeof *vals);
    if (!keys || !vals) {
      wf__free(keys);
      wf__free(vals);
      goto oom;
    }
    for (size_t i = 0; i < n; i++) {
      size_t from = (size_t)(pairs[i] - c->meta_keys);
      keys[i] = c->meta_keys[from];
      vals[i] = c->meta_values[from];
    }
    wf__free(c->meta_keys);
    wf__free(c->meta_values);
    c->meta_keys = keys;
    c->meta_values = vals;
  }

  format = wf__st_meta(c, WF__ST_FORMAT_KEY);
  if (format && strcmp(format, "1") != 0) {
    code = wf_status_set(st, WF_UNIMPLEMENTED,
                         "%s: %s is '%s'; this build reads format 1", c->path,
                         WF__ST_FORMAT_KEY, format);
    goto out;
  }
  for (int i = 0; i < c->nmeta; i++) {
    const char *k2 = c->meta_keys[i];
    size_t plen = strlen(WF__ST_CRC_PREFIX);
    if (strncmp(k2, WF__ST_CRC_PREFIX, plen) != 0)
      continue;
    int t = wf__st_find(c, k2 + plen);
    if (t < 0) {
      code = bad(st, c,
                 "metadata '%s' is the checksum of a tensor the file "
                 "does not have",
                 k2);
      goto out;
    }
    if (!parse_hex32(c->meta_values[i], &c->tensors[t].crc)) {
      code = bad(st, c, "tensor '%s': its checksum '%s' is not 8 hex digits",
                 c->tensors[t].name, c->meta_values[i]);
      goto out;
    }
    c->tensors[t].has_crc = 1;
  }
  goto out;

oom:
  code = wf_status_set(st, WF_RESOURCE_EXHAUSTED, "%s: out of memory", c->path);
out:
  wf__free(pairs);
  return code;
}

static int parse_header(wf_checkpoint *c, const char *text, size_t len,
                        uint64_t data_len, wf_status *st) {
  json_error_t jerr;
  json_t *root, *meta, *v;
  const char *key;
  int code = WF_OK, k = 0;

  root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
  if (!root)
    return bad(st, c, "the header is not valid JSON: %s (header byte %d)",
               jerr.text, jerr.position);
  if (!json_is_object(root)) {
    code = bad(st, c, "the header is %s, not a JSON object", json_kind(root));
    goto out;
  }
  meta = json_object_get(root, "__metadata__");
  c->tensors = wf__calloc(json_object_size(root) + 1, sizeof *c->tensors);
  if (!c->tensors) {
    code =
        wf_status_set(st, WF_RESOURCE_EXHAUSTED, "%s: out of memory", c->path);
    goto out;
  }
  json_object_foreach(root, key, v) {
    if (strcmp(key, "__metadata__") == 0)
      continue;
    code = parse_tensor(c, key, v, data_len, &c->tensors[k], st);
    if (code)
      goto out;
    c->ntensors = ++k;
  }
  if ((code = check_layout(c, data_len, st)) != WF_OK)
    goto out;
  qsort(c->tensors, (size_t)c->ntensors, sizeof *c->tensors, by_name);
  if (meta && (code = parse_meta(c, meta, st)) != WF_OK)
    goto out;
  if (wf__st_meta(c, WF__ST_FORMAT_KEY))
    for (int i = 0; i < c->ntensors; i++)
      if (!c->tensors[i].has_crc) {
        code = bad(st, c, "tensor '%s' has no checksum (metadata '%s%s')",
                   c->tensors[i].name, WF__ST_CRC_PREFIX, c->tensors[i].name);
        goto out;
      }
out:
  json_decref(root);
  return code;
}

wf_checkpoint *wf__st_open(const char *path, wf_status *st) {
  wf_checkpoint *c = wf__calloc(1, sizeof *c);
  unsigned char len8[8];
  char *header = NULL;
  struct stat sb;
  uint64_t hlen;
  int rc;

  if (!c || !(c->path = wf__strdup(path))) {
    wf_status_set(st, WF_RESOURCE_EXHAUSTED, "%s: out of memory", path);
    goto fail;
  }
  c->fd = open(path, O_RDONLY | O_CLOEXEC);
  if (c->fd < 0) {
    wf__io_error(st, errno, path, "opening");
    goto fail;
  }
  if (fstat(c->fd, &sb) != 0) {
    wf__io_error(st, errno, path, "reading its size");
    goto fail;
  }
  if (!S_ISREG(sb.st_mode)) {
    wf_status_set(st, WF_INVALID_ARGUMENT, "%s: not a regular file", path);
    goto fail;
  }
  c->size = (uint64_t)sb.st_size;
  if (c->size < 8) {
    bad(st, c,
        "truncated: the file has %" PRIu64 " bytes, fewer than the "
        "8-byte header length",
        c->size);
    goto fail;
  }
  if ((rc = pread_full(c->fd, len8, 8, 0)) != 0)
    goto read_error;
  hlen = le64(len8);
  if (hlen > c->size - 8) {
    bad(st, c,
        "the header length %" PRIu64 " runs past the end of the file "
        "(%" PRIu64 " bytes after the length)",
        hlen, c->size - 8);
    goto fail;
  }
  if (hlen > WF__ST_HEADER_MAX) {
    bad(st, c,
        "the header length %" PRIu64 " is above the limit of %" PRIu64 " bytes",
        hlen, WF__ST_HEADER_MAX);
    goto fail;
  }
  header = wf__alloc((size_t)hlen + 1, 0);
  if (!header) {
    wf_status_set(st, WF_RESOURCE_EXHAUSTED,
                  "%s: out of memory for a header of %" PRIu64 " bytes", path,
                  hlen);
    goto fail;
  }
  if ((rc = pread_full(c->fd, header, (size_t)hlen, 8)) != 0)
    goto read_error;
  c->data_start = 8 + hlen;
  if (parse_header(c, header, (size_t)hlen, c->size - c->data_start, st))
    goto fail;
  wf__free(header);
  return c;

read_error:
  if (rc < 0)
    bad(st, c, "the file shrank while it was read");
  else
    wf__io_error(st, rc, path, "reading");
fail:
  wf__free(header);
  wf__st_close(c);
  return NULL;
}

void wf__st_close(wf_checkpoint *c) {
  if (!c)
    return;
  if (c->fd >= 0)
    close(c->fd);
  for (int i = 0; i < c->ntensors; i++)
    wf__free(c->tensors[i].name);
  wf__free(c->tensors);
  for (int i = 0; i < c->nmeta; i++) {
    wf__free(c->meta_keys[i]);
    wf__free(c->meta_values[i]);
  }
  wf__free(c->meta_keys);
  wf__free(c->meta_values);
  wf__free(c->path);
  wf__free(c);
}

int wf__st_find(const wf_checkpoint *c, const char *name) {
  int lo = 0, hi = c->ntensors - 1;
  while (lo <= hi) {
    int mid = lo + (hi - lo) / 2;
    int cmp = strcmp(c->tensors[mid].name, name);
    if (cmp == 0)
      return mid;
    if (cmp < 0)
      lo = mid + 1;
    else
      hi = mid - 1;
  }
  return -1;
}

const char *wf__st_meta(const wf_checkpoint *c, const char *key) {
  int lo = 0, hi = c->nmeta - 1;
  while (lo <= hi) {
    int mid = lo + (hi - lo) / 2;
    int cmp = strcmp(c->meta_keys[mid], key);
    if (cmp == 0)
      return c->meta_values[mid];
    if (cmp < 0)
      lo = mid + 1;
    else
      hi = mid - 1;
  }
  return NULL;
}

static int read_failed(const wf_checkpoint *c, const wf__st_tensor *t, int rc,
                       wf_status *st) {
  if (rc < 0)
    return wf_status_set(st, WF_DATA_LOSS,
                         "%s: tensor '%s': the file ends inside its data "
                         "(it shrank after it was opened)",
                         c->path, t->name);
  wf__io_error(st, rc, c->path, "reading");
  wf_status_prefix(st, "tensor '%s'", t->name);
  return wf_status_code(st);
}

static int crc_mismatch(const wf_checkpoint *c, const wf__st_tensor *t,
                        uint32_t crc, wf_status *st) {
  return wf_status_set(st, WF_DATA_LOSS,
                       "%s: tensor '%s': checksum mismatch: the file says "
                       "%08" PRIx32 ", its data has %08" PRIx32,
                       c->path, t->name, t->crc, crc);
}

int wf__st_read(const wf_checkpoint *c, int i, void *buf, wf_status *st) {
  const wf__st_tensor *t = &c->tensors[i];
  size_t n = (size_t)(t->end - t->begin);
  int rc = pread_full(c->fd, buf, n, c->data_start + t->begin);

  if (rc)
    return read_failed(c, t, rc, st);
  if (t->has_crc) {
    uint32_t crc = wf__crc32c(0, buf, n);
    if (crc != t->crc)
      return crc_mismatch(c, t, crc, st);
  }
  swap_le(buf, n, wf_dtype_size(t->dtype));
  if (t->dtype == WF_BOOL) {
    unsigned char *b = buf;
    for (size_t k = 0; k < n; k++)
      b[k] = b[k] != 0;
  }
  return WF_OK;
}

int wf__st_check(const wf_checkpoint *c, int i, wf_status *st) {
  const wf__st_tensor *t = &c->tensors[i];
  uint64_t n = t->end - t->begin, done = 0;
  size_t cap = n < CHUNK ? (size_t)n : CHUNK;
  unsigned char *buf;
  uint32_t crc = 0;
  int rc = 0;

  if (!t->has_crc)
    return WF_OK;
  buf = wf__alloc(cap ? cap : 1, 0);
  if (!buf)
    return wf_status_set(st, WF_RESOURCE_EXHAUSTED, "%s: out of memory",
                         c->path);
  while (done < n) {
    size_t k = n - done < cap ? (size_t)(n - done) : cap;
    if ((rc = pread_full(c->fd, buf, k, c->data_start + t->begin + done)))
      break;
    crc = wf__crc32c(crc, buf, k);
    done += k;
  }
  wf__free(buf);
  if (rc)
    return read_failed(c, t, rc, st);
  return crc != t->crc ? crc_mismatch(c, t, crc, st) : WF_OK;
}

/* ---- writing ------------------------------------------------------------- */

/* The entry's bytes in file order, a piece at a time: f(piece) for each;
 * on a little-endian host the pieces are the tensor's own memory. Returns
 * f's first non-zero result. */
typedef int piece_fn(const void *p, size_t n, void *arg);

static int each_piece(const wf__st_entry *e, size_t nbytes,
                      unsigned char *scratch, piece_fn *f, void *arg) {
  const unsigned char *p = e->data;
  size_t esize = wf_dtype_size(e->dtype);
  if (host_is_le() || esize == 1)
    return nbytes ? f(p, nbytes, arg) : 0;
  for (size_t done = 0; done < nbytes;) {
    size_t k = nbytes - done < CHUNK ? nbytes - done : CHUNK;
    int rc;
    memcpy(scratch, p + done, k);
    swap_le(scratch, k, esize);
    if ((rc = f(scratch, k, arg)) != 0)
      return rc;
    done += k;
  }
  return 0;
}

static int crc_piece(const void *p, size_t n, void *arg) {
  uint32_t *crc = arg;
  *crc = wf__crc32c(*crc, p, n);
  return 0;
}

typedef struct write_ctx {
  wf__atomic_file *f;
  wf_status *st;
} write_ctx;

static int write_piece(const void *p, size_t n, void *arg) {
  write_ctx *w = arg;
  return wf__atomic_write(w->f, p, n, w->st);
}

static int by_string(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Names: non-empty, not reserved, unique; metadata keys: not weft's own,
 * unique. */
static int check_names(const char *path, const wf__st_entry *e, int n,
                       const char *const *keys, int nmeta, wf_status *st) {
  const char **sorted =
      wf__calloc((size_t)(n > nmeta ? n : nmeta) + 1, sizeof *sorted);
  int code = WF_OK;

  if (!sorted)
    return wf_status_set(st, WF_RESOURCE_EXHAUSTED, "%s: out of memory", path);
  for (int i = 0; i < n && !code; i++) {
    sorted[i] = e[i].name;
    if (!e[i].name || !*e[i].name)
      code = wf_status_set(st, WF_INVALID_ARGUMENT,
                           "%s: tensor %d has an empty name", path, i);
    else if (strcmp(e[i].name, "__metadata__") == 0)
      code = wf_status_set(st, WF_INVALID_ARGUMENT,
                           "%s: '__metadata__' cannot name a tensor", path);
    else if (!wf__st_dtype_name(e[i].dtype))
      code = wf_status_set(
          st, WF_INVALID_ARGUMENT,
          "%s: tensor '%s': %s tensors cannot be saved", path, e[i].name,
          wf_dtype_name(e[i].dtype) ? wf_dtype_name(e[i].dtype) : "invalid");
    else if (!wf_shape_is_known(&e[i].shape))
      code = wf_status_set(st, WF_INVALID_ARGUMENT,
                           "%s: tensor '%s': the shape is not fully known",
                           path, e[i].name);
  }
  if (!code && n > 1) {
    qsort(sorted, (size_t)n, sizeof *sorted, by_string);
    for (int i = 1; i < n && !code; i++)
      if (strcmp(sorted[i - 1], sorted[i]) == 0)
        code =
            wf_status_set(st, WF_INVALID_ARGUMENT,
                          "%s: two tensors are called '%s'", path, sorted[i]);
  }
  for (int i = 0; i < nmeta && !code; i++) {
    sorted[i] = keys[i];
    if (!keys[i])
      code = wf_status_set(st, WF_INVALID_ARGUMENT,
                           "%s: metadata key %d is NULL", path, i);
    else if (strcmp(keys[i], WF__ST_FORMAT_KEY) == 0 ||
             strncmp(keys[i], WF__ST_CRC_PREFIX, strlen(WF__ST_CRC_PREFIX)) ==
                 0)
      code =
          wf_status_set(st, WF_INVALID_ARGUMENT,
                        "%s: metadata key '%s' is weft's own", path, keys[i]);
  }
  if (!code && nmeta > 1) {
    qsort(sorted, (size_t)nmeta, sizeof *sorted, by_string);
    for (int i = 1; i < nmeta && !code; i++)
      if (strcmp(sorted[i - 1], sorted[i]) == 0)
        code = wf_status_set(st, WF_INVALID_ARGUMENT,
                             "%s: metadata key '%s' is given twice", path,
                             sorted[i]);
  }
  wf__free(sorted);
  return code;
}

/* The header's JSON (the metadata, then the tensors in the entries'
 * order), or NULL with st set. The jansson *_new calls take over their
 * value even when they fail. */
static char *make_header(const char *path, const wf__st_entry *e, int n,
                         const size_t *nbytes, const uint32_t *crcs,
                         const char *const *keys, const char *const *values,
                         int nmeta, wf_status *st) {
  json_t *root = json_object(), *meta = json_object();
  char *text = NULL, *key = NULL, crc[16];
  uint64_t at = 0;

  if (!root || !meta || json_object_set(root, "__metadata__", meta) != 0 ||
      json_object_set_new(meta, WF__ST_FORMAT_KEY, json_string("1")) != 0)
    goto oom;
  for (int i = 0; i < nmeta; i++) {
    json_t *v = values[i] ? json_string(values[i]) : NULL;
    if (!v || json_object_set_new(meta, keys[i], v) != 0) {
      wf_status_set(st, WF_INVALID_ARGUMENT, "%s: metadata '%s': %s", path,
                    keys[i],
                    values[i] ? "the key or the value is not valid UTF-8"
                              : "the value is NULL");
      goto out;
    }
  }
  for (int i = 0; i < n; i++) {
    json_t *t = json_object(), *shape = json_array();
    if (!t || !shape) {
      json_decref(t);
      json_decref(shape);
      goto oom;
    }
    for (int d = 0; d < e[i].shape.rank; d++)
      if (json_array_append_new(shape, json_integer(e[i].shape.dims[d]))) {
        json_decref(t);
        json_decref(shape);
        goto oom;
      }
    if (json_object_set_new(t, "shape", shape) != 0 ||
        json_object_set_new(t, "dtype",
                            json_string(wf__st_dtype_name(e[i].dtype))) ||
        json_object_set_new(
            t, "data_offsets",
            json_pack("[II]", (json_int_t)at, (json_int_t)(at + nbytes[i])))) {
      json_decref(t);
      goto oom;
    }
    if (json_object_set_new(root, e[i].name, t) != 0) {
      wf_status_set(st, WF_INVALID_ARGUMENT,
                    "%s: tensor name '%s' is not valid UTF-8", path, e[i].name);
      goto out;
    }
    snprintf(crc, sizeof crc, "%08" PRIx32, crcs[i]);
    key = wf__asprintf(WF__ST_CRC_PREFIX "%s", e[i].name);
    if (!key || json_object_set_new(meta, key, json_string(crc)) != 0)
      goto oom;
    wf__free(key);
    key = NULL;
    at += nbytes[i];
  }
  text = json_dumps(root, JSON_COMPACT);
  if (text)
    goto out;
oom:
  wf_status_set(st, WF_RESOURCE_EXHAUSTED, "%s: out of memory", path);
out:
  wf__free(key);
  json_decref(meta);
  json_decref(root);
  return text;
}

int wf__st_write(const char *path, const wf__st_entry *e, int n,
                 const char *const *keys, const char *const *values, int nmeta,
                 wf_status *st) {
  size_t *nbytes = NULL;
  uint32_t *crcs = NULL;
  unsigned char *scratch = NULL, len8[8];
  char *header = NULL;
  size_t hlen, padded;
  int code, opened = 0;
  wf__atomic_file f;

  if ((code = check_names(path, e, n, keys, nmeta, st)) != WF_OK)
    return code;
  nbytes = wf__calloc((size_t)n + 1, sizeof *nbytes);
  crcs = wf__calloc((size_t)n + 1, sizeof *crcs);
  scratch = host_is_le() ? NULL : wf__alloc(CHUNK, 0);
  if (!nbytes || !crcs || (!host_is_le() && !scratch)) {
    code = wf_status_set(st, WF_RESOURCE_EXHAUSTED, "%s: out of memory", path);
    goto out;
  }
  for (int i = 0; i < n; i++) {
    nbytes[i] = (size_t)wf_shape_count(&e[i].shape) * wf_dtype_size(e[i].dtype);
    each_piece(&e[i], nbytes[i], scratch, crc_piece, &crcs[i]);
  }
  header = make_header(path, e, n, nbytes, crcs, keys, values, nmeta, st);
  if (!header) {
    code = wf_status_code(st);
    goto out;
  }
  /* Pad with spaces so the data starts 8-byte aligned, as the reference
   * writer does. */
  hlen = strlen(header);
  padded = (hlen + 7) / 8 * 8;
  for (int i = 0; i < 8; i++)
    len8[i] = (unsigned char)((uint64_t)padded >> (8 * i));

  if ((code = wf__atomic_open(&f, path, st)) != WF_OK)
    goto out;
  opened = 1;
  write_ctx w = {&f, st};
  if ((code = wf__atomic_write(&f, len8, 8, st)) ||
      (code = wf__atomic_write(&f, header, hlen, st)) ||
      (code = wf__atomic_write(&f, "        ", padded - hlen, st)))
    goto out;
  for (int i = 0; i < n; i++)
    if ((code = each_piece(&e[i], nbytes[i], scratch, write_piece, &w)))
      goto out;
  opened = 0;
  code = wf__atomic_commit(&f, st);

out:
  if (opened)
    wf__atomic_abort(&f);
  free(header);
  wf__free(scratch);
  wf__free(crcs);
  wf__free(nbytes);
  return code;
}
