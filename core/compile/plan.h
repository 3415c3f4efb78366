/* core/compile/plan.h — the compiled form of one device's share of a
 * signature, the last stage of core/compile: nodes in topological order
 * with their kernels, flat input slots, out-edges, control successors and
 * the partition's memory plan. core/exec/executor.c builds the partitions
 * and runs them; core/compile/memplan.c plans their memory. */
#ifndef WF_CORE_PLAN_H
#define WF_CORE_PLAN_H

#include <stdint.h>

#include <weft/graph.h>

#include "plugin/registry.h"

typedef struct wf__edge {
  int32_t src_output; /* output slot of the producer */
  int32_t dst_node;   /* consumer's plan index, or -1 for a fetch */
  int32_t dst_slot;   /* global input slot, or the fetch index */
  int32_t last_use;   /* 1 on the producer's last edge of this output: it
                         takes the producer's reference (no retain) */
} wf__edge;

typedef struct wf__xnode {
  const wf_node *node;
  const wf__kernel *kernel; /* NULL for nodes that need not run (fed sources) */
  void *kstate;             /* from kernel create */
  const char *device;       /* device instance name, "cpu:0" */
  int32_t input_base;       /* first of its num_inputs slots */
  int32_t num_inputs;
  int32_t num_outputs;
  int32_t output_base;      /* first of its num_outputs output slots */
  int32_t edge_begin, edge_end; /* data out-edges in exec->edges */
  int32_t ctrl_begin, ctrl_end; /* control successors in exec->ctrl */
  int32_t pending;          /* initial count: in-edges from planned nodes */
  int32_t cheap;
  uint32_t bound_inputs;    /* bit k: input k is bound (wf__part.bound) */
} wf__xnode;

/* One device's share of a signature: its nodes, their input slots and
 * out-edges, in plan-index space of its own. Fetches produced here are
 * edges with dst_node -1. */
typedef struct wf__part {
  int device;          /* runtime device index */
  wf__xnode *nodes;
  int num_nodes;
  wf__edge *edges;
  int num_edges;
  int32_t *ctrl;       /* control successor plan indices */
  int num_ctrl;
  int num_slots;       /* total input slots */
  int num_out_slots;   /* total output slots */
  int32_t *roots;      /* nodes with pending == 0 */
  int num_roots;
  /* feeds: for feed i, slots feed_slots[feed_begin[i] .. feed_begin[i+1]) */
  int32_t *feed_begin;
  int32_t *feed_slots;
  /* Input slots bound once for every step: bound[slot] is the value of a
   * constant node (WF_OP_CONSTANT) of the partition that the slot reads,
   * held for the executor's life, so the slot is filled when a step's
   * state is made and never emptied, and its reader waits for no edge.
   * NULL when no slot is bound (and on devices with memory of their own);
   * num_slots entries, NULL for the others. */
  struct wf_tensor **bound;
  /* Where its outputs live (core/compile/memplan.h); NULL when planning is off or
   * the device has memory of its own. */
  struct wf__memplan *mem;
  /* The device when it has memory of its own (wf_device_def.copy): its
   * kernels' tensors live there, and tensors that reach the partition from
   * host memory (feeds, transfers, variables) are copied in. NULL for
   * devices that compute in host memory. */
  const struct wf__device *memory;
} wf__part;

#endif
