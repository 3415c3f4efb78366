/* plugins/transports/mpi/mpi_transport.c — the transport: keyed byte
 * messages between the tasks of the MPI job, for the core's Send/Recv
 * across tasks and its control messages, plus heartbeats.
 *
 * Every message travels on the job's p2p communicator as one MPI message
 * whose first 16 bytes are its key. One thread per process takes whatever
 * arrives (MPI_Improbe/MPI_Mrecv, any source), matches it with a posted
 * receive of the same source and key, or keeps it until one is posted; the
 * same thread completes sends (MPI_Isend with a copy of the data, so a
 * sender never waits) and sends heartbeats. Between bursts it sleeps with a
 * short backoff rather than spinning: the cores belong to the kernels.
 *
 * Every task sends every other task a heartbeat each 200 ms, so that each
 * task notices a dead, stopped or cut-off peer itself rather than through
 * task 0 (whose own detection would add a second timeout). It does not
 * order messages or retry; the core compares silent_ms with its own
 * timeout, the collectives with mpt_transport_lost. */
#include <config.h>

#include <errno.h>
#include <stdio.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mpi_plugin.h"

enum { TAG_MSG = 1, TAG_HEARTBEAT = 2 };
#define KEY_BYTES 16
#define HEARTBEAT_NS (200 * 1000000LL)
#define MAX_SLEEP_NS (200 * 1000LL)
/* With no receive posted and no send in flight only heartbeats (and
 * messages nobody waits for yet) can come: a longer nap keeps this thread
 * off the MPI library's locks, which the collectives' thread needs. */
#define IDLE_SLEEP_NS (2 * 1000 * 1000LL)
#define CANCELLED_KEPT 1024

typedef struct posted {
  struct posted *next;
  int src;
  uint64_t hi, lo;
  wf_transport_recv_fn *done;
  void *arg;
} posted;

typedef struct arrived {
  struct arrived *next;
  int src;
  uint64_t hi, lo;
  unsigned char *buf; /* key + data */
  size_t n;           /* data bytes */
} arrived;

typedef struct sending {
  struct sending *next;
  MPI_Request req;
  unsigned char *buf;
  int dst;
} sending;

static struct {
  pthread_mutex_t mu;
  pthread_cond_t flushed;
  pthread_t thread;
  int started;
  atomic_int stop;
  atomic_int wake; /* new work: reset the backoff */
  int opens;
  const mpt_job *job;
  posted *posted;
  arrived *arrived;
  sending *sending;
  int num_sending;
  uint64_t cancelled[CANCELLED_KEPT];
  int num_cancelled, next_cancelled;
  _Atomic int64_t *last_heard; /* per task, CLOCK_MONOTONIC ns */
  char failure[256];           /* first transport error, for messages */
} T = {.mu = PTHREAD_MUTEX_INITIALIZER, .flushed = PTHREAD_COND_INITIALIZER};

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int was_cancelled(uint64_t hi) {
  for (int i = 0; i < T.num_cancelled; i++)
    if (T.cancelled[i] == hi)
      return 1;
  return 0;
}

static void store_u64(unsigned char *p, uint64_t v) {
  for (int i = 0; i < 8; i++)
    p[i] = (unsigned char)(v >> (8 * i));
}

static uint64_t load_u64(const unsigned char *p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; i++)
    v |= (uint64_t)p[i] << (8 * i);
  return v;
}

/* ---- the thread ------------------------------------------------------------- */

static void note_failure(const char *what, int err) {
  char msg[MPI_MAX_ERROR_STRING];
  pthread_mutex_lock(&T.mu);
  if (!T.failure[0])
    snprintf(T.failure, sizeof T.failure, "%s: %s", what,
             mpt_error_string(err, msg, sizeof msg));
  pthread_mutex_unlock(&T.mu);
}

/* Takes one arrived message if there is one; 1 when it did. */
static int take_one(void) {
  int flag = 0;
  MPI_Message msg;
  MPI_Status status;
  int err = MPI_Improbe(MPI_ANY_SOURCE, MPI_ANY_TAG, T.job->p2p, &flag, &msg,
                        &status);
  if (err != MPI_SUCCESS) {
    note_failure("mpi: probing for messages failed", err);
    return 0;
  }
  if (!flag)
    return 0;
  int count = 0;
  MPI_Get_count(&status, MPI_BYTE, &count);
  unsigned char *buf = malloc(count > 0 ? (size_t)count : 1);
  if (!buf) {
    /* Receive into nothing is impossible: drop it into a scratch byte by
     * truncating would be an MPI error; abort is the only honest option. */
    wfx_host->log(WF_LOG_ERROR, "transport-mpi",
                  "out of memory receiving %d bytes from task %d", count,
                  status.MPI_SOURCE);
    MPI_Abort(MPI_COMM_WORLD, 70);
    return 0;
  }
  err = MPI_Mrecv(buf, count, MPI_BYTE, &msg, &status);
  int src = status.MPI_SOURCE;
  if (src >= 0 && src < T.job->size)
    atomic_store(&T.last_heard[src], now_ns());
  if (err != MPI_SUCCESS) {
    note_failure("mpi: receiving a message failed", err);
    free(buf);
    return 1;
  }
  if (status.MPI_TAG != TAG_MSG || count < KEY_BYTES) {
    free(buf);
    return 1;
  }
  uint64_t hi = load_u64(buf), lo = load_u64(buf + 8);
  size_t n = (size_t)count - KEY_BYTES;
  pthread_mutex_lock(&T.mu);
  posted **pp = &T.posted;
  while (*pp && !((*pp)->src == src && (*pp)->hi == hi && (*pp)->lo == lo))
    pp = &(*pp)->next;
  posted *p = *pp;
  if (p) {
    *pp = p->next;
    pthread_mutex_unlock(&T.mu);
    p->done(p->arg, 0, NULL, buf + KEY_BYTES, n);
    free(p);
    free(buf);
    return 1;
  }
  if (was_cancelled(hi)) {
    pthread_mutex_unlock(&T.mu);
    free(buf);
    return 1;
  }
  arrived *a = malloc(sizeof *a);
  if (!a) {
    pthread_mutex_unlock(&T.mu);
    wfx_host->log(WF_LOG_ERROR, "transport-mpi",
                  "out of memory keeping a message from task %d", src);
    free(buf);
    return 1;
  }
  *a = (arrived){NULL, src, hi, lo, buf, n};
  /* Keep arrival order: append. */
  arrived **ap = &T.arrived;
  while (*ap)
    ap = &(*ap)->next;
  *ap = a;
  pthread_mutex_unlock(&T.mu);
  return 1;
}

/* Completes finished sends; 1 when any finished. */
static int reap_sends(void) {
  int any = 0;
  pthread_mutex_lock(&T.mu);
  sending **sp = &T.sending;
  while (*sp) {
    sending *s = *sp;
    int flag = 0;
    MPI_Status status;
    int err = MPI_Test(&s->req, &flag, &status);
    if (err != MPI_SUCCESS) {
      pthread_mutex_unlock(&T.mu);
      note_failure("mpi: a send failed", err);
      pthread_mutex_lock(&T.mu);
      flag = 1;
    }
    if (flag) {
      *sp = s->next;
      free(s->buf);
      free(s);
      T.num_sending--;
      any = 1;
    } else {
      sp = &s->next;
    }
  }
  if (T.num_sending == 0)
    pthread_cond_broadcast(&T.flushed);
  pthread_mutex_unlock(&T.mu);
  return any;
}

static void send_heartbeats(void) {
  /* Every task tells every other one that it is alive: one empty message
   * per peer per period (size - 1 per task). A task that hears only task 0
   * would learn of a dead peer only once task 0 gave up and went silent in
   * turn, a second timeout later. */
  const mpt_job *j = T.job;
  for (int t = 0; t < j->size; t++) {
    if (t == j->rank)
      continue;
    MPI_Request req;
    if (MPI_Isend(NULL, 0, MPI_BYTE, t, TAG_HEARTBEAT, j->p2p, &req) ==
        MPI_SUCCESS)
      MPI_Request_free(&req);
  }
}

static void *progress(void *unused) {
  (void)unused;
  int64_t sleep_ns = 1000, next_beat = 0;
  for (;;) {
    int busy = 0;
    while (take_one())
      busy = 1;
    busy |= reap_sends();
    int64_t t = now_ns();
    if (t >= next_beat) {
      send_heartbeats();
      next_beat = t + HEARTBEAT_NS;
    }
    if (atomic_load(&T.stop)) {
      pthread_mutex_lock(&T.mu);
      int left = T.num_sending;
      pthread_mutex_unlock(&T.mu);
      if (left == 0 || atomic_load(&T.stop) > 1)
        break;
    }
    if (busy || atomic_exchange(&T.wake, 0)) {
      sleep_ns = 1000;
      continue;
    }
    struct timespec ts = {0, (long)sleep_ns};
    nanosleep(&ts, NULL);
    pthread_mutex_lock(&T.mu);
    int64_t cap = T.posted || T.num_sending ? MAX_SLEEP_NS : IDLE_SLEEP_NS;
    pthread_mutex_unlock(&T.mu);
    sleep_ns = sleep_ns * 2 > cap ? cap : sleep_ns * 2;
  }
  return NULL;
}

/* ---- the transport's functions ------------------------------------------------ */

/* Joins the job and starts the thread (once); with open, counts an open. */
static const mpt_job *start(int open, wf_status *st) {
  const mpt_job *j = mpt_join(st);
  if (!j)
    return NULL;
  pthread_mutex_lock(&T.mu);
  if (!T.started) {
    T.job = j;
    T.last_heard = calloc((size_t)j->size, sizeof *T.last_heard);
    if (!T.last_heard) {
      pthread_mutex_unlock(&T.mu);
      wfx_host->status_set(st, WF_RESOURCE_EXHAUSTED,
                           "mpi: out of memory for %d tasks", j->size);
      return NULL;
    }
    int64_t t = now_ns();
    for (int i = 0; i < j->size; i++)
      atomic_init(&T.last_heard[i], t);
    int err = pthread_create(&T.thread, NULL, progress, NULL);
    if (err) {
      free((void *)T.last_heard);
      T.last_heard = NULL;
      pthread_mutex_unlock(&T.mu);
      wfx_host->status_set(st, WF_RESOURCE_EXHAUSTED,
                           "mpi: cannot start the transport thread: %s",
                           strerror(err));
      return NULL;
    }
    T.started = 1;
  }
  if (open)
    T.opens++;
  pthread_mutex_unlock(&T.mu);
  return j;
}

int mpt_transport_start(wf_status *st) {
  return start(0, st) ? 0 : wfx_code(st);
}

static int t_open(void *plugin_state, void **tp, wf_status *st) {
  (void)plugin_state;
  const mpt_job *j = start(1, st);
  if (!j)
    return wfx_code(st);
  *tp = (void *)j;
  return 0;
}

static int32_t t_rank(void *tp) { return ((const mpt_job *)tp)->rank; }
static int32_t t_size(void *tp) { return ((const mpt_job *)tp)->size; }

static int t_send(void *tp, int32_t dst, uint64_t hi, uint64_t lo,
                  const void *data, size_t n, wf_status *st) {
  const mpt_job *j = tp;
  if (dst < 0 || dst >= j->size)
    return wfx_host->status_set(st, WF_INVALID_ARGUMENT,
                                "mpi: no task %d in a job of %d", dst, j->size),
           WF_INVALID_ARGUMENT;
  if (n > (size_t)INT32_MAX - KEY_BYTES) {
    wfx_host->status_set(st, WF_UNIMPLEMENTED,
                         "mpi: a message of %zu bytes to task %d is over "
                         "the 2 GiB limit of one message",
                         n, dst);
    return WF_UNIMPLEMENTED;
  }
  sending *s = malloc(sizeof *s);
  unsigned char *buf = malloc(n + KEY_BYTES);
  if (!s || !buf) {
    free(s);
    free(buf);
    wfx_host->status_set(st, WF_RESOURCE_EXHAUSTED,
                         "mpi: out of memory sending %zu bytes to task %d", n,
                         dst);
    return WF_RESOURCE_EXHAUSTED;
  }
  store_u64(buf, hi);
  store_u64(buf + 8, lo);
  if (n)
    memcpy(buf + KEY_BYTES, data, n);
  int err = MPI_Isend(buf, (int)(n + KEY_BYTES), MPI_BYTE, dst, TAG_MSG,
                      j->p2p, &s->req);
  if (err != MPI_SUCCESS) {
    char msg[MPI_MAX_ERROR_STRING];
    free(s);
    free(buf);
    wfx_host->status_set(st, WF_UNAVAILABLE,
                         "mpi: sending to task %d failed: %s", dst,
                         mpt_error_string(err, msg, sizeof msg));
    return WF_UNAVAILABLE;
  }
  s->buf = buf;
  s->dst = dst;
  pthread_mutex_lock(&T.mu);
  s->next = T.sending;
  T.sending = s;
  T.num_sending++;
  pthread_mutex_unlock(&T.mu);
  atomic_store(&T.wake, 1);
  return 0;
}

static int t_recv(void *tp, int32_t src, uint64_t hi, uint64_t lo,
                  wf_transport_recv_fn *done, void *arg, wf_status *st) {
  const mpt_job *j = tp;
  if (src < 0 || src >= j->size)
    return wfx_host->status_set(st, WF_INVALID_ARGUMENT,
                                "mpi: no task %d in a job of %d", src, j->size),
           WF_INVALID_ARGUMENT;
  pthread_mutex_lock(&T.mu);
  arrived **ap = &T.arrived;
  while (*ap && !((*ap)->src == src && (*ap)->hi == hi && (*ap)->lo == lo))
    ap = &(*ap)->next;
  arrived *a = *ap;
  if (a) {
    *ap = a->next;
    pthread_mutex_unlock(&T.mu);
    done(arg, 0, NULL, a->buf + KEY_BYTES, a->n);
    free(a->buf);
    free(a);
    return 0;
  }
  if (was_cancelled(hi)) {
    pthread_mutex_unlock(&T.mu);
    done(arg, WF_CANCELLED, "the step was cancelled", NULL, 0);
    return 0;
  }
  posted *p = malloc(sizeof *p);
  if (!p) {
    pthread_mutex_unlock(&T.mu);
    wfx_host->status_set(st, WF_RESOURCE_EXHAUSTED,
                         "mpi: out of memory posting a receive");
    return WF_RESOURCE_EXHAUSTED;
  }
  *p = (posted){T.posted, src, hi, lo, done, arg};
  T.posted = p;
  pthread_mutex_unlock(&T.mu);
  atomic_store(&T.wake, 1);
  return 0;
}

static void t_cancel(void *tp, uint64_t hi, int32_t code, const char *why) {
  (void)tp;
  posted *done_list = NULL;
  pthread_mutex_lock(&T.mu);
  if (!was_cancelled(hi)) {
    T.cancelled[T.next_cancelled] = hi;
    T.next_cancelled = (T.next_cancelled + 1) % CANCELLED_KEPT;
    if (T.num_cancelled < CANCELLED_KEPT)
      T.num_cancelled++;
  }
  for (posted **pp = &T.posted; *pp;) {
    if ((*pp)->hi == hi) {
      posted *p = *pp;
      *pp = p->next;
      p->next = done_list;
      done_list = p;
    } else {
      pp = &(*pp)->next;
    }
  }
  for (arrived **ap = &T.arrived; *ap;) {
    if ((*ap)->hi == hi) {
      arrived *a = *ap;
      *ap = a->next;
      free(a->buf);
      free(a);
    } else {
      ap = &(*ap)->next;
    }
  }
  pthread_mutex_unlock(&T.mu);
  while (done_list) {
    posted *p = done_list;
    done_list = p->next;
    p->done(p->arg, code ? code : WF_CANCELLED, why ? why : "cancelled",
            NULL, 0);
    free(p);
  }
}

static int64_t t_silent_ms(void *tp, int32_t task) {
  const mpt_job *j = tp;
  if (task == j->rank || task < 0 || task >= j->size || !T.last_heard)
    return -1;
  return (now_ns() - atomic_load(&T.last_heard[task])) / 1000000;
}

int mpt_transport_lost(int *task, int64_t *silent_ms) {
  pthread_mutex_lock(&T.mu);
  int running = T.started && T.last_heard;
  pthread_mutex_unlock(&T.mu);
  if (!running)
    return 0;
  const mpt_job *j = T.job;
  int64_t limit = mpt_heartbeat_ms(), now = now_ns();
  int found = 0;
  for (int t = 0; t < j->size; t++) {
    if (t == j->rank)
      continue;
    int64_t ms = (now - atomic_load(&T.last_heard[t])) / 1000000;
    /* The longest silent one: with several gone, the first that went. */
    if (ms > limit && (!found || ms > *silent_ms)) {
      *task = t;
      *silent_ms = ms;
      found = 1;
    }
  }
  return found;
}

static void t_abort(void *tp, int32_t code) {
  (void)tp;
  MPI_Abort(MPI_COMM_WORLD, code ? code : 1);
}

static void t_close(void *tp) {
  (void)tp;
  /* The job outlives a runtime (MPI starts once per process): closing
   * waits for queued sends and leaves the thread to the exit handler. */
  struct timespec when;
  clock_gettime(CLOCK_REALTIME, &when);
  when.tv_sec += 30;
  pthread_mutex_lock(&T.mu);
  while (T.num_sending > 0 &&
         pthread_cond_timedwait(&T.flushed, &T.mu, &when) != ETIMEDOUT)
    ;
  if (T.opens > 0)
    T.opens--;
  pthread_mutex_unlock(&T.mu);
}

void mpt_transport_stop(void) {
  pthread_mutex_lock(&T.mu);
  int started = T.started;
  T.started = 0;
  pthread_mutex_unlock(&T.mu);
  if (!started)
    return;
  /* Flush queued sends for a while, then give up on them. */
  atomic_store(&T.stop, 1);
  struct timespec when;
  clock_gettime(CLOCK_REALTIME, &when);
  when.tv_sec += 10;
  pthread_mutex_lock(&T.mu);
  while (T.num_sending > 0 &&
         pthread_cond_timedwait(&T.flushed, &T.mu, &when) != ETIMEDOUT)
    ;
  pthread_mutex_unlock(&T.mu);
  atomic_store(&T.stop, 2);
  pthread_join(T.thread, NULL);
  while (T.sending) {
    sending *s = T.sending;
    T.sending = s->next;
    MPI_Cancel(&s->req);
    MPI_Request_free(&s->req);
    free(s->buf);
    free(s);
  }
  while (T.posted) {
    posted *p = T.posted;
    T.posted = p->next;
    p->done(p->arg, WF_CANCELLED, "the process is exiting", NULL, 0);
    free(p);
  }
  while (T.arrived) {
    arrived *a = T.arrived;
    T.arrived = a->next;
    free(a->buf);
    free(a);
  }
  free((void *)T.last_heard);
  T.last_heard = NULL;
}

const wf_transport_def mpt_transport = {
    WF_STRUCT_INIT(wf_transport_def),
    .name = "mpi",
    .doc = "MPI (Open MPI): the processes of one mpirun job; task = rank in "
           "MPI_COMM_WORLD. Messages go as MPI messages on a communicator "
           "of their own; heartbeats every 200 ms between every pair of "
           "tasks",
    .open = t_open,
    .rank = t_rank,
    .size = t_size,
    .send = t_send,
    .recv = t_recv,
    .cancel = t_cancel,
    .silent_ms = t_silent_ms,
    .abort = t_abort,
    .close = t_close,
};
