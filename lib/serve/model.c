/* lib/serve/model.c — served models (model.h): version discovery in a model
 * directory, loading a version into prepared callables, the swap to a newer
 * version under load, and the dynamic batcher.
 *
 * A version is reference counted: the model holds one reference for as long
 * as it serves it, every request one while it runs. A swap replaces the
 * model's pointer under its lock and drops the model's reference, so the
 * old version is freed by whichever request finishes on it last — no
 * request fails or waits because of a swap.
 *
 * The batcher of a version keeps one queue per signature and
 * num_batch_threads threads. A batch closes when it holds max_batch_size
 * rows or its first request has waited batch_timeout_us; requests whose
 * inputs have the same sizes beyond the first dimension are joined into one
 * run, whose outputs are split back along the first dimension. A queue
 * holding max_batch_size * max_enqueued_batches rows refuses more at once.
 * It does not unload versions that disappear from disk, nor serve more than
 * the newest loaded version. */
#include <config.h>

#include "model.h"
#include "serve.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

typedef struct task {
  struct task *next;
  wf_tensor *const *inputs;
  wf_tensor **outputs;
  int64_t rows;
  int64_t enqueued_ns;
  sem_t done; /* posted by the batch thread when the outputs are there */
  wf_code code;
  char message[512];
} task;

typedef struct signature {
  char *name;
  srv_sig_desc desc;
  srv_arg *args; /* inputs, then outputs */
  wf_callable *callable;
  int batchable; /* every input and output has a free first dimension */
  /* The batch queue (under the version's batch lock). */
  task *head, *tail;
  int64_t queued_rows;
  int queued_tasks;
} signature;

struct srv_version {
  srv_model *model;
  int64_t number;
  char label[24];
  wf_saved_model *sm;
  int nsigs;
  signature *sigs;
  atomic_int refs;
  /* Batching. */
  pthread_mutex_t mu;
  pthread_cond_t work;
  pthread_t *threads;
  int nthreads;
  int stop;
};

enum { ST_LOADING, ST_AVAILABLE, ST_END };

typedef struct version_status {
  int64_t number;
  int state;
  wf_code code;
  char *message;
} version_status;

struct srv_model {
  const srv_model_env *env;
  char *name, *dir;
  int single; /* dir is a saved model itself */
  pthread_mutex_t mu;
  srv_version *current;
  version_status *statuses;
  int nstatuses;
  pthread_mutex_t poll_mu; /* one poll at a time */
};

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

#define LOG(m, level, ...)                                                     \
  do {                                                                         \
    if ((m)->env->log)                                                         \
      (m)->env->log((m)->env->log_arg, level, __VA_ARGS__);                    \
  } while (0)

/* ---- the batcher --------------------------------------------------------- */

static int64_t first_dim(const wf_tensor *t) {
  return wf_tensor_rank(t) > 0 ? wf_tensor_dim(t, 0) : -1;
}

/* Same sizes beyond the first dimension for every input. */
static int same_inner(const signature *s, const task *a, const task *b) {
  for (int j = 0; j < s->desc.ninputs; j++) {
    const wf_tensor *x = a->inputs[j], *y = b->inputs[j];
    if (wf_tensor_rank(x) != wf_tensor_rank(y))
      return 0;
    for (int k = 1; k < wf_tensor_rank(x); k++)
      if (wf_tensor_dim(x, k) != wf_tensor_dim(y, k))
        return 0;
  }
  return 1;
}

static void finish(task *t, const wf_status *st) {
  t->code = wf_status_code(st);
  snprintf(t->message, sizeof t->message, "%s", wf_status_message(st));
}

/* Joins the tasks' inputs, runs them once and splits the outputs back.
 * Called without the lock. */
static void run_batch(srv_version *v, signature *s, task **tasks, int n,
                      int64_t rows) {
  int ni = s->desc.ninputs, no = s->desc.noutputs;
  wf_status *st = wf_status_new();
  wf_tensor **in = calloc((size_t)(ni + no), sizeof *in);
  wf_tensor **out = in ? in + ni : NULL;
  if (!st || !in) {
    for (int i = 0; i < n; i++) {
      tasks[i]->code = WF_RESOURCE_EXHAUSTED;
      snprintf(tasks[i]->message, sizeof tasks[i]->message,
               "out of memory joining a batch");
    }
    goto done;
  }
  if (n == 1) {
    int rc = wf_callable_run(s->callable, NULL, tasks[0]->inputs,
                             tasks[0]->outputs, NULL, st);
    finish(tasks[0], st);
    if (rc)
      goto done;
    srv_metrics_batch(v->model->env->metrics, v->model->name, v->label, s->name,
                      rows, 1);
    goto done;
  }
  for (int j = 0; j < ni; j++) {
    const wf_tensor *t0 = tasks[0]->inputs[j];
    int64_t dims[WF_MAX_RANK];
    for (int k = 0; k < wf_tensor_rank(t0); k++)
      dims[k] = wf_tensor_dim(t0, k);
    dims[0] = rows;
    in[j] = wf_tensor_new(wf_tensor_dtype(t0), dims, wf_tensor_rank(t0), st);
    if (!in[j])
      goto fail;
    char *p = wf_tensor_data(in[j]);
    for (int i = 0; i < n; i++) {
      size_t nb = wf_tensor_nbytes(tasks[i]->inputs[j]);
      if (nb)
        memcpy(p, wf_tensor_data(tasks[i]->inputs[j]), nb);
      p += nb;
    }
  }
  if (wf_callable_run(s->callable, NULL, in, out, NULL, st))
    goto fail;
  for (int j = 0; j < no; j++)
    if (first_dim(out[j]) != rows) {
      wf_status_set(st, WF_INTERNAL,
                    "output '%s' of a batch of %" PRId64 " rows has first "
                    "dimension %" PRId64 ", so it cannot be split",
                    s->desc.outputs[j].key, rows, first_dim(out[j]));
      goto fail;
    }
  int64_t at = 0;
  for (int i = 0; i < n; i++) {
    for (int j = 0; j < no; j++) {
      int64_t dims[WF_MAX_RANK];
      for (int k = 0; k < wf_tensor_rank(out[j]); k++)
        dims[k] = wf_tensor_dim(out[j], k);
      dims[0] = tasks[i]->rows;
      size_t row_bytes = rows ? wf_tensor_nbytes(out[j]) / (size_t)rows : 0;
      wf_tensor *t = wf_tensor_new(wf_tensor_dtype(out[j]), dims,
                                   wf_tensor_rank(out[j]), st);
      if (!t) {
        for (int k = 0; k < j; k++) {
          wf_tensor_release(tasks[i]->outputs[k]);
          tasks[i]->outputs[k] = NULL;
        }
        finish(tasks[i], st);
        wf_status_reset(st);
        goto next_task;
      }
      if (row_bytes && tasks[i]->rows)
        memcpy(wf_tensor_data(t),
               (const char *)wf_tensor_data(out[j]) + (size_t)at * row_bytes,
               (size_t)tasks[i]->rows * row_bytes);
      tasks[i]->outputs[j] = t;
    }
    tasks[i]->code = WF_OK;
  next_task:
    at += tasks[i]->rows;
  }
  srv_metrics_batch(v->model->env->metrics, v->model->name, v->label, s->name,
                    rows, n);
  goto done;
fail:
  for (int i = 0; i < n; i++)
    finish(tasks[i], st);
done:
  if (in)
    for (int j = 0; j < ni + no; j++)
      wf_tensor_release(in[j]);
  free(in);
  wf_status_free(st);
}

static void *batch_thread(void *arg) {
  srv_version *v = arg;
  const srv_batching *b = &v->model->env->batching;
  int64_t timeout_ns = b->batch_timeout_us * 1000;
  task **tasks = calloc((size_t)b->max_batch_size, sizeof *tasks);
  pthread_mutex_lock(&v->mu);
  for (;;) {
    /* The signature whose oldest request has waited longest. */
    signature *s = NULL;
    for (int i = 0; i < v->nsigs; i++)
      if (v->sigs[i].head &&
          (!s || v->sigs[i].head->enqueued_ns < s->head->enqueued_ns))
        s = &v->sigs[i];
    if (!s) {
      if (v->stop)
        break;
      pthread_cond_wait(&v->work, &v->mu);
      continue;
    }
    int64_t deadline = s->head->enqueued_ns + timeout_ns;
    if (s->queued_rows < b->max_batch_size && !v->stop && now_ns() < deadline) {
      struct timespec ts;
      clock_gettime(CLOCK_REALTIME, &ts);
      int64_t wait = deadline - now_ns();
      if (wait < 0)
        wait = 0;
      int64_t abs_ns = (int64_t)ts.tv_nsec + wait;
      ts.tv_sec += (time_t)(abs_ns / 1000000000);
      ts.tv_nsec = (long)(abs_ns % 1000000000);
      pthread_cond_timedwait(&v->work, &v->mu, &ts);
      continue;
    }
    /* Close the batch: requests of the same inner sizes, in order. */
    int n = 0;
    int64_t rows = 0;
    task *first = s->head;
    while (s->head && n < b->max_batch_size &&
           rows + s->head->rows <= b->max_batch_size &&
           same_inner(s, first, s->head)) {
      task *t = s->head;
      s->head = t->next;
      if (!s->head)
        s->tail = NULL;
      s->queued_rows -= t->rows;
      s->queued_tasks--;
      rows += t->rows;
      if (tasks)
        tasks[n] = t;
      n++;
      if (!tasks) { /* no memory for the list: run them one by one */
        pthread_mutex_unlock(&v->mu);
        run_batch(v, s, &t, 1, t->rows);
        sem_post(&t->done);
        pthread_mutex_lock(&v->mu);
      }
    }
    if (!tasks)
      continue;
    pthread_mutex_unlock(&v->mu);
    run_batch(v, s, tasks, n, rows);
    /* Each request wakes alone: no herd on the lock. */
    for (int i = 0; i < n; i++)
      sem_post(&tasks[i]->done);
    pthread_mutex_lock(&v->mu);
  }
  pthread_mutex_unlock(&v->mu);
  free(tasks);
  return NULL;
}

int srv_version_run(srv_version *v, int sig, wf_tensor *const *inputs,
                    wf_tensor **outputs, wf_status *st) {
  signature *s = &v->sigs[sig];
  const srv_batching *b = &v->model->env->batching;
  int64_t rows = s->desc.ninputs > 0 ? first_dim(inputs[0]) : -1;
  for (int j = 1; j < s->desc.ninputs && rows >= 0; j++)
    if (first_dim(inputs[j]) != rows)
      rows = -1;
  /* Unbatched: batching off, a signature it cannot split, inputs that
   * disagree on the first dimension (the run names the problem), or a
   * request larger than a batch. */
  if (!v->nthreads || !s->batchable || rows <= 0 || rows > b->max_batch_size) {
    if (wf_callable_run(s->callable, NULL, inputs, outputs, NULL, st))
      return -1;
    srv_metrics_batch(v->model->env->metrics, v->model->name, v->label, s->name,
                      rows, 1);
    return 0;
  }
  task t = {.inputs = inputs, .outputs = outputs, .rows = rows};
  pthread_mutex_lock(&v->mu);
  int64_t limit = (int64_t)b->max_batch_size * b->max_enqueued_batches;
  if (s->queued_rows + rows > limit) {
    int64_t queued = s->queued_rows;
    pthread_mutex_unlock(&v->mu);
    return wf_status_set(st, WF_RESOURCE_EXHAUSTED,
                         "the batch queue of model '%s' version %s signature "
                         "'%s' is full (%" PRId64 " rows waiting, at most "
                         "%" PRId64 ")",
                         v->model->name, v->label, s->name, queued, limit);
  }
  if (sem_init(&t.done, 0, 0)) {
    pthread_mutex_unlock(&v->mu);
    return wf_status_set(st, WF_RESOURCE_EXHAUSTED, "cannot make a semaphore");
  }
  t.enqueued_ns = now_ns();
  int was_empty = !s->head;
  if (s->tail)
    s->tail->next = &t;
  else
    s->head = &t;
  s->tail = &t;
  s->queued_rows += rows;
  s->queued_tasks++;
  /* A batch thread needs waking only for a new deadline or a full batch. */
  if (was_empty || s->queued_rows >= b->max_batch_size)
    pthread_cond_broadcast(&v->work);
  pthread_mutex_unlock(&v->mu);
  while (sem_wait(&t.done) != 0)
    ;
  sem_destroy(&t.done);
  if (t.code != WF_OK)
    return wf_status_set(st, t.code, "%s", t.message);
  return 0;
}

/* ---- versions -------------------------------------------------------------
 */

static void version_free(srv_version *v) {
  if (!v)
    return;
  if (v->nthreads) {
    pthread_mutex_lock(&v->mu);
    v->stop = 1;
    pthread_cond_broadcast(&v->work);
    pthread_mutex_unlock(&v->mu);
    for (int i = 0; i < v->nthreads; i++)
      pthread_join(v->threads[i], NULL);
  }
  free(v->threads);
  for (int i = 0; v->sigs && i < v->nsigs; i++) {
    wf_callable_free(v->sigs[i].callable);
    free(v->sigs[i].args);
    free(v->sigs[i].name);
  }
  free(v->sigs);
  wf_saved_model_free(v->sm);
  pthread_mutex_destroy(&v->mu);
  pthread_cond_destroy(&v->work);
  free(v);
}

void srv_version_release(srv_version *v) {
  if (v && atomic_fetch_sub(&v->refs, 1) == 1)
    version_free(v);
}

static int prepare_signature(srv_version *v, int i, wf_status *st) {
  signature *s = &v->sigs[i];
  wf_saved_model *sm = v->sm;
  wf_graph *g = wf_saved_model_graph(sm);
  int ni = wf_saved_model_num_inputs(sm, i);
  int no = wf_saved_model_num_outputs(sm, i);
  wf_output *ports = calloc((size_t)(ni + no) + 1, sizeof *ports);
  s->args = calloc((size_t)(ni + no) + 1, sizeof *s->args);
  s->name = strdup(wf_saved_model_signature_name(sm, i));
  if (!ports || !s->args || !s->name) {
    free(ports);
    return wf_status_set(st, WF_RESOURCE_EXHAUSTED, "out of memory");
  }
  s->batchable = 1;
  for (int j = 0; j < ni + no; j++) {
    wf_signature_arg a;
    if (j < ni)
      wf_saved_model_input(sm, i, j, &a);
    else
      wf_saved_model_output(sm, i, j - ni, &a);
    s->args[j].key = a.key;
    s->args[j].dtype = a.dtype;
    s->args[j].shape = a.shape;
    if (a.shape.rank < 1 || a.shape.dims[0] != WF_UNKNOWN_DIM)
      s->batchable = 0;
    if (wf_graph_parse_output(g, a.tensor, &ports[j], st)) {
      free(ports);
      return -1;
    }
  }
  s->desc.ninputs = ni;
  s->desc.inputs = s->args;
  s->desc.noutputs = no;
  s->desc.outputs = s->args + ni;
  s->callable = wf_session_prepare(wf_saved_model_session(sm), ports, ni,
                                   ports + ni, no, NULL, 0, st);
  free(ports);
  if (!s->callable) {
    wf_status_prefix(st, "signature '%s': ", s->name);
    return -1;
  }
  return 0;
}

static srv_version *version_load(srv_model *m, int64_t number, const char *path,
                                 wf_status *st) {
  srv_version *v = calloc(1, sizeof *v);
  if (!v) {
    wf_status_set(st, WF_RESOURCE_EXHAUSTED, "out of memory");
    return NULL;
  }
  v->model = m;
  v->number = number;
  snprintf(v->label, sizeof v->label, "%" PRId64, number);
  atomic_init(&v->refs, 1);
  pthread_mutex_init(&v->mu, NULL);
  pthread_cond_init(&v->work, NULL);
  v->sm = wf_saved_model_load(m->env->rt, path, st);
  if (!v->sm)
    goto fail;
  v->nsigs = wf_saved_model_num_signatures(v->sm);
  v->sigs = calloc((size_t)v->nsigs + 1, sizeof *v->sigs);
  if (!v->sigs) {
    wf_status_set(st, WF_RESOURCE_EXHAUSTED, "out of memory");
    goto fail;
  }
  for (int i = 0; i < v->nsigs; i++)
    if (prepare_signature(v, i, st))
      goto fail;
  const srv_batching *b = &m->env->batching;
  if (b->max_batch_size > 0) {
    v->threads = calloc((size_t)b->num_batch_threads, sizeof *v->threads);
    if (!v->threads) {
      wf_status_set(st, WF_RESOURCE_EXHAUSTED, "out of memory");
      goto fail;
    }
    for (int i = 0; i < b->num_batch_threads; i++) {
      if (pthread_create(&v->threads[i], NULL, batch_thread, v)) {
        wf_status_set(st, WF_RESOURCE_EXHAUSTED, "cannot start a batch thread");
        goto fail;
      }
      v->nthreads++;
    }
  }
  return v;
fail:
  wf_status_prefix(st, "model '%s' version %" PRId64 " (%s): ", m->name, number,
                   path);
  version_free(v);
  return NULL;
}

/* ---- models ----------------------------------------------------------------
 */

static int is_saved_model(const char *dir) {
  char path[4096];
  struct stat sb;
  snprintf(path, sizeof path, "%s/model.json", dir);
  return stat(path, &sb) == 0 && S_ISREG(sb.st_mode);
}

/* The highest numbered subdirectory of dir, or -1. */
static int64_t newest_version(const char *dir) {
  DIR *d = opendir(dir);
  int64_t best = -1;
  if (!d)
    return -1;
  for (struct dirent *e; (e = readdir(d));) {
    const char *p = e->d_name;
    size_t n = strlen(p);
    if (n == 0 || n > 18)
      continue;
    int digits = 1;
    for (size_t i = 0; i < n; i++)
      if (!isdigit((unsigned char)p[i]))
        digits = 0;
    if (!digits)
      continue;
    char path[4096];
    struct stat sb;
    snprintf(path, sizeof path, "%s/%s", dir, p);
    if (stat(path, &sb) != 0 || !S_ISDIR(sb.st_mode))
      continue;
    int64_t v = strtoll(p, NULL, 10);
    if (v > best)
      best = v;
  }
  closedir(d);
  return best;
}

/* The status entry of version number, created if new; under m->mu. */
static version_status *status_of(srv_model *m, int64_t number) {
  for (int i = 0; i < m->nstatuses; i++)
    if (m->statuses[i].number == number)
      return &m->statuses[i];
  version_status *s =
      realloc(m->statuses, (size_t)(m->nstatuses + 1) * sizeof *s);
  if (!s)
    return NULL;
  m->statuses = s;
  s = &s[m->nstatuses++];
  memset(s, 0, sizeof *s);
  s->number = number;
  return s;
}

static void set_status(srv_model *m, int64_t number, int state,
                       const wf_status *st) {
  version_status *s = status_of(m, number);
  if (!s)
    return;
  s->state = state;
  s->code = st ? wf_status_code(st) : WF_OK;
  free(s->message);
  s->message = st && s->code != WF_OK ? strdup(wf_status_message(st)) : NULL;
}

/* Loads version number and serves it when it is newer than the current. */
static int load_and_swap(srv_model *m, int64_t number, wf_status *st) {
  char path[4096];
  if (m->single)
    snprintf(path, sizeof path, "%s", m->dir);
  else
    snprintf(path, sizeof path, "%s/%" PRId64, m->dir, number);
  pthread_mutex_lock(&m->mu);
  set_status(m, number, ST_LOADING, NULL);
  pthread_mutex_unlock(&m->mu);
  int64_t t0 = now_ns();
  srv_version *v = version_load(m, number, path, st);
  pthread_mutex_lock(&m->mu);
  if (!v) {
    set_status(m, number, ST_END, st);
    pthread_mutex_unlock(&m->mu);
    LOG(m, WF_SERVE_LOG_ERROR, "%s", wf_status_message(st));
    return -1;
  }
  srv_version *old = m->current;
  m->current = v;
  set_status(m, number, ST_AVAILABLE, NULL);
  if (old)
    set_status(m, old->number, ST_END, NULL);
  pthread_mutex_unlock(&m->mu);
  LOG(m, WF_SERVE_LOG_INFO,
      "model '%s' version %" PRId64 " loaded from %s in %.1f ms%s", m->name,
      number, path, (double)(now_ns() - t0) / 1e6,
      old ? "; it replaces the version served so far" : "");
  srv_version_release(old);
  return 0;
}

srv_model *srv_model_new(const srv_model_env *env, const char *name,
                         const char *dir, wf_status *st) {
  srv_model *m = calloc(1, sizeof *m);
  if (!m || !(m->name = strdup(name)) || !(m->dir = strdup(dir))) {
    if (m)
      free(m->name);
    free(m);
    wf_status_set(st, WF_RESOURCE_EXHAUSTED, "out of memory");
    return NULL;
  }
  m->env = env;
  pthread_mutex_init(&m->mu, NULL);
  pthread_mutex_init(&m->poll_mu, NULL);
  int64_t newest;
  if (is_saved_model(dir)) {
    m->single = 1;
    newest = 1;
  } else if ((newest = newest_version(dir)) < 0) {
    wf_status_set(st, WF_NOT_FOUND,
                  "model '%s': %s is neither a saved model (no model.json) "
                  "nor a directory of numbered versions",
                  name, dir);
    goto fail;
  }
  if (load_and_swap(m, newest, st))
    goto fail;
  return m;
fail:
  srv_model_free(m);
  return NULL;
}

void srv_model_free(srv_model *m) {
  if (!m)
    return;
  srv_version_release(m->current);
  for (int i = 0; i < m->nstatuses; i++)
    free(m->statuses[i].message);
  free(m->statuses);
  pthread_mutex_destroy(&m->mu);
  pthread_mutex_destroy(&m->poll_mu);
  free(m->name);
  free(m->dir);
  free(m);
}

const char *srv_model_name(const srv_model *m) { return m->name; }

void srv_model_poll(srv_model *m) {
  if (m->single)
    return;
  pthread_mutex_lock(&m->poll_mu);
  int64_t newest = newest_version(m->dir);
  pthread_mutex_lock(&m->mu);
  int64_t current = m->current ? m->current->number : -1;
  int tried = 0;
  for (int i = 0; i < m->nstatuses; i++)
    if (m->statuses[i].number == newest)
      tried = 1;
  pthread_mutex_unlock(&m->mu);
  if (newest > current && !tried) {
    wf_status *st = wf_status_new();
    if (st)
      load_and_swap(m, newest, st);
    wf_status_free(st);
  }
  pthread_mutex_unlock(&m->poll_mu);
}

int srv_model_ready(srv_model *m) {
  pthread_mutex_lock(&m->mu);
  int ready = m->current != NULL;
  pthread_mutex_unlock(&m->mu);
  return ready;
}

srv_version *srv_model_acquire(srv_model *m, int64_t version, wf_status *st) {
  pthread_mutex_lock(&m->mu);
  srv_version *v = m->current;
  if (v && (version < 0 || v->number == version))
    atomic_fetch_add(&v->refs, 1);
  else
    v = NULL;
  pthread_mutex_unlock(&m->mu);
  if (!v) {
    if (version >= 0)
      wf_status_set(st, WF_NOT_FOUND,
                    "model '%s' version %" PRId64 " is not being served",
                    m->name, version);
    else
      wf_status_set(st, WF_UNAVAILABLE, "model '%s' has no version loaded",
                    m->name);
  }
  return v;
}

static const char *state_name(int s) {
  return s == ST_LOADING ? "LOADING" : s == ST_AVAILABLE ? "AVAILABLE" : "END";
}

static const char *tf_code_name(wf_code c) {
  static const char *names[] = {"OK",
                                "CANCELLED",
                                "UNKNOWN",
                                "INVALID_ARGUMENT",
                                "DEADLINE_EXCEEDED",
                                "NOT_FOUND",
                                "ALREADY_EXISTS",
                                "PERMISSION_DENIED",
                                "RESOURCE_EXHAUSTED",
                                "FAILED_PRECONDITION",
                                "ABORTED",
                                "OUT_OF_RANGE",
                                "UNIMPLEMENTED",
                                "INTERNAL",
                                "UNAVAILABLE",
                                "DATA_LOSS",
                                "UNAUTHENTICATED"};
  return (unsigned)c < sizeof names / sizeof *names ? names[c] : "UNKNOWN";
}

int srv_model_write_status(srv_model *m, int64_t version, srv_buf *b,
                           wf_status *st) {
  pthread_mutex_lock(&m->mu);
  int found = version < 0;
  for (int i = 0; i < m->nstatuses; i++)
    if (m->statuses[i].number == version)
      found = 1;
  if (!found) {
    pthread_mutex_unlock(&m->mu);
    return wf_status_set(st, WF_NOT_FOUND, "model '%s' has no version %" PRId64,
                         m->name, version);
  }
  srv_buf_puts(b, "{\"model_version_status\":[");
  int first = 1;
  /* Newest first, as TensorFlow Serving lists them. */
  for (int pass = m->nstatuses - 1; pass >= 0; pass--) {
    const version_status *s = &m->statuses[pass];
    if (version >= 0 && s->number != version)
      continue;
    srv_buf_printf(b,
                   "%s{\"version\":\"%" PRId64 "\",\"state\":\"%s\","
                   "\"status\":{\"error_code\":\"%s\",\"error_message\":",
                   first ? "" : ",", s->number, state_name(s->state),
                   tf_code_name(s->code));
    srv_buf_json_string(b, s->message ? s->message : "");
    srv_buf_puts(b, "}}");
    first = 0;
  }
  srv_buf_puts(b, "]}");
  pthread_mutex_unlock(&m->mu);
  return 0;
}

void srv_model_write_gauges(srv_model *m, srv_buf *b) {
  pthread_mutex_lock(&m->mu);
  for (int i = 0; i < m->nstatuses; i++) {
    const version_status *s = &m->statuses[i];
    srv_buf_printf(b,
                   "weft_serve_model_version_available{model=\"%s\","
                   "version=\"%" PRId64 "\"} %d\n",
                   m->name, s->number, s->state == ST_AVAILABLE);
    srv_buf_printf(b,
                   "weft_serve_model_version_load_failed{model=\"%s\","
                   "version=\"%" PRId64 "\"} %d\n",
                   m->name, s->number, s->code != WF_OK);
  }
  srv_version *v = m->current;
  if (v)
    atomic_fetch_add(&v->refs, 1);
  pthread_mutex_unlock(&m->mu);
  if (!v)
    return;
  pthread_mutex_lock(&v->mu);
  for (int i = 0; i < v->nsigs; i++) {
    srv_buf_printf(
        b,
        "weft_serve_queue_depth_requests{model=\"%s\",version=\"%s\","
        "signature=\"%s\"} %d\n",
        m->name, v->label, v->sigs[i].name, v->sigs[i].queued_tasks);
    srv_buf_printf(b,
                   "weft_serve_queue_depth_rows{model=\"%s\",version=\"%s\","
                   "signature=\"%s\"} %" PRId64 "\n",
                   m->name, v->label, v->sigs[i].name, v->sigs[i].queued_rows);
  }
  pthread_mutex_unlock(&v->mu);
  srv_version_release(v);
}

int64_t srv_version_number(const srv_version *v) { return v->number; }
const char *srv_version_label(const srv_version *v) { return v->label; }
int srv_version_num_signatures(const srv_version *v) { return v->nsigs; }
const char *srv_version_signature_name(const srv_version *v, int i) {
  return v->sigs[i].name;
}
const srv_sig_desc *srv_version_signature(const srv_version *v, int i) {
  return &v->sigs[i].desc;
}

int srv_version_find_signature(const srv_version *v, const char *name,
                               wf_status *st) {
  if (!name || !*name) {
    if (v->nsigs == 1)
      return 0;
    name = "serving_default";
  }
  for (int i = 0; i < v->nsigs; i++)
    if (!strcmp(v->sigs[i].name, name))
      return i;
  srv_buf b = {0};
  for (int i = 0; i < v->nsigs; i++)
    srv_buf_printf(&b, "%s'%s'", i ? ", " : "", v->sigs[i].name);
  wf_status_set(st, WF_NOT_FOUND,
                "model '%s' version %s has no signature '%s' (it has %s)",
                v->model->name, v->label, name, b.p ? b.p : "none");
  srv_buf_free(&b);
  return -1;
}
