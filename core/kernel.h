/* core/kernel.h — kernel contexts: how the core runs one registered kernel
 * on one node with given input tensors. The executor (and op tests) build
 * on this; nothing here schedules. */
#ifndef WF_CORE_KERNEL_H
#define WF_CORE_KERNEL_H

#include <weft/graph.h>

#include "registry.h"

struct wf_kernel_ctx {
  const wf_node *node;
  const wf__kernel *kernel;
  const wf_tensor *const *inputs; /* borrowed, node->num_inputs entries */
  wf_tensor **outputs;            /* owned references, num_outputs entries */
  int num_inputs, num_outputs;
  wf_status *status;              /* completion status of async kernels */
  int done;                       /* set by kernel_done */
};

/* Picks the best kernel for n on device_type (dtype from the kernel's type
 * attribute on the node). NOT_FOUND naming node, op and device when none. */
const wf__kernel *wf__kernel_select(const wf_runtime *rt, const wf_node *n,
                                    const char *device_type, wf_status *st);

/* Runs kernel k for node n synchronously: create (if any), compute, destroy.
 * outputs receives num_outputs new references (caller releases). On error,
 * st names node, op and device type, and no output is returned. Async
 * kernels are waited for. */
int wf__kernel_run(const wf__kernel *k, const wf_node *n,
                   const wf_tensor *const *inputs, wf_tensor **outputs,
                   wf_status *st);

#endif
