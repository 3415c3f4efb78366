/* core/data/prefetch.c — the prefetch stage: one background thread per stage
 * produces elements of its input into a bounded queue that the iterator
 * consumes in order, bad records and errors included, so the sequence is
 * exactly that of the input.
 *
 * The thread starts on the first next. Reset, save and free pause it
 * between two input calls; nothing else touches the input meanwhile.
 *
 * Over a compact input the thread notes the input's position before each
 * call, and a saved position is the one before the oldest item not yet
 * taken: a restore re-reads the queued items instead of holding them in
 * the checkpoint. Over other inputs the queued items are saved.
 *
 * Over a compact input, running out of memory is not fatal: when an input
 * call fails with RESOURCE_EXHAUSTED, the thread rebuilds its input at the
 * position noted before that call and tries again; when that fails too,
 * the consumer gets the error once (a transient item), and the elements
 * that follow are exactly those it would have had. Over other inputs it stops the iterator like any error. */
#include <config.h>

#include <errno.h>
#include <pthread.h>
#include <string.h>

#include "base/alloc.h"
#include "data/dataset.h"
#include "base/status_internal.h"

typedef struct item {
  int code;      /* WF__ELEMENT, WF__END or -code */
  int transient; /* -WF_RESOURCE_EXHAUSTED after which the input goes on */
  char *msg;     /* errors: the message (NULL if it could not be copied) */
} item;

typedef struct prefetch_stage {
  wf__stage base;
  wf__stage *in;
  pthread_mutex_t mu;
  pthread_cond_t wake_producer, wake_consumer;
  pthread_t thread;
  int started;
  int stop;   /* the thread must exit */
  int pause;  /* the thread must not start another input call */
  int busy;   /* the thread is inside an input call */
  int done;   /* the input ended or failed: nothing more until a reset */
  item *items; /* ring of cap items, fields cap * nfields */
  wf_tensor **fields;
  int cap, head, count;
  wf_tensor **scratch; /* the thread's element */
  int at_end;          /* the consumer has taken the end */
  int failed_code;     /* the consumer has taken a fatal error */
  char *failed_msg;
  int replay;          /* saves WF__SAVED_REPLAY */
  wf__wbuf *pos;       /* replay: per item, the input's position before it */
  wf__wbuf scratch_pos; /* the thread's: before the call in progress */
  int redo;             /* the input must be rebuilt at redo_pos first */
  wf__wbuf redo_pos;
} prefetch_stage;

static wf_tensor **slot_fields(prefetch_stage *p, int k) {
  return p->fields + (size_t)k * (size_t)p->base.nfields;
}

/* Appends an item (under mu); the queue has room. */
static void push(prefetch_stage *p, int code, int transient, wf_tensor **f,
                 const wf_status *st) {
  int k = (p->head + p->count) % p->cap;
  item *it = &p->items[k];
  it->code = code;
  it->transient = transient;
  it->msg = NULL;
  if (code == WF__ELEMENT) {
    wf_tensor **dst = slot_fields(p, k);
    for (int i = 0; i < p->base.nfields; i++) {
      dst[i] = f[i];
      f[i] = NULL;
    }
  } else if (code < 0) {
    it->msg = wf__strdup(wf_status_message(st));
    if (code != -WF_DATA_LOSS && !transient)
      p->done = 1;
  } else {
    p->done = 1;
  }
  if (p->replay) {
    wf__wbuf t = p->pos[k];
    p->pos[k] = p->scratch_pos;
    p->scratch_pos = t;
  }
  p->count++;
}

static void clear_item(prefetch_stage *p, int k) {
  if (p->items[k].code == WF__ELEMENT)
    wf__element_clear(slot_fields(p, k), p->base.nfields);
  wf__free(p->items[k].msg);
  p->items[k].msg = NULL;
  p->items[k].code = WF__END;
}

static void clear_queue(prefetch_stage *p) {
  for (int i = 0; i < p->count; i++)
    clear_item(p, (p->head + i) % p->cap);
  p->head = 0;
  p->count = 0;
  p->done = 0;
  p->at_end = 0;
  p->failed_code = 0;
  wf__free(p->failed_msg);
  p->failed_msg = NULL;
}

/* Replaces the input by a new one standing at position at (the thread's,
 * or the consumer's while the thread is paused). */
static int rebuild_input(prefetch_stage *p, const wf__wbuf *at,
                         wf_status *st) {
  wf__stage *fresh = wf__stage_new(p->in->ds, st);
  if (!fresh)
    return wf_status_code(st);
  int rc = wf__stage_restore_bytes(fresh, at->data, at->len, st);
  if (rc) {
    wf__stage_free(fresh);
    return rc;
  }
  wf__stage_free(p->in);
  p->in = fresh;
  return 0;
}

/* One input call of the thread (outside mu): its result (WF__ELEMENT into
 * p->scratch, WF__END or -code with st set), *transient set when it is a
 * RESOURCE_EXHAUSTED the input recovers from. */
static int produce(prefetch_stage *p, int *transient, wf_status *st) {
  int rc;
  *transient = 0;
  if (p->redo) {
    rc = rebuild_input(p, &p->redo_pos, st);
    if (rc) {
      wf_status_prefix(st, "prefetch: rebuilding the input after running "
                           "out of memory");
      *transient = rc == WF_RESOURCE_EXHAUSTED;
      return -rc;
    }
    p->redo = 0;
  }
  if (p->replay) {
    rc = wf__stage_save_into(p->in, &p->scratch_pos, st);
    if (rc) {
      /* The input has not moved: the next call tries again. */
      wf_status_prefix(st, "prefetch: noting the input's position");
      *transient = rc == WF_RESOURCE_EXHAUSTED;
      return -rc;
    }
  }
  rc = p->in->ops->next(p->in, p->scratch, st);
  if (rc == -WF_RESOURCE_EXHAUSTED && p->replay) {
    /* Where the input stands now is unknown: it is made again at the
     * position noted before the call, now or (when that runs out of
     * memory too) before the next call. */
    wf__wbuf t = p->redo_pos;
    p->redo_pos = p->scratch_pos;
    p->scratch_pos = t;
    wf_status again = {WF_OK, NULL};
    p->redo = rebuild_input(p, &p->redo_pos, &again) != 0;
    wf_status_reset(&again);
    *transient = 1;
  }
  return rc;
}

static void *producer(void *arg) {
  prefetch_stage *p = arg;
  pthread_mutex_lock(&p->mu);
  for (;;) {
    while (!p->stop && (p->pause || p->done || p->count == p->cap))
      pthread_cond_wait(&p->wake_producer, &p->mu);
    if (p->stop)
      break;
    p->busy = 1;
    pthread_mutex_unlock(&p->mu);
    wf_status st = {WF_OK, NULL};
    int transient;
    int rc = produce(p, &transient, &st);
    if (transient) {
      /* Memory may be back already: the consumer hears of it only when a
       * second try fails too. */
      wf_status_reset(&st);
      rc = produce(p, &transient, &st);
    }
    if (rc < 0 && wf_status_code(&st) == WF_OK)
      wf_status_set(&st, WF_INTERNAL, "prefetch: the input failed (%d) "
                    "without a message", rc);
    pthread_mutex_lock(&p->mu);
    p->busy = 0;
    push(p, rc, transient, p->scratch, &st);
    wf_status_reset(&st);
    pthread_cond_broadcast(&p->wake_consumer);
  }
  pthread_mutex_unlock(&p->mu);
  return NULL;
}

/* Makes the thread stop between two input calls. */
static void pause_producer(prefetch_stage *p) {
  if (!p->started)
    return;
  pthread_mutex_lock(&p->mu);
  p->pause = 1;
  while (p->busy)
    pthread_cond_wait(&p->wake_consumer, &p->mu);
  pthread_mutex_unlock(&p->mu);
}

static void resume_producer(prefetch_stage *p) {
  if (!p->started)
    return;
  pthread_mutex_lock(&p->mu);
  p->pause = 0;
  pthread_cond_broadcast(&p->wake_producer);
  pthread_mutex_unlock(&p->mu);
}

static int start(prefetch_stage *p, wf_status *st) {
  int rc = pthread_create(&p->thread, NULL, producer, p);
  if (rc)
    return -wf_status_set(st, WF_RESOURCE_EXHAUSTED,
                          "prefetch: cannot start its thread: %s",
                          strerror(rc));
  p->started = 1;
  return 0;
}

static int prefetch_next(wf__stage *s, wf_tensor **out, wf_status *st) {
  prefetch_stage *p = (prefetch_stage *)s;
  if (!p->started) {
    int rc = start(p, st);
    if (rc)
      return rc;
  }
  pthread_mutex_lock(&p->mu);
  int code, wake = 0;
  if (p->at_end) {
    code = WF__END;
  } else if (p->failed_code) {
    code = -p->failed_code;
    wf_status_set(st, (wf_code)p->failed_code, "%s",
                  p->failed_msg ? p->failed_msg : "prefetch: input failed");
  } else {
    while (p->count == 0)
      pthread_cond_wait(&p->wake_consumer, &p->mu);
    item *it = &p->items[p->head];
    code = it->code;
    if (code == WF__ELEMENT) {
      wf_tensor **src = slot_fields(p, p->head);
      for (int i = 0; i < s->nfields; i++) {
        out[i] = src[i];
        src[i] = NULL;
      }
    } else if (code == WF__END) {
      p->at_end = 1;
    } else {
      wf_status_set(st, (wf_code)-code, "%s",
                    it->msg ? it->msg
                            : "an input error whose message was lost (out "
                              "of memory)");
      if (code != -WF_DATA_LOSS && !it->transient) {
        p->failed_code = -code;
        p->failed_msg = it->msg;
        it->msg = NULL;
      }
    }
    clear_item(p, p->head);
    p->head = (p->head + 1) % p->cap;
    p->count--;
    /* The thread is woken once half the queue is free, not after every
     * element: it then refills in a burst, and a consumer that keeps up
     * pays for fewer wake-ups (which on few cores preempt it). */
    wake = p->count <= p->cap / 2;
  }
  pthread_mutex_unlock(&p->mu);
  if (wake)
    pthread_cond_signal(&p->wake_producer);
  return code;
}

static int prefetch_reset(wf__stage *s, wf_status *st) {
  prefetch_stage *p = (prefetch_stage *)s;
  pause_producer(p);
  pthread_mutex_lock(&p->mu);
  clear_queue(p);
  pthread_mutex_unlock(&p->mu);
  /* An input left to rebuild is reset from where it stands: a reset
   * starts a pass from any state. */
  p->redo = 0;
  int rc = p->in->ops->reset(p->in, st);
  if (rc) {
    /* Keep the thread from reading a broken input: report the error. */
    pthread_mutex_lock(&p->mu);
    p->done = 1;
    pthread_mutex_unlock(&p->mu);
  }
  resume_producer(p);
  return rc;
}

static int prefetch_save(wf__stage *s, wf__wbuf *w, wf_status *st) {
  prefetch_stage *p = (prefetch_stage *)s;
  int rc = WF_OK;
  pause_producer(p);
  wf__wbuf_u8(w, WF__DS_PREFETCH);
  wf__wbuf_u8(w, p->replay ? WF__SAVED_REPLAY : WF__SAVED_DATA);
  wf__wbuf_u8(w, (uint8_t)p->at_end);
  wf__wbuf_u32(w, (uint32_t)p->failed_code);
  wf__wbuf_str(w, p->failed_msg ? p->failed_msg : "");
  if (p->replay) {
    /* Where the oldest item not taken was read from (transient errors are
     * not kept); with none queued, where the (paused) input stands now, or
     * where it is to be rebuilt. */
    int first = 0;
    while (first < p->count && p->items[(p->head + first) % p->cap].transient)
      first++;
    if (first < p->count) {
      const wf__wbuf *at = &p->pos[(p->head + first) % p->cap];
      wf__wbuf_u64(w, (uint64_t)at->len);
      wf__wbuf_bytes(w, at->data, at->len);
    } else if (p->redo) {
      wf__wbuf_u64(w, (uint64_t)p->redo_pos.len);
      wf__wbuf_bytes(w, p->redo_pos.data, p->redo_pos.len);
    } else {
      wf__wbuf now = {0};
      rc = wf__stage_save_into(p->in, &now, st);
      if (!rc) {
        wf__wbuf_u64(w, (uint64_t)now.len);
        wf__wbuf_bytes(w, now.data, now.len);
      }
      wf__wbuf_deinit(&now);
    }
    resume_producer(p);
    return rc;
  }
  wf__wbuf_u64(w, (uint64_t)p->count);
  for (int i = 0; i < p->count; i++) {
    int k = (p->head + i) % p->cap;
    const item *it = &p->items[k];
    wf__wbuf_u32(w, (uint32_t)it->code);
    if (it->code == WF__ELEMENT)
      wf__wbuf_element(w, slot_fields(p, k), s->nfields);
    else if (it->code < 0)
      wf__wbuf_str(w, it->msg ? it->msg : "");
  }
  rc = p->in->ops->save(p->in, w, st);
  resume_producer(p);
  return rc;
}

static int prefetch_restore(wf__stage *s, wf__rbuf *r, wf_status *st) {
  prefetch_stage *p = (prefetch_stage *)s;
  uint8_t at_end, form;
  uint32_t failed, len;
  uint64_t n;
  const void *bytes;
  if (wf__rbuf_expect(r, WF__DS_PREFETCH, st) ||
      wf__rbuf_u8(r, &form, "prefetch saved form", st))
    return WF_INVALID_ARGUMENT;
  if (form != (p->replay ? WF__SAVED_REPLAY : WF__SAVED_DATA))
    return wf_status_set(st, WF_INVALID_ARGUMENT,
                         "iterator position: the prefetch stage was saved in "
                         "form %u, this dataset's saves form %d",
                         (unsigned)form,
                         p->replay ? WF__SAVED_REPLAY : WF__SAVED_DATA);
  if (wf__rbuf_u8(r, &at_end, "prefetch state", st) ||
      wf__rbuf_u32(r, &failed, "prefetch state", st) ||
      wf__rbuf_u32(r, &len, "prefetch message", st) ||
      wf__rbuf_bytes(r, &bytes, len, "prefetch message", st))
    return WF_INVALID_ARGUMENT;
  if (failed > WF_UNAUTHENTICATED)
    return wf_status_set(st, WF_INVALID_ARGUMENT,
                         "iterator position: the prefetch state (code %u) "
                         "is not a status code",
                         (unsigned)failed);
  p->at_end = at_end != 0;
  p->failed_code = (int)failed;
  if (failed && !(p->failed_msg = wf__strndup(bytes, len)))
    return wf_status_set(st, WF_RESOURCE_EXHAUSTED,
                         "iterator restore: out of memory");
  if (p->replay) {
    if (wf__rbuf_count(r, &n, 1, "prefetch input position", st) ||
        wf__rbuf_bytes(r, &bytes, (size_t)n, "prefetch input position", st))
      return WF_INVALID_ARGUMENT;
    /* Past the end or a fatal error nothing more is read. */
    p->done = p->at_end || p->failed_code;
    return wf__stage_restore_bytes(p->in, bytes, (size_t)n, st);
  }
  if (wf__rbuf_count(r, &n, 4, "prefetched elements", st))
    return WF_INVALID_ARGUMENT;
  if (n > (uint64_t)p->cap)
    return wf_status_set(st, WF_INVALID_ARGUMENT,
                         "iterator position: %llu prefetched elements for a "
                         "buffer of %d",
                         (unsigned long long)n, p->cap);
  for (uint64_t i = 0; i < n; i++) {
    uint32_t code;
    item *it = &p->items[p->count];
    if (wf__rbuf_u32(r, &code, "a prefetched item", st))
      return WF_INVALID_ARGUMENT;
    int c = (int)(int32_t)code;
    if (c != WF__ELEMENT && c != WF__END &&
        (c >= 0 || -c > WF_UNAUTHENTICATED))
      return wf_status_set(st, WF_INVALID_ARGUMENT,
                           "iterator position: a prefetched item has code "
                           "%d",
                           c);
    if (c == WF__ELEMENT) {
      if (wf__rbuf_element(r, s->ds, slot_fields(p, p->count),
                           "a prefetched element", st))
        return wf_status_code(st);
    } else if (c < 0) {
      if (wf__rbuf_u32(r, &len, "a prefetched error", st) ||
          wf__rbuf_bytes(r, &bytes, len, "a prefetched error", st))
        return WF_INVALID_ARGUMENT;
      if (!(it->msg = wf__strndup(bytes, len)))
        return wf_status_set(st, WF_RESOURCE_EXHAUSTED,
                             "iterator restore: out of memory");
    }
    it->code = c;
    if (c == WF__END || (c < 0 && c != -WF_DATA_LOSS))
      p->done = 1;
    p->count++;
  }
  return p->in->ops->restore(p->in, r, st);
}

static void prefetch_free(wf__stage *s) {
  prefetch_stage *p = (prefetch_stage *)s;
  if (p->started) {
    pthread_mutex_lock(&p->mu);
    p->stop = 1;
    pthread_cond_broadcast(&p->wake_producer);
    pthread_mutex_unlock(&p->mu);
    pthread_join(p->thread, NULL);
  }
  if (p->items)
    clear_queue(p);
  if (p->scratch)
    wf__element_clear(p->scratch, s->nfields);
  wf__free(p->scratch);
  for (int i = 0; p->pos && i < p->cap; i++)
    wf__wbuf_deinit(&p->pos[i]);
  wf__free(p->pos);
  wf__wbuf_deinit(&p->scratch_pos);
  wf__wbuf_deinit(&p->redo_pos);
  wf__free(p->items);
  wf__free(p->fields);
  wf__stage_free(p->in);
  pthread_mutex_destroy(&p->mu);
  pthread_cond_destroy(&p->wake_producer);
  pthread_cond_destroy(&p->wake_consumer);
  wf__free(p);
}

static const wf__stage_ops prefetch_ops = {prefetch_next, prefetch_reset,
                                           prefetch_save, prefetch_restore,
                                           prefetch_free};

wf__stage *wf__prefetch_stage_new(const wf_dataset *ds, wf__stage *input,
                                  wf_status *st) {
  prefetch_stage *p = wf__calloc(1, sizeof *p);
  if (!p) {
    wf__stage_free(input);
    wf_status_set(st, WF_RESOURCE_EXHAUSTED, "iterator: out of memory");
    return NULL;
  }
  p->base.ops = &prefetch_ops;
  p->base.ds = ds;
  p->base.nfields = ds->nfields;
  p->in = input;
  p->cap = ds->u.prefetch.size;
  pthread_mutex_init(&p->mu, NULL);
  pthread_cond_init(&p->wake_producer, NULL);
  pthread_cond_init(&p->wake_consumer, NULL);
  p->items = wf__calloc((size_t)p->cap, sizeof *p->items);
  p->fields =
      wf__calloc((size_t)p->cap * (size_t)ds->nfields, sizeof *p->fields);
  p->scratch = wf__calloc((size_t)ds->nfields, sizeof *p->scratch);
  p->replay = input->compact;
  p->base.compact = input->compact;
  p->base.recovers = input->compact;
  if (p->replay)
    p->pos = wf__calloc((size_t)p->cap, sizeof *p->pos);
  if (!p->items || !p->fields || !p->scratch || (p->replay && !p->pos)) {
    prefetch_free(&p->base);
    wf_status_set(st, WF_RESOURCE_EXHAUSTED,
                  "iterator: out of memory for a prefetch buffer of %d",
                  ds->u.prefetch.size);
    return NULL;
  }
  return &p->base;
}
