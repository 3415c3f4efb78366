/* core/compile/memplan.h — memory planning: where the outputs of one partition of
 * an executor live, decided once per signature, and the arenas that steps
 * carve those outputs from.
 *
 * A plan gives every output worth planning (shape and dtype known
 * statically; not fetched, not handed to another partition, even through
 * an output that probably forwards it; not made by a source, a stateful or
 * an asynchronous node; not probably an input passed on: by a cheap
 * kernel, or written over by a WF_KERNEL_IN_PLACE kernel whose input
 * nothing else reads, which the executor then does) an offset in one
 * arena per partition, largest outputs first. Two outputs may share bytes
 * when they are never alive together: by their positions in the order one
 * thread runs the partition when its steps run on one thread, else only
 * when one's producer depends on every reader of the other (partitions of
 * up to 4096 nodes; larger ones use the one-thread order). Outputs of 256
 * KiB or more share only with outputs of their own size. A step state owns
 * one arena per partition, allocated once and reused by every step it
 * runs.
 *
 * Nothing here trusts the plan blindly: an output takes its bytes only
 * when no live view holds any of them (tensors escape: a fetch reached
 * through a kernel that forwards, a kernel that keeps its input, a step
 * that runs nodes in another order than planned); otherwise, and whenever
 * the kernel asks for another shape, it is allocated normally. A view
 * holds its bytes from the moment it is handed out until its last
 * reference goes, so planned memory is never written while anyone can
 * still read it. A variable assigned a view keeps a copy
 * (core/exec/variables.c copies any buffer that is not the core's own).
 *
 * Outputs whose shapes are known only when the step runs (a batch
 * dimension of -1) are planned from the shapes their kernels ask for:
 * when a partition has such outputs, a step whose feed shapes have no
 * plan records what its kernels allocate (once the cache is full, only
 * when those feed shapes missed before), and once it has completed a
 * plan of every output, placed by those shapes, is built and kept for
 * those feed shapes (up to 4 plans per partition, the least recently used
 * out). A later step with the same feed shapes uses it, and
 * a step state keeps using the plan it has without a lock while the feed
 * shapes stay the same. Feed shapes usually decide every shape of a step;
 * when they do not, the kernel asking for another shape is allocated
 * normally. A step whose feed shapes match no plan runs as before. */
#ifndef WF_CORE_MEMPLAN_H
#define WF_CORE_MEMPLAN_H

#include <stddef.h>
#include <stdint.h>

#include <weft/status.h>
#include <weft/runtime.h>
#include <weft/tensor.h>

struct wf__part;
typedef struct wf__meter wf__meter;

/* The plan of one partition (immutable once built, shared by every step). */
typedef struct wf__memplan wf__memplan;

/* Plans every partition (parts[p].mem; nfeeds: the signature's feeds),
 * unless rt's config has [passes] memory_plan false (then every mem stays
 * NULL). Returns 0, or RESOURCE_EXHAUSTED with st naming the partition's
 * device. */
struct wf__part;
int wf__memplan_build(const wf_runtime *rt, struct wf__part *parts,
                      int num_parts, int nfeeds, wf_status *st);
/* Frees a partition's plan (and the plans its steps learned that no arena
 * holds any more). */
void wf__memplan_free(wf__memplan *p);
/* The arena's size in bytes (0: nothing planned). */
size_t wf__memplan_bytes(const wf__memplan *p);
/* How many outputs the plan places, and the number of segments (runs of
 * arena bytes between output boundaries) it splits the arena into. */
int wf__memplan_num_planned(const wf__memplan *p);
int wf__memplan_num_segments(const wf__memplan *p);
/* How many plans from actual shapes the partition's plan keeps now (at
 * most 4). */
int wf__memplan_num_cached(const wf__memplan *p);

/* ---- arenas ------------------------------------------------------------- */

/* One step state's memory for one partition: the buffer of the plan it
 * uses (plan may be NULL: no buffer, only the meter of its allocations),
 * owned by the step state. A buffer is reference counted by its arena and
 * every live view of it, so it outlives a step state that is freed, or an
 * arena that moved to another plan, while its views are still held. */
typedef struct wf__arena wf__arena;

/* A new arena for the partition's plan (NULL when out of memory). The
 * plan's buffer is allocated here, once; another one only when the arena
 * moves to a plan learned from actual shapes. */
wf__arena *wf__arena_new(const wf__memplan *plan);
/* Frees the step state's arena (buffers held by views stay until those
 * go). */
void wf__arena_release(wf__arena *a);
/* Starts a step fed feeds[0 .. nfeeds) (the executor's feeds, in
 * signature order; NULL when nfeeds is 0): the meter restarts from zero
 * (tensors of earlier steps still alive are no longer counted), the arena
 * moves to the partition's plan for those feed shapes when there is one,
 * and otherwise may record what the step's kernels allocate. */
void wf__arena_begin(wf__arena *a, wf_tensor *const *feeds, int nfeeds);
/* Ends the step: when it recorded and ok (the step completed), builds the
 * plan for its feed shapes and keeps it in the partition's cache. Called
 * once every kernel of the step is done. */
void wf__arena_end(wf__arena *a, int ok);
/* The peak bytes of the step so far: the arena plus the most bytes of
 * unplanned outputs alive at once. */
int64_t wf__arena_peak_bytes(const wf__arena *a);

/* Output slot `out` of shape and dtype: a view of its planned buffer when
 * it is planned, has exactly that dtype and shape, and the buffer is free;
 * otherwise a new tensor counted by the arena's meter. One new reference
 * (the caller's); NULL with st set when out of memory. */
wf_tensor *wf__arena_output(wf__arena *a, int32_t out, wf_dtype dtype,
                            const wf_shape *shape, wf_status *st);

/* Whether output slot `out` of the partition is output 0 of a node
 * planned to write it over its input 0 (a WF_KERNEL_IN_PLACE kernel whose
 * input 0 nothing else reads): only there does kernel_output_new take an
 * input over, so that plans and steps agree on whose buffer lives how
 * long. */
int wf__arena_in_place(const wf__arena *a, int32_t out);

/* Whether an output of dtype and shape may be written over t, the tensor
 * in input slot `in` of the partition, and be t itself: planning is on, the
 * slot is not fed, t's buffer is the core's (not wrapped: a wrapped buffer
 * may be shared with its parent or be the caller's), it has that dtype and
 * shape, and the slot's reference is its only one (no other reader, not a
 * variable's value). */
int wf__arena_may_overwrite(const wf__arena *a, int32_t in, const wf_tensor *t,
                            wf_dtype dtype, const wf_shape *shape);

/* The in-place half of output allocation (core/exec/kernel.c): output i, written
 * over the first input among candidates[0 .. n) that
 * wf__arena_may_overwrite allows (that input's tensor itself, retained),
 * else as wf__kernel_output_new. Only for kernels that compute each output
 * element after reading every input element it needs (elementwise ops):
 * the output and the input then share one buffer. */
struct wf_kernel_ctx;
wf_tensor *wf__kernel_output_forward(struct wf_kernel_ctx *ctx, int32_t i,
                                     const int32_t *candidates, int32_t n,
                                     const wf_shape *shape, wf_status *st);

/* ---- what tests count ----------------------------------------------------- */

/* Counts an output written over an input (wf__memplan_stats.in_place). */
void wf__memplan_count_in_place(void);

typedef struct wf__memplan_stats {
  long arenas;    /* arena buffers allocated */
  long views;     /* planned outputs handed out as views */
  long fallbacks; /* planned outputs allocated normally (buffer busy or
                     another shape asked) */
  long in_place;  /* outputs written over an input */
  long plans;     /* plans built from actual shapes */
} wf__memplan_stats;

/* Counters of the whole process (all executors), kept only once counting
 * was turned on (a test's first call): an atomic add per node output is a
 * cost a run should not pay for a test's sake. */
void wf__memplan_stats_enable(void);
void wf__memplan_stats_get(wf__memplan_stats *out);

#endif
