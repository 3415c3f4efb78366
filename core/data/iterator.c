/* core/data/iterator.c — iterators: building the stages of a dataset, walking
 * them, bad-record policy, saving and restoring positions; and the stages
 * that only rearrange elements (zip, shard, shuffle, batch, cache, repeat).
 *
 * Reading files is core/data/data_source.c's, transforming fields
 * core/data/data_map.c's and background production core/data/prefetch.c's. */
#include <config.h>

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "base/alloc.h"
#include "data/dataset.h"
#include "base/log.h"
#include "base/status_internal.h"
#include "graph/tensor_internal.h"

#define POSITION_MAGIC "WFDP"
/* 2: buffering stages say how they saved (WF__SAVED_*). */
#define POSITION_VERSION 2
/* Bad records logged one by one before the rest are only counted. */
#define LOGGED_BAD_RECORDS 10

void wf__element_clear(wf_tensor **f, int n) {
  for (int i = 0; i < n; i++) {
    wf_tensor_release(f[i]);
    f[i] = NULL;
  }
}

/* Moves n references from src to dst (src cleared). */
static void element_move(wf_tensor **dst, wf_tensor **src, int n) {
  for (int i = 0; i < n; i++) {
    dst[i] = src[i];
    src[i] = NULL;
  }
}

/* Grows an element buffer (*buf of *cap elements of nf fields) to hold at
 * least need elements, at most limit. -1 when out of memory. */
static int grow_elements(wf_tensor ***buf, int64_t *cap, int64_t need,
                         int64_t limit, int nf) {
  if (need <= *cap)
    return 0;
  int64_t ncap = *cap ? *cap : 16;
  while (ncap < need)
    ncap *= 2;
  if (ncap > limit)
    ncap = limit;
  if ((uint64_t)ncap > SIZE_MAX / sizeof(wf_tensor *) / (uint64_t)nf)
    return -1;
  wf_tensor **p =
      wf__realloc(*buf, (size_t)ncap * (size_t)nf * sizeof(wf_tensor *));
  if (!p)
    return -1;
  memset(p + (size_t)*cap * (size_t)nf, 0,
         (size_t)(ncap - *cap) * (size_t)nf * sizeof *p);
  *buf = p;
  *cap = ncap;
  return 0;
}

static int oom(wf_status *st, const char *what) {
  return -wf_status_set(st, WF_RESOURCE_EXHAUSTED, "%s: out of memory",
                        what);
}

int wf__stage_save_into(wf__stage *s, wf__wbuf *w, wf_status *st) {
  w->len = 0;
  w->failed = 0;
  int rc = s->ops->save(s, w, st);
  if (rc < 0)
    rc = -rc;
  if (!rc)
    rc = wf__wbuf_check(w, st);
  return rc;
}

int wf__stage_restore_bytes(wf__stage *s, const void *bytes, size_t len,
                            wf_status *st) {
  wf__rbuf sub = {bytes, len, 0};
  int rc = s->ops->restore(s, &sub, st);
  if (rc < 0)
    rc = -rc;
  if (!rc && sub.pos != sub.len)
    rc = wf_status_set(st, WF_INVALID_ARGUMENT,
                       "iterator position: %zu bytes follow a nested "
                       "position",
                       sub.len - sub.pos);
  return rc;
}

/* Writes a nested position: its length, then its bytes. */
static void put_nested(wf__wbuf *w, const wf__wbuf *pos) {
  wf__wbuf_u64(w, (uint64_t)pos->len);
  wf__wbuf_bytes(w, pos->data, pos->len);
}

/* Reads a nested position written by put_nested (borrowed bytes). */
static int get_nested(wf__rbuf *r, const void **bytes, size_t *len,
                      const char *what, wf_status *st) {
  uint64_t n;
  if (wf__rbuf_count(r, &n, 1, what, st) ||
      wf__rbuf_bytes(r, bytes, (size_t)n, what, st))
    return WF_INVALID_ARGUMENT;
  *len = (size_t)n;
  return WF_OK;
}

/* Checks a buffering stage's saved form against the one it uses. */
static int expect_saved_form(wf__rbuf *r, int replay, const char *stage,
                             wf_status *st) {
  uint8_t form;
  if (wf__rbuf_u8(r, &form, "saved form", st))
    return WF_INVALID_ARGUMENT;
  if (form != (replay ? WF__SAVED_REPLAY : WF__SAVED_DATA))
    return wf_status_set(st, WF_INVALID_ARGUMENT,
                         "iterator position: the %s stage was saved as %s "
                         "but this dataset's %s saves %s",
                         stage,
                         form == WF__SAVED_REPLAY ? "a position to re-read"
                         : form == WF__SAVED_DATA ? "its buffered elements"
                                                  : "an unknown form",
                         stage,
                         replay ? "a position to re-read"
                                : "its buffered elements");
  return WF_OK;
}

/* Calls next on s n times, dropping what comes (elements and bad
 * records), to bring a just-restored stage back to where it stood. An
 * early end means the data changed. Returns WF_OK or a positive code. */
static int replay_calls(wf__stage *s, uint64_t n,
                        int (*next)(wf__stage *, wf_tensor **, wf_status *),
                        const char *stage, wf_status *st) {
  wf_tensor **tmp = wf__calloc((size_t)s->nfields + 1, sizeof *tmp);
  int code = WF_OK;
  if (!tmp)
    return -oom(st, "iterator restore");
  for (uint64_t i = 0; i < n && !code; i++) {
    int rc = next(s, tmp, st);
    if (rc == WF__ELEMENT)
      wf__element_clear(tmp, s->nfields);
    else if (rc == -WF_DATA_LOSS)
      wf_status_reset(st);
    else if (rc == WF__END)
      code = wf_status_set(st, WF_INVALID_ARGUMENT,
                           "iterator position: the %s stage had taken %llu "
                           "elements of its input but it now ends after "
                           "%llu (did the data change?)",
                           stage, (unsigned long long)n,
                           (unsigned long long)i);
    else
      code = rc < 0 ? -rc : WF_INTERNAL;
  }
  wf__free(tmp);
  return code;
}

/* ---- zip ---------------------------------------------------------------------- */

typedef struct zip_stage {
  wf__stage base;
  wf__stage *a, *b;
  wf_tensor **held; /* a's element waiting for b's */
  int have;
  int64_t produced; /* in this pass */
} zip_stage;

/* Describes an input by its fields, for messages. */
static void input_name(const wf__stage *s, char *buf, size_t len) {
  size_t used = 0;
  buf[0] = '\0';
  for (int i = 0; i < s->nfields; i++) {
    int w = snprintf(buf + used, len - used, "%s'%s'", i ? ", " : "",
                     s->ds->fields[i].name);
    if (w < 0 || (size_t)w >= len - used)
      break;
    used += (size_t)w;
  }
}

static int zip_ran_out(zip_stage *z, const wf__stage *short_one,
                       const wf__stage *long_one, wf_status *st) {
  char sn[256], ln[256];
  input_name(short_one, sn, sizeof sn);
  input_name(long_one, ln, sizeof ln);
  return -wf_status_set(st, WF_INVALID_ARGUMENT,
                        "zip: the input with fields %s ended after %lld "
                        "elements while the input with fields %s has more",
                        sn, (long long)z->produced, ln);
}

static int zip_next(wf__stage *s, wf_tensor **out, wf_status *st) {
  zip_stage *z = (zip_stage *)s;
  int na = z->a->nfields;
  int rc;
  if (!z->have) {
    rc = z->a->ops->next(z->a, z->held, st);
    if (rc == WF__END) {
      wf_tensor **tmp = out + na; /* room for b's fields */
      rc = z->b->ops->next(z->b, tmp, st);
      if (rc == WF__ELEMENT) {
        wf__element_clear(tmp, z->b->nfields);
        return zip_ran_out(z, z->a, z->b, st);
      }
      return rc;
    }
    if (rc != WF__ELEMENT)
      return rc;
    z->have = 1;
  }
  rc = z->b->ops->next(z->b, out + na, st);
  if (rc == WF__END) {
    wf__element_clear(z->held, na);
    z->have = 0;
    return zip_ran_out(z, z->b, z->a, st);
  }
  if (rc != WF__ELEMENT)
    return rc;
  element_move(out, z->held, na);
  z->have = 0;
  z->produced++;
  return WF__ELEMENT;
}

static int zip_reset(wf__stage *s, wf_status *st) {
  zip_stage *z = (zip_stage *)s;
  wf__element_clear(z->held, z->a->nfields);
  z->have = 0;
  z->produced = 0;
  int rc = z->a->ops->reset(z->a, st);
  return rc ? rc : z->b->ops->reset(z->b, st);
}

static int zip_save(wf__stage *s, wf__wbuf *w, wf_status *st) {
  zip_stage *z = (zip_stage *)s;
  wf__wbuf_u8(w, WF__DS_ZIP);
  wf__wbuf_u64(w, (uint64_t)z->produced);
  wf__wbuf_u8(w, (uint8_t)z->have);
  if (z->have)
    wf__wbuf_element(w, z->held, z->a->nfields);
  int rc = z->a->ops->save(z->a, w, st);
  return rc ? rc : z->b->ops->save(z->b, w, st);
}

static int zip_restore(wf__stage *s, wf__rbuf *r, wf_status *st) {
  zip_stage *z = (zip_stage *)s;
  uint64_t produced;
  uint8_t have;
  if (wf__rbuf_expect(r, WF__DS_ZIP, st) ||
      wf__rbuf_u64(r, &produced, "zip count", st) ||
      wf__rbuf_u8(r, &have, "zip state", st))
    return WF_INVALID_ARGUMENT;
  z->produced = (int64_t)produced;
  if (have) {
    if (wf__rbuf_element(r, z->a->ds, z->held, "zip element", st))
      return wf_status_code(st);
    z->have = 1;
  }
  int rc = z->a->ops->restore(z->a, r, st);
  return rc ? rc : z->b->ops->restore(z->b, r, st);
}

static void zip_free(wf__stage *s) {
  zip_stage *z = (zip_stage *)s;
  if (z->held)
    wf__element_clear(z->held, z->a->nfields);
  wf__free(z->held);
  wf__stage_free(z->a);
  wf__stage_free(z->b);
  wf__free(z);
}

static const wf__stage_ops zip_ops = {zip_next, zip_reset, zip_save,
                                      zip_restore, zip_free};

/* ---- shard -------------------------------------------------------------------- */

typedef struct shard_stage {
  wf__stage base;
  wf__stage *in;
  int64_t seen; /* input elements in this pass */
} shard_stage;

static int shard_next(wf__stage *s, wf_tensor **out, wf_status *st) {
  shard_stage *h = (shard_stage *)s;
  for (;;) {
    int rc = h->in->ops->next(h->in, out, st);
    if (rc != WF__ELEMENT)
      return rc;
    int keep = h->seen % s->ds->u.shard.n == s->ds->u.shard.index;
    h->seen++;
    if (keep)
      return WF__ELEMENT;
    wf__element_clear(out, s->nfields);
  }
}

static int shard_reset(wf__stage *s, wf_status *st) {
  shard_stage *h = (shard_stage *)s;
  h->seen = 0;
  return h->in->ops->reset(h->in, st);
}

static int shard_save(wf__stage *s, wf__wbuf *w, wf_status *st) {
  shard_stage *h = (shard_stage *)s;
  wf__wbuf_u8(w, WF__DS_SHARD);
  wf__wbuf_u64(w, (uint64_t)h->seen);
  return h->in->ops->save(h->in, w, st);
}

static int shard_restore(wf__stage *s, wf__rbuf *r, wf_status *st) {
  shard_stage *h = (shard_stage *)s;
  uint64_t seen;
  if (wf__rbuf_expect(r, WF__DS_SHARD, st) ||
      wf__rbuf_u64(r, &seen, "shard count", st))
    return WF_INVALID_ARGUMENT;
  h->seen = (int64_t)seen;
  return h->in->ops->restore(h->in, r, st);
}

static void shard_free(wf__stage *s) {
  shard_stage *h = (shard_stage *)s;
  wf__stage_free(h->in);
  wf__free(h);
}

static const wf__stage_ops shard_ops = {shard_next, shard_reset, shard_save,
                                        shard_restore, shard_free};

/* Elements come from anywhere in memory (a shuffle's picks of a cache):
 * the loads of the ones a few places ahead are started while the current
 * one is copied. */
enum { STACK_AHEAD = 4, CACHE_AHEAD = 8 };

static inline void prefetch_write(const void *p) {
#if defined(__GNUC__)
  __builtin_prefetch(p, 1, 3);
#else
  (void)p;
#endif
}

/* The header of t and the `bytes` after it, where wf_tensor_new puts the
 * values; a hint only, so it reads nothing of t itself (which would wait
 * for the very load it is meant to start). */
static inline void prefetch_element(const wf_tensor *t, size_t bytes) {
#if defined(__GNUC__)
  const char *p = (const char *)t;
  size_t n = sizeof *t + WF_TENSOR_ALIGN + (bytes < 2048 ? bytes : 2048);
  for (size_t i = 0; i < n; i += 64)
    __builtin_prefetch(p + i, 0, 3);
#else
  (void)t, (void)bytes;
#endif
}

/* ---- shuffle ------------------------------------------------------------------ */

/* splitmix64: small state, good enough statistics for picking from a
 * buffer, and trivially saved. */
static uint64_t splitmix(uint64_t *state) {
  uint64_t z = (*state += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

/* Uniform in [0, n) without modulo bias. */
static uint64_t uniform(uint64_t *state, uint64_t n) {
  uint64_t threshold = (0 - n) % n;
  for (;;) {
    uint64_t r = splitmix(state);
    if (r >= threshold)
      return r % n;
  }
}

/* The random state that starts pass `pass` for seed. */
static uint64_t pass_state(uint64_t seed, uint64_t pass) {
  uint64_t s = pass * 0xD1B54A32D192ED03ULL + 0x8CB92BA72F3D8DD7ULL;
  return seed ^ splitmix(&s);
}

/* Over a compact input that ends, the position is the input's position at
 * the start of the pass (the anchor) and the calls made since: a restore
 * re-reads and reshuffles the same way (the random state at a pass's start
 * follows from the seed and the pass), so a checkpoint does not hold the
 * buffer. Over other inputs the buffered elements are saved. */
typedef struct shuffle_stage {
  wf__stage base;
  wf__stage *in;
  wf_tensor **buf;
  int64_t count, cap;
  uint64_t rng;
  uint64_t pass;
  int in_done;
  int replay;         /* saves WF__SAVED_REPLAY */
  wf__wbuf anchor;    /* the input's position at the start of the pass */
  int have_anchor;
  uint64_t calls;     /* of this pass: elements and bad records out */
} shuffle_stage;

static int shuffle_pick(wf__stage *s, wf_tensor **out, wf_status *st) {
  shuffle_stage *h = (shuffle_stage *)s;
  int nf = s->nfields;
  int64_t size = s->ds->u.shuffle.size;
  while (!h->in_done && h->count < size) {
    if (grow_elements(&h->buf, &h->cap, h->count + 1, size, nf))
      return oom(st, "shuffle buffer");
    int rc = h->in->ops->next(h->in, h->buf + (size_t)h->count * nf, st);
    if (rc == WF__ELEMENT) {
      h->count++;
    } else if (rc == WF__END) {
      h->in_done = 1;
    } else {
      return rc;
    }
  }
  if (h->count == 0)
    return WF__END;
  int64_t j = (int64_t)uniform(&h->rng, (uint64_t)h->count);
  element_move(out, h->buf + (size_t)j * nf, nf);
  h->count--;
  if (j != h->count)
    element_move(h->buf + (size_t)j * nf, h->buf + (size_t)h->count * nf,
                 nf);
  /* The next pick's slot (the state copied: the pick itself is made next
   * time, as a restore replays it) is loaded while this element goes on
   * its way; a buffer of thousands of elements is out of the caches. */
  if (h->count > 1 && h->in_done) {
    uint64_t peek = h->rng;
    prefetch_write(h->buf +
                   (size_t)uniform(&peek, (uint64_t)h->count) * (size_t)nf);
  }
  return WF__ELEMENT;
}

static int shuffle_next(wf__stage *s, wf_tensor **out, wf_status *st) {
  shuffle_stage *h = (shuffle_stage *)s;
  if (h->replay && !h->have_anchor) {
    int rc = wf__stage_save_into(h->in, &h->anchor, st);
    if (rc)
      return -rc;
    h->have_anchor = 1;
  }
  int rc = shuffle_pick(s, out, st);
  if (rc == WF__ELEMENT || rc == -WF_DATA_LOSS)
    h->calls++;
  return rc;
}

static int shuffle_reset(wf__stage *s, wf_status *st) {
  shuffle_stage *h = (shuffle_stage *)s;
  if (h->buf)
    wf__element_clear(h->buf, (int)(h->count * s->nfields));
  h->count = 0;
  h->in_done = 0;
  h->pass++;
  h->rng = pass_state(s->ds->u.shuffle.seed, h->pass);
  h->have_anchor = 0;
  h->calls = 0;
  return h->in->ops->reset(h->in, st);
}

static int shuffle_save(wf__stage *s, wf__wbuf *w, wf_status *st) {
  shuffle_stage *h = (shuffle_stage *)s;
  wf__wbuf_u8(w, WF__DS_SHUFFLE);
  wf__wbuf_u8(w, h->replay ? WF__SAVED_REPLAY : WF__SAVED_DATA);
  wf__wbuf_u64(w, h->pass);
  if (h->replay) {
    /* No call yet in this pass: the input still stands at its start. */
    if (!h->have_anchor) {
      int rc = wf__stage_save_into(h->in, &h->anchor, st);
      if (rc)
        return rc;
      h->have_anchor = 1;
    }
    wf__wbuf_u64(w, h->calls);
    put_nested(w, &h->anchor);
    return WF_OK;
  }
  wf__wbuf_u64(w, h->rng);
  wf__wbuf_u8(w, (uint8_t)h->in_done);
  wf__wbuf_u64(w, (uint64_t)h->count);
  for (int64_t i = 0; i < h->count; i++)
    wf__wbuf_element(w, h->buf + (size_t)i * s->nfields, s->nfields);
  return h->in->ops->save(h->in, w, st);
}

static int shuffle_restore(wf__stage *s, wf__rbuf *r, wf_status *st) {
  shuffle_stage *h = (shuffle_stage *)s;
  uint64_t n, calls;
  uint8_t done;
  if (wf__rbuf_expect(r, WF__DS_SHUFFLE, st) ||
      expect_saved_form(r, h->replay, "shuffle", st) ||
      wf__rbuf_u64(r, &h->pass, "shuffle pass", st))
    return WF_INVALID_ARGUMENT;
  if (h->replay) {
    const void *bytes;
    size_t len;
    int rc;
    if (wf__rbuf_u64(r, &calls, "shuffle calls", st) ||
        get_nested(r, &bytes, &len, "shuffle input position", st))
      return WF_INVALID_ARGUMENT;
    h->rng = pass_state(s->ds->u.shuffle.seed, h->pass);
    if ((rc = wf__stage_restore_bytes(h->in, bytes, len, st)))
      return rc;
    wf__wbuf_bytes(&h->anchor, bytes, len);
    if ((rc = wf__wbuf_check(&h->anchor, st)))
      return rc;
    h->have_anchor = 1;
    if ((rc = replay_calls(s, calls, shuffle_pick, "shuffle", st)))
      return rc;
    h->calls = calls;
    return WF_OK;
  }
  /* Each buffered tensor takes at least its dtype and rank. */
  if (wf__rbuf_u64(r, &h->rng, "shuffle random state", st) ||
      wf__rbuf_u8(r, &done, "shuffle state", st) ||
      wf__rbuf_count(r, &n, (size_t)s->nfields * 8, "shuffle buffer size",
                     st))
    return WF_INVALID_ARGUMENT;
  if (n > (uint64_t)s->ds->u.shuffle.size)
    return wf_status_set(st, WF_INVALID_ARGUMENT,
                         "iterator position: the shuffle buffer holds %llu "
                         "elements, more than its size %lld",
                         (unsigned long long)n,
                         (long long)s->ds->u.shuffle.size);
  h->in_done = done != 0;
  if (grow_elements(&h->buf, &h->cap, (int64_t)n, s->ds->u.shuffle.size,
                    s->nfields))
    return -oom(st, "shuffle buffer");
  for (uint64_t i = 0; i < n; i++) {
    if (wf__rbuf_element(r, s->ds, h->buf + (size_t)i * s->nfields,
                         "shuffle buffer element", st))
      return wf_status_code(st);
    h->count++;
  }
  return h->in->ops->restore(h->in, r, st);
}

static void shuffle_free(wf__stage *s) {
  shuffle_stage *h = (shuffle_stage *)s;
  if (h->buf)
    wf__element_clear(h->buf, (int)(h->count * s->nfields));
  wf__free(h->buf);
  wf__wbuf_deinit(&h->anchor);
  wf__stage_free(h->in);
  wf__free(h);
}

static const wf__stage_ops shuffle_ops = {shuffle_next, shuffle_reset,
                                          shuffle_save, shuffle_restore,
                                          shuffle_free};

/* ---- batch -------------------------------------------------------------------- */

/* Over a compact input, the position of a batch in progress is the
 * input's position before its first element (the snapshot, taken once per
 * batch) and the input calls made since; a restore re-reads them. */
typedef struct batch_stage {
  wf__stage base;
  wf__stage *in;
  wf_tensor **pend; /* elements of the batch in progress */
  int64_t count, cap;
  int in_done;
  int replay;        /* saves WF__SAVED_REPLAY */
  wf__wbuf snap;     /* the input's position before this batch */
  int have_snap;
  uint64_t pulls;    /* input calls for this batch (elements, bad records) */
} batch_stage;

/* Stacks the count pending elements into out (one tensor per field). */
static int stack(batch_stage *b, wf_tensor **out, wf_status *st) {
  int nf = b->base.nfields;
  for (int f = 0; f < nf; f++) {
    const wf_tensor *first = b->pend[f];
    int64_t dims[WF_MAX_RANK];
    dims[0] = b->count;
    for (int d = 0; d < first->shape.rank; d++)
      dims[d + 1] = first->shape.dims[d];
    wf_tensor *t =
        wf_tensor_new(first->dtype, dims, first->shape.rank + 1, st);
    if (!t) {
      wf__element_clear(out, f);
      return -wf_status_code(st);
    }
    for (int64_t k = 1; k < STACK_AHEAD && k < b->count; k++)
      prefetch_element(b->pend[(size_t)k * nf + f], first->nbytes);
    for (int64_t k = 0; k < b->count; k++) {
      const wf_tensor *e = b->pend[(size_t)k * nf + f];
      if (k + STACK_AHEAD < b->count)
        prefetch_element(b->pend[(size_t)(k + STACK_AHEAD) * nf + f],
                         first->nbytes);
      if (!wf_shape_equal(&e->shape, &first->shape)) {
        char a[96], c[96];
        wf_tensor_release(t);
        wf__element_clear(out, f);
        return -wf_status_set(
            st, WF_INVALID_ARGUMENT,
            "batch: field '%s' of element %lld of the batch has shape %s, "
            "element 0's has %s; batch only equal shapes",
            b->base.ds->fields[f].name, (long long)k,
            wf_shape_str(&e->shape, a, sizeof a),
            wf_shape_str(&first->shape, c, sizeof c));
      }
      memcpy((char *)t->data + (size_t)k * first->nbytes, e->data,
             first->nbytes);
    }
    out[f] = t;
  }
  return WF__ELEMENT;
}

/* Pulls one input element into the batch in progress (replay: after
 * taking the snapshot). */
static int batch_pull(batch_stage *b, wf_status *st) {
  int nf = b->base.nfields;
  if (b->replay && !b->have_snap) {
    int rc = wf__stage_save_into(b->in, &b->snap, st);
    if (rc)
      return -rc;
    b->have_snap = 1;
    b->pulls = 0;
  }
  if (grow_elements(&b->pend, &b->cap, b->count + 1, b->base.ds->u.batch.size,
                    nf))
    return oom(st, "batch");
  int rc = b->in->ops->next(b->in, b->pend + (size_t)b->count * nf, st);
  if (rc == WF__ELEMENT || rc == -WF_DATA_LOSS)
    b->pulls++;
  if (rc == WF__ELEMENT)
    b->count++;
  return rc;
}

/* The batch in progress is gone (handed out, dropped or cleared). */
static void batch_clear(batch_stage *b) {
  if (b->pend)
    wf__element_clear(b->pend, (int)(b->count * b->base.nfields));
  b->count = 0;
  b->have_snap = 0;
  b->pulls = 0;
}

static int batch_next(wf__stage *s, wf_tensor **out, wf_status *st) {
  batch_stage *b = (batch_stage *)s;
  int64_t size = s->ds->u.batch.size;
  while (!b->in_done && b->count < size) {
    int rc = batch_pull(b, st);
    if (rc == WF__END)
      b->in_done = 1;
    else if (rc != WF__ELEMENT)
      return rc;
  }
  if (b->count == 0 || (b->count < size && s->ds->u.batch.drop)) {
    batch_clear(b);
    return WF__END;
  }
  int rc = stack(b, out, st);
  /* A batch that cannot be stacked is dropped with the error. */
  batch_clear(b);
  return rc;
}

static int batch_reset(wf__stage *s, wf_status *st) {
  batch_stage *b = (batch_stage *)s;
  batch_clear(b);
  b->in_done = 0;
  return b->in->ops->reset(b->in, st);
}

static int batch_save(wf__stage *s, wf__wbuf *w, wf_status *st) {
  batch_stage *b = (batch_stage *)s;
  wf__wbuf_u8(w, WF__DS_BATCH);
  wf__wbuf_u8(w, b->replay ? WF__SAVED_REPLAY : WF__SAVED_DATA);
  wf__wbuf_u8(w, (uint8_t)b->in_done);
  wf__wbuf_u64(w, (uint64_t)b->count);
  if (b->replay) {
    /* No pull since the last batch: the input stands where it is. */
    if (!b->have_snap) {
      int rc = wf__stage_save_into(b->in, &b->snap, st);
      if (rc)
        return rc;
      b->have_snap = 1;
      b->pulls = 0;
    }
    wf__wbuf_u64(w, b->pulls);
    put_nested(w, &b->snap);
    return WF_OK;
  }
  for (int64_t i = 0; i < b->count; i++)
    wf__wbuf_element(w, b->pend + (size_t)i * s->nfields, s->nfields);
  return b->in->ops->save(b->in, w, st);
}

static int batch_restore(wf__stage *s, wf__rbuf *r, wf_status *st) {
  batch_stage *b = (batch_stage *)s;
  const wf_dataset *in_ds = s->ds->input;
  uint64_t n, pulls;
  uint8_t done;
  if (wf__rbuf_expect(r, WF__DS_BATCH, st) ||
      expect_saved_form(r, b->replay, "batch", st) ||
      wf__rbuf_u8(r, &done, "batch state", st) ||
      wf__rbuf_u64(r, &n, "batch size", st))
    return WF_INVALID_ARGUMENT;
  if (n >= (uint64_t)s->ds->u.batch.size)
    return wf_status_set(st, WF_INVALID_ARGUMENT,
                         "iterator position: a batch in progress holds %llu "
                         "elements, the batch size is %lld",
                         (unsigned long long)n,
                         (long long)s->ds->u.batch.size);
  if (b->replay) {
    const void *bytes;
    size_t len;
    int rc;
    if (wf__rbuf_u64(r, &pulls, "batch input calls", st) ||
        get_nested(r, &bytes, &len, "batch input position", st))
      return WF_INVALID_ARGUMENT;
    if (pulls < n)
      return wf_status_set(st, WF_INVALID_ARGUMENT,
                           "iterator position: a batch of %llu elements "
                           "from %llu input calls",
                           (unsigned long long)n, (unsigned long long)pulls);
    if ((rc = wf__stage_restore_bytes(b->in, bytes, len, st)))
      return rc;
    wf__wbuf_bytes(&b->snap, bytes, len);
    if ((rc = wf__wbuf_check(&b->snap, st)))
      return rc;
    b->have_snap = 1;
    while (b->pulls < pulls) {
      rc = batch_pull(b, st);
      if (rc == -WF_DATA_LOSS) {
        wf_status_reset(st);
      } else if (rc == WF__END) {
        return wf_status_set(st, WF_INVALID_ARGUMENT,
                             "iterator position: the batch in progress had "
                             "%llu elements but its input now ends after "
                             "%lld (did the data change?)",
                             (unsigned long long)n, (long long)b->count);
      } else if (rc != WF__ELEMENT) {
        return rc < 0 ? -rc : WF_INTERNAL;
      } else if ((uint64_t)b->count > n) {
        break;
      }
    }
    if ((uint64_t)b->count != n)
      return wf_status_set(st, WF_INVALID_ARGUMENT,
                           "iterator position: the batch in progress had "
                           "%llu elements, re-reading gave %lld (did the "
                           "data change?)",
                           (unsigned long long)n, (long long)b->count);
    b->in_done = done != 0;
    return WF_OK;
  }
  if (n > (uint64_t)(r->len - r->pos) / ((size_t)s->nfields * 8))
    return wf_status_set(st, WF_INVALID_ARGUMENT,
                         "iterator position: a batch in progress of %llu "
                         "elements does not fit in the bytes left",
                         (unsigned long long)n);
  b->in_done = done != 0;
  if (grow_elements(&b->pend, &b->cap, (int64_t)n, s->ds->u.batch.size,
                    s->nfields))
    return -oom(st, "batch");
  for (uint64_t i = 0; i < n; i++) {
    if (wf__rbuf_element(r, in_ds, b->pend + (size_t)i * s->nfields,
                         "batch element", st))
      return wf_status_code(st);
    b->count++;
  }
  return b->in->ops->restore(b->in, r, st);
}

static void batch_free(wf__stage *s) {
  batch_stage *b = (batch_stage *)s;
  if (b->pend)
    wf__element_clear(b->pend, (int)(b->count * s->nfields));
  wf__free(b->pend);
  wf__wbuf_deinit(&b->snap);
  wf__stage_free(b->in);
  wf__free(b);
}

static const wf__stage_ops batch_ops = {batch_next, batch_reset, batch_save,
                                        batch_restore, batch_free};

/* ---- cache -------------------------------------------------------------------- */

/* The cache fills during a pass over its input and serves later passes from
 * memory. Its position is where the current pass stands plus the input's
 * position at the start of the filling pass: a restore replays the input
 * from there up to the current element, which rebuilds the same cache. */
typedef struct cache_stage {
  wf__stage base;
  wf__stage *in;
  wf_tensor **items;
  int64_t n, cap;
  int64_t pos;      /* next element of the current pass */
  int complete;     /* a whole pass is in memory */
  wf__wbuf start;   /* the input's position when filling started */
  int have_start;
} cache_stage;

static int cache_next(wf__stage *s, wf_tensor **out, wf_status *st) {
  cache_stage *c = (cache_stage *)s;
  int nf = s->nfields;
  if (c->pos < c->n) {
    if (c->pos + CACHE_AHEAD < c->n)
      for (int f = 0; f < nf; f++)
        prefetch_write(c->items[(size_t)(c->pos + CACHE_AHEAD) * nf + f]);
    for (int f = 0; f < nf; f++)
      out[f] = wf_tensor_retain(c->items[(size_t)c->pos * nf + f]);
    c->pos++;
    return WF__ELEMENT;
  }
  if (c->complete)
    return WF__END;
  if (!c->have_start) {
    int rc = c->in->ops->save(c->in, &c->start, st);
    if (!rc)
      rc = wf__wbuf_check(&c->start, st);
    if (rc)
      return -rc;
    c->have_start = 1;
  }
  if (grow_elements(&c->items, &c->cap, c->n + 1, INT64_MAX / 2, nf))
    return oom(st, "cache");
  int rc = c->in->ops->next(c->in, out, st);
  if (rc == WF__END) {
    c->complete = 1;
    return WF__END;
  }
  if (rc != WF__ELEMENT)
    return rc;
  for (int f = 0; f < nf; f++)
    c->items[(size_t)c->n * nf + f] = wf_tensor_retain(out[f]);
  c->n++;
  c->pos++;
  return WF__ELEMENT;
}

static void cache_drop(cache_stage *c) {
  if (c->items)
    wf__element_clear(c->items, (int)(c->n * c->base.nfields));
  c->n = 0;
  c->pos = 0;
  c->complete = 0;
  wf__wbuf_deinit(&c->start);
  c->have_start = 0;
}

static int cache_reset(wf__stage *s, wf_status *st) {
  cache_stage *c = (cache_stage *)s;
  if (c->complete) {
    c->pos = 0;
    return WF_OK;
  }
  /* An unfinished pass cannot be served from memory: fill again. */
  cache_drop(c);
  return c->in->ops->reset(c->in, st);
}

static int cache_save(wf__stage *s, wf__wbuf *w, wf_status *st) {
  cache_stage *c = (cache_stage *)s;
  wf__wbuf_u8(w, WF__DS_CACHE);
  wf__wbuf_u64(w, (uint64_t)c->pos);
  if (c->have_start) {
    wf__wbuf_u64(w, (uint64_t)c->start.len);
    wf__wbuf_bytes(w, c->start.data, c->start.len);
    return WF_OK;
  }
  /* Nothing read yet in this fill: the input's position is its start. */
  wf__wbuf sub = {0};
  int rc = c->in->ops->save(c->in, &sub, st);
  if (!rc)
    rc = wf__wbuf_check(&sub, st);
  if (!rc) {
    wf__wbuf_u64(w, (uint64_t)sub.len);
    wf__wbuf_bytes(w, sub.data, sub.len);
  }
  wf__wbuf_deinit(&sub);
  return rc;
}

static int cache_restore(wf__stage *s, wf__rbuf *r, wf_status *st) {
  cache_stage *c = (cache_stage *)s;
  int nf = s->nfields;
  uint64_t pos, len;
  const void *bytes;
  wf_tensor **tmp = NULL;
  if (wf__rbuf_expect(r, WF__DS_CACHE, st) ||
      wf__rbuf_u64(r, &pos, "cache position", st) ||
      wf__rbuf_count(r, &len, 1, "cache input position", st) ||
      wf__rbuf_bytes(r, &bytes, (size_t)len, "cache input position", st))
    return WF_INVALID_ARGUMENT;
  wf__rbuf sub = {bytes, (size_t)len, 0};
  int rc = c->in->ops->restore(c->in, &sub, st);
  if (rc)
    return rc;
  wf__wbuf_bytes(&c->start, bytes, (size_t)len);
  if ((rc = wf__wbuf_check(&c->start, st)))
    return rc;
  c->have_start = 1;
  tmp = wf__calloc((size_t)nf, sizeof *tmp);
  if (!tmp)
    return -oom(st, "cache");
  /* Replay the filling pass up to the saved element. */
  int code = WF_OK;
  while (!code && (uint64_t)c->n < pos) {
    if (grow_elements(&c->items, &c->cap, c->n + 1, INT64_MAX / 2, nf)) {
      code = -oom(st, "cache");
      break;
    }
    int got = c->in->ops->next(c->in, tmp, st);
    if (got == -WF_DATA_LOSS) {
      wf_status_reset(st);
    } else if (got == WF__END) {
      code = wf_status_set(st, WF_INVALID_ARGUMENT,
                           "iterator position: the cache was at element "
                           "%llu but its input now ends after %lld (did the "
                           "data change?)",
                           (unsigned long long)pos, (long long)c->n);
    } else if (got != WF__ELEMENT) {
      code = -got;
    } else {
      element_move(c->items + (size_t)c->n * nf, tmp, nf);
      c->n++;
    }
  }
  wf__free(tmp);
  if (code)
    return code;
  c->pos = c->n;
  return WF_OK;
}

static void cache_free(wf__stage *s) {
  cache_stage *c = (cache_stage *)s;
  cache_drop(c);
  wf__free(c->items);
  wf__stage_free(c->in);
  wf__free(c);
}

static const wf__stage_ops cache_ops = {cache_next, cache_reset, cache_save,
                                        cache_restore, cache_free};

/* ---- repeat ------------------------------------------------------------------- */

typedef struct repeat_stage {
  wf__stage base;
  wf__stage *in;
  int64_t passes;  /* passes completed */
  int64_t in_pass; /* elements of the current pass */
  int finished;
} repeat_stage;

static int repeat_next(wf__stage *s, wf_tensor **out, wf_status *st) {
  repeat_stage *p = (repeat_stage *)s;
  int64_t count = s->ds->u.repeat.count;
  if (p->finished || count == 0) {
    p->finished = 1;
    return WF__END;
  }
  for (;;) {
    int rc = p->in->ops->next(p->in, out, st);
    if (rc == WF__ELEMENT) {
      p->in_pass++;
      return rc;
    }
    if (rc != WF__END)
      return rc;
    p->passes++;
    /* An empty pass would repeat forever without producing anything. */
    if ((count > 0 && p->passes >= count) || p->in_pass == 0) {
      p->finished = 1;
      return WF__END;
    }
    p->in_pass = 0;
    rc = p->in->ops->reset(p->in, st);
    if (rc)
      return -rc;
  }
}

static int repeat_reset(wf__stage *s, wf_status *st) {
  repeat_stage *p = (repeat_stage *)s;
  p->passes = 0;
  p->in_pass = 0;
  p->finished = 0;
  return p->in->ops->reset(p->in, st);
}

static int repeat_save(wf__stage *s, wf__wbuf *w, wf_status *st) {
  repeat_stage *p = (repeat_stage *)s;
  wf__wbuf_u8(w, WF__DS_REPEAT);
  wf__wbuf_u64(w, (uint64_t)p->passes);
  wf__wbuf_u64(w, (uint64_t)p->in_pass);
  wf__wbuf_u8(w, (uint8_t)p->finished);
  return p->in->ops->save(p->in, w, st);
}

static int repeat_restore(wf__stage *s, wf__rbuf *r, wf_status *st) {
  repeat_stage *p = (repeat_stage *)s;
  uint64_t passes, in_pass;
  uint8_t finished;
  if (wf__rbuf_expect(r, WF__DS_REPEAT, st) ||
      wf__rbuf_u64(r, &passes, "repeat passes", st) ||
      wf__rbuf_u64(r, &in_pass, "repeat pass length", st) ||
      wf__rbuf_u8(r, &finished, "repeat state", st))
    return WF_INVALID_ARGUMENT;
  p->passes = (int64_t)passes;
  p->in_pass = (int64_t)in_pass;
  p->finished = finished != 0;
  return p->in->ops->restore(p->in, r, st);
}

static void repeat_free(wf__stage *s) {
  repeat_stage *p = (repeat_stage *)s;
  wf__stage_free(p->in);
  wf__free(p);
}

static const wf__stage_ops repeat_ops = {repeat_next, repeat_reset,
                                         repeat_save, repeat_restore,
                                         repeat_free};

/* ---- building ------------------------------------------------------------------ */

void wf__stage_free(wf__stage *s) {
  if (s)
    s->ops->free(s);
}

/* A zeroed stage struct of size bytes with its base filled. */
static void *stage_alloc(size_t size, const wf__stage_ops *ops,
                         const wf_dataset *ds) {
  wf__stage *s = wf__calloc(1, size);
  if (s) {
    s->ops = ops;
    s->ds = ds;
    s->nfields = ds->nfields;
  }
  return s;
}

wf__stage *wf__stage_new(const wf_dataset *ds, wf_status *st) {
  wf__stage *in = NULL, *in2 = NULL;
  if (ds->kind == WF__DS_FILES)
    return wf__source_stage_new(ds, st);
  in = wf__stage_new(ds->input, st);
  if (!in)
    return NULL;
  switch (ds->kind) {
  case WF__DS_MAP:
    return wf__map_stage_new(ds, in, st);
  case WF__DS_PREFETCH:
    return wf__prefetch_stage_new(ds, in, st);
  case WF__DS_ZIP: {
    in2 = wf__stage_new(ds->input2, st);
    if (!in2)
      break;
    zip_stage *z = stage_alloc(sizeof *z, &zip_ops, ds);
    if (z)
      z->held = wf__calloc((size_t)in->nfields, sizeof *z->held);
    if (!z || !z->held) {
      wf__free(z);
      break;
    }
    z->a = in;
    z->b = in2;
    z->base.compact = in->compact && in2->compact;
    return &z->base;
  }
  case WF__DS_SHARD: {
    shard_stage *h = stage_alloc(sizeof *h, &shard_ops, ds);
    if (!h)
      break;
    h->in = in;
    h->base.compact = in->compact;
    return &h->base;
  }
  case WF__DS_SHUFFLE: {
    shuffle_stage *h = stage_alloc(sizeof *h, &shuffle_ops, ds);
    if (!h)
      break;
    h->in = in;
    h->rng = pass_state(ds->u.shuffle.seed, 0);
    /* Re-reading an input that never ends from the start of its (only)
     * pass would take ever longer: there the buffer is saved. */
    h->replay = in->compact && !ds->input->forever;
    h->base.compact = h->replay;
    return &h->base;
  }
  case WF__DS_BATCH: {
    batch_stage *b = stage_alloc(sizeof *b, &batch_ops, ds);
    if (!b)
      break;
    b->in = in;
    b->replay = in->compact;
    b->base.compact = b->replay;
    return &b->base;
  }
  case WF__DS_CACHE: {
    cache_stage *c = stage_alloc(sizeof *c, &cache_ops, ds);
    if (!c)
      break;
    c->in = in;
    c->base.compact = in->compact;
    return &c->base;
  }
  case WF__DS_REPEAT: {
    repeat_stage *p = stage_alloc(sizeof *p, &repeat_ops, ds);
    if (!p)
      break;
    p->in = in;
    p->base.compact = in->compact;
    return &p->base;
  }
  case WF__DS_FILES:
    break;
  }
  if (wf_status_code(st) == WF_OK)
    wf_status_set(st, WF_RESOURCE_EXHAUSTED,
                  "iterator: out of memory building its stages");
  wf__stage_free(in);
  wf__stage_free(in2);
  return NULL;
}

/* ---- iterators ------------------------------------------------------------------ */

enum { RUNNING = 0, AT_END = 1, STOPPED = 2 };

struct wf_iterator {
  wf_dataset *ds;
  wf__stage *top;
  pthread_mutex_t mu; /* serialises every call */
  int skip_bad;
  atomic_llong bad;
  int state;
  wf_status error; /* why STOPPED */
};

wf_iterator *wf_iterator_new(wf_dataset *ds,
                             const wf_iterator_options *options,
                             wf_status *st) {
  wf_iterator *it = wf__calloc(1, sizeof *it);
  if (!it) {
    wf_status_set(st, WF_RESOURCE_EXHAUSTED, "iterator: out of memory");
    return NULL;
  }
  it->top = wf__stage_new(ds, st);
  if (!it->top) {
    wf__free(it);
    return NULL;
  }
  it->ds = wf_dataset_retain(ds);
  if (options &&
      options->struct_size >= offsetof(wf_iterator_options, skip_bad_records) +
                                  sizeof options->skip_bad_records)
    it->skip_bad = options->skip_bad_records != 0;
  atomic_init(&it->bad, 0);
  pthread_mutex_init(&it->mu, NULL);
  return it;
}

void wf_iterator_free(wf_iterator *it) {
  if (!it)
    return;
  wf__stage_free(it->top);
  wf_status_reset(&it->error);
  pthread_mutex_destroy(&it->mu);
  wf_dataset_release(it->ds);
  wf__free(it);
}

wf_dataset *wf_iterator_dataset(const wf_iterator *it) { return it->ds; }

int64_t wf_iterator_bad_records(const wf_iterator *it) {
  return atomic_load(&((wf_iterator *)it)->bad);
}

static void stop(wf_iterator *it, const wf_status *st) {
  it->state = STOPPED;
  wf_code code = wf_status_code(st);
  wf_status_set(&it->error, code != WF_OK ? code : WF_INTERNAL, "%s",
                wf_status_message(st));
}

int wf_iterator_next(wf_iterator *it, wf_tensor **fields, wf_status *st) {
  int code;
  pthread_mutex_lock(&it->mu);
  for (;;) {
    if (it->state == STOPPED) {
      code = wf_status_set(st, it->error.code, "%s", it->error.message);
      break;
    }
    if (it->state == AT_END) {
      code = wf_status_set(st, WF_OUT_OF_RANGE, "end of data");
      break;
    }
    int rc = it->top->ops->next(it->top, fields, st);
    if (rc == WF__ELEMENT) {
      code = WF_OK;
      break;
    }
    if (rc == WF__END) {
      it->state = AT_END;
      continue;
    }
    if (rc == -WF_DATA_LOSS && it->skip_bad) {
      long long n = atomic_fetch_add(&it->bad, 1) + 1;
      if (n <= LOGGED_BAD_RECORDS)
        wf__log(WF_LOG_WARNING, "data", "skipped a bad record: %s%s",
                wf_status_message(st),
                n == LOGGED_BAD_RECORDS
                    ? " (further bad records are counted, not logged)"
                    : "");
      wf_status_reset(st);
      continue;
    }
    if (rc == -WF_DATA_LOSS) {
      code = WF_DATA_LOSS;
      break;
    }
    if (rc == -WF_RESOURCE_EXHAUSTED && it->top->recovers) {
      code = WF_RESOURCE_EXHAUSTED; /* the next call tries again */
      break;
    }
    if (rc >= 0 || wf_status_code(st) == WF_OK)
      wf_status_set(st, WF_INTERNAL, "iterator: a stage returned %d", rc);
    stop(it, st);
    code = wf_status_code(st);
    break;
  }
  pthread_mutex_unlock(&it->mu);
  return code;
}

int wf_iterator_reset(wf_iterator *it, wf_status *st) {
  pthread_mutex_lock(&it->mu);
  int rc = it->top->ops->reset(it->top, st);
  if (rc) {
    stop(it, st);
  } else {
    it->state = RUNNING;
    wf_status_reset(&it->error);
  }
  pthread_mutex_unlock(&it->mu);
  return rc;
}

wf_tensor *wf_iterator_save(wf_iterator *it, wf_status *st) {
  wf__wbuf w = {0};
  wf_tensor *t = NULL;
  pthread_mutex_lock(&it->mu);
  wf__wbuf_bytes(&w, POSITION_MAGIC, 4);
  wf__wbuf_u32(&w, POSITION_VERSION);
  wf__wbuf_u64(&w, it->ds->fingerprint);
  wf__wbuf_u8(&w, (uint8_t)(it->state == AT_END));
  wf__wbuf_u64(&w, (uint64_t)atomic_load(&it->bad));
  int rc;
  if (it->state == STOPPED)
    rc = wf_status_set(st, WF_FAILED_PRECONDITION,
                       "iterator: cannot save the position of an iterator "
                       "stopped by an error: %s",
                       it->error.message);
  else
    rc = it->top->ops->save(it->top, &w, st);
  pthread_mutex_unlock(&it->mu);
  if (!rc)
    rc = wf__wbuf_check(&w, st);
  if (!rc) {
    int64_t n = (int64_t)w.len;
    t = wf_tensor_new(WF_UINT8, &n, 1, st);
    if (t && w.len)
      memcpy(t->data, w.data, w.len);
  }
  wf__wbuf_deinit(&w);
  return t;
}

int wf_iterator_restore(wf_iterator *it, const wf_tensor *position,
                        wf_status *st) {
  const void *magic;
  uint32_t version;
  uint64_t fp, bad;
  uint8_t at_end;
  wf__stage *fresh = NULL;

  if (!position || position->dtype != WF_UINT8 || position->shape.rank != 1)
    return wf_status_set(st, WF_INVALID_ARGUMENT,
                         "iterator restore: the position must be a rank-1 "
                         "uint8 tensor as wf_iterator_save makes");
  wf__rbuf r = {position->data, position->nbytes, 0};
  if (wf__rbuf_bytes(&r, &magic, 4, "the header", st) ||
      wf__rbuf_u32(&r, &version, "the header", st))
    return WF_INVALID_ARGUMENT;
  if (memcmp(magic, POSITION_MAGIC, 4) != 0 || version != POSITION_VERSION)
    return wf_status_set(st, WF_INVALID_ARGUMENT,
                         "iterator restore: the bytes are not an iterator "
                         "position of format %d",
                         POSITION_VERSION);
  if (wf__rbuf_u64(&r, &fp, "the header", st) ||
      wf__rbuf_u8(&r, &at_end, "the header", st) ||
      wf__rbuf_u64(&r, &bad, "the header", st))
    return WF_INVALID_ARGUMENT;
  if (fp != it->ds->fingerprint)
    return wf_status_set(st, WF_INVALID_ARGUMENT,
                         "iterator restore: the position was saved from "
                         "another dataset description (fingerprint %016llx, "
                         "this one %016llx)",
                         (unsigned long long)fp,
                         (unsigned long long)it->ds->fingerprint);
  fresh = wf__stage_new(it->ds, st);
  if (!fresh)
    return wf_status_code(st);
  int rc = fresh->ops->restore(fresh, &r, st);
  if (rc < 0)
    rc = -rc;
  if (!rc && r.pos != r.len)
    rc = wf_status_set(st, WF_INVALID_ARGUMENT,
                       "iterator restore: %zu bytes follow the position",
                       r.len - r.pos);
  if (rc) {
    wf__stage_free(fresh);
    if (wf_status_code(st) == WF_OK)
      wf_status_set(st, WF_INTERNAL, "iterator restore failed (%d)", rc);
    return wf_status_code(st);
  }
  pthread_mutex_lock(&it->mu);
  wf__stage *old = it->top;
  it->top = fresh;
  it->state = at_end ? AT_END : RUNNING;
  wf_status_reset(&it->error);
  atomic_store(&it->bad, (long long)bad);
  pthread_mutex_unlock(&it->mu);
  wf__stage_free(old);
  return WF_OK;
}
