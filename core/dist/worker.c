/* core/dist/worker.c — the serving loop of a worker task (wf_worker_serve): it
 * takes the client's control messages in order — shares of executors to
 * build, steps to run, steps to abort, sessions closed, the end of the job
 * — and answers each registration and each step.
 *
 * Each client session has its variables here (the share's stateful nodes
 * keep them between steps); steps run on threads of their own so that the
 * loop stays free to take an abort while they wait for tensors. */
#include <config.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "dist/cluster_internal.h"
#include "data/dataset.h"
#include "exec/executor.h"
#include "graph/graph_internal.h"
#include "base/log.h"
#include "base/status_internal.h"
#include "exec/variables.h"
#include <weft/cluster.h>
#include <weft/graph_file.h>

typedef struct wexec {
  struct wexec *next;
  uint64_t id;
  wf_graph *g;
  wf__exec *x;
} wexec;

typedef struct wsession {
  struct wsession *next;
  uint64_t id;
  wf__session_state state;
  int running; /* steps using it */
  int closing;
} wsession;

typedef struct worker {
  wf_runtime *rt;
  wf__cluster *c;
  wf__pool *pool;
  pthread_mutex_t mu;
  pthread_cond_t idle;
  wexec *execs;
  wsession *sessions;
  int running; /* step threads alive */
} worker;

typedef struct run_arg {
  worker *w;
  wf__exec *x;
  wsession *s;
  wf__job_step job;
} run_arg;

static void answer(worker *w, uint64_t hi, int code, const char *msg) {
  wf__msg m = {0};
  wf__msg_u32(&m, (uint32_t)code);
  wf__msg_str(&m, code ? msg : "");
  wf_status st = {WF_OK, NULL};
  if (wf__cluster_send(w->c, 0, hi, (uint64_t)wf__cluster_task(w->c), &m,
                       &st))
    wf__log(WF_LOG_ERROR, "worker", "task %d: answering the client failed: %s",
            (int)wf__cluster_task(w->c), wf_status_message(&st));
  wf_status_reset(&st);
  wf__msg_free(&m);
}

static void session_free(wsession *s) {
  wf__varstore_free(s->state.vars);
  wf__iterators_free(s->state.iterators);
  wf__free(s);
}

/* The session id's state, made on first use. Under w->mu. */
static wsession *session_for(worker *w, uint64_t id) {
  for (wsession *s = w->sessions; s; s = s->next)
    if (s->id == id)
      return s;
  wsession *s = wf__calloc(1, sizeof *s);
  if (!s)
    return NULL;
  s->id = id;
  s->state.id = id;
  atomic_init(&s->state.cancelled, 0);
  atomic_init(&s->state.step, 0);
  s->state.vars = wf__varstore_new();
  s->state.iterators = wf__iterators_new();
  if (!s->state.vars || !s->state.iterators) {
    session_free(s);
    return NULL;
  }
  s->next = w->sessions;
  w->sessions = s;
  return s;
}

static void *run_step(void *arg) {
  run_arg *a = arg;
  worker *w = a->w;
  wf_status st = {WF_OK, NULL};
  int code = wf__exec_run_job(a->x, w->pool, &a->s->state, &a->job, &st);
  answer(w, WF__KEY_REPLY(a->job.uid), code, wf_status_message(&st));
  wf_status_reset(&st);
  wf__exec_release(a->x);
  pthread_mutex_lock(&w->mu);
  a->s->running--;
  w->running--;
  pthread_cond_broadcast(&w->idle);
  pthread_mutex_unlock(&w->mu);
  wf__free(a);
  return NULL;
}

static void do_register(worker *w, wf__msg *m) {
  uint64_t id = wf__msg_get_u64(m);
  uint32_t n = wf__msg_get_u32(m);
  wf_status st = {WF_OK, NULL};
  wf_node **targets = NULL;
  wf_graph *g = NULL;
  wf__exec *x = NULL;
  const char **names = wf__calloc((size_t)n + 1, sizeof *names);
  if (!names) {
    wf_status_set(&st, WF_RESOURCE_EXHAUSTED, "out of memory");
    goto out;
  }
  for (uint32_t i = 0; i < n && !m->bad; i++)
    names[i] = wf__msg_get_str(m);
  size_t len = 0;
  const void *bytes = wf__msg_get_bytes(m, &len);
  if (m->bad) {
    wf_status_set(&st, WF_DATA_LOSS, "a malformed registration message");
    goto out;
  }
  char what[64];
  snprintf(what, sizeof what, "share of executor %llu",
           (unsigned long long)id);
  g = wf_graph_from_buffer(w->rt, bytes, len, what, &st);
  if (!g)
    goto out;
  targets = wf__calloc((size_t)n + 1, sizeof *targets);
  if (!targets) {
    wf_status_set(&st, WF_RESOURCE_EXHAUSTED, "out of memory");
    goto out;
  }
  for (uint32_t i = 0; i < n; i++)
    if (!(targets[i] = wf_graph_find_node(g, names[i]))) {
      wf_status_set(&st, WF_INVALID_ARGUMENT,
                    "%s: no target node '%s' in it", what, names[i]);
      goto out;
    }
  wf__signature sig = {NULL, 0, NULL, 0, targets, (int)n};
  x = wf__exec_new(w->rt, g, &sig, &st);
  if (!x)
    goto out;
  wexec *e = wf__calloc(1, sizeof *e);
  if (!e) {
    wf_status_set(&st, WF_RESOURCE_EXHAUSTED, "out of memory");
    goto out;
  }
  e->id = id;
  e->g = g;
  e->x = x;
  pthread_mutex_lock(&w->mu);
  e->next = w->execs;
  w->execs = e;
  pthread_mutex_unlock(&w->mu);
  g = NULL;
  x = NULL;
out:
  answer(w, WF__KEY_REGISTERED(id), wf_status_code(&st),
         wf_status_message(&st));
  wf_status_reset(&st);
  if (x)
    wf__exec_release(x);
  wf_graph_free(g);
  wf__free(targets);
  wf__free(names);
}

static void do_unregister(worker *w, wf__msg *m) {
  uint64_t id = wf__msg_get_u64(m);
  wexec *found = NULL;
  pthread_mutex_lock(&w->mu);
  for (wexec **p = &w->execs; *p; p = &(*p)->next)
    if ((*p)->id == id) {
      found = *p;
      *p = found->next;
      break;
    }
  pthread_mutex_unlock(&w->mu);
  if (!found)
    return;
  /* Steps still running hold their own reference to the executor, and
   * their working graph is the executor's; the shipped graph only seeded
   * it. */
  wf__exec_release(found->x);
  wf_graph_free(found->g);
  wf__free(found);
}

static void do_run(worker *w, wf__msg *m) {
  uint64_t id = wf__msg_get_u64(m);
  uint64_t session = wf__msg_get_u64(m);
  uint64_t uid = wf__msg_get_u64(m);
  int64_t step = (int64_t)wf__msg_get_u64(m);
  if (m->bad) {
    wf__log(WF_LOG_ERROR, "worker", "task %d: a malformed run message",
            (int)wf__cluster_task(w->c));
    return;
  }
  run_arg *a = wf__calloc(1, sizeof *a);
  const char *problem = NULL;
  pthread_mutex_lock(&w->mu);
  wexec *e = w->execs;
  while (e && e->id != id)
    e = e->next;
  wsession *s = e && a ? session_for(w, session) : NULL;
  if (!a || (e && !s))
    problem = "out of memory";
  else if (!e)
    problem = "no such executor share (it was never registered here, or "
              "failed to build)";
  if (!problem) {
    *a = (run_arg){w, wf__exec_retain(e->x), s, {uid, step}};
    s->running++;
    w->running++;
  }
  pthread_mutex_unlock(&w->mu);
  if (problem) {
    answer(w, WF__KEY_REPLY(uid), problem[0] == 'o' ? WF_RESOURCE_EXHAUSTED
                                                    : WF_INTERNAL,
           problem);
    wf__free(a);
    return;
  }
  pthread_t th;
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  int err = pthread_create(&th, &attr, run_step, a);
  pthread_attr_destroy(&attr);
  if (err) {
    /* No thread: run it here (the loop waits for this step). */
    run_step(a);
  }
}

static void do_close_session(worker *w, wf__msg *m) {
  uint64_t id = wf__msg_get_u64(m);
  pthread_mutex_lock(&w->mu);
  for (wsession **p = &w->sessions; *p; p = &(*p)->next) {
    wsession *s = *p;
    if (s->id != id)
      continue;
    atomic_store(&s->state.cancelled, 1);
    while (s->running > 0)
      pthread_cond_wait(&w->idle, &w->mu);
    /* The list may have changed while waiting: unlink by search. */
    for (wsession **q = &w->sessions; *q; q = &(*q)->next)
      if (*q == s) {
        *q = s->next;
        break;
      }
    session_free(s);
    break;
  }
  pthread_mutex_unlock(&w->mu);
}

int wf_worker_serve(wf_runtime *rt, wf_status *st) {
  wf__cluster *c = wf__cluster_get(rt, st);
  if (!c)
    return wf_status_code(st);
  if (!wf__cluster_transport(c))
    return wf_status_set(st, WF_FAILED_PRECONDITION,
                         "this runtime has no transport (load the MPI "
                         "transport plugin and start the job with mpirun)");
  if (wf__cluster_task(c) == 0)
    return wf_status_set(
        st, WF_FAILED_PRECONDITION,
        "this process is task 0 of %d, the client: workers are the "
        "launcher's other processes (mpirun -np 1 CLIENT : -np N weft "
        "worker)",
        (int)wf__cluster_size(c));
  worker w = {rt, c, NULL, PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER,
              NULL, NULL, 0};
  int32_t inter, intra;
  wf__threads(rt->cfg, &inter, &intra);
  if (inter > 1 && !(w.pool = wf__pool_new(inter - 1, rt->cfg->pin, st)))
    return wf_status_code(st);
  wf__log(WF_LOG_INFO, "worker", "task %d of %d serving",
          (int)wf__cluster_task(c), (int)wf__cluster_size(c));
  int rc = 0;
  for (uint64_t seq = 0;; seq++) {
    wf__msg m;
    if (wf__cluster_wait(c, 0, WF__KEY_CONTROL, seq, 0, &m, st)) {
      wf_status_prefix(st, "task %d: the client is gone",
                       (int)wf__cluster_task(c));
      rc = wf_status_code(st);
      wf__msg_free(&m);
      break;
    }
    int type = wf__msg_get_u8(&m);
    int stop = 0;
    switch (type) {
    case WF__MSG_REGISTER:
      do_register(&w, &m);
      break;
    case WF__MSG_UNREGISTER:
      do_unregister(&w, &m);
      break;
    case WF__MSG_RUN:
      do_run(&w, &m);
      break;
    case WF__MSG_ABORT: {
      uint64_t uid = wf__msg_get_u64(&m);
      wf__cluster_cancel_step(c, uid, WF_CANCELLED,
                              "the step failed on another task");
      break;
    }
    case WF__MSG_CLOSE_SESSION:
      do_close_session(&w, &m);
      break;
    case WF__MSG_SHUTDOWN:
      stop = 1;
      break;
    default:
      wf__log(WF_LOG_ERROR, "worker",
              "task %d: control message %llu has unknown kind %d; ignored",
              (int)wf__cluster_task(c), (unsigned long long)seq, type);
    }
    wf__msg_free(&m);
    if (stop)
      break;
  }
  /* Let running steps finish (a vanished client's steps fail on their
   * own: their transfers time out), then drop everything. */
  pthread_mutex_lock(&w.mu);
  for (wsession *s = w.sessions; s; s = s->next)
    atomic_store(&s->state.cancelled, 1);
  while (w.running > 0)
    pthread_cond_wait(&w.idle, &w.mu);
  pthread_mutex_unlock(&w.mu);
  while (w.execs) {
    wexec *e = w.execs;
    w.execs = e->next;
    wf__exec_release(e->x);
    wf_graph_free(e->g);
    wf__free(e);
  }
  while (w.sessions) {
    wsession *s = w.sessions;
    w.sessions = s->next;
    session_free(s);
  }
  wf__pool_free(w.pool);
  pthread_mutex_destroy(&w.mu);
  pthread_cond_destroy(&w.idle);
  return rc;
}
