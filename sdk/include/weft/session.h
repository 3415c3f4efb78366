/* weft/session.h — sessions: running a graph.
 *
 * A session runs a graph that outlives it. Each run names feeds (tensors
 * that replace graph outputs), fetches (outputs to return) and targets (nodes
 * to run for their effects); the session prunes the graph to what those need,
 * builds an executor for that signature once and caches it (bounded, least
 * recently used out). A callable is such a signature prepared up front: its
 * runs do no name or graph work at all. Runs may be made from many threads at
 * once on one session. */
#ifndef WEFT_SESSION_H
#define WEFT_SESSION_H

#include <weft/export.h>
#include <weft/graph.h>
#include <weft/types.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct wf_session wf_session;
typedef struct wf_callable wf_callable;
typedef struct wf_run_metadata wf_run_metadata;

/* Trace levels for wf_run_options.trace_level. */
#define WF_TRACE_NONE 0
#define WF_TRACE_NODES 1 /* per-node start/end times, device, output bytes */

typedef struct wf_run_options {
  uint32_t struct_size; /* sizeof(wf_run_options) */
  int32_t trace_level;  /* WF_TRACE_* */
  int64_t timeout_ms;   /* 0: none; past it the step is cancelled and the
                           run returns DEADLINE_EXCEEDED */
} wf_run_options;

#define WF_RUN_OPTIONS_INIT                                                    \
  { (uint32_t)sizeof(wf_run_options), WF_TRACE_NONE, 0 }

/* Creates a session on g (which must outlive it), with the runtime's config.
 * Graph nodes added later are visible to later signatures. Owned by the
 * caller: wf_session_free. */
WF_API wf_session *wf_session_new(wf_graph *g, wf_status *st);
/* Cancels running steps, waits for them to return, and makes every later
 * call fail with FAILED_PRECONDITION. Idempotent. */
WF_API void wf_session_close(wf_session *s);
/* Closes (if needed) and frees the session. Callables must be freed first. */
WF_API void wf_session_free(wf_session *s);

/* Runs one step. feeds[i] is replaced by feed_values[i] (borrowed for the
 * call; a tensor made with wf_tensor_wrap feeds the caller's memory without
 * a copy). fetch_values receives nfetches new references (release them).
 * targets are run for their effects. options and metadata may be NULL.
 * Errors: INVALID_ARGUMENT (a fed or fetched output that does not exist, a
 * tensor fed twice or both fed and fetched, a feed of the wrong dtype or
 * shape, an unfed placeholder the fetches need — each named), NOT_FOUND (no
 * kernel), DEADLINE_EXCEEDED, CANCELLED, FAILED_PRECONDITION (closed), or
 * the error of the first failing node, naming the node, op and device. */
WF_API int wf_session_run(wf_session *s, const wf_run_options *options,
                          const wf_output *feeds,
                          wf_tensor *const *feed_values, int nfeeds,
                          const wf_output *fetches, wf_tensor **fetch_values,
                          int nfetches, wf_node *const *targets, int ntargets,
                          wf_run_metadata *metadata, wf_status *st);


/* Prepares a signature: validation, pruning and executor construction
 * happen here, once. Owned by the caller; free before the session. */
WF_API wf_callable *wf_session_prepare(wf_session *s, const wf_output *feeds,
                                       int nfeeds, const wf_output *fetches,
                                       int nfetches, wf_node *const *targets,
                                       int ntargets, wf_status *st);
/* Runs a prepared signature; arguments as for wf_session_run. Thread-safe. */
WF_API int wf_callable_run(wf_callable *c, const wf_run_options *options,
                           wf_tensor *const *feed_values,
                           wf_tensor **fetch_values,
                           wf_run_metadata *metadata, wf_status *st);
WF_API void wf_callable_free(wf_callable *c);

/* ---- run metadata -------------------------------------------------------- */

typedef struct wf_node_stats {
  const char *node;   /* borrowed from the graph */
  const char *op;
  const char *device; /* "cpu:0" */
  int64_t start_ns;   /* from the start of the step */
  int64_t end_ns;
  int32_t thread;     /* executor thread index, -1 for the caller's */
  int32_t reserved_;
  int64_t output_bytes;
} wf_node_stats;

/* Empty metadata, filled by runs that receive it (each run replaces the
 * contents). Owned by the caller. */
WF_API wf_run_metadata *wf_run_metadata_new(void);
WF_API void wf_run_metadata_free(wf_run_metadata *md);
WF_API int wf_run_metadata_num_nodes(const wf_run_metadata *md);
/* Node i's statistics; strings borrowed until the next run or free. */
WF_API void wf_run_metadata_node(const wf_run_metadata *md, int i,
                                 wf_node_stats *out);
/* The kernel that ran node i (0 <= i < wf_run_metadata_num_nodes): its
 * label ("onednn", "reference"; "" for a kernel registered without one)
 * and the plugin that registered it ("device-cpu"), as chosen for the node's
 * device under the config's [kernels] rules. Borrowed until the next run or
 * free, and while the runtime lives. */
WF_API const char *wf_run_metadata_node_kernel(const wf_run_metadata *md,
                                               int i);
WF_API const char *wf_run_metadata_node_kernel_plugin(
    const wf_run_metadata *md, int i);
/* Wall time of the step in nanoseconds. */
WF_API int64_t wf_run_metadata_step_ns(const wf_run_metadata *md);
/* The most bytes the step held at once on a device ("cpu:0"; NULL or ""
 * for the sum over every device the step used): its planned arena (the
 * outputs memory planning placed, see the config's [passes] memory_plan)
 * plus the outputs it allocated otherwise, at their peak. Outputs of
 * earlier steps that are still alive and a kernel's scratch memory are not
 * counted. 0 for a device the step did not use. Recorded by every run that
 * is given metadata, whatever its trace level. */
WF_API int64_t wf_run_metadata_peak_bytes(const wf_run_metadata *md,
                                          const char *device);
/* A device request that could not be met (soft placement): the node runs
 * on `device` instead of `requested`, for `reason`. Every run that is given
 * metadata lists these, whatever its trace level. Strings are borrowed
 * until the next run or free. */
typedef struct wf_placement_info {
  const char *node;
  const char *requested;
  const char *device;
  const char *reason;
} wf_placement_info;

WF_API int wf_run_metadata_num_placements(const wf_run_metadata *md);
WF_API void wf_run_metadata_placement(const wf_run_metadata *md, int i,
                                      wf_placement_info *out);

/* Config items that had no effect with the plugins loaded, each a line
 * "FILE:LINE: [devices] order names device type 'cuda', which no loaded
 * plugin provides; skipped" (such a device type is skipped, not an error)
 * or "FILE:LINE: [kernels] deny item 'X' matches no kernel label ...;
 * ignored" ("config" instead of FILE:LINE for values a program set).
 * Every run that is given metadata lists them, whatever its trace level;
 * they are also logged once per runtime. Borrowed until the next run or
 * free. */
WF_API int wf_run_metadata_num_notes(const wf_run_metadata *md);
WF_API const char *wf_run_metadata_note(const wf_run_metadata *md, int i);

/* Writes the node timings as Chrome trace-event JSON (chrome://tracing,
 * Perfetto): one complete event per node with args op, device, kernel,
 * kernel_plugin, output_bytes (and requested and placement for a node that
 * fell back from its device request); otherData holds step_ns, peak_bytes
 * (per device), placements and notes. Errors name the file. */
WF_API int wf_run_metadata_write_trace(const wf_run_metadata *md,
                                       const char *path, wf_status *st);

#ifdef __cplusplus
}
#endif
#endif /* WEFT_SESSION_H */
