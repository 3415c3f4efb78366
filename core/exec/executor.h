/* core/exec/executor.h — the plan for one signature and its execution.
 *
 * An executor is built once per signature: pruned nodes in topological
 * order, each with its kernel (and the kernel's per-node state), a flat array
 * of input slots, and its out-edges. A step copies the initial pending
 * counts, fills the fed slots, and runs ready nodes: cheap ones inline, the
 * rest on the thread pool (the thread that finishes a node keeps one of its
 * expensive successors for itself). Executors are immutable once built and
 * reference counted; any number of steps may run on one at once. Each
 * partition carries its memory plan (core/compile/memplan.h), and each step state
 * an arena per partition that its steps make planned outputs in. */
#ifndef WF_CORE_EXECUTOR_H
#define WF_CORE_EXECUTOR_H

#include <stdatomic.h>
#include <weft/session.h>

#include "compile/prune.h"
#include "plugin/registry.h"
#include "base/threadpool.h"

#include "compile/plan.h"
#include "compile/placement.h"

struct wf__work;


typedef struct wf__exec {
  atomic_int refs;
  wf_runtime *rt;
  const wf_graph *graph;   /* the working graph (owned through work) */
  struct wf__work *work;
  wf__placement placement; /* of the working graph's nodes */
  wf__part *parts;         /* one per device used */
  int num_parts;
  int num_nodes;           /* over all parts */
  int num_transfers;       /* rendezvous slots */
  int nfeeds;
  wf_dtype *feed_dtypes;
  wf_shape *feed_shapes;
  const char **feed_names; /* "node:index" for messages */
  int nfetches;
  /* A reusable step state, taken with an atomic exchange (no malloc per
   * step when steps do not overlap). */
  _Atomic(void *) spare_step;
  /* The shares of other tasks of the job (core/dist/cluster_internal.h), or NULL. */
  struct wf__dist *dist;
  /* Some partition is on a device with memory of its own: tensors are
   * checked at the partitions' borders and fetches copied to the host. */
  int device_memory;
} wf__exec;

/* Builds the executor for sig on g's runtime: the working graph (passes),
 * placement, partitioning, then one plan per device. */
wf__exec *wf__exec_new(wf_runtime *rt, const wf_graph *g,
                       const wf__signature *sig, wf_status *st);
wf__exec *wf__exec_retain(wf__exec *x);
void wf__exec_release(wf__exec *x);

struct wf__varstore;
struct wf__iterators;

/* What a session shares with its steps. */
typedef struct wf__session_state {
  uint64_t id;                /* unique in the process (workers key their
                                 copies of its variables by it) */
  atomic_int cancelled;       /* the session was closed */
  struct wf__varstore *vars;  /* its variables */
  atomic_llong step;          /* steps started so far */
  struct wf__iterators *iterators; /* attached input iterators */
} wf__session_state;

/* Runs one step. feed_values/fetch_values as for wf_session_run. pool may be
 * NULL (everything runs on the calling thread); device_pools (indexed by
 * runtime device, entries may be NULL) gives devices their own threads. */
int wf__exec_run(wf__exec *x, wf__pool *pool, wf__pool *const *device_pools,
                 wf__session_state *session,
                 const wf_run_options *opt, wf_tensor *const *feed_values,
                 wf_tensor **fetch_values, wf_run_metadata *md,
                 wf_status *st);

/* A worker's share of a step the client started (core/dist/worker.c). */
typedef struct wf__job_step {
  uint64_t uid; /* the step's id in the job */
  int64_t step; /* the client session's step counter for it */
} wf__job_step;

/* wf__exec_run for a step of the job: the step counter and the id come
 * from the client. */
int wf__exec_run_job(wf__exec *x, wf__pool *pool, wf__session_state *session,
                     const wf__job_step *job, wf_status *st);

/* ---- run metadata (core/exec/metadata.c) -------------------------------------- */

struct wf_run_metadata {
  wf_node_stats *nodes;
  const wf__kernel **kernels; /* per node record: the kernel that ran it */
  int num_nodes, cap_nodes;
  int64_t step_ns;
  wf_placement_info *placements; /* strings owned: copies */
  int num_placements;
  struct wf__exec *held; /* the node records' strings live in its graph;
                            its placement holds the config notes */
  /* Peak bytes of the step per device used (names borrowed from the
   * runtime's devices). */
  const char **peak_devices;
  int64_t *peak_bytes;
  int num_peaks, cap_peaks;
};

/* Keeps x (and so the strings of md's node records) alive until md's next
 * run or free. */
void wf__metadata_hold(wf_run_metadata *md, struct wf__exec *x);
/* Replaces md's placement records with copies of the executor's notes. */
int wf__metadata_set_placements(wf_run_metadata *md, const wf__exec *x);

/* Replaces md's contents with n node records (zeroed). -1 when out of
 * memory. */
int wf__metadata_reset(wf_run_metadata *md, int n);
/* Makes room for n devices' peak bytes and forgets the last step's. -1
 * when out of memory. */
int wf__metadata_reserve_peaks(wf_run_metadata *md, int n);
/* Records the step's peak bytes on device (a name that lives as long as
 * the runtime), within the room reserved. */
void wf__metadata_add_peak(wf_run_metadata *md, const char *device,
                           int64_t bytes);

#endif
