/* core/base/threadpool.c — worker threads pinned through hwloc, and a FIFO task
 * queue under one mutex. Chunked ring storage keeps submission free of
 * allocation in the steady state. */
#include <config.h>

#include <hwloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "base/alloc.h"
#include "base/status_internal.h"
#include "base/threadpool.h"

typedef struct task {
  wf__task_fn *fn;
  void *arg;
} task;

/* hwloc_topology_init, without hwloc's x86 backend: on Linux the sysfs
 * backend finds the same cores, caches and NUMA nodes, and the x86 one
 * moves the calling thread onto every PU in turn to run cpuid there,
 * which on a busy machine waits for each PU (tens of milliseconds of a
 * short program's start). */
static int topology_init(hwloc_topology_t *t) {
  if (hwloc_topology_init(t) != 0)
    return -1;
#if HWLOC_API_VERSION >= 0x00020100
  hwloc_topology_set_components(*t, HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST,
                                "x86");
#endif
  return 0;
}

struct wf__pool {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  task *ring; /* capacity cap (power of two) */
  size_t cap, head, count;
  int stopping;
  int n;
  pthread_t *threads;
  hwloc_topology_t topo; /* NULL when not pinning */
  hwloc_bitmap_t only;   /* pin within these PUs; NULL: the whole machine */
};

typedef struct worker_arg {
  wf__pool *pool;
  int index;
} worker_arg;

static _Thread_local int current_worker = -1;

int wf__pool_current_worker(void) { return current_worker; }

/* This process's place among the processes a launcher started on this
 * host (Open MPI, MPICH's Hydra): *rank of *size; 0 of 1 when none did. */
static void local_share(int *rank, int *size) {
  static const char *const vars[][2] = {
      {"OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE"},
      {"MPI_LOCALRANKID", "MPI_LOCALNRANKS"}};
  *rank = 0;
  *size = 1;
  for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
    const char *r = getenv(vars[i][0]), *n = getenv(vars[i][1]);
    if (!r || !n)
      continue;
    int ri = atoi(r), ni = atoi(n);
    if (ni >= 1 && ri >= 0 && ri < ni) {
      *rank = ri;
      *size = ni;
    }
    return;
  }
}

static _Atomic(hwloc_topology_t) kept_topology;

int wf__num_cores(void) {
  static int cached;
  if (cached > 0)
    return cached;
  int lrank, lsize;
  local_share(&lrank, &lsize);
  hwloc_topology_t t;
  int n = 1;
  if (topology_init(&t) == 0) {
    if (hwloc_topology_load(t) == 0) {
      int c = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_CORE);
      if (c < 1)
        c = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_PU);
      if (c >= 1)
        n = c;
    }
    /* The first topology stays for the life of the process: hwloc loads
     * its plugin components (and the libraries behind them) while any
     * topology exists and unloads them with the last, so without it the
     * pools' and the plugins' topologies made next would load them all
     * again. */
    hwloc_topology_t none = NULL;
    if (!atomic_compare_exchange_strong(&kept_topology, &none, t))
      hwloc_topology_destroy(t);
  }
  /* Processes of one job on this host share its cores. */
  n = n / lsize > 0 ? n / lsize : 1;
  cached = n;
  return n;
}

/* Cores of the pool's set (all of the machine's when it has none). */
static int pool_cores(const wf__pool *p) {
  return p->only ? hwloc_get_nbobjs_inside_cpuset_by_type(p->topo, p->only,
                                                          HWLOC_OBJ_CORE)
                 : hwloc_get_nbobjs_by_type(p->topo, HWLOC_OBJ_CORE);
}

static void pin_self(wf__pool *p, int index) {
  if (!p->topo)
    return;
  int ncores = pool_cores(p);
  if (ncores < 1)
    return;
  int at = index % ncores;
  if (!p->only) {
    /* Several processes of a job on this host: each pins within its own
     * share of the cores, not all from core 0. */
    int lrank, lsize;
    local_share(&lrank, &lsize);
    int share = ncores / lsize > 0 ? ncores / lsize : 1;
    at = (lrank * share + index % share) % ncores;
  }
  hwloc_obj_t core =
      p->only ? hwloc_get_obj_inside_cpuset_by_type(p->topo, p->only,
                                                    HWLOC_OBJ_CORE,
                                                    (unsigned)at)
              : hwloc_get_obj_by_type(p->topo, HWLOC_OBJ_CORE, (unsigned)at);
  if (!core || !core->cpuset)
    return;
  hwloc_cpuset_t set = hwloc_bitmap_dup(core->cpuset);
  if (!set)
    return;
  /* One PU of the core: threads should not wander between hyperthreads. */
  hwloc_bitmap_singlify(set);
  (void)hwloc_set_cpubind(p->topo, set, HWLOC_CPUBIND_THREAD);
  hwloc_bitmap_free(set);
}

static void *worker_main(void *varg) {
  worker_arg a = *(worker_arg *)varg;
  wf__free(varg);
  wf__pool *p = a.pool;
  current_worker = a.index;
  pin_self(p, a.index);
  pthread_mutex_lock(&p->mu);
  for (;;) {
    while (p->count == 0 && !p->stopping)
      pthread_cond_wait(&p->cv, &p->mu);
    if (p->count == 0 && p->stopping)
      break;
    task t = p->ring[p->head];
    p->head = (p->head + 1) & (p->cap - 1);
    p->count--;
    pthread_mutex_unlock(&p->mu);
    t.fn(t.arg);
    pthread_mutex_lock(&p->mu);
  }
  pthread_mutex_unlock(&p->mu);
  return NULL;
}

static wf__pool *pool_start(wf__pool *p, int n, wf_status *st);

wf__pool *wf__pool_new_on(const char *cpus, wf_status *st) {
  wf__pool *p = wf__calloc(1, sizeof *p);
  if (!p) {
    wf_status_set(st, WF_RESOURCE_EXHAUSTED, "thread pool: out of memory");
    return NULL;
  }
  p->only = hwloc_bitmap_alloc();
  if (!p->only || hwloc_bitmap_list_sscanf(p->only, cpus) < 0 ||
      topology_init(&p->topo) != 0) {
    if (p->only)
      hwloc_bitmap_free(p->only);
    wf__free(p);
    wf_status_set(st, WF_INVALID_ARGUMENT,
                  "thread pool: cannot read the CPU list '%s'", cpus);
    return NULL;
  }
  if (hwloc_topology_load(p->topo) != 0 || pool_cores(p) < 1) {
    hwloc_topology_destroy(p->topo);
    hwloc_bitmap_free(p->only);
    wf__free(p);
    wf_status_set(st, WF_INVALID_ARGUMENT,
                  "thread pool: the CPU list '%s' names no core here", cpus);
    return NULL;
  }
  return pool_start(p, pool_cores(p), st);
}

wf__pool *wf__pool_new(int n, int pin, wf_status *st) {
  wf__pool *p = wf__calloc(1, sizeof *p);
  if (!p) {
    wf_status_set(st, WF_RESOURCE_EXHAUSTED,
                  "thread pool: out of memory starting %d workers", n);
    return NULL;
  }
  if (pin) {
    if (topology_init(&p->topo) != 0) {
      p->topo = NULL;
    } else if (hwloc_topology_load(p->topo) != 0) {
      hwloc_topology_destroy(p->topo);
      p->topo = NULL;
    }
  }
  return pool_start(p, n, st);
}

/* Allocates the queue and starts n workers in p (whose pinning is set);
 * frees p on failure. */
static wf__pool *pool_start(wf__pool *p, int n, wf_status *st) {
  p->cap = 256;
  p->ring = wf__calloc(p->cap, sizeof *p->ring);
  p->threads = wf__calloc((size_t)(n > 0 ? n : 1), sizeof *p->threads);
  if (!p->ring || !p->threads)
    goto oom;
  pthread_mutex_init(&p->mu, NULL);
  pthread_cond_init(&p->cv, NULL);
  for (int i = 0; i < (n > 0 ? n : 1); i++) {
    worker_arg *a = wf__calloc(1, sizeof *a);
    if (!a) {
      wf__pool_free(p);
      goto oom_freed;
    }
    a->pool = p;
    a->index = i;
    int rc = pthread_create(&p->threads[i], NULL, worker_main, a);
    if (rc != 0) {
      wf__free(a);
      wf__pool_free(p);
      wf_status_set(st, WF_RESOURCE_EXHAUSTED,
                    "thread pool: cannot start worker %d of %d (error %d)", i,
                    n, rc);
      return NULL;
    }
    p->n = i + 1;
  }
  return p;
oom:
  if (p->only)
    hwloc_bitmap_free(p->only);
  if (p->topo)
    hwloc_topology_destroy(p->topo);
  wf__free(p->ring);
  wf__free(p->threads);
  wf__free(p);
oom_freed:
  wf_status_set(st, WF_RESOURCE_EXHAUSTED,
                "thread pool: out of memory starting %d workers", n);
  return NULL;
}

void wf__pool_free(wf__pool *p) {
  if (!p)
    return;
  pthread_mutex_lock(&p->mu);
  p->stopping = 1;
  pthread_cond_broadcast(&p->cv);
  pthread_mutex_unlock(&p->mu);
  for (int i = 0; i < p->n; i++)
    pthread_join(p->threads[i], NULL);
  pthread_mutex_destroy(&p->mu);
  pthread_cond_destroy(&p->cv);
  if (p->only)
    hwloc_bitmap_free(p->only);
  if (p->topo)
    hwloc_topology_destroy(p->topo);
  wf__free(p->ring);
  wf__free(p->threads);
  wf__free(p);
}

int wf__pool_submit(wf__pool *p, wf__task_fn *fn, void *arg) {
  pthread_mutex_lock(&p->mu);
  if (p->count == p->cap) {
    /* Grow by doubling, unrolling the ring into the new storage. */
    task *ring = wf__calloc(p->cap * 2, sizeof *ring);
    if (!ring) {
      pthread_mutex_unlock(&p->mu);
      return -1;
    }
    for (size_t i = 0; i < p->count; i++)
      ring[i] = p->ring[(p->head + i) & (p->cap - 1)];
    wf__free(p->ring);
    p->ring = ring;
    p->head = 0;
    p->cap *= 2;
  }
  p->ring[(p->head + p->count) & (p->cap - 1)] = (task){fn, arg};
  p->count++;
  pthread_cond_signal(&p->cv);
  pthread_mutex_unlock(&p->mu);
  return 0;
}

int wf__pool_size(const wf__pool *p) { return p->n; }
