/* core/exec/kernel.h — kernel contexts: how the core runs one registered kernel
 * on one node with given input tensors. The executor (and op tests) build
 * on this; nothing here schedules. */
#ifndef WF_CORE_KERNEL_H
#define WF_CORE_KERNEL_H

#include <weft/graph.h>

#include "plugin/kernel_choice.h"
#include "plugin/registry.h"

struct wf__varstore;

/* What a kernel may know of the step it runs in. */
struct wf__rendezvous;
struct wf__iterators;

typedef struct wf__step_ctx {
  struct wf__varstore *vars; /* the session's variables; NULL outside one */
  int64_t step;              /* the session's step counter for this run */
  struct wf__rendezvous *rendezvous; /* the step's, for _Send/_Recv */
  struct wf__iterators *iterators;   /* the session's attached iterators
                                        (core/data/dataset.h); NULL outside one */
  uint64_t job_step;           /* the step's id in the job (core/dist/cluster_internal.h);
                                  0 when it runs on this task alone */
  struct wf__cluster *cluster; /* the job, when job_step is set */
} wf__step_ctx;

struct wf_kernel_ctx {
  const wf_node *node;
  const wf__kernel *kernel;
  const wf_tensor *const *inputs; /* borrowed, node->num_inputs entries */
  wf_tensor **outputs;            /* owned references, num_outputs entries */
  int num_inputs, num_outputs;
  wf_status *status;              /* completion status of async kernels */
  int done;                       /* set by kernel_done */
  /* When set, kernel_done calls this (the executor continues the step from
   * it) instead of signalling a waiting wf__kernel_run. */
  void (*on_done)(struct wf_kernel_ctx *ctx, const wf_status *st);
  void *user;                     /* for on_done */
  /* wf__kernel_run's wait for an async kernel when on_done is NULL
   * (private to core/exec/kernel.c; NULL in contexts made elsewhere). */
  struct wf__kernel_wait *wait;
  const wf__step_ctx *step_ctx; /* NULL outside a session step */
  /* The step's memory for the node's partition (core/compile/memplan.h), and the
   * node's first output and input slots in the partition: outputs are made
   * there. NULL outside an executor (outputs are then plain tensors). */
  struct wf__arena *arena;
  int32_t out_base, in_base;
  /* The device the node was placed on (NULL outside an executor), and
   * whether its outputs are made in that device's memory (a device with a
   * copy function; then arena is NULL). */
  const struct wf__device *device;
  int device_memory;
};

/* 1 when kernel k reads input i (host_inputs) or writes output i
 * (host_outputs) in host memory on a device with memory of its own. */
int wf__kernel_host_input(const struct wf__kernel *k, int i);
int wf__kernel_host_output(const struct wf__kernel *k, int i);

/* The thread's running kernel's device memory (NULL: host), set by the
 * executor around each compute, only for var_lock as plugins built before
 * ABI 1.4 call it, without their kernel's context
 * (core/exec/variables.c); kernel_var_lock takes the device from the
 * context. */
const struct wf__device *wf__kernel_current_memory(void);
void wf__kernel_set_current_memory(const struct wf__device *d);


/* Runs kernel k for node n synchronously: create (if any), compute, destroy.
 * outputs receives num_outputs new references (caller releases). On error,
 * st names node, op and device type, and no output is returned. Async
 * kernels are waited for. */
int wf__kernel_run(const wf__kernel *k, const wf_node *n,
                   const wf_tensor *const *inputs, wf_tensor **outputs,
                   wf_status *st);

/* The host table's kernel_* entries (see weft/plugin.h for the contracts).
 * Contexts made without inputs or outputs (the executor's kernel create
 * call) answer NULL for inputs and refuse to make outputs. */
int32_t wf__kernel_num_inputs(const wf_kernel_ctx *ctx);
int32_t wf__kernel_num_outputs(const wf_kernel_ctx *ctx);
const wf_tensor *wf__kernel_input(const wf_kernel_ctx *ctx, int32_t i);
wf_tensor *wf__kernel_output_new(wf_kernel_ctx *ctx, int32_t i,
                                 const wf_shape *shape, wf_status *st);
int wf__kernel_output_set(wf_kernel_ctx *ctx, int32_t i, wf_tensor *t,
                          wf_status *st);
int wf__kernel_attr(const wf_kernel_ctx *ctx, const char *name,
                    wf_attr_value *out);
int32_t wf__kernel_output_dtype(const wf_kernel_ctx *ctx, int32_t i);
/* The host table's kernel_output_shape: the op's shape function on the
 * inputs' actual shapes. */
int wf__kernel_output_shape(const wf_kernel_ctx *ctx, int32_t i,
                            wf_shape *shape, wf_status *st);
const char *wf__kernel_node_name(const wf_kernel_ctx *ctx);
void wf__kernel_done(wf_kernel_ctx *ctx, int32_t code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
int64_t wf__kernel_step(const wf_kernel_ctx *ctx);
void *wf__kernel_device_state(const wf_kernel_ctx *ctx);

#endif
