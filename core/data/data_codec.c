/* core/data/data_codec.c — the bytes of a saved iterator position: an
 * append-only writer and a bounds-checked reader of integers, strings and
 * tensors.
 *
 * It knows nothing of what stages store; core/data/iterator.c lays the position
 * out. Reading never trusts a length: every count is checked against the
 * bytes that remain before anything is allocated. */
#include <config.h>

#include <string.h>

#include "base/alloc.h"
#include "data/dataset.h"
#include "base/status_internal.h"
#include "graph/tensor_internal.h"

/* ---- writing ------------------------------------------------------------------ */

static int reserve(wf__wbuf *w, size_t n) {
  if (w->failed)
    return -1;
  if (n > SIZE_MAX - w->len) {
    w->failed = 1;
    return -1;
  }
  if (w->len + n <= w->cap)
    return 0;
  size_t cap = w->cap ? w->cap : 256;
  while (cap < w->len + n) {
    if (cap > SIZE_MAX / 2) {
      cap = w->len + n;
      break;
    }
    cap *= 2;
  }
  unsigned char *p = wf__realloc(w->data, cap);
  if (!p) {
    w->failed = 1;
    return -1;
  }
  w->data = p;
  w->cap = cap;
  return 0;
}

void wf__wbuf_bytes(wf__wbuf *w, const void *p, size_t n) {
  if (n == 0 || reserve(w, n))
    return;
  memcpy(w->data + w->len, p, n);
  w->len += n;
}

void wf__wbuf_u8(wf__wbuf *w, uint8_t v) { wf__wbuf_bytes(w, &v, 1); }

void wf__wbuf_u32(wf__wbuf *w, uint32_t v) {
  unsigned char b[4];
  for (int i = 0; i < 4; i++)
    b[i] = (unsigned char)(v >> (8 * i));
  wf__wbuf_bytes(w, b, sizeof b);
}

void wf__wbuf_u64(wf__wbuf *w, uint64_t v) {
  unsigned char b[8];
  for (int i = 0; i < 8; i++)
    b[i] = (unsigned char)(v >> (8 * i));
  wf__wbuf_bytes(w, b, sizeof b);
}

void wf__wbuf_str(wf__wbuf *w, const char *s) {
  size_t n = strlen(s);
  wf__wbuf_u32(w, (uint32_t)n);
  wf__wbuf_bytes(w, s, n);
}

void wf__wbuf_tensor(wf__wbuf *w, const wf_tensor *t) {
  wf__wbuf_u32(w, (uint32_t)t->dtype);
  wf__wbuf_u32(w, (uint32_t)t->shape.rank);
  for (int i = 0; i < t->shape.rank; i++)
    wf__wbuf_u64(w, (uint64_t)t->shape.dims[i]);
  wf__wbuf_bytes(w, t->data, t->nbytes);
}

void wf__wbuf_element(wf__wbuf *w, wf_tensor *const *f, int nfields) {
  for (int i = 0; i < nfields; i++)
    wf__wbuf_tensor(w, f[i]);
}

int wf__wbuf_check(const wf__wbuf *w, wf_status *st) {
  if (w->failed)
    return wf_status_set(st, WF_RESOURCE_EXHAUSTED,
                         "saving the iterator position: out of memory after "
                         "%zu bytes",
                         w->len);
  return WF_OK;
}

void wf__wbuf_deinit(wf__wbuf *w) {
  wf__free(w->data);
  memset(w, 0, sizeof *w);
}

/* ---- reading ------------------------------------------------------------------ */

static int truncated(const wf__rbuf *r, size_t need, const char *what,
                     wf_status *st) {
  return wf_status_set(st, WF_INVALID_ARGUMENT,
                       "iterator position: %s needs %zu byte(s) at offset "
                       "%zu but only %zu remain (truncated or not a "
                       "position)",
                       what, need, r->pos, r->len - r->pos);
}

int wf__rbuf_bytes(wf__rbuf *r, const void **p, size_t n, const char *what,
                   wf_status *st) {
  if (n > r->len - r->pos)
    return truncated(r, n, what, st);
  *p = r->data + r->pos;
  r->pos += n;
  return WF_OK;
}

int wf__rbuf_u8(wf__rbuf *r, uint8_t *v, const char *what, wf_status *st) {
  const void *p = NULL;
  if (wf__rbuf_bytes(r, &p, 1, what, st))
    return WF_INVALID_ARGUMENT;
  *v = *(const unsigned char *)p;
  return WF_OK;
}

int wf__rbuf_u32(wf__rbuf *r, uint32_t *v, const char *what, wf_status *st) {
  const void *p = NULL;
  if (wf__rbuf_bytes(r, &p, 4, what, st))
    return WF_INVALID_ARGUMENT;
  const unsigned char *b = p;
  *v = 0;
  for (int i = 0; i < 4; i++)
    *v |= (uint32_t)b[i] << (8 * i);
  return WF_OK;
}

int wf__rbuf_u64(wf__rbuf *r, uint64_t *v, const char *what, wf_status *st) {
  const void *p = NULL;
  if (wf__rbuf_bytes(r, &p, 8, what, st))
    return WF_INVALID_ARGUMENT;
  const unsigned char *b = p;
  *v = 0;
  for (int i = 0; i < 8; i++)
    *v |= (uint64_t)b[i] << (8 * i);
  return WF_OK;
}

int wf__rbuf_i64(wf__rbuf *r, int64_t *v, const char *what, wf_status *st) {
  uint64_t u;
  if (wf__rbuf_u64(r, &u, what, st))
    return WF_INVALID_ARGUMENT;
  memcpy(v, &u, sizeof *v);
  return WF_OK;
}

int wf__rbuf_count(wf__rbuf *r, uint64_t *n, size_t min_item,
                   const char *what, wf_status *st) {
  size_t at = r->pos;
  if (wf__rbuf_u64(r, n, what, st))
    return WF_INVALID_ARGUMENT;
  if (min_item > 0 && *n > (r->len - r->pos) / min_item)
    return wf_status_set(st, WF_INVALID_ARGUMENT,
                         "iterator position: %s at offset %zu is %llu, more "
                         "than the %zu remaining bytes can hold",
                         what, at, (unsigned long long)*n, r->len - r->pos);
  return WF_OK;
}

int wf__rbuf_tensor(wf__rbuf *r, wf_tensor **t, const char *what,
                    wf_status *st) {
  uint32_t dtype, rank;
  int64_t dims[WF_MAX_RANK];
  size_t at = r->pos, nbytes;
  const void *p = NULL;

  *t = NULL;
  if (wf__rbuf_u32(r, &dtype, what, st) || wf__rbuf_u32(r, &rank, what, st))
    return WF_INVALID_ARGUMENT;
  if (dtype == WF_DTYPE_INVALID || dtype == WF_RESOURCE ||
      dtype >= WF_DTYPE_COUNT || rank > WF_MAX_RANK)
    return wf_status_set(st, WF_INVALID_ARGUMENT,
                         "iterator position: %s at offset %zu has dtype %u "
                         "and rank %u, which no element can have",
                         what, at, (unsigned)dtype, (unsigned)rank);
  for (uint32_t i = 0; i < rank; i++) {
    uint64_t d;
    if (wf__rbuf_u64(r, &d, what, st))
      return WF_INVALID_ARGUMENT;
    if (d > (uint64_t)INT64_MAX)
      return wf_status_set(st, WF_INVALID_ARGUMENT,
                           "iterator position: %s at offset %zu has a "
                           "negative dimension",
                           what, at);
    dims[i] = (int64_t)d;
  }
  /* The byte size is checked against what remains before allocating. */
  {
    wf_status scratch = {WF_OK, NULL};
    int bad = wf__tensor_check((wf_dtype)dtype, dims, (int)rank, &nbytes,
                               &scratch);
    if (bad) {
      wf_status_set(st, WF_INVALID_ARGUMENT,
                    "iterator position: %s at offset %zu: %s", what, at,
                    wf_status_message(&scratch));
      wf_status_reset(&scratch);
      return WF_INVALID_ARGUMENT;
    }
  }
  if (wf__rbuf_bytes(r, &p, nbytes, what, st))
    return WF_INVALID_ARGUMENT;
  wf_tensor *x = wf_tensor_new((wf_dtype)dtype, dims, (int)rank, st);
  if (!x)
    return wf_status_code(st);
  if (nbytes)
    memcpy(x->data, p, nbytes);
  *t = x;
  return WF_OK;
}

int wf__rbuf_element(wf__rbuf *r, const wf_dataset *ds, wf_tensor **f,
                     const char *what, wf_status *st) {
  int i;
  for (i = 0; i < ds->nfields; i++)
    f[i] = NULL;
  for (i = 0; i < ds->nfields; i++) {
    size_t at = r->pos;
    if (wf__rbuf_tensor(r, &f[i], what, st))
      goto fail;
    if (f[i]->dtype != ds->fields[i].dtype ||
        !wf_shape_compatible(&ds->fields[i].shape, &f[i]->shape)) {
      char want[96], got[96];
      wf_status_set(st, WF_INVALID_ARGUMENT,
                    "iterator position: %s at offset %zu: field '%s' is %s "
                    "%s, but the dataset's is %s %s",
                    what, at, ds->fields[i].name,
                    wf_dtype_name(f[i]->dtype),
                    wf_shape_str(&f[i]->shape, got, sizeof got),
                    wf_dtype_name(ds->fields[i].dtype),
                    wf_shape_str(&ds->fields[i].shape, want, sizeof want));
      goto fail;
    }
  }
  return WF_OK;

fail:
  wf__element_clear(f, ds->nfields);
  return wf_status_code(st);
}

static const char *kind_name(int kind) {
  static const char *const names[] = {
      "?",     "files",    "zip",   "shard",  "shuffle",
      "map",   "batch",    "prefetch", "cache", "repeat"};
  return kind >= 0 && kind <= WF__DS_REPEAT ? names[kind] : "?";
}

int wf__rbuf_expect(wf__rbuf *r, wf__ds_kind kind, wf_status *st) {
  size_t at = r->pos;
  uint8_t k;
  if (wf__rbuf_u8(r, &k, "a stage tag", st))
    return WF_INVALID_ARGUMENT;
  if (k != (uint8_t)kind)
    return wf_status_set(st, WF_INVALID_ARGUMENT,
                         "iterator position: offset %zu holds a %s stage "
                         "where this dataset has a %s stage",
                         at, kind_name(k), kind_name(kind));
  return WF_OK;
}
