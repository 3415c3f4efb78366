/* plugins/transports/mpi/mpi_coll_progress.c — how the collective ops run:
 * the order every task agrees on, and the one thread that drives the
 * calls. It knows the calls' shapes (mpi_coll_progress.h), not the ops.
 *
 * MPI matches the collective calls on a communicator by the order in which
 * each task starts them, but the executor starts ready nodes in whatever
 * order its threads pick them, sets up kernels in an order that follows
 * the graph's structure (which may differ between tasks), and a session
 * may run several steps of one executor at once. Hence:
 *
 *  - Each node of each executor gets a communicator of its own, named by
 *    a key: a hash of the node's name and how many nodes of that name this
 *    process set up before (so two executors of one graph differ). Setting
 *    a kernel up only registers the key. The progress thread then agrees
 *    with the other tasks, in rounds on the plugin's collective
 *    communicator, on which key gets the next duplicate: each task
 *    proposes its smallest waiting key (Iallreduce MAX of the key and its
 *    negation); when all proposed the same, every task duplicates the
 *    communicator for it (MPI_Comm_idup, in the same place of the
 *    sequence everywhere); otherwise the smallest proposal is the next
 *    one, and a task that has not set that node up yet waits until it
 *    has. Collectives of different nodes then never match each other.
 *
 *  - A node's runs (one per step) go one at a time, each as two
 *    nonblocking calls on the node's communicator: a header (Iallreduce MAX
 *    of the step, the element count, a hash of the shapes and one of the
 *    node's settings, each with its negation) and then the data. When the
 *    tasks proposed different steps (two steps of the node were ready in
 *    other orders on different tasks), no data moves: the smallest step
 *    goes next, a task waits until its run of that step is queued, and
 *    they agree again. When the steps agree but counts, shapes or settings
 *    differ, every task fails that run with the same verdict, so the
 *    communicator stays in step and no buffer is overrun.
 *
 *  - The progress thread starts the calls and tests them with
 *    MPI_Testsome. While data moves (a header completed, so every task
 *    reached the node) it polls, yielding the core between tests; while it
 *    waits for other tasks it sleeps with a growing backoff (at most
 *    SLEEP_MAX_NS); with nothing in flight it sleeps on a condition
 *    variable. It completes kernels through kernel_done, never holding its
 *    lock then: the executor may run the next nodes, and start the next
 *    collective, on this very thread.
 *
 * Limits: every task must set up the same collective nodes (build the
 * executors that hold them: run the same signatures), nodes of one name in
 * the same order, and run the same steps of each executor (steps are keyed
 * by the session's step counter); a step that fails on one task before
 * reaching a collective is refused there (coll_skip) so that the others
 * fail it too, but a task that never reaches it otherwise leaves them
 * waiting, since MPI collectives cannot be cancelled (a warning names the
 * node after STALL_WARN_NS); at most INT_MAX elements per call.
 * A job of one task never comes here: its kernels complete at once. */
#include <config.h>

#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mpi_coll_progress.h"

/* Polling while only headers and rounds are in flight: this long after the
 * last event spinning (yielding), then sleeps from SLEEP_MIN_NS doubling
 * up to SLEEP_MAX_NS. A submitted run wakes the thread at once. */
#define HEADER_SPIN_NS INT64_C(50000)
#define SLEEP_MIN_NS INT64_C(5000)
#define SLEEP_MAX_NS INT64_C(200000)
/* While data moves, polling goes on without sleeping for
 * DATA_SPIN_BASE_NS plus DATA_SPIN_NS_PER_KIB per KiB of the call from its
 * start (a transfer normally ends long before), then backs off. */
#define DATA_SPIN_BASE_NS INT64_C(2000000)
#define DATA_SPIN_NS_PER_KIB INT64_C(2000)
/* A run waiting this long gets one warning in the log. */
#define STALL_WARN_NS INT64_C(30000000000)

#define HDR_WORDS 10
#define KEY_MASK ((UINT64_C(1) << 62) - 1)

enum { PHASE_IDLE, PHASE_HEADER, PHASE_DATA };
/* What a request in flight belongs to. */
enum { REQ_NODE, REQ_ROUND, REQ_BIND };

struct coll_node {
  coll_config cfg;
  char *name;
  int rank, size;
  MPI_Datatype type; /* element type of the calls */
  size_t esize;
  uint64_t cfg_hash; /* of the settings and the name, checked per run */
  uint64_t key;      /* the same on every task: names the communicator */
  /* -- under eng.mu -- */
  MPI_Comm comm;       /* once bound */
  int bound;           /* comm is set */
  int binding;         /* the tasks agreed on key; its communicator is coming */
  int zombie;          /* freed before it was bound: goes once bound */
  coll_run *queue; /* waiting, by increasing step */
  coll_run *active; /* in its header or data call */
  int phase;
  int64_t data_spin_until; /* PHASE_DATA: poll without sleeping until */
  int has_target;          /* the tasks agreed to run step `target` next */
  int64_t target;
  int64_t target_since;
  int target_warned;
  int bind_warned;
  int in_ready;
  coll_node *ready_next;
  coll_node *live_prev, *live_next;
  int64_t hdr_out[HDR_WORDS], hdr_in[HDR_WORDS];
};

/* A communicator being duplicated for the node of key. */
typedef struct binding {
  uint64_t key;
  MPI_Comm comm;
} binding;

/* What the engine shares between the kernels and the progress thread;
 * everything under mu. */
static struct {
  pthread_mutex_t mu;
  pthread_cond_t cv; /* work for the thread, or stop */
  pthread_t thread;
  int started;          /* the thread runs */
  int stopping;         /* mpt_collectives_stop was called */
  coll_node *ready; /* nodes that may start a run */
  coll_node *live;  /* every node of a job of several tasks */
  int unbound;          /* nodes waiting for a round to name them */
  int kick;             /* a node was set up: try a round */
  /* The rounds that name the nodes' communicators. */
  int round_busy;       /* a round or a duplication is in flight on `coll` */
  int round_has_target; /* the tasks agreed that round_target goes next */
  int64_t round_target;
  int64_t round_out[2], round_in[2];
  char broken[320]; /* the rounds failed: why (unbound nodes cannot run) */
  char lost[320];   /* a task went silent: the job cannot go on (why) */
  int peer_skipped; /* mpt_collectives_peer_skipped */
  /* How many nodes of each name hash were set up (open addressing). */
  uint64_t *name_hash;
  uint32_t *name_count;
  size_t name_cap, name_used;
} eng = {.mu = PTHREAD_MUTEX_INITIALIZER};

static pthread_once_t cv_once = PTHREAD_ONCE_INIT;

static void cv_init(void) {
  pthread_condattr_t a;
  pthread_condattr_init(&a);
  pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
  pthread_cond_init(&eng.cv, &a);
  pthread_condattr_destroy(&a);
}

static int64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

/* Waits on eng.cv (eng.mu held) for at most ns. */
static void wait_ns(int64_t ns) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  ns += t.tv_nsec;
  t.tv_sec += (time_t)(ns / 1000000000);
  t.tv_nsec = (long)(ns % 1000000000);
  pthread_cond_timedwait(&eng.cv, &eng.mu, &t);
}

static uint64_t hash_bytes(uint64_t h, const void *data, size_t n) {
  const unsigned char *p = data;
  for (size_t i = 0; i < n; i++) {
    h ^= p[i];
    h *= UINT64_C(1099511628211);
  }
  return h;
}

uint64_t coll_hash_shape(uint64_t h, const wf_shape *s) {
  int64_t words[WF_MAX_RANK + 1];
  int n = 1;
  words[0] = s->rank;
  for (int i = 0; i < s->rank && i < WF_MAX_RANK; i++)
    words[n++] = s->dims[i];
  return hash_bytes(h, words, (size_t)n * sizeof words[0]);
}

static const char *call_name(coll_kind kind) {
  switch (kind) {
  case WF__COLL_ALLREDUCE:
    return "MPI_Iallreduce";
  case WF__COLL_REDUCE:
    return "MPI_Ireduce";
  case WF__COLL_BROADCAST:
    return "MPI_Ibcast";
  case WF__COLL_ALLGATHER:
    return "MPI_Iallgather";
  case WF__COLL_REDUCE_SCATTER:
    return "MPI_Ireduce_scatter_block";
  }
  return "?";
}

/* ---- nodes ------------------------------------------------------------- */

/* The MPI type of a node's calls: the arithmetic type for reductions,
 * an unsigned integer of the element's size for moves. */
static int node_type(coll_node *nd, wf_status *st) {
  int reduces = nd->cfg.kind == WF__COLL_ALLREDUCE ||
                nd->cfg.kind == WF__COLL_REDUCE ||
                nd->cfg.kind == WF__COLL_REDUCE_SCATTER;
  switch (nd->cfg.dtype) {
  case WF_FLOAT32:
    nd->type = reduces ? MPI_FLOAT : MPI_UINT32_T;
    nd->esize = 4;
    return 0;
  case WF_FLOAT64:
    nd->type = reduces ? MPI_DOUBLE : MPI_UINT64_T;
    nd->esize = 8;
    return 0;
  case WF_INT32:
    nd->type = reduces ? MPI_INT32_T : MPI_UINT32_T;
    nd->esize = 4;
    return 0;
  case WF_INT64:
    nd->type = reduces ? MPI_INT64_T : MPI_UINT64_T;
    nd->esize = 8;
    return 0;
  case WF_FLOAT16:
  case WF_BFLOAT16:
    nd->type = MPI_UINT16_T;
    nd->esize = 2;
    break;
  case WF_INT8:
  case WF_UINT8:
  case WF_BOOL:
    nd->type = MPI_UINT8_T;
    nd->esize = 1;
    break;
  default:
    wfx_host->status_set(st, WF_INVALID_ARGUMENT,
                         "element type %d has no MPI counterpart",
                         (int)nd->cfg.dtype);
    return WF_INVALID_ARGUMENT;
  }
  if (reduces) {
    wfx_host->status_set(st, WF_INVALID_ARGUMENT,
                         "%s cannot add elements of type %d (float32, float64, "
                         "int32 and int64 only)",
                         call_name(nd->cfg.kind), (int)nd->cfg.dtype);
    return WF_INVALID_ARGUMENT;
  }
  return 0;
}

/* How many nodes named like h this process set up before (eng.mu held);
 * -1 when out of memory. */
static int64_t name_occurrence(uint64_t h) {
  if (h == 0)
    h = 1; /* 0 marks an empty slot */
  if (2 * (eng.name_used + 1) > eng.name_cap) {
    size_t cap = eng.name_cap ? 2 * eng.name_cap : 256;
    uint64_t *hs = calloc(cap, sizeof *hs);
    uint32_t *cs = calloc(cap, sizeof *cs);
    if (!hs || !cs) {
      free(hs);
      free(cs);
      return -1;
    }
    for (size_t i = 0; i < eng.name_cap; i++) {
      if (!eng.name_hash[i])
        continue;
      size_t j = eng.name_hash[i] & (cap - 1);
      while (hs[j])
        j = (j + 1) & (cap - 1);
      hs[j] = eng.name_hash[i];
      cs[j] = eng.name_count[i];
    }
    free(eng.name_hash);
    free(eng.name_count);
    eng.name_hash = hs;
    eng.name_count = cs;
    eng.name_cap = cap;
  }
  size_t j = h & (eng.name_cap - 1);
  while (eng.name_hash[j] && eng.name_hash[j] != h)
    j = (j + 1) & (eng.name_cap - 1);
  if (!eng.name_hash[j]) {
    eng.name_hash[j] = h;
    eng.name_used++;
  }
  return eng.name_count[j]++;
}

static void *progress_main(void *arg);

coll_node *coll_node_new(const char *name, const coll_config *cfg,
                         wf_status *st) {
  const mpt_job *job = mpt_join(st);
  coll_node *nd = NULL;
  int err;
  if (!job)
    return NULL;
  /* Heartbeats between the tasks: how a task that died is noticed. */
  if (job->size > 1 && mpt_transport_start(st))
    return NULL;
  if (!(nd = calloc(1, sizeof *nd)) || !(nd->name = strdup(name))) {
    wfx_host->status_set(st, WF_RESOURCE_EXHAUSTED, "out of memory");
    goto fail;
  }
  nd->cfg = *cfg;
  nd->rank = job->rank;
  nd->size = job->size;
  nd->comm = MPI_COMM_NULL;
  if (node_type(nd, st))
    goto fail;
  if ((cfg->kind == WF__COLL_BROADCAST || cfg->kind == WF__COLL_REDUCE) &&
      (cfg->root < 0 || cfg->root >= job->size)) {
    wfx_host->status_set(st, WF_INVALID_ARGUMENT,
                         "root %d is not a task of this job of %d",
                         (int)cfg->root, job->size);
    goto fail;
  }
  uint64_t name_hash = hash_bytes(WF__COLL_HASH_INIT, name, strlen(name));
  int32_t settings[5] = {(int32_t)cfg->kind, cfg->dtype, cfg->n, cfg->mean,
                         cfg->root};
  nd->cfg_hash = hash_bytes(name_hash, settings, sizeof settings);
  if (job->size == 1)
    return nd;

  pthread_once(&cv_once, cv_init);
  pthread_mutex_lock(&eng.mu);
  if (eng.stopping) {
    pthread_mutex_unlock(&eng.mu);
    wfx_host->status_set(st, WF_CANCELLED,
                         "task %d of %d: the process is leaving the MPI job",
                         job->rank, job->size);
    goto fail;
  }
  int64_t occurrence = name_occurrence(name_hash);
  if (occurrence < 0) {
    pthread_mutex_unlock(&eng.mu);
    wfx_host->status_set(st, WF_RESOURCE_EXHAUSTED, "out of memory");
    goto fail;
  }
  nd->key = hash_bytes(name_hash, &occurrence, sizeof occurrence) & KEY_MASK;
  if (!eng.started) {
    if ((err = pthread_create(&eng.thread, NULL, progress_main, NULL))) {
      pthread_mutex_unlock(&eng.mu);
      wfx_host->status_set(st, WF_RESOURCE_EXHAUSTED,
                           "cannot start the collectives' progress thread: %s",
                           strerror(err));
      goto fail;
    }
    eng.started = 1;
  }
  nd->live_next = eng.live;
  if (eng.live)
    eng.live->live_prev = nd;
  eng.live = nd;
  eng.unbound++;
  eng.kick = 1;
  pthread_cond_signal(&eng.cv);
  pthread_mutex_unlock(&eng.mu);
  return nd;
fail:
  if (nd)
    free(nd->name);
  free(nd);
  return NULL;
}

/* Unlinks nd from the engine's lists (eng.mu held). */
static void node_unlink(coll_node *nd) {
  if (nd->in_ready) {
    coll_node **p = &eng.ready;
    while (*p != nd)
      p = &(*p)->ready_next;
    *p = nd->ready_next;
    nd->in_ready = 0;
  }
  if (nd->live_prev)
    nd->live_prev->live_next = nd->live_next;
  else if (eng.live == nd)
    eng.live = nd->live_next;
  if (nd->live_next)
    nd->live_next->live_prev = nd->live_prev;
  nd->live_prev = nd->live_next = NULL;
}

/* Frees nd and its communicator (eng.mu not held). */
static void node_destroy(coll_node *nd) {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (nd->comm != MPI_COMM_NULL && !finalized)
    MPI_Comm_free(&nd->comm);
  free(nd->name);
  free(nd);
}

void coll_node_free(coll_node *nd) {
  if (!nd)
    return;
  if (nd->size == 1) {
    node_destroy(nd);
    return;
  }
  pthread_mutex_lock(&eng.mu);
  if (nd->active || nd->queue) {
    /* Only after the process left the job with a call in flight (runs are
     * never pending while their executor is freed): MPI may still write
     * into the node's buffers, so it stays. */
    pthread_mutex_unlock(&eng.mu);
    return;
  }
  if (!nd->bound && !eng.stopping && !eng.broken[0]) {
    /* The other tasks count on naming its communicator with it: it goes
     * once that is done. */
    nd->zombie = 1;
    pthread_mutex_unlock(&eng.mu);
    return;
  }
  if (!nd->bound && !nd->binding)
    eng.unbound--;
  if (nd->binding) {
    /* Left to the duplication in flight (only at exit). */
    nd->zombie = 1;
    pthread_mutex_unlock(&eng.mu);
    return;
  }
  node_unlink(nd);
  pthread_mutex_unlock(&eng.mu);
  node_destroy(nd);
}

int coll_node_rank(const coll_node *nd) { return nd->rank; }
int coll_node_size(const coll_node *nd) { return nd->size; }
const coll_config *coll_node_config(const coll_node *nd) {
  return &nd->cfg;
}

/* ---- runs --------------------------------------------------------------- */

coll_run *coll_run_new(coll_node *nd, wf_kernel_ctx *ctx,
                               wf_status *st) {
  coll_run *r =
      calloc(1, sizeof *r + (size_t)nd->cfg.n * sizeof r->pieces[0]);
  if (!r) {
    wfx_host->status_set(st, WF_RESOURCE_EXHAUSTED,
                         "out of memory for a run of %d tensors",
                         (int)nd->cfg.n);
    return NULL;
  }
  r->node = nd;
  r->ctx = ctx;
  r->step = wfx_host->kernel_step(ctx);
  return r;
}

void *coll_run_pack(coll_run *r, size_t bytes, wf_status *st) {
  r->pack = wfx_host->alloc(bytes ? bytes : 1, 64);
  if (!r->pack)
    wfx_host->status_set(st, WF_RESOURCE_EXHAUSTED,
                         "out of memory for a buffer of %zu bytes", bytes);
  return r->pack;
}

void coll_run_refuse(coll_run *r, int32_t code, const char *fmt, ...) {
  va_list ap;
  r->refused = code ? code : WF_INTERNAL;
  va_start(ap, fmt);
  vsnprintf(r->why, sizeof r->why, fmt, ap);
  va_end(ap);
}

void coll_run_free(coll_run *r) {
  if (!r)
    return;
  if (r->pack)
    wfx_host->free(r->pack);
  free(r);
}

/* Inserts r into nd's queue by step (eng.mu held). */
static void queue_insert(coll_node *nd, coll_run *r) {
  coll_run **p = &nd->queue;
  while (*p && (*p)->step <= r->step)
    p = &(*p)->next;
  r->next = *p;
  *p = r;
}

/* Marks nd as possibly able to start a run (eng.mu held). */
static void make_ready(coll_node *nd) {
  if (nd->in_ready)
    return;
  nd->in_ready = 1;
  nd->ready_next = eng.ready;
  eng.ready = nd;
}

int coll_submit(coll_run *r, wf_status *st) {
  coll_node *nd = r->node;
  pthread_mutex_lock(&eng.mu);
  if (eng.lost[0]) {
    wfx_host->status_set(st, WF_UNAVAILABLE, "task %d of %d: %s", nd->rank,
                         nd->size, eng.lost);
    pthread_mutex_unlock(&eng.mu);
    coll_run_free(r);
    return wfx_code(st);
  }
  if (eng.stopping || (!nd->bound && eng.broken[0])) {
    if (eng.stopping)
      wfx_host->status_set(st, WF_CANCELLED,
                           "task %d of %d: the process is leaving the "
                           "MPI job",
                           nd->rank, nd->size);
    else
      wfx_host->status_set(st, WF_UNAVAILABLE,
                           "task %d of %d: this node has no "
                           "communicator: %s",
                           nd->rank, nd->size, eng.broken);
    pthread_mutex_unlock(&eng.mu);
    coll_run_free(r);
    return wfx_code(st);
  }
  r->since_ns = now_ns();
  queue_insert(nd, r);
  if (nd->phase == PHASE_IDLE && nd->bound)
    make_ready(nd);
  pthread_cond_signal(&eng.cv);
  pthread_mutex_unlock(&eng.mu);
  return 0;
}

int mpt_collectives_peer_skipped(void) {
  pthread_mutex_lock(&eng.mu);
  int v = eng.peer_skipped;
  pthread_mutex_unlock(&eng.mu);
  return v;
}

void coll_skip(coll_node *nd, int64_t step) {
  if (nd->size == 1)
    return;
  coll_run *r =
      calloc(1, sizeof *r + (size_t)nd->cfg.n * sizeof r->pieces[0]);
  if (!r) {
    wfx_host->log(WF_LOG_ERROR, "transport-mpi",
                  "task %d of %d: node '%s': out of memory telling the "
                  "other tasks that step %lld failed here",
                  nd->rank, nd->size, nd->name, (long long)step);
    return;
  }
  r->node = nd;
  r->step = step;
  r->skip = 1;
  coll_run_refuse(r, WF_ABORTED,
                  "task %d of %d: step %lld failed on this task before node "
                  "'%s' ran",
                  nd->rank, nd->size, (long long)step, nd->name);
  /* Refused when the process is leaving the job (then nobody waits): r
   * is freed, and the host ignores a NULL status. */
  coll_submit(r, NULL);
}

/* ---- the progress thread ------------------------------------------------ */

/* The calls in flight (one per node at most, one round, the
 * duplications): the thread's alone. */
typedef struct reqset {
  MPI_Request *req;
  int *kind;    /* REQ_* */
  void **owner; /* the node, NULL (the round) or the binding */
  int *idx;
  MPI_Status *sts;
  int n, cap;
} reqset;

static int reqset_reserve(reqset *rs) {
  if (rs->n < rs->cap)
    return 0;
  int cap = rs->cap ? rs->cap * 2 : 16;
  MPI_Request *req = realloc(rs->req, (size_t)cap * sizeof *req);
  if (req)
    rs->req = req;
  int *kind = realloc(rs->kind, (size_t)cap * sizeof *kind);
  if (kind)
    rs->kind = kind;
  void **owner = realloc(rs->owner, (size_t)cap * sizeof *owner);
  if (owner)
    rs->owner = owner;
  int *idx = realloc(rs->idx, (size_t)cap * sizeof *idx);
  if (idx)
    rs->idx = idx;
  MPI_Status *sts = realloc(rs->sts, (size_t)cap * sizeof *sts);
  if (sts)
    rs->sts = sts;
  if (!req || !kind || !owner || !idx || !sts)
    return -1;
  rs->cap = cap;
  return 0;
}

/* Appends a request started into rs->req[rs->n] (reserved). */
static void reqset_push(reqset *rs, int kind, void *owner) {
  rs->kind[rs->n] = kind;
  rs->owner[rs->n] = owner;
  rs->n++;
}

static void reqset_free(reqset *rs) {
  free(rs->req);
  free(rs->kind);
  free(rs->owner);
  free(rs->idx);
  free(rs->sts);
}

/* Sets r's completion and moves it to *done. */
static void run_end(coll_run *r, coll_run **done, int32_t code,
                    const char *fmt, va_list ap) {
  r->code = code;
  if (fmt)
    vsnprintf(r->why, sizeof r->why, fmt, ap);
  r->next = *done;
  *done = r;
}

/* Ends the active run of nd with code and why (a printf format), moving it
 * to *done; the node may start its next run. */
static void finish_active(coll_node *nd, coll_run **done, int32_t code,
                          const char *fmt, ...) WF_PRINTF_LIKE(4, 5);
static void finish_active(coll_node *nd, coll_run **done, int32_t code,
                          const char *fmt, ...) {
  coll_run *r = nd->active;
  va_list ap;
  nd->active = NULL;
  nd->phase = PHASE_IDLE;
  va_start(ap, fmt);
  run_end(r, done, code, fmt, ap);
  va_end(ap);
  if (nd->queue)
    make_ready(nd);
}

/* Fails every queued run of nd (eng.mu held). */
static void fail_queued(coll_node *nd, coll_run **done, int32_t code,
                        const char *fmt, ...) WF_PRINTF_LIKE(4, 5);
static void fail_queued(coll_node *nd, coll_run **done, int32_t code,
                        const char *fmt, ...) {
  while (nd->queue) {
    coll_run *r = nd->queue;
    va_list ap;
    nd->queue = r->next;
    va_start(ap, fmt);
    run_end(r, done, code, fmt, ap);
    va_end(ap);
  }
}

/* The shapes of r's inputs, "(2, 3), (4)", into buf. */
static const char *input_shapes(const coll_run *r, char *buf, size_t len) {
  int n = wfx_host->kernel_num_inputs(r->ctx);
  size_t used = 0;
  buf[0] = '\0';
  for (int i = 0; i < n && used + 1 < len; i++) {
    wf_shape s;
    const wf_tensor *t = wfx_host->kernel_input(r->ctx, i);
    if (!t)
      continue;
    wfx_host->tensor_shape(t, &s);
    used += (size_t)snprintf(buf + used, len - used, "%s(", i ? ", " : "");
    for (int d = 0; d < s.rank && used + 1 < len; d++)
      used += (size_t)snprintf(buf + used, len - used, "%s%lld", d ? ", " : "",
                               (long long)s.dims[d]);
    if (used + 1 < len)
      used += (size_t)snprintf(buf + used, len - used, ")");
  }
  return buf;
}

/* -- naming the nodes' communicators -- */

/* The rounds cannot go on: unbound nodes fail their runs from now on
 * (eng.mu held). */
static void rounds_broken(int err, const char *call, coll_run **done) {
  const mpt_job *job = mpt_joined();
  char msg[MPI_MAX_ERROR_STRING];
  snprintf(eng.broken, sizeof eng.broken, "%s failed: %s", call,
           mpt_error_string(err, msg, sizeof msg));
  wfx_host->log(WF_LOG_ERROR, "transport-mpi",
                "task %d of %d: setting up the collectives' "
                "communicators: %s",
                job->rank, job->size, eng.broken);
  for (coll_node *nd = eng.live; nd; nd = nd->live_next)
    if (!nd->bound)
      fail_queued(nd, done, WF_UNAVAILABLE,
                  "task %d of %d: this node has no communicator: %s", nd->rank,
                  nd->size, eng.broken);
}

/* Proposes the smallest key waiting for a communicator, unless the tasks
 * agreed on a smaller one this task has not set up yet (eng.mu held). */
static void round_try_start(reqset *rs, coll_run **done) {
  const mpt_job *job = mpt_joined();
  uint64_t key = 0;
  int have = 0;
  if (eng.round_busy || !eng.kick)
    return;
  eng.kick = 0;
  if (eng.broken[0] || eng.unbound == 0)
    return;
  for (coll_node *nd = eng.live; nd; nd = nd->live_next)
    if (!nd->bound && !nd->binding && (!have || nd->key < key)) {
      key = nd->key;
      have = 1;
    }
  if (!have || (eng.round_has_target && (int64_t)key > eng.round_target))
    return; /* the next set-up kicks again */
  if (reqset_reserve(rs)) {
    rounds_broken(MPI_ERR_NO_MEM, "naming a node's communicator", done);
    return;
  }
  eng.round_out[0] = (int64_t)key;
  eng.round_out[1] = -(int64_t)key;
  int err = MPI_Iallreduce(eng.round_out, eng.round_in, 2, MPI_INT64_T, MPI_MAX,
                           job->coll, &rs->req[rs->n]);
  if (err != MPI_SUCCESS) {
    rounds_broken(err, "MPI_Iallreduce (naming a node's communicator)", done);
    return;
  }
  reqset_push(rs, REQ_ROUND, NULL);
  eng.round_busy = 1;
}

/* A round completed: every task duplicates the communicator for the key
 * they all proposed, or they retry with the smallest (eng.mu held). */
static void round_done(int err, reqset *rs, coll_run **done) {
  const mpt_job *job = mpt_joined();
  /* `coll` stays busy until the duplication agreed on completes: the
   * duplication's own calls on it run in the background, and a round
   * started meanwhile could match them on another task. */
  eng.round_busy = 0;
  eng.kick = 1;
  if (err != MPI_SUCCESS) {
    rounds_broken(err, "MPI_Iallreduce (naming a node's communicator)", done);
    return;
  }
  int64_t hi = eng.round_in[0], lo = -eng.round_in[1];
  if (lo != hi) {
    eng.round_has_target = 1;
    eng.round_target = lo;
    return;
  }
  eng.round_has_target = 0;
  coll_node *nd = eng.live;
  while (nd && !(nd->key == (uint64_t)lo && !nd->bound && !nd->binding))
    nd = nd->live_next;
  binding *b = malloc(sizeof *b);
  if (!nd || !b || reqset_reserve(rs)) {
    /* Every task proposed this key, so this one has it: only memory can
     * be missing, and the sequence of calls on `coll` cannot go on. */
    free(b);
    rounds_broken(MPI_ERR_NO_MEM, "naming a node's communicator", done);
    return;
  }
  b->key = (uint64_t)lo;
  b->comm = MPI_COMM_NULL;
  err = MPI_Comm_idup(job->coll, &b->comm, &rs->req[rs->n]);
  if (err != MPI_SUCCESS) {
    free(b);
    rounds_broken(err, "MPI_Comm_idup", done);
    return;
  }
  reqset_push(rs, REQ_BIND, b);
  nd->binding = 1;
  eng.unbound--;
  eng.round_busy = 1;
}

/* A duplication completed: its node may run (eng.mu held). */
static void bind_done(binding *b, int err, coll_run **done) {
  coll_node *nd = eng.live;
  eng.round_busy = 0;
  eng.kick = 1;
  while (nd && !(nd->key == b->key && nd->binding))
    nd = nd->live_next;
  if (err != MPI_SUCCESS || !nd) {
    if (err == MPI_SUCCESS)
      MPI_Comm_free(&b->comm); /* cannot happen: its node is kept */
    free(b);
    if (nd)
      nd->binding = 0;
    if (err != MPI_SUCCESS)
      rounds_broken(err, "MPI_Comm_idup", done);
    return;
  }
  MPI_Comm_set_errhandler(b->comm, MPI_ERRORS_RETURN);
  nd->binding = 0;
  nd->bound = 1;
  nd->comm = b->comm;
  free(b);
  if (nd->zombie) {
    /* Its kernel is gone: the communicator was made only to keep the
     * tasks' sequences alike. */
    node_unlink(nd);
    MPI_Comm_free(&nd->comm);
    free(nd->name);
    free(nd);
  } else if (nd->queue) {
    make_ready(nd);
  }
}

/* -- runs -- */

/* Starts nd's next run if it may: its smallest queued step, unless the
 * tasks agreed on a step this task has not queued yet (eng.mu held). */
static void start_header(coll_node *nd, reqset *rs, coll_run **done) {
  char msg[MPI_MAX_ERROR_STRING];
  coll_run *r = nd->queue;
  if (nd->phase != PHASE_IDLE || !nd->bound || !r)
    return;
  if (nd->has_target && r->step > nd->target)
    return; /* the agreed step has not reached this task yet */
  nd->queue = r->next;
  r->next = NULL;
  nd->active = r;
  if (reqset_reserve(rs)) {
    finish_active(nd, done, WF_RESOURCE_EXHAUSTED,
                  "task %d of %d: out of memory for the calls in flight",
                  nd->rank, nd->size);
    return;
  }
  /* The refusing task of lowest rank gives the largest last word; a task
   * whose step failed before the node (coll_skip) outbids the others. */
  int64_t v[HDR_WORDS / 2] = {
      r->step, r->count, (int64_t)(r->shape_hash & KEY_MASK),
      (int64_t)(nd->cfg_hash & KEY_MASK),
      r->refused ? (r->skip ? 2 * nd->size : nd->size) - nd->rank : 0};
  for (int i = 0; i < HDR_WORDS / 2; i++) {
    nd->hdr_out[2 * i] = v[i];
    nd->hdr_out[2 * i + 1] = -v[i];
  }
  int err = MPI_Iallreduce(nd->hdr_out, nd->hdr_in, HDR_WORDS, MPI_INT64_T,
                           MPI_MAX, nd->comm, &rs->req[rs->n]);
  if (err != MPI_SUCCESS) {
    finish_active(nd, done, WF_UNAVAILABLE,
                  "task %d of %d: MPI_Iallreduce (agreeing on the step and "
                  "the shapes) failed: %s",
                  nd->rank, nd->size,
                  mpt_error_string(err, msg, sizeof msg));
    return;
  }
  reqset_push(rs, REQ_NODE, nd);
  nd->phase = PHASE_HEADER;
}

static int start_data(coll_node *nd, coll_run *r, MPI_Request *req) {
  int count = (int)r->count;
  int root = nd->cfg.root;
  switch (nd->cfg.kind) {
  case WF__COLL_ALLREDUCE:
    return MPI_Iallreduce(r->send ? r->send : MPI_IN_PLACE, r->recv, count,
                          nd->type, MPI_SUM, nd->comm, req);
  case WF__COLL_REDUCE:
    if (nd->rank == root)
      return MPI_Ireduce(r->send ? r->send : MPI_IN_PLACE, r->recv, count,
                         nd->type, MPI_SUM, root, nd->comm, req);
    return MPI_Ireduce(r->send, NULL, count, nd->type, MPI_SUM, root, nd->comm,
                       req);
  case WF__COLL_BROADCAST:
    return MPI_Ibcast(r->recv, count, nd->type, root, nd->comm, req);
  case WF__COLL_ALLGATHER:
    return MPI_Iallgather(r->send, count, nd->type, r->recv, count, nd->type,
                          nd->comm, req);
  case WF__COLL_REDUCE_SCATTER:
    return MPI_Ireduce_scatter_block(r->send, r->recv, count / nd->size,
                                     nd->type, MPI_SUM, nd->comm, req);
  }
  return MPI_ERR_OTHER;
}

/* nd's header call completed with err (eng.mu held): moves on to the data,
 * or waits for the agreed step, or fails the run as every task does. */
static void header_done(coll_node *nd, int err, reqset *rs,
                        coll_run **done) {
  char msg[MPI_MAX_ERROR_STRING], shapes[256];
  coll_run *r = nd->active;
  const int64_t *in = nd->hdr_in;
  if (err != MPI_SUCCESS) {
    finish_active(nd, done, WF_UNAVAILABLE,
                  "task %d of %d: MPI_Iallreduce (agreeing on the step and "
                  "the shapes) failed: %s",
                  nd->rank, nd->size,
                  mpt_error_string(err, msg, sizeof msg));
    return;
  }
  int64_t step_max = in[0], step_min = -in[1];
  int64_t count_max = in[2], count_min = -in[3];
  int same_shapes = in[4] == -in[5], same_cfg = in[6] == -in[7];
  if (step_min != step_max) {
    /* Another task proposed another step: everyone runs the smallest
     * next. This run waits its turn again. */
    nd->active = NULL;
    nd->phase = PHASE_IDLE;
    if (!nd->has_target || nd->target != step_min) {
      nd->target_since = now_ns();
      nd->target_warned = 0;
    }
    nd->has_target = 1;
    nd->target = step_min;
    wfx_host->log(WF_LOG_DEBUG, "transport-mpi",
                  "task %d of %d: node '%s': the tasks proposed steps "
                  "%lld to %lld; step %lld goes first",
                  nd->rank, nd->size, nd->name, (long long)step_min,
                  (long long)step_max, (long long)step_min);
    queue_insert(nd, r);
    make_ready(nd);
    return;
  }
  nd->has_target = 0;
  if (r->refused) {
    char why[sizeof r->why];
    memcpy(why, r->why, sizeof why);
    finish_active(nd, done, r->refused, "%s", why);
    return;
  }
  if (in[8] > nd->size) {
    eng.peer_skipped = 1;
    finish_active(nd, done, WF_ABORTED,
                  "task %d of %d: task %d failed this step before reaching "
                  "this collective (its own error says why), so no task "
                  "runs it",
                  nd->rank, nd->size, (int)(2 * nd->size - in[8]));
    return;
  }
  if (in[8] > 0) {
    finish_active(nd, done, WF_ABORTED,
                  "task %d of %d: task %d could not take part in this "
                  "step's collective (its own error says why), so no task "
                  "does",
                  nd->rank, nd->size, (int)(nd->size - in[8]));
    return;
  }
  if (!same_cfg) {
    finish_active(nd, done, WF_FAILED_PRECONDITION,
                  "task %d of %d: the tasks' nodes differ in their settings "
                  "(element type, number of tensors, reduction or root): "
                  "every task must build the same graph",
                  nd->rank, nd->size);
    return;
  }
  if (count_min != count_max) {
    finish_active(nd, done, WF_INVALID_ARGUMENT,
                  "task %d of %d: the tasks pass inputs of different sizes: "
                  "from %lld to %lld elements across the tasks, %lld here "
                  "(input shapes %s); every task must pass the same shapes",
                  nd->rank, nd->size, (long long)count_min,
                  (long long)count_max, (long long)r->count,
                  input_shapes(r, shapes, sizeof shapes));
    return;
  }
  if (!same_shapes) {
    finish_active(nd, done, WF_INVALID_ARGUMENT,
                  "task %d of %d: the tasks pass inputs of different shapes "
                  "(with %lld elements each; here %s): every task must pass "
                  "the same shapes",
                  nd->rank, nd->size, (long long)r->count,
                  input_shapes(r, shapes, sizeof shapes));
    return;
  }
  if (reqset_reserve(rs)) {
    finish_active(nd, done, WF_RESOURCE_EXHAUSTED,
                  "task %d of %d: out of memory for the calls in flight",
                  nd->rank, nd->size);
    return;
  }
  err = start_data(nd, r, &rs->req[rs->n]);
  if (err != MPI_SUCCESS) {
    finish_active(nd, done, WF_UNAVAILABLE, "task %d of %d: %s failed: %s",
                  nd->rank, nd->size, call_name(nd->cfg.kind),
                  mpt_error_string(err, msg, sizeof msg));
    return;
  }
  reqset_push(rs, REQ_NODE, nd);
  nd->phase = PHASE_DATA;
  int64_t kib = (r->count * (int64_t)nd->esize) >> 10;
  nd->data_spin_until =
      now_ns() + DATA_SPIN_BASE_NS + kib * DATA_SPIN_NS_PER_KIB;
}

/* Divides n elements of type dtype at p by d. */
static void divide(void *p, int64_t n, int32_t dtype, int d) {
  if (dtype == WF_FLOAT32) {
    float *x = p;
    for (int64_t i = 0; i < n; i++)
      x[i] /= (float)d;
  } else if (dtype == WF_FLOAT64) {
    double *x = p;
    for (int64_t i = 0; i < n; i++)
      x[i] /= (double)d;
  }
}

/* nd's data call completed with err (eng.mu held). */
static void data_done(coll_node *nd, int err, coll_run **done) {
  char msg[MPI_MAX_ERROR_STRING];
  coll_run *r = nd->active;
  if (err != MPI_SUCCESS) {
    finish_active(nd, done, WF_UNAVAILABLE, "task %d of %d: %s failed: %s",
                  nd->rank, nd->size, call_name(nd->cfg.kind),
                  mpt_error_string(err, msg, sizeof msg));
    return;
  }
  int64_t got = r->count;
  if (nd->cfg.kind == WF__COLL_REDUCE_SCATTER)
    got = r->count / nd->size;
  else if (nd->cfg.kind == WF__COLL_REDUCE && nd->rank != nd->cfg.root)
    got = 0;
  if (nd->cfg.mean && got > 0)
    divide(r->recv, got, nd->cfg.dtype, nd->size);
  const char *src = r->recv;
  for (int i = 0; i < r->npieces; i++) {
    if (r->pieces[i].bytes)
      memcpy(r->pieces[i].dst, src, r->pieces[i].bytes);
    src += r->pieces[i].bytes;
  }
  finish_active(nd, done, WF_OK, NULL);
}

/* Warns once about runs that have waited very long (eng.mu held). */
static void warn_stalls(int64_t now) {
  for (coll_node *nd = eng.live; nd; nd = nd->live_next) {
    coll_run *r = nd->active;
    if (r && !r->warned && now - r->since_ns > STALL_WARN_NS) {
      r->warned = 1;
      wfx_host->log(
          WF_LOG_WARNING, "transport-mpi",
          "task %d of %d: node '%s' has waited %lld s in step %lld for "
          "%s",
          nd->rank, nd->size, nd->name,
          (long long)((now - r->since_ns) / 1000000000), (long long)r->step,
          nd->phase == PHASE_HEADER
              ? "the other tasks to reach it (a task that failed or "
                "stopped before it leaves the others waiting)"
              : "its data to move");
    }
    if (!nd->active && nd->has_target && !nd->target_warned &&
        now - nd->target_since > STALL_WARN_NS) {
      nd->target_warned = 1;
      wfx_host->log(
          WF_LOG_WARNING, "transport-mpi",
          "task %d of %d: node '%s': the other tasks run its step %lld, "
          "which this task has not reached in %lld s (every task must "
          "run the same steps of a session in the same sequence)",
          nd->rank, nd->size, nd->name, (long long)nd->target,
          (long long)((now - nd->target_since) / 1000000000));
    }
    if (!nd->bound && nd->queue && !nd->bind_warned &&
        now - nd->queue->since_ns > STALL_WARN_NS) {
      nd->bind_warned = 1;
      wfx_host->log(
          WF_LOG_WARNING, "transport-mpi",
          "task %d of %d: node '%s' has waited %lld s for the other "
          "tasks to set up the same collective nodes (every task must "
          "build the executors holding them: run the same signatures)",
          nd->rank, nd->size, nd->name,
          (long long)((now - nd->queue->since_ns) / 1000000000));
    }
  }
}

/* A task of the job went silent past the heartbeat timeout (the
 * transport's heartbeats say so): the collectives waiting on it would wait
 * forever, since MPI cannot cancel them. Their kernels fail now with
 * UNAVAILABLE; a run whose call is in flight stays where it is (MPI may
 * still write into its buffers: its output tensor is kept alive for good)
 * and is only freed, never completed again, if the call ever ends. Later
 * runs fail at once. eng.mu held. */
static void check_lost(coll_run **done, wf_kernel_ctx ***orphans,
                       int *norphans) {
  int task;
  int64_t silent;
  if (eng.lost[0] || !mpt_transport_lost(&task, &silent))
    return;
  snprintf(eng.lost, sizeof eng.lost,
           "task %d has been silent for %.1f s (heartbeat timeout %.1f s): "
           "it died or hangs, and the job cannot go on (restart it from the "
           "last checkpoint)",
           task, (double)silent / 1000.0,
           (double)mpt_heartbeat_ms() / 1000.0);
  wfx_host->log(WF_LOG_ERROR, "transport-mpi", "%s", eng.lost);
  int n = 0;
  for (coll_node *nd = eng.live; nd; nd = nd->live_next)
    n += nd->active && nd->active->ctx;
  *orphans = n ? calloc((size_t)n, sizeof **orphans) : NULL;
  *norphans = 0;
  for (coll_node *nd = eng.live; nd; nd = nd->live_next) {
    fail_queued(nd, done, WF_UNAVAILABLE, "task %d of %d: %s", nd->rank,
                nd->size, eng.lost);
    coll_run *r = nd->active;
    if (!r || !r->ctx || !*orphans)
      continue;
    if (r->recv_tensor)
      wfx_host->tensor_retain(r->recv_tensor);
    (*orphans)[(*norphans)++] = r->ctx;
    r->ctx = NULL;
  }
}

/* Completes the runs of done, eng.mu not held. */
static void complete(coll_run *done) {
  while (done) {
    coll_run *r = done;
    wf_kernel_ctx *ctx = r->ctx;
    done = r->next;
    if (!ctx) { /* given up on by check_lost */
      coll_run_free(r);
      continue;
    }
    if (r->code == WF_OK) {
      coll_run_free(r);
      wfx_host->kernel_done(ctx, WF_OK, NULL);
    } else {
      char why[sizeof r->why];
      int32_t code = r->code;
      memcpy(why, r->why, sizeof why);
      coll_run_free(r);
      wfx_host->kernel_done(ctx, code, "%s", why);
    }
  }
}

/* Fails every run not yet started, at exit. Runs with a call in flight are
 * left alone: MPI may still use their buffers, so they must stay. */
static coll_run *cancel_queued(void) {
  coll_run *done = NULL;
  for (coll_node *nd = eng.live; nd; nd = nd->live_next)
    fail_queued(nd, &done, WF_CANCELLED,
                "task %d of %d: the process left the MPI job before this "
                "step's collective started",
                nd->rank, nd->size);
  return done;
}

static void *progress_main(void *arg) {
  char msg[MPI_MAX_ERROR_STRING];
  reqset rs = {0};
  coll_run *done = NULL;
  int64_t last_event = now_ns(), last_scan = last_event, sleep_ns = 0;
  (void)arg;
  pthread_mutex_lock(&eng.mu);
  while (!eng.stopping) {
    int before = rs.n;
    round_try_start(&rs, &done);
    while (eng.ready) {
      coll_node *nd = eng.ready;
      eng.ready = nd->ready_next;
      nd->in_ready = 0;
      start_header(nd, &rs, &done);
    }
    int events = rs.n != before;
    if (done) {
      pthread_mutex_unlock(&eng.mu);
      complete(done);
      done = NULL;
      pthread_mutex_lock(&eng.mu);
      last_event = now_ns();
      sleep_ns = 0;
      continue;
    }
    int64_t now = now_ns();
    if (now - last_scan > 1000000000) {
      last_scan = now;
      warn_stalls(now);
      wf_kernel_ctx **orphans = NULL;
      int norphans = 0;
      check_lost(&done, &orphans, &norphans);
      if (norphans || done) {
        pthread_mutex_unlock(&eng.mu);
        for (int i = 0; i < norphans; i++)
          wfx_host->kernel_done(orphans[i], WF_UNAVAILABLE, "%s", eng.lost);
        free(orphans);
        complete(done);
        done = NULL;
        pthread_mutex_lock(&eng.mu);
        continue;
      }
      free(orphans);
    }
    if (rs.n == 0) {
      /* Nothing in flight: sleep until a run is submitted or a node set
       * up (waking each second for the stall warnings). */
      if (!eng.ready && !eng.kick && !eng.stopping)
        wait_ns(1000000000);
      last_event = now_ns();
      sleep_ns = 0;
      continue;
    }
    pthread_mutex_unlock(&eng.mu);
    int outcount = 0;
    int err = MPI_Testsome(rs.n, rs.req, &outcount, rs.idx, rs.sts);
    pthread_mutex_lock(&eng.mu);
    if (err != MPI_SUCCESS && err != MPI_ERR_IN_STATUS) {
      /* The call itself failed: which request is at fault is unknown, so
       * everything in flight fails. */
      mpt_error_string(err, msg, sizeof msg);
      for (int i = 0; i < rs.n; i++) {
        coll_node *nd = rs.owner[i];
        if (rs.kind[i] != REQ_NODE)
          continue;
        finish_active(nd, &done, WF_UNAVAILABLE,
                      "task %d of %d: MPI_Testsome failed: %s", nd->rank,
                      nd->size, msg);
      }
      rounds_broken(err, "MPI_Testsome", &done);
      rs.n = 0;
      continue;
    }
    if (outcount == MPI_UNDEFINED)
      outcount = 0;
    for (int k = 0; k < outcount; k++) {
      int i = rs.idx[k];
      int code = err == MPI_ERR_IN_STATUS ? rs.sts[k].MPI_ERROR : MPI_SUCCESS;
      int kind = rs.kind[i];
      void *owner = rs.owner[i];
      rs.kind[i] = -1; /* completed: dropped below */
      if (kind == REQ_ROUND) {
        round_done(code, &rs, &done);
      } else if (kind == REQ_BIND) {
        bind_done(owner, code, &done);
      } else {
        coll_node *nd = owner;
        if (nd->phase == PHASE_HEADER)
          header_done(nd, code, &rs, &done); /* may append a request */
        else
          data_done(nd, code, &done);
      }
    }
    if (outcount > 0) {
      /* Drops the completed entries, keeping the order of the rest. */
      int w = 0;
      for (int i = 0; i < rs.n; i++) {
        if (rs.kind[i] < 0)
          continue;
        rs.req[w] = rs.req[i];
        rs.kind[w] = rs.kind[i];
        rs.owner[w++] = rs.owner[i];
      }
      rs.n = w;
      events = 1;
    }
    if (events || done || eng.ready || (eng.kick && !eng.round_busy)) {
      last_event = now_ns();
      sleep_ns = 0;
      continue;
    }
    /* Nothing happened: poll on while data moves, else back off. */
    now = now_ns();
    int moving = 0;
    for (int i = 0; i < rs.n && !moving; i++)
      moving = rs.kind[i] == REQ_NODE &&
               ((coll_node *)rs.owner[i])->phase == PHASE_DATA &&
               now < ((coll_node *)rs.owner[i])->data_spin_until;
    if (moving || now - last_event < HEADER_SPIN_NS) {
      pthread_mutex_unlock(&eng.mu);
      sched_yield();
      pthread_mutex_lock(&eng.mu);
      continue;
    }
    sleep_ns = sleep_ns ? sleep_ns * 2 : SLEEP_MIN_NS;
    if (sleep_ns > SLEEP_MAX_NS)
      sleep_ns = SLEEP_MAX_NS;
    wait_ns(sleep_ns); /* a submit or a set-up wakes it at once */
  }
  done = cancel_queued();
  pthread_mutex_unlock(&eng.mu);
  complete(done);
  reqset_free(&rs);
  return NULL;
}

void mpt_collectives_stop(void) {
  pthread_mutex_lock(&eng.mu);
  eng.stopping = 1;
  int started = eng.started;
  eng.started = 0;
  if (started)
    pthread_cond_signal(&eng.cv);
  pthread_mutex_unlock(&eng.mu);
  if (started && !pthread_equal(pthread_self(), eng.thread))
    pthread_join(eng.thread, NULL);
}
