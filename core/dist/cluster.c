/* core/dist/cluster.c — a runtime as a task of a job: joining through the
 * transport a plugin provides, splitting a working graph between tasks
 * (the client ships each task its share once, as a graph file), the
 * client's side of a step that spans tasks, and the _Task* ops that carry
 * tensors between tasks. The worker's serving loop is core/dist/worker.c.
 *
 * What crosses per step: one RUN message to each task the executor uses,
 * the tensors on its cross-task edges (one message each, keyed by the
 * step's id and the edge's slot), and one answer from each task. */
#include <config.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/alloc.h"
#include "dist/cluster_internal.h"
#include "graph/graph_internal.h"
#include "base/log.h"
#include "exec/kernel.h"
#include "base/status_internal.h"
#include "graph/tensor_internal.h"
#include <weft/cluster.h>

#define DEFAULT_HEARTBEAT_MS 10000

struct wf__cluster {
  wf_runtime *rt;
  const wf__transport *t; /* NULL: a job of one without a transport */
  void *tp;
  int32_t task, size;
  int64_t heartbeat_ms;
  _Atomic uint64_t *control_seq; /* per task: the next control number */
  _Atomic uint64_t next_id;      /* step and executor ids (task 0) */
};

static pthread_mutex_t join_mu = PTHREAD_MUTEX_INITIALIZER;


/* ---- messages ---------------------------------------------------------------- */

static void msg_put(wf__msg *m, const void *p, size_t n) {
  if (m->bad)
    return;
  if (m->len + n > m->cap) {
    size_t cap = m->cap ? m->cap : 256;
    while (cap < m->len + n)
      cap *= 2;
    unsigned char *grown = wf__realloc(m->data, cap);
    if (!grown) {
      m->bad = 1;
      return;
    }
    m->data = grown;
    m->cap = cap;
  }
  if (n)
    memcpy(m->data + m->len, p, n);
  m->len += n;
}

void wf__msg_free(wf__msg *m) {
  wf__free(m->data);
  memset(m, 0, sizeof *m);
}

void wf__msg_u8(wf__msg *m, uint8_t v) { msg_put(m, &v, 1); }

void wf__msg_u32(wf__msg *m, uint32_t v) {
  unsigned char b[4];
  for (int i = 0; i < 4; i++)
    b[i] = (unsigned char)(v >> (8 * i));
  msg_put(m, b, 4);
}

void wf__msg_u64(wf__msg *m, uint64_t v) {
  unsigned char b[8];
  for (int i = 0; i < 8; i++)
    b[i] = (unsigned char)(v >> (8 * i));
  msg_put(m, b, 8);
}

void wf__msg_bytes(wf__msg *m, const void *p, size_t n) {
  wf__msg_u64(m, (uint64_t)n);
  msg_put(m, p, n);
}

void wf__msg_str(wf__msg *m, const char *s) {
  wf__msg_bytes(m, s ? s : "", strlen(s ? s : "") + 1);
}

static const unsigned char *msg_take(wf__msg *m, size_t n) {
  if (m->bad || n > m->len - m->pos) {
    m->bad = 1;
    return NULL;
  }
  const unsigned char *p = m->data + m->pos;
  m->pos += n;
  return p;
}

uint8_t wf__msg_get_u8(wf__msg *m) {
  const unsigned char *p = msg_take(m, 1);
  return p ? p[0] : 0;
}

uint32_t wf__msg_get_u32(wf__msg *m) {
  const unsigned char *p = msg_take(m, 4);
  uint32_t v = 0;
  for (int i = 0; p && i < 4; i++)
    v |= (uint32_t)p[i] << (8 * i);
  return v;
}

uint64_t wf__msg_get_u64(wf__msg *m) {
  const unsigned char *p = msg_take(m, 8);
  uint64_t v = 0;
  for (int i = 0; p && i < 8; i++)
    v |= (uint64_t)p[i] << (8 * i);
  return v;
}

const void *wf__msg_get_bytes(wf__msg *m, size_t *n) {
  uint64_t len = wf__msg_get_u64(m);
  const unsigned char *p = msg_take(m, (size_t)len);
  *n = p ? (size_t)len : 0;
  return p;
}

const char *wf__msg_get_str(wf__msg *m) {
  size_t n;
  const char *s = wf__msg_get_bytes(m, &n);
  if (!s || n == 0 || s[n - 1] != '\0') {
    m->bad = 1;
    return "";
  }
  return s;
}

/* ---- joining ------------------------------------------------------------------ */

static const wf__transport *choose_transport(const wf_runtime *rt,
                                             int *none, wf_status *st) {
  const wf__strlist *want = &rt->cfg->cluster_transport;
  *none = 0;
  if (want->n == 0)
    return rt->num_transports > 0 ? &rt->transports[0] : NULL;
  for (int i = 0; i < want->n; i++) {
    if (strcmp(want->items[i], "none") == 0) {
      *none = 1;
      return NULL;
    }
    for (int j = 0; j < rt->num_transports; j++)
      if (strcmp(rt->transports[j].def.name, want->items[i]) == 0)
        return &rt->transports[j];
  }
  char have[256] = "";
  size_t used = 0;
  for (int j = 0; j < rt->num_transports && used < sizeof have; j++) {
    int w = snprintf(have + used, sizeof have - used, "%s%s", j ? ", " : "",
                     rt->transports[j].def.name);
    if (w < 0)
      break;
    used += (size_t)w;
  }
  wf_status_set(st, WF_NOT_FOUND,
                "[cluster] transport = %s: no loaded plugin provides it "
                "(loaded transports: %s)",
                want->items[0], used ? have : "none");
  return NULL;
}

wf__cluster *wf__cluster_get(wf_runtime *rt, wf_status *st) {
  wf__cluster *c = atomic_load(&rt->cluster);
  if (c)
    return c;
  pthread_mutex_lock(&join_mu);
  c = atomic_load(&rt->cluster);
  if (c)
    goto out;
  int none;
  wf_status cst = {WF_OK, NULL};
  const wf__transport *t = choose_transport(rt, &none, &cst);
  if (!t && cst.code) {
    wf_status_set(st, cst.code, "%s", cst.message);
    wf_status_reset(&cst);
    goto out;
  }
  c = wf__calloc(1, sizeof *c);
  if (!c) {
    wf_status_set(st, WF_RESOURCE_EXHAUSTED, "cluster: out of memory");
    goto out;
  }
  c->rt = rt;
  c->task = 0;
  c->size = 1;
  c->heartbeat_ms = rt->cfg->cluster_heartbeat_timeout_ms > 0
                        ? rt->cfg->cluster_heartbeat_timeout_ms
                        : DEFAULT_HEARTBEAT_MS;
  atomic_init(&c->next_id, 1);
  if (t) {
    if (t->def.open(t->plugin_state, &c->tp, &cst)) {
      wf_status_set(st, cst.code ? cst.code : WF_UNAVAILABLE,
                    "transport '%s' (plugin '%s'): joining the job failed: "
                    "%s",
                    t->def.name, t->plugin,
                    cst.message ? cst.message : "no reason given");
      wf_status_reset(&cst);
      wf__free(c);
      c = NULL;
      goto out;
    }
    c->t = t;
    c->task = t->def.rank(c->tp);
    c->size = t->def.size(c->tp);
  }
  c->control_seq = wf__calloc((size_t)c->size, sizeof *c->control_seq);
  if (!c->control_seq) {
    if (c->t)
      c->t->def.close(c->tp);
    wf__free(c);
    c = NULL;
    wf_status_set(st, WF_RESOURCE_EXHAUSTED, "cluster: out of memory");
    goto out;
  }
  atomic_store(&rt->task, c->task);
  atomic_store(&rt->cluster, c);
out:
  pthread_mutex_unlock(&join_mu);
  return c;
}

int32_t wf__cluster_task(const wf__cluster *c) { return c->task; }
int32_t wf__cluster_size(const wf__cluster *c) { return c->size; }
int64_t wf__cluster_heartbeat_ms(const wf__cluster *c) {
  return c->heartbeat_ms;
}
const wf__transport *wf__cluster_transport(const wf__cluster *c) {
  return c->t;
}
void *wf__cluster_handle(const wf__cluster *c) { return c->tp; }

void wf__cluster_free(wf_runtime *rt) {
  wf__cluster *c = atomic_exchange(&rt->cluster, NULL);
  if (!c)
    return;
  if (c->t && c->task == 0) {
    wf__msg m = {0};
    wf__msg_u8(&m, WF__MSG_SHUTDOWN);
    for (int32_t k = 1; k < c->size; k++) {
      wf_status st = {WF_OK, NULL};
      if (wf__cluster_send_control(c, k, &m, &st))
        wf__log(WF_LOG_WARNING, "cluster",
                "telling task %d the job is over failed: %s", (int)k,
                wf_status_message(&st));
      wf_status_reset(&st);
    }
    wf__msg_free(&m);
  }
  if (c->t)
    c->t->def.close(c->tp);
  wf__free((void *)c->control_seq);
  wf__free(c);
}

int wf_runtime_cluster(wf_runtime *rt, int32_t *task, int32_t *size,
                       wf_status *st) {
  wf__cluster *c = wf__cluster_get(rt, st);
  if (!c)
    return wf_status_code(st);
  if (task)
    *task = c->task;
  if (size)
    *size = c->size;
  return WF_OK;
}

/* ---- sending and waiting --------------------------------------------------------- */

int wf__cluster_send(wf__cluster *c, int32_t task, uint64_t hi, uint64_t lo,
                     const wf__msg *m, wf_status *st) {
  if (m->bad)
    return wf_status_set(st, WF_RESOURCE_EXHAUSTED,
                         "cluster: out of memory building a message");
  wf_status tst = {WF_OK, NULL};
  if (c->t->def.send(c->tp, task, hi, lo, m->data, m->len, &tst)) {
    wf_status_set(st, tst.code ? tst.code : WF_UNAVAILABLE,
                  "sending to task %d: %s", (int)task,
                  tst.message ? tst.message : "the transport failed");
    wf_status_reset(&tst);
    return wf_status_code(st);
  }
  return WF_OK;
}

int wf__cluster_send_control(wf__cluster *c, int32_t task, const wf__msg *m,
                             wf_status *st) {
  uint64_t seq = atomic_fetch_add(&c->control_seq[task], 1);
  return wf__cluster_send(c, task, WF__KEY_CONTROL, seq, m, st);
}

typedef struct waiter {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int done;
  int code;
  char why[256];
  wf__msg *m;
} waiter;

static void waiter_done(void *arg, int32_t code, const char *why,
                        const void *data, size_t n) {
  waiter *w = arg;
  pthread_mutex_lock(&w->mu);
  w->code = code;
  if (code) {
    snprintf(w->why, sizeof w->why, "%s", why ? why : "failed");
  } else {
    w->m->len = w->m->pos = 0;
    msg_put(w->m, data, n);
    if (w->m->bad)
      w->code = WF_RESOURCE_EXHAUSTED;
  }
  w->done = 1;
  pthread_cond_signal(&w->cv);
  pthread_mutex_unlock(&w->mu);
}

int wf__cluster_wait(wf__cluster *c, int32_t task, uint64_t hi, uint64_t lo,
                     int32_t watch_task, wf__msg *m, wf_status *st) {
  waiter w = {.mu = PTHREAD_MUTEX_INITIALIZER,
              .cv = PTHREAD_COND_INITIALIZER,
              .m = m};
  wf_status tst = {WF_OK, NULL};
  memset(m, 0, sizeof *m);
  if (c->t->def.recv(c->tp, task, hi, lo, waiter_done, &w, &tst)) {
    wf_status_set(st, tst.code ? tst.code : WF_UNAVAILABLE,
                  "waiting for task %d: %s", (int)task,
                  tst.message ? tst.message : "the transport failed");
    wf_status_reset(&tst);
    return wf_status_code(st);
  }
  int gave_up = 0;
  pthread_mutex_lock(&w.mu);
  while (!w.done) {
    struct timespec when;
    clock_gettime(CLOCK_REALTIME, &when);
    when.tv_nsec += 100 * 1000000L;
    if (when.tv_nsec >= 1000000000L) {
      when.tv_sec++;
      when.tv_nsec -= 1000000000L;
    }
    pthread_cond_timedwait(&w.cv, &w.mu, &when);
    if (w.done || gave_up || watch_task < 0)
      continue;
    int64_t silent = c->t->def.silent_ms(c->tp, watch_task);
    if (silent > c->heartbeat_ms) {
      /* Complete our own receive (it is the only one under this key),
       * then wait for that completion so w is not used afterwards. */
      pthread_mutex_unlock(&w.mu);
      c->t->def.cancel(c->tp, hi, WF_UNAVAILABLE, "task went silent");
      pthread_mutex_lock(&w.mu);
      gave_up = 1;
      snprintf(w.why, sizeof w.why,
               "task %d has been silent for %.1f s (heartbeat timeout %.1f "
               "s): it died or hangs",
               (int)watch_task, (double)silent / 1000.0,
               (double)c->heartbeat_ms / 1000.0);
    }
  }
  pthread_mutex_unlock(&w.mu);
  if (gave_up)
    return wf_status_set(st, WF_UNAVAILABLE, "%s", w.why);
  if (w.code)
    return wf_status_set(st, (wf_code)w.code, "waiting for task %d: %s",
                         (int)task, w.why);
  return WF_OK;
}

/* ---- splitting between tasks ---------------------------------------------------- */

typedef struct xfer {
  wf_output src;
  int task; /* destination */
  wf_node *recv;
} xfer;

typedef struct share {
  int32_t task;
  wf_node **targets;
  int ntargets;
} share;

struct wf__dist {
  wf__cluster *c;
  uint64_t id; /* the executor's id in the job */
  share *shares;
  int nshares;
};

typedef struct splitter {
  wf_runtime *rt;
  wf__cluster *c;
  wf__work *w;
  int *task_of; /* per node id, grows with the graph */
  int cap;
  xfer *xfers;
  int nxfers;
  int slots;
  wf__dist *d;
} splitter;

static int set_task(splitter *s, wf_node *n, int task, wf_status *st) {
  if (n->id >= s->cap) {
    int cap = s->cap * 2 > n->id + 1 ? s->cap * 2 : n->id + 1;
    int *grown = wf__realloc(s->task_of, (size_t)cap * sizeof *grown);
    if (!grown)
      return wf_status_set(st, WF_RESOURCE_EXHAUSTED,
                           "splitting between tasks: out of memory");
    for (int i = s->cap; i < cap; i++)
      grown[i] = -1;
    s->task_of = grown;
    s->cap = cap;
  }
  s->task_of[n->id] = task;
  return 0;
}

static int request_task(wf_node *n, int task, wf_status *st) {
  char req[64];
  snprintf(req, sizeof req, "/task:%d", task);
  char *dup = wf__strdup(req);
  if (!dup)
    return wf_status_set(st, WF_RESOURCE_EXHAUSTED,
                         "splitting between tasks: out of memory");
  wf__free(n->device);
  n->device = dup;
  return 0;
}

static share *share_of(splitter *s, int task, wf_status *st) {
  for (int i = 0; i < s->d->nshares; i++)
    if (s->d->shares[i].task == task)
      return &s->d->shares[i];
  share *grown = wf__realloc(s->d->shares,
                             (size_t)(s->d->nshares + 1) * sizeof *grown);
  if (!grown) {
    wf_status_set(st, WF_RESOURCE_EXHAUSTED,
                  "splitting between tasks: out of memory");
    return NULL;
  }
  s->d->shares = grown;
  share *sh = &grown[s->d->nshares++];
  memset(sh, 0, sizeof *sh);
  sh->task = task;
  return sh;
}

static int add_to_list(wf_node ***list, int *n, wf_node *node, wf_status *st) {
  wf_node **grown = wf__realloc(*list, (size_t)(*n + 1) * sizeof *grown);
  if (!grown)
    return wf_status_set(st, WF_RESOURCE_EXHAUSTED,
                         "splitting between tasks: out of memory");
  *list = grown;
  grown[(*n)++] = node;
  return 0;
}

/* A send on the task that makes node (its target there) or on this one. */
static int add_send_target(splitter *s, wf_node *send, int task,
                           wf_status *st) {
  if (task == s->c->task) {
    int n = s->w->sig.ntargets;
    if (add_to_list(&s->w->targets, &n, send, st))
      return -1;
    s->w->sig.ntargets = n;
    s->w->sig.targets = s->w->targets;
    return 0;
  }
  share *sh = share_of(s, task, st);
  return sh ? add_to_list(&sh->targets, &sh->ntargets, send, st) : -1;
}

static wf_attr_item int_item(const char *name, int64_t v) {
  return (wf_attr_item){name, {.type = WF_ATTR_INT, .count = 1, .u.i = v}};
}

static wf_attr_item str_item(const char *name, const char *v) {
  return (wf_attr_item){name, {.type = WF_ATTR_STRING, .count = 1, .u.s = v}};
}

/* The _TaskRecv on task dst of src (with its _TaskSend, made once). */
static wf_node *recv_for(splitter *s, wf_output src, int dst, wf_status *st) {
  for (int i = 0; i < s->nxfers; i++)
    if (s->xfers[i].src.node == src.node &&
        s->xfers[i].src.index == src.index && s->xfers[i].task == dst)
      return s->xfers[i].recv;
  wf_graph *g = s->w->g;
  int from = s->task_of[src.node->id];
  if (src.node->output_dtypes[src.index] == WF_RESOURCE) {
    wf_status_set(st, WF_INVALID_ARGUMENT,
                  "node '%s' (task %d) hands a variable handle to task %d: "
                  "nodes that use a variable must run on its task",
                  src.node->name, from, dst);
    return NULL;
  }
  char key[320];
  snprintf(key, sizeof key, "%s:%d->/task:%d", src.node->name, src.index, dst);
  int slot = s->slots++;
  wf_attr_item sa[3] = {int_item("slot", slot), int_item("peer", dst),
                        str_item("key", key)};
  wf_node *send = wf__node_add_flat(g, "_TaskSend", NULL, &src, 1, sa, 3, st);
  if (!send || set_task(s, send, from, st) || request_task(send, from, st) ||
      add_send_target(s, send, from, st))
    return NULL;
  wf_attr_item ra[5] = {
      {"dtype", {.type = WF_ATTR_DTYPE, .count = 1,
                 .u.dtype = src.node->output_dtypes[src.index]}},
      {"shape", {.type = WF_ATTR_SHAPE, .count = 1,
                 .u.shape = src.node->output_shapes[src.index]}},
      int_item("slot", slot), int_item("peer", from), str_item("key", key)};
  wf_node *recv = wf__node_add_flat(g, "_TaskRecv", NULL, NULL, 0, ra, 5, st);
  if (!recv || set_task(s, recv, dst, st) || request_task(recv, dst, st))
    return NULL;
  xfer *grown = wf__realloc(s->xfers, (size_t)(s->nxfers + 1) * sizeof *grown);
  if (!grown) {
    wf_status_set(st, WF_RESOURCE_EXHAUSTED,
                  "splitting between tasks: out of memory");
    return NULL;
  }
  s->xfers = grown;
  s->xfers[s->nxfers++] = (xfer){src, dst, recv};
  return recv;
}

static int carry_control(splitter *s, wf_node *from, wf_node *to,
                         wf_status *st) {
  wf_graph *g = s->w->g;
  int tf = s->task_of[from->id], tt = s->task_of[to->id];
  char key[320];
  snprintf(key, sizeof key, "^%s->/task:%d", from->name, tt);
  int slot = s->slots++;
  wf_attr_item a[3] = {int_item("slot", slot), int_item("peer", tt),
                       str_item("key", key)};
  wf_node_desc *d = wf_node_desc_new(g, "_TaskSendControl", NULL);
  for (int i = 0; i < 3; i++)
    wf_node_desc_set_attr(d, a[i].name, &a[i].value);
  wf_node_desc_add_control_input(d, from);
  wf_node *send = wf_node_desc_finish(d, st);
  if (!send || set_task(s, send, tf, st) || request_task(send, tf, st) ||
      add_send_target(s, send, tf, st))
    return -1;
  a[1] = int_item("peer", tf);
  wf_node *recv =
      wf__node_add_flat(g, "_TaskRecvControl", NULL, NULL, 0, a, 3, st);
  if (!recv || set_task(s, recv, tt, st) || request_task(recv, tt, st))
    return -1;
  wf__graph_remove_control_edge(from, to);
  return wf_graph_add_control_edge(g, recv, to, st);
}

/* The task of every kept node: its request's, else that of the variable it
 * uses, else this task. */
static int assign_tasks(splitter *s, const unsigned char *keep, int n0,
                        int *remote, wf_status *st) {
  wf_graph *g = s->w->g;
  *remote = 0;
  for (int pass = 0; pass < 2; pass++) {
    for (int id = 0; id < n0; id++) {
      wf_node *nd = g->nodes[id];
      if (!keep[id])
        continue;
      const char *rest;
      int t = wf__device_task(nd->device, &rest);
      if (t == -2)
        return wf_status_set(st, WF_INVALID_ARGUMENT,
                             "node '%s': device '%s' is not "
                             "\"/task:K\" or \"/task:K/DEVICE\"",
                             nd->name, nd->device);
      if (t < 0)
        for (int i = 0; i < nd->num_inputs && t < 0; i++) {
          wf_output in = nd->inputs[i];
          if (in.node->output_dtypes[in.index] == WF_RESOURCE &&
              in.node->id < s->cap && s->task_of[in.node->id] >= 0)
            t = s->task_of[in.node->id];
        }
      if (t < 0)
        t = pass == 0 ? -1 : s->c->task;
      if (t >= s->c->size)
        return wf_status_set(
            st, WF_INVALID_ARGUMENT,
            "node '%s' asks for device '%s', but the job has %d task%s%s",
            nd->name, nd->device, (int)s->c->size, s->c->size == 1 ? "" : "s",
            s->c->t ? ""
                    : " (no transport: load the MPI transport plugin and "
                      "start the program with mpirun)");
      if (t >= 0 && set_task(s, nd, t, st))
        return -1;
      if (pass == 1 && t != s->c->task)
        *remote = 1;
    }
  }
  return 0;
}

/* Nodes reachable backwards from targets, in an order where inputs come
 * first. */
static int collect_share(const wf_graph *g, wf_node **targets, int ntargets,
                         const wf_node ***out, int *nout, wf_status *st) {
  int n = g->num_nodes, top = 0, count = 0;
  unsigned char *state = wf__calloc((size_t)n + 1, 1); /* 1 open, 2 done */
  const wf_node **order = wf__calloc((size_t)n + 1, sizeof *order);
  struct frame {
    const wf_node *node;
    int next;
  } *stack = wf__calloc((size_t)n + 1, sizeof *stack);
  if (!state || !order || !stack) {
    wf__free(state);
    wf__free(order);
    wf__free(stack);
    return wf_status_set(st, WF_RESOURCE_EXHAUSTED,
                         "splitting between tasks: out of memory");
  }
  for (int i = 0; i < ntargets; i++) {
    if (state[targets[i]->id])
      continue;
    state[targets[i]->id] = 1;
    stack[top++] = (struct frame){targets[i], 0};
    while (top > 0) {
      struct frame *f = &stack[top - 1];
      const wf_node *nd = f->node;
      int all = nd->num_inputs + nd->num_control_inputs;
      if (f->next < all) {
        const wf_node *src = f->next < nd->num_inputs
                                 ? nd->inputs[f->next].node
                                 : nd->control_inputs[f->next - nd->num_inputs];
        f->next++;
        if (!state[src->id]) {
          state[src->id] = 1;
          stack[top++] = (struct frame){src, 0};
        }
        continue;
      }
      state[nd->id] = 2;
      order[count++] = nd;
      top--;
    }
  }
  wf__free(state);
  wf__free(stack);
  *out = order;
  *nout = count;
  return 0;
}

/* Ships each share to its task and waits until every task built it. */
static int register_shares(splitter *s, wf_status *st) {
  wf__dist *d = s->d;
  wf__cluster *c = s->c;
  int rc = 0;
  int sent = 0;
  for (int i = 0; i < d->nshares && !rc; i++) {
    share *sh = &d->shares[i];
    const wf_node **nodes = NULL;
    int nn = 0;
    void *buf = NULL;
    size_t len = 0;
    if (collect_share(s->w->g, sh->targets, sh->ntargets, &nodes, &nn, st))
      return -1;
    for (int k = 0; k < nn && !rc; k++)
      if (nodes[k]->id >= s->cap || s->task_of[nodes[k]->id] != sh->task)
        rc = wf_status_set(st, WF_INTERNAL,
                           "splitting between tasks: node '%s' is needed by "
                           "task %d but placed on task %d",
                           nodes[k]->name, sh->task,
                           nodes[k]->id < s->cap ? s->task_of[nodes[k]->id]
                                                 : -1);
    if (!rc)
      rc = wf__graph_nodes_to_buffer(s->w->g, nodes, nn, &buf, &len, st);
    wf__free(nodes);
    if (rc)
      break;
    wf__msg m = {0};
    wf__msg_u8(&m, WF__MSG_REGISTER);
    wf__msg_u64(&m, d->id);
    wf__msg_u32(&m, (uint32_t)sh->ntargets);
    for (int k = 0; k < sh->ntargets; k++)
      wf__msg_str(&m, sh->targets[k]->name);
    wf__msg_bytes(&m, buf, len);
    free(buf);
    rc = wf__cluster_send_control(c, sh->task, &m, st);
    wf__msg_free(&m);
    if (!rc)
      sent++;
  }
  /* Collect every answer of what was sent, keeping the first error. */
  for (int i = 0; i < sent; i++) {
    wf__msg m;
    wf_status wst = {WF_OK, NULL};
    int code = wf__cluster_wait(c, d->shares[i].task,
                                WF__KEY_REGISTERED(d->id),
                                (uint64_t)d->shares[i].task,
                                d->shares[i].task, &m, &wst);
    if (!code) {
      code = (int)wf__msg_get_u32(&m);
      const char *why = wf__msg_get_str(&m);
      if (code && !rc)
        rc = wf_status_set(st, (wf_code)code, "task %d: %s",
                           (int)d->shares[i].task, why);
    } else if (!rc) {
      rc = wf_status_set(st, (wf_code)code, "%s", wf_status_message(&wst));
    }
    wf_status_reset(&wst);
    wf__msg_free(&m);
  }
  return rc ? -1 : 0;
}

int wf__cluster_split(wf_runtime *rt, wf__work *w, const unsigned char *keep,
                      wf__dist **out, wf_status *st) {
  *out = NULL;
  wf_graph *g = w->g;
  int n0 = g->num_nodes;
  /* Without any request for a task there is nothing to split (and no need
   * to join a job). */
  int any = 0;
  for (int id = 0; id < n0 && !any; id++) {
    const char *rest;
    any = keep[id] && wf__device_task(g->nodes[id]->device, &rest) != -1;
  }
  if (!any)
    return 0;
  wf__cluster *c = wf__cluster_get(rt, st);
  if (!c)
    return -1;
  splitter s = {rt, c, w, NULL, 0, NULL, 0, 0, NULL};
  int rc = 0, remote = 0;
  s.cap = n0 + 1;
  s.task_of = wf__calloc((size_t)s.cap, sizeof *s.task_of);
  s.d = wf__calloc(1, sizeof *s.d);
  if (!s.task_of || !s.d) {
    rc = wf_status_set(st, WF_RESOURCE_EXHAUSTED,
                       "splitting between tasks: out of memory");
    goto out;
  }
  for (int i = 0; i < s.cap; i++)
    s.task_of[i] = -1;
  if (assign_tasks(&s, keep, n0, &remote, st)) {
    rc = -1;
    goto out;
  }
  if (!remote)
    goto out;
  if (c->task != 0) {
    rc = wf_status_set(st, WF_FAILED_PRECONDITION,
                       "this runtime is task %d: only task 0 runs graphs "
                       "whose nodes ask for other tasks",
                       (int)c->task);
    goto out;
  }
  s.d->c = c;
  s.d->id = atomic_fetch_add(&c->next_id, 1);
  /* Edges that cross tasks. */
  for (int id = 0; id < n0 && !rc; id++) {
    wf_node *nd = g->nodes[id];
    if (!keep[id])
      continue;
    int dn = s.task_of[id];
    for (int i = 0; i < nd->num_inputs && !rc; i++) {
      wf_output src = nd->inputs[i];
      int ds = src.node->id < s.cap ? s.task_of[src.node->id] : -1;
      /* Fed values arrive at the client. */
      if (ds < 0 && (src.node->op->def.flags & WF_OP_SOURCE_FED) &&
          dn != c->task) {
        ds = c->task;
        if (set_task(&s, src.node, ds, st)) {
          rc = -1;
          break;
        }
      }
      if (ds < 0 || ds == dn)
        continue;
      wf_node *recv = recv_for(&s, src, dn, st);
      rc = recv ? wf__node_set_input(nd, i, (wf_output){recv, 0}, st) : -1;
    }
    int nc = nd->num_control_inputs;
    for (int k = 0; k < nc && !rc;) {
      wf_node *from = nd->control_inputs[k];
      int dc = from->id < s.cap ? s.task_of[from->id] : -1;
      if (dc >= 0 && dc != dn) {
        rc = carry_control(&s, from, nd, st); /* rewrites the list */
        nc = nd->num_control_inputs;
        k = 0;
        continue;
      }
      k++;
    }
  }
  /* Fetches made elsewhere come back here. */
  for (int f = 0; f < w->sig.nfetches && !rc; f++) {
    wf_output o = w->fetches[f];
    int t = o.node->id < s.cap ? s.task_of[o.node->id] : -1;
    if (t < 0 || t == c->task)
      continue;
    wf_node *recv = recv_for(&s, o, c->task, st);
    if (!recv)
      rc = -1;
    else
      w->fetches[f] = (wf_output){recv, 0};
  }
  /* Targets elsewhere become that task's. */
  if (!rc) {
    int kept = 0;
    for (int i = 0; i < w->sig.ntargets && !rc; i++) {
      wf_node *t = w->targets[i];
      int task = t->id < s.cap ? s.task_of[t->id] : c->task;
      if (task < 0 || task == c->task) {
        w->targets[kept++] = t;
        continue;
      }
      share *sh = share_of(&s, task, st);
      rc = sh ? add_to_list(&sh->targets, &sh->ntargets, t, st) : -1;
    }
    if (!rc) {
      w->sig.ntargets = kept;
      w->sig.targets = w->targets;
      w->sig.fetches = w->fetches;
    }
  }
  if (!rc)
    rc = register_shares(&s, st);
  if (!rc) {
    *out = s.d;
    s.d = NULL;
  }
out:
  wf__free(s.task_of);
  wf__free(s.xfers);
  if (s.d) {
    for (int i = 0; i < s.d->nshares; i++)
      wf__free(s.d->shares[i].targets);
    wf__free(s.d->shares);
    wf__free(s.d);
  }
  return rc ? -1 : 0;
}

void wf__dist_free(wf__dist *d) {
  if (!d)
    return;
  wf__msg m = {0};
  wf__msg_u8(&m, WF__MSG_UNREGISTER);
  wf__msg_u64(&m, d->id);
  for (int i = 0; i < d->nshares; i++) {
    wf_status st = {WF_OK, NULL};
    /* The job may be over already (the runtime is being freed). */
    if (atomic_load(&d->c->rt->cluster) == d->c)
      (void)wf__cluster_send_control(d->c, d->shares[i].task, &m, &st);
    wf_status_reset(&st);
    wf__free(d->shares[i].targets);
  }
  wf__msg_free(&m);
  wf__free(d->shares);
  wf__free(d);
}

/* ---- a step across tasks ---------------------------------------------------------- */

typedef struct answer {
  int done;
  int code;
  char *message;
} answer;

typedef struct answer_arg answer_arg;

struct wf__dist_step {
  wf__dist *d;
  uint64_t uid;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  answer *answers;  /* per share */
  answer_arg *args; /* per share: the answers' callback arguments */
  int pending;     /* receives not completed */
  int failed;      /* some task reported an error: the step is aborted */
};

struct answer_arg {
  wf__dist_step *ds;
  int share;
};

static void on_answer(void *arg, int32_t code, const char *why,
                      const void *data, size_t n) {
  answer_arg *a = arg;
  wf__dist_step *ds = a->ds;
  int first_failure = 0;
  pthread_mutex_lock(&ds->mu);
  answer *an = &ds->answers[a->share];
  if (code) {
    an->code = code;
    an->message = wf__strdup(why ? why : "no answer");
  } else {
    wf__msg m = {(unsigned char *)data, n, n, 0, 0};
    an->code = (int)wf__msg_get_u32(&m);
    const char *msg = wf__msg_get_str(&m);
    if (m.bad) {
      an->code = WF_DATA_LOSS;
      msg = "a malformed answer";
    }
    an->message = an->code ? wf__strdup(msg) : NULL;
  }
  an->done = 1;
  /* CANCELLED answers follow another failure; only a task's own error
   * aborts the step. */
  if (an->code && an->code != WF_CANCELLED && !ds->failed) {
    ds->failed = 1;
    first_failure = 1;
  }
  ds->pending--;
  pthread_cond_broadcast(&ds->cv);
  pthread_mutex_unlock(&ds->mu);
  if (first_failure)
    wf__cluster_cancel_step(ds->d->c, ds->uid, WF_CANCELLED,
                            "the step failed on another task");
}

wf__dist_step *wf__dist_step_begin(wf__dist *d, uint64_t session, int64_t step,
                                   uint64_t *uid, wf_status *st) {
  wf__cluster *c = d->c;
  wf__dist_step *ds = wf__calloc(1, sizeof *ds);
  if (ds) {
    ds->answers = wf__calloc((size_t)d->nshares + 1, sizeof *ds->answers);
    ds->args = wf__calloc((size_t)d->nshares + 1, sizeof *ds->args);
  }
  if (!ds || !ds->answers || !ds->args) {
    if (ds) {
      wf__free(ds->answers);
      wf__free(ds->args);
    }
    wf__free(ds);
    wf_status_set(st, WF_RESOURCE_EXHAUSTED, "step: out of memory");
    return NULL;
  }
  ds->d = d;
  ds->uid = atomic_fetch_add(&c->next_id, 1);
  pthread_mutex_init(&ds->mu, NULL);
  pthread_cond_init(&ds->cv, NULL);
  *uid = ds->uid;
  int rc = 0;
  for (int i = 0; i < d->nshares; i++) {
    ds->args[i] = (answer_arg){ds, i};
    wf_status tst = {WF_OK, NULL};
    pthread_mutex_lock(&ds->mu);
    ds->pending++;
    pthread_mutex_unlock(&ds->mu);
    if (c->t->def.recv(c->tp, d->shares[i].task, WF__KEY_REPLY(ds->uid),
                       (uint64_t)d->shares[i].task, on_answer, &ds->args[i],
                       &tst)) {
      pthread_mutex_lock(&ds->mu);
      ds->pending--;
      ds->answers[i].done = 1;
      ds->answers[i].code = tst.code ? tst.code : WF_UNAVAILABLE;
      ds->answers[i].message = wf__strdup(
          tst.message ? tst.message : "the transport refused the receive");
      ds->failed = 1;
      pthread_mutex_unlock(&ds->mu);
      wf_status_reset(&tst);
      rc = -1;
      break;
    }
    wf__msg m = {0};
    wf__msg_u8(&m, WF__MSG_RUN);
    wf__msg_u64(&m, d->id);
    wf__msg_u64(&m, session);
    wf__msg_u64(&m, ds->uid);
    wf__msg_u64(&m, (uint64_t)step);
    int sr = wf__cluster_send_control(c, d->shares[i].task, &m, &tst);
    wf__msg_free(&m);
    if (sr) {
      wf__cluster_cancel_step(c, ds->uid, WF_CANCELLED,
                              "the step could not start on every task");
      pthread_mutex_lock(&ds->mu);
      ds->failed = 1;
      pthread_mutex_unlock(&ds->mu);
      wf_status_reset(&tst);
      rc = -1;
      break;
    }
  }
  if (rc) {
    /* Started tasks (and this one) learn of it through _step_end. */
    wf_status_set(st, WF_UNAVAILABLE,
                  "the step could not be started on every task");
  }
  return ds;
}

int wf__dist_step_end(wf__dist_step *ds, int code, wf_status *st) {
  wf__dist *d = ds->d;
  wf__cluster *c = d->c;
  int aborted = 0;
  pthread_mutex_lock(&ds->mu);
  while (ds->pending > 0) {
    if ((code || ds->failed) && !aborted) {
      /* Tell every task to give the step up, then keep waiting for their
       * answers (they come back cancelled). */
      aborted = 1;
      pthread_mutex_unlock(&ds->mu);
      wf__msg m = {0};
      wf__msg_u8(&m, WF__MSG_ABORT);
      wf__msg_u64(&m, ds->uid);
      for (int i = 0; i < d->nshares; i++) {
        wf_status tst = {WF_OK, NULL};
        if (!ds->answers[i].done)
          (void)wf__cluster_send_control(c, d->shares[i].task, &m, &tst);
        wf_status_reset(&tst);
      }
      wf__msg_free(&m);
      pthread_mutex_lock(&ds->mu);
      continue;
    }
    struct timespec when;
    clock_gettime(CLOCK_REALTIME, &when);
    when.tv_nsec += 100 * 1000000L;
    if (when.tv_nsec >= 1000000000L) {
      when.tv_sec++;
      when.tv_nsec -= 1000000000L;
    }
    pthread_cond_timedwait(&ds->cv, &ds->mu, &when);
    if (ds->pending == 0)
      break;
    /* A task that went silent will not answer: complete its receive. */
    for (int i = 0; i < d->nshares; i++) {
      if (ds->answers[i].done)
        continue;
      int64_t silent = c->t->def.silent_ms(c->tp, d->shares[i].task);
      if (silent > c->heartbeat_ms) {
        char why[200];
        snprintf(why, sizeof why,
                 "task %d has been silent for %.1f s (heartbeat timeout "
                 "%.1f s): it died or hangs",
                 (int)d->shares[i].task, (double)silent / 1000.0,
                 (double)c->heartbeat_ms / 1000.0);
        pthread_mutex_unlock(&ds->mu);
        c->t->def.cancel(c->tp, WF__KEY_REPLY(ds->uid), WF_UNAVAILABLE, why);
        pthread_mutex_lock(&ds->mu);
        break;
      }
    }
  }
  pthread_mutex_unlock(&ds->mu);
  /* A task's own error first; then the local one; then cancellations. */
  int result = code;
  const answer *worst = NULL;
  for (int i = 0; i < d->nshares; i++) {
    const answer *a = &ds->answers[i];
    if (a->code && a->code != WF_CANCELLED && !worst)
      worst = a;
  }
  for (int i = 0; i < d->nshares && !worst && !code; i++)
    if (ds->answers[i].code)
      worst = &ds->answers[i];
  if (worst && (!code || code == WF_CANCELLED)) {
    int task = d->shares[worst - ds->answers].task;
    result = wf_status_set(st, (wf_code)worst->code, "task %d: %s", task,
                           worst->message ? worst->message : "failed");
  }
  /* Whatever the local step left behind for this step is dropped. */
  if (result)
    wf__cluster_cancel_step(c, ds->uid, WF_CANCELLED, "the step failed");
  for (int i = 0; i < d->nshares; i++)
    wf__free(ds->answers[i].message);
  wf__free(ds->args);
  wf__free(ds->answers);
  pthread_mutex_destroy(&ds->mu);
  pthread_cond_destroy(&ds->cv);
  wf__free(ds);
  return result;
}

void wf__cluster_cancel_step(wf__cluster *c, uint64_t uid, int code,
                             const char *msg) {
  if (c && c->t)
    c->t->def.cancel(c->tp, WF__KEY_STEP(uid), code, msg);
}

int wf__cluster_watch(wf__cluster *c, const wf__dist *d, char *msg,
                      size_t len) {
  if (!c || !c->t)
    return 0;
  int n = d ? d->nshares : 1;
  for (int i = 0; i < n; i++) {
    int32_t task = d ? d->shares[i].task : 0;
    if (task == c->task)
      continue;
    int64_t silent = c->t->def.silent_ms(c->tp, task);
    if (silent > c->heartbeat_ms) {
      snprintf(msg, len,
               "task %d has been silent for %.1f s (heartbeat timeout %.1f "
               "s): it died or hangs",
               (int)task, (double)silent / 1000.0,
               (double)c->heartbeat_ms / 1000.0);
      return WF_UNAVAILABLE;
    }
  }
  return 0;
}

void wf__cluster_session_closed(wf_runtime *rt, uint64_t session) {
  wf__cluster *c = atomic_load(&rt->cluster);
  if (!c || !c->t || c->task != 0 || c->size < 2)
    return;
  wf__msg m = {0};
  wf__msg_u8(&m, WF__MSG_CLOSE_SESSION);
  wf__msg_u64(&m, session);
  for (int32_t k = 1; k < c->size; k++) {
    wf_status st = {WF_OK, NULL};
    (void)wf__cluster_send_control(c, k, &m, &st);
    wf_status_reset(&st);
  }
  wf__msg_free(&m);
}

/* ---- the _Task* ops ------------------------------------------------------------ */

static const wf_host *host;

static int64_t int_attr(const wf_kernel_ctx *ctx, const char *name) {
  const wf_attr_value *v = wf__node_attr(ctx->node, name);
  return v ? v->u.i : -1;
}

static wf__cluster *step_cluster(const wf_kernel_ctx *ctx, wf_status *st) {
  if (!ctx->step_ctx || !ctx->step_ctx->job_step ||
      !ctx->step_ctx->cluster || !ctx->step_ctx->cluster->t) {
    host->status_set(st, WF_FAILED_PRECONDITION,
                     "transfers between tasks run only in a step of a job");
    return NULL;
  }
  return ctx->step_ctx->cluster;
}

static int task_send_compute(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  (void)state;
  wf__cluster *c = step_cluster(ctx, st);
  if (!c)
    return WF_FAILED_PRECONDITION;
  int32_t peer = (int32_t)int_attr(ctx, "peer");
  int64_t slot = int_attr(ctx, "slot");
  wf__msg m = {0};
  if (ctx->num_inputs > 0) {
    const wf_tensor *t = ctx->inputs[0];
    if (t->dtype == WF_RESOURCE)
      return wf_status_set(st, WF_INVALID_ARGUMENT,
                           "a variable handle cannot go to task %d",
                           (int)peer);
    wf__msg_u32(&m, (uint32_t)t->dtype);
    wf__msg_u32(&m, (uint32_t)t->shape.rank);
    for (int i = 0; i < t->shape.rank; i++)
      wf__msg_u64(&m, (uint64_t)t->shape.dims[i]);
    wf__msg_bytes(&m, wf_tensor_data(t), wf_tensor_nbytes(t));
  }
  int rc = wf__cluster_send(c, peer, WF__KEY_STEP(ctx->step_ctx->job_step),
                            (uint64_t)slot, &m, st);
  wf__msg_free(&m);
  return rc;
}

static void task_recv_done(void *arg, int32_t code, const char *why,
                           const void *data, size_t n) {
  struct wf_kernel_ctx *ctx = arg;
  int64_t peer = int_attr(ctx, "peer");
  if (code) {
    wf__kernel_done(ctx, code, "receiving from task %d: %s", (int)peer,
                    why ? why : "failed");
    return;
  }
  if (ctx->num_outputs == 0) {
    wf__kernel_done(ctx, WF_OK, NULL);
    return;
  }
  wf__msg m = {(unsigned char *)data, n, n, 0, 0};
  wf_dtype dtype = (wf_dtype)wf__msg_get_u32(&m);
  wf_shape shape = {0};
  shape.rank = (int32_t)wf__msg_get_u32(&m);
  if (shape.rank < 0 || shape.rank > WF_MAX_RANK)
    m.bad = 1;
  for (int i = 0; !m.bad && i < shape.rank; i++)
    shape.dims[i] = (int64_t)wf__msg_get_u64(&m);
  size_t nbytes = 0;
  const void *bytes = m.bad ? NULL : wf__msg_get_bytes(&m, &nbytes);
  const wf_attr_value *want = wf__node_attr(ctx->node, "dtype");
  if (m.bad || !bytes) {
    wf__kernel_done(ctx, WF_DATA_LOSS,
                    "a malformed tensor message from task %d", (int)peer);
    return;
  }
  if (want && (wf_dtype)want->u.dtype != dtype) {
    wf__kernel_done(ctx, WF_INTERNAL,
                    "task %d sent a %s tensor where %s was expected",
                    (int)peer, wf_dtype_name(dtype),
                    wf_dtype_name(want->u.dtype));
    return;
  }
  wf_status st = {WF_OK, NULL};
  wf_tensor *t = wf__tensor_new_shape(dtype, &shape, &st);
  if (t && wf_tensor_nbytes(t) != nbytes) {
    size_t expected = wf_tensor_nbytes(t);
    wf_tensor_release(t);
    t = NULL;
    wf_status_set(&st, WF_DATA_LOSS,
                  "task %d sent %zu bytes for a tensor of %zu", (int)peer,
                  nbytes, expected);
  }
  if (t) {
    memcpy(wf_tensor_data(t), bytes, nbytes);
    if (wf__kernel_output_set(ctx, 0, t, &st)) {
      wf_tensor_release(t);
      t = NULL;
    } else {
      wf_tensor_release(t);
    }
  }
  if (st.code) {
    wf__kernel_done(ctx, st.code, "%s", st.message ? st.message : "");
    wf_status_reset(&st);
    return;
  }
  wf__kernel_done(ctx, WF_OK, NULL);
}

static int task_recv_compute(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  (void)state;
  wf__cluster *c = step_cluster(ctx, st);
  if (!c)
    return WF_FAILED_PRECONDITION;
  int32_t peer = (int32_t)int_attr(ctx, "peer");
  int64_t slot = int_attr(ctx, "slot");
  wf_status tst = {WF_OK, NULL};
  if (c->t->def.recv(c->tp, peer, WF__KEY_STEP(ctx->step_ctx->job_step),
                     (uint64_t)slot, task_recv_done, ctx, &tst)) {
    wf_status_set(st, tst.code ? tst.code : WF_UNAVAILABLE,
                  "receiving from task %d: %s", (int)peer,
                  tst.message ? tst.message : "the transport failed");
    wf_status_reset(&tst);
    return wf_status_code(st);
  }
  return 0;
}

static int task_recv_shape(wf_shape_ctx *ctx, wf_status *st) {
  (void)st;
  wf_attr_value v;
  if (host->shape_attr(ctx, "shape", &v) == 0)
    host->shape_set_output(ctx, 0, &v.u.shape);
  return 0;
}

#define TASK_ATTRS                                                             \
  {WF_STRUCT_INIT(wf_attr_def), .name = "slot", .type = WF_ATTR_INT,           \
   .doc = "the transfer's number within its executor"},                        \
      {WF_STRUCT_INIT(wf_attr_def), .name = "peer", .type = WF_ATTR_INT,       \
       .doc = "the other task"},                                               \
      {WF_STRUCT_INIT(wf_attr_def), .name = "key", .type = WF_ATTR_STRING,     \
       .doc = "\"tensor->/task:K\" moved, for messages"}

static const wf_arg_def send_in[] = {
    WF_ARG_T("input", "T", "(...) the tensor to send"), WF_ARG_END};
static const wf_arg_def recv_out[] = {
    WF_ARG_T("output", "dtype", "(...) the tensor received"), WF_ARG_END};
static const wf_attr_def send_attrs[] = {
    {WF_STRUCT_INIT(wf_attr_def), .name = "T", .type = WF_ATTR_DTYPE},
    TASK_ATTRS, WF_ATTR_END};
static const wf_attr_def recv_attrs[] = {
    {WF_STRUCT_INIT(wf_attr_def), .name = "dtype", .type = WF_ATTR_DTYPE},
    {WF_STRUCT_INIT(wf_attr_def), .name = "shape", .type = WF_ATTR_SHAPE,
     .has_default = 1,
     .default_value = {.type = WF_ATTR_SHAPE, .count = 1,
                       .u.shape = {.rank = WF_UNKNOWN_RANK}}},
    TASK_ATTRS, WF_ATTR_END};
static const wf_attr_def ctrl_attrs[] = {TASK_ATTRS, WF_ATTR_END};

static const wf_op_def task_send_op = {
    WF_STRUCT_INIT(wf_op_def), .name = "_TaskSend", .inputs = send_in,
    .attrs = send_attrs, .flags = WF_OP_STATEFUL,
    .doc = "Sends its input to the matching _TaskRecv on task `peer`."};
static const wf_op_def task_recv_op = {
    WF_STRUCT_INIT(wf_op_def), .name = "_TaskRecv", .outputs = recv_out,
    .attrs = recv_attrs, .flags = WF_OP_STATEFUL, .shape_fn = task_recv_shape,
    .doc = "Outputs what the matching _TaskSend on task `peer` sent in "
           "this step."};
static const wf_op_def task_send_ctrl_op = {
    WF_STRUCT_INIT(wf_op_def), .name = "_TaskSendControl",
    .attrs = ctrl_attrs, .flags = WF_OP_STATEFUL,
    .doc = "Signals task `peer`, once its control inputs ran."};
static const wf_op_def task_recv_ctrl_op = {
    WF_STRUCT_INIT(wf_op_def), .name = "_TaskRecvControl",
    .attrs = ctrl_attrs, .flags = WF_OP_STATEFUL,
    .doc = "Completes when the matching _TaskSendControl on task `peer` "
           "signals: a control edge between tasks."};

/* Transfers run on the CPU device of their task (whatever device
 * produces or consumes the tensor, the local partitioning moves it). */
#define TASK_KERNEL(var, opname, fn, fl)                                       \
  static const wf_kernel_def var = {                                           \
      WF_STRUCT_INIT(wf_kernel_def), .op = opname, .device_type = "cpu",       \
      .flags = fl, .label = "transport", .compute = fn}
TASK_KERNEL(task_send_kernel, "_TaskSend", task_send_compute,
            WF_KERNEL_CHEAP);
TASK_KERNEL(task_recv_kernel, "_TaskRecv", task_recv_compute,
            WF_KERNEL_CHEAP | WF_KERNEL_ASYNC);
TASK_KERNEL(task_send_ctrl_kernel, "_TaskSendControl", task_send_compute,
            WF_KERNEL_CHEAP);
TASK_KERNEL(task_recv_ctrl_kernel, "_TaskRecvControl", task_recv_compute,
            WF_KERNEL_CHEAP | WF_KERNEL_ASYNC);

#define NOT_DIFF(var, opname)                                                  \
  static const wf_gradient_def var = {WF_STRUCT_INIT(wf_gradient_def),         \
                                      .op = opname,                            \
                                      .flags = WF_GRAD_NOT_DIFFERENTIABLE}
NOT_DIFF(task_send_grad, "_TaskSend");
NOT_DIFF(task_recv_grad, "_TaskRecv");

static const wf_op_def *const ops[] = {&task_send_op, &task_recv_op,
                                       &task_send_ctrl_op, &task_recv_ctrl_op,
                                       NULL};
static const wf_kernel_def *const kernels[] = {
    &task_send_kernel, &task_recv_kernel, &task_send_ctrl_kernel,
    &task_recv_ctrl_kernel, NULL};
static const wf_gradient_def *const grads[] = {&task_send_grad,
                                               &task_recv_grad, NULL};

static int cluster_init(const wf_host *h, void **state, wf_status *st) {
  (void)st;
  host = h;
  *state = NULL;
  return 0;
}

static const wf_plugin_desc desc = {
    WF_STRUCT_INIT(wf_plugin_desc),
    .name = "core-cluster",
    .version = PACKAGE_VERSION,
    .license = "MIT",
    .description = "ops the core inserts where a graph crosses tasks of a "
                   "job: _TaskSend/_TaskRecv (and their control forms) over "
                   "the job's transport",
    .ops = ops,
    .kernels = kernels,
    .gradients = grads,
    .init = cluster_init,
};

const wf_plugin_desc *wf__cluster_ops(void) { return &desc; }

/* ---- what executors and sessions call (core/plugin/runtime_internal.h) --- */

const wf__job wf__cluster_job = {
    .split = wf__cluster_split,
    .dist_free = wf__dist_free,
    .step_begin = wf__dist_step_begin,
    .step_end = wf__dist_step_end,
    .cancel_step = wf__cluster_cancel_step,
    .watch = wf__cluster_watch,
    .session_closed = wf__cluster_session_closed,
    .leave = wf__cluster_free,
};
