/* core/base/threadpool.h — a fixed pool of worker threads, optionally pinned to
 * cores through hwloc, running submitted closures in FIFO order.
 *
 * It does no work stealing and knows nothing about graphs: the executor
 * decides what runs inline and what is submitted. */
#ifndef WF_CORE_THREADPOOL_H
#define WF_CORE_THREADPOOL_H

#include <weft/types.h>

typedef struct wf__pool wf__pool;
typedef void wf__task_fn(void *arg);

/* Starts n >= 1 workers. With pin, worker i is bound to core i modulo the
 * cores hwloc reports (binding failures are ignored: the pool still runs).
 * RESOURCE_EXHAUSTED / INTERNAL when threads cannot be made. */
wf__pool *wf__pool_new(int n, int pin, wf_status *st);
/* A pool with one worker per core of `cpus` (hwloc list syntax, "0-3"),
 * each bound to its core: the threads of one device. INVALID_ARGUMENT for
 * a list hwloc cannot read or that names no core of this machine. */
wf__pool *wf__pool_new_on(const char *cpus, wf_status *st);
/* Runs every task already submitted, then stops and frees the pool. */
void wf__pool_free(wf__pool *p);
/* Queues fn(arg). Returns 0, or -1 when out of memory (nothing queued). */
int wf__pool_submit(wf__pool *p, wf__task_fn *fn, void *arg);
int wf__pool_size(const wf__pool *p);
/* Index of the calling worker thread in its pool, or -1 for other threads. */
int wf__pool_current_worker(void);
/* The cores this process should use, at least 1: the host's (hwloc),
 * divided among the processes a launcher started on this host
 * (OMPI_COMM_WORLD_LOCAL_SIZE, MPI_LOCALNRANKS). Pools that pin place
 * their threads within this process's share. */
int wf__num_cores(void);

#endif
