/* core/exec/session.c — sessions: the executor cache per signature (bounded,
 * least recently used out), callables, closing, and the thread pool.
 *
 * Building and running executors is core/exec/executor.c's; this file only
 * decides which executor a run uses and keeps track of running steps. */
#include <config.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "exec/iterators.h"
#include "exec/executor.h"
#include "graph/graph_internal.h"
#include "plugin/runtime_internal.h"
#include "exec/session_internal.h"
#include "base/status_internal.h"
#include "exec/variables.h"

#define CACHE_SIZE 64

typedef struct cache_entry {
  int32_t *key; /* signature as ids (see make_key) */
  int keylen;
  uint64_t hash;
  uint64_t last_used;
  wf__exec *x;
} cache_entry;

struct wf_session {
  wf_graph *graph;
  wf_runtime *rt;
  wf__pool *pool;
  wf__pool **device_pools; /* per runtime device: its pinned threads, or NULL */
  wf__session_state state;
  pthread_mutex_t mu; /* cache, active, closed */
  pthread_cond_t idle;
  cache_entry cache[CACHE_SIZE];
  uint64_t tick;
  int active; /* running steps */
  int closed;
  int callables;
};

struct wf_callable {
  wf_session *s;
  wf__exec *x;
};

/* ---- signatures as keys ----------------------------------------------------- */

/* Session ids, unique in this process (a job's workers key variables by them). */
static _Atomic uint64_t session_ids = 1;

static int key_len(const wf__signature *sig) {
  return 3 + 2 * sig->nfeeds + 2 * sig->nfetches + sig->ntargets;
}

/* The key holds node ids, not pointers, and is only compared within one
 * session (one graph). Nodes of other graphs are refused by pruning before
 * an executor is cached. */
static void make_key(const wf__signature *sig, int32_t *k) {
  int p = 0;
  k[p++] = sig->nfeeds;
  k[p++] = sig->nfetches;
  k[p++] = sig->ntargets;
  for (int i = 0; i < sig->nfeeds; i++) {
    k[p++] = sig->feeds[i].node ? sig->feeds[i].node->id : -1;
    k[p++] = sig->feeds[i].index;
  }
  for (int i = 0; i < sig->nfetches; i++) {
    k[p++] = sig->fetches[i].node ? sig->fetches[i].node->id : -1;
    k[p++] = sig->fetches[i].index;
  }
  for (int i = 0; i < sig->ntargets; i++)
    k[p++] = sig->targets[i] ? sig->targets[i]->id : -1;
}

static uint64_t key_hash(const int32_t *k, int n) {
  uint64_t h = 1469598103934665603ULL; /* FNV-1a over the words */
  for (int i = 0; i < n; i++) {
    h ^= (uint32_t)k[i];
    h *= 1099511628211ULL;
  }
  return h;
}

/* Every node in the signature must belong to this graph (checked again by
 * pruning, with a precise message). */
static int sig_in_graph(const wf_session *s, const wf__signature *sig) {
  for (int i = 0; i < sig->nfeeds; i++)
    if (!sig->feeds[i].node || sig->feeds[i].node->graph != s->graph)
      return 0;
  for (int i = 0; i < sig->nfetches; i++)
    if (!sig->fetches[i].node || sig->fetches[i].node->graph != s->graph)
      return 0;
  for (int i = 0; i < sig->ntargets; i++)
    if (!sig->targets[i] || sig->targets[i]->graph != s->graph)
      return 0;
  return 1;
}

/* Finds or builds the executor for sig; returns a new reference. */
static wf__exec *get_exec(wf_session *s, const wf__signature *sig,
                          wf_status *st) {
  if (!sig_in_graph(s, sig))
    return wf__exec_new(s->rt, s->graph, sig, st); /* fails with a message */
  int n = key_len(sig);
  int32_t stackkey[64];
  int32_t *key = n <= 64 ? stackkey : wf__calloc((size_t)n, sizeof *key);
  if (!key) {
    wf_status_set(st, WF_RESOURCE_EXHAUSTED, "session: out of memory");
    return NULL;
  }
  make_key(sig, key);
  uint64_t h = key_hash(key, n);
  wf__exec *x = NULL;
  pthread_mutex_lock(&s->mu);
  for (int i = 0; i < CACHE_SIZE; i++) {
    cache_entry *e = &s->cache[i];
    if (e->x && e->hash == h && e->keylen == n &&
        memcmp(e->key, key, (size_t)n * sizeof *key) == 0) {
      e->last_used = ++s->tick;
      x = wf__exec_retain(e->x);
      break;
    }
  }
  pthread_mutex_unlock(&s->mu);
  if (x)
    goto done;

  /* Build outside the lock: other steps keep running meanwhile. */
  x = wf__exec_new(s->rt, s->graph, sig, st);
  if (!x)
    goto done;
  int32_t *owned = wf__calloc((size_t)n, sizeof *owned);
  if (!owned)
    goto done; /* uncached but usable */
  memcpy(owned, key, (size_t)n * sizeof *key);
  pthread_mutex_lock(&s->mu);
  cache_entry *slot = NULL;
  for (int i = 0; i < CACHE_SIZE; i++) {
    cache_entry *e = &s->cache[i];
    if (e->x && e->hash == h && e->keylen == n &&
        memcmp(e->key, key, (size_t)n * sizeof *key) == 0) {
      slot = NULL; /* another thread built it first: keep theirs */
      wf__free(owned);
      owned = NULL;
      break;
    }
    if (!slot || !e->x || (slot->x && e->last_used < slot->last_used))
      slot = e;
  }
  wf__exec *evicted = NULL;
  int32_t *evicted_key = NULL;
  if (owned && slot) {
    evicted = slot->x;
    evicted_key = slot->key;
    slot->key = owned;
    slot->keylen = n;
    slot->hash = h;
    slot->last_used = ++s->tick;
    slot->x = wf__exec_retain(x);
  }
  pthread_mutex_unlock(&s->mu);
  wf__exec_release(evicted);
  wf__free(evicted_key);
done:
  if (key != stackkey)
    wf__free(key);
  return x;
}

/* ---- sessions ------------------------------------------------------------------- */

wf_session *wf_session_new(wf_graph *g, wf_status *st) {
  wf_session *s = wf__calloc(1, sizeof *s);
  if (!s) {
    wf_status_set(st, WF_RESOURCE_EXHAUSTED, "session: out of memory");
    return NULL;
  }
  /* From here on wf_session_free undoes whatever was made. */
  pthread_mutex_init(&s->mu, NULL);
  pthread_cond_init(&s->idle, NULL);
  s->graph = g;
  s->rt = g->rt;
  s->state.id = atomic_fetch_add(&session_ids, 1);
  atomic_init(&s->state.cancelled, 0);
  atomic_init(&s->state.step, 0);
  s->state.vars = wf__varstore_new();
  s->state.iterators = wf__iterators_new();
  s->device_pools = wf__calloc((size_t)s->rt->num_devices + 1,
                               sizeof *s->device_pools);
  if (!s->state.vars || !s->state.iterators || !s->device_pools) {
    wf_status_set(st, WF_RESOURCE_EXHAUSTED, "session: out of memory");
    goto fail;
  }
  int32_t inter, intra;
  wf__threads(s->rt->cfg, &inter, &intra);
  /* The thread that calls run takes part in every step, so a pool of
   * inter - 1 workers uses exactly `inter` threads; with one core there is
   * no pool at all. */
  if (inter > 1 && !(s->pool = wf__pool_new(inter - 1, s->rt->cfg->pin, st)))
    goto fail;
  /* Devices that name their processing units (a CPU split into several
   * devices) get threads of their own, pinned there. */
  for (int d = 0; d < s->rt->num_devices; d++) {
    const wf_device_desc *dd = &s->rt->devices[d].desc;
    if (!dd->available || !dd->cpus[0] || !s->rt->cfg->pin)
      continue;
    s->device_pools[d] = wf__pool_new_on(dd->cpus, st);
    if (!s->device_pools[d]) {
      wf_status_prefix(st, "session: threads of %s", dd->name);
      goto fail;
    }
  }
  return s;

fail:
  wf_session_free(s);
  return NULL;
}

void wf_session_close(wf_session *s) {
  pthread_mutex_lock(&s->mu);
  s->closed = 1;
  atomic_store(&s->state.cancelled, 1);
  while (s->active > 0)
    pthread_cond_wait(&s->idle, &s->mu);
  pthread_mutex_unlock(&s->mu);
}

void wf_session_free(wf_session *s) {
  if (!s)
    return;
  wf_session_close(s);
  if (s->rt->job)
    s->rt->job->session_closed(s->rt, s->state.id);
  for (int i = 0; i < CACHE_SIZE; i++) {
    wf__exec_release(s->cache[i].x);
    wf__free(s->cache[i].key);
  }
  wf__pool_free(s->pool);
  for (int d = 0; s->device_pools && d < s->rt->num_devices; d++)
    wf__pool_free(s->device_pools[d]);
  wf__free(s->device_pools);
  wf__varstore_free(s->state.vars);
  wf__iterators_free(s->state.iterators);
  pthread_mutex_destroy(&s->mu);
  pthread_cond_destroy(&s->idle);
  wf__free(s);
}

int wf_session_attach_iterator(wf_session *s, const char *name,
                               wf_iterator *it, wf_status *st) {
  return wf__iterators_attach(s->state.iterators, name, it, st);
}

static int step_begin(wf_session *s, wf_status *st) {
  pthread_mutex_lock(&s->mu);
  int closed = s->closed;
  if (!closed)
    s->active++;
  pthread_mutex_unlock(&s->mu);
  if (closed)
    return wf_status_set(st, WF_FAILED_PRECONDITION,
                         "the session is closed");
  return 0;
}

static void step_end(wf_session *s) {
  pthread_mutex_lock(&s->mu);
  if (--s->active == 0)
    pthread_cond_broadcast(&s->idle);
  pthread_mutex_unlock(&s->mu);
}

int wf_session_run(wf_session *s, const wf_run_options *options,
                   const wf_output *feeds, wf_tensor *const *feed_values,
                   int nfeeds, const wf_output *fetches,
                   wf_tensor **fetch_values, int nfetches,
                   wf_node *const *targets, int ntargets,
                   wf_run_metadata *metadata, wf_status *st) {
  if (nfeeds < 0 || nfetches < 0 || ntargets < 0)
    return wf_status_set(st, WF_INVALID_ARGUMENT,
                         "negative count of feeds, fetches or targets");
  if (step_begin(s, st))
    return WF_FAILED_PRECONDITION;
  wf__signature sig = {feeds, nfeeds, fetches, nfetches, targets, ntargets};
  int rc;
  wf__exec *x = get_exec(s, &sig, st);
  if (!x) {
    rc = wf_status_code(st) ? (int)wf_status_code(st) : WF_INTERNAL;
  } else {
    rc = wf__exec_run(x, s->pool, s->device_pools, &s->state, options,
                      feed_values,
                      fetch_values, metadata, st);
    wf__exec_release(x);
  }
  step_end(s);
  return rc;
}

wf_callable *wf_session_prepare(wf_session *s, const wf_output *feeds,
                                int nfeeds, const wf_output *fetches,
                                int nfetches, wf_node *const *targets,
                                int ntargets, wf_status *st) {
  if (nfeeds < 0 || nfetches < 0 || ntargets < 0) {
    wf_status_set(st, WF_INVALID_ARGUMENT,
                  "negative count of feeds, fetches or targets");
    return NULL;
  }
  if (step_begin(s, st))
    return NULL;
  wf__signature sig = {feeds, nfeeds, fetches, nfetches, targets, ntargets};
  wf_callable *c = NULL;
  wf__exec *x = get_exec(s, &sig, st);
  if (x) {
    c = wf__calloc(1, sizeof *c);
    if (!c) {
      wf__exec_release(x);
      wf_status_set(st, WF_RESOURCE_EXHAUSTED, "callable: out of memory");
    } else {
      c->s = s;
      c->x = x;
    }
  }
  step_end(s);
  return c;
}

int wf_callable_run(wf_callable *c, const wf_run_options *options,
                    wf_tensor *const *feed_values, wf_tensor **fetch_values,
                    wf_run_metadata *metadata, wf_status *st) {
  wf_session *s = c->s;
  if (step_begin(s, st))
    return WF_FAILED_PRECONDITION;
  int rc = wf__exec_run(c->x, s->pool, s->device_pools, &s->state, options,
                        feed_values,
                        fetch_values, metadata, st);
  step_end(s);
  return rc;
}

void wf_callable_free(wf_callable *c) {
  if (!c)
    return;
  wf__exec_release(c->x);
  wf__free(c);
}

int wf_graph_parse_output(const wf_graph *g, const char *name, wf_output *out,
                          wf_status *st) {
  const char *colon = strrchr(name, ':');
  char buf[512];
  long index = 0;
  size_t len = strlen(name);
  if (colon) {
    char *end;
    index = strtol(colon + 1, &end, 10);
    if (colon[1] == '\0' || *end != '\0' || index < 0)
      return wf_status_set(st, WF_INVALID_ARGUMENT,
                           "'%s': expected NODE or NODE:INDEX", name);
    len = (size_t)(colon - name);
  }
  if (len >= sizeof buf)
    return wf_status_set(st, WF_INVALID_ARGUMENT, "'%.64s...': name too long",
                         name);
  memcpy(buf, name, len);
  buf[len] = '\0';
  wf_node *n = wf_graph_find_node(g, buf);
  if (!n)
    return wf_status_set(st, WF_INVALID_ARGUMENT,
                         "'%s': no node named '%s' in the graph", name, buf);
  if (index >= n->num_outputs)
    return wf_status_set(st, WF_INVALID_ARGUMENT,
                         "'%s': node '%s' (op '%s') has %d output(s)", name,
                         buf, n->op->def.name, n->num_outputs);
  out->node = n;
  out->index = (int32_t)index;
  return 0;
}

int wf__session_cache_count(wf_session *s) {
  int n = 0;
  pthread_mutex_lock(&s->mu);
  for (int i = 0; i < CACHE_SIZE; i++)
    n += s->cache[i].x != NULL;
  pthread_mutex_unlock(&s->mu);
  return n;
}

int wf__session_cache_capacity(void) { return CACHE_SIZE; }

wf__session_state *wf__session_state_of(wf_session *s) { return &s->state; }

wf_graph *wf__session_graph(const wf_session *s) { return s->graph; }
