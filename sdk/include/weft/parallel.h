/* weft/parallel.h — data-parallel training: the same program on every task
 * of a job (weft/cluster.h), each a client of its own that trains a
 * replica of the model on its part of every global batch. The replicas
 * stay identical because they start identical (a broadcast of task 0's
 * variables) and apply identical updates (every gradient is averaged
 * across the job before the optimizer sees it).
 *
 * The collective ops AllReduce and Broadcast come from a transport plugin
 * (the MPI one: plugins/transports/mpi); a job of one process needs the
 * plugin too and then averages over itself. Building the nodes needs no
 * job: only running them joins it.
 *
 *   wf_optimizer opt = wf_optimizer_defaults(WF_OPT_ADAM);
 *   wf_model_set_data_parallel(m, 0, st);      // weft/layers.h
 *   wf_node *train = wf_model_minimize(m, loss, &opt, st);
 *   wf_node *init = wf_model_init_op(m, st);   // init + broadcast
 *
 * and for the input, on every task, with the same shuffle seed:
 *
 *   wf_parallel_task_batch(rt, global_batch, &b, st);
 *   ds = wf_dataset_shuffle(ds, n, seed, st);  // same order everywhere
 *   ds = wf_dataset_shard_by_task(ds, rt, st);
 *   ds = wf_dataset_batch(ds, b, 1, st);       // then floor(n / B) steps
 *                                              // per pass on every task
 *
 * Every collective blocks until all tasks reach it, so every task must run
 * the same steps: the same number of training runs per pass over the data
 * (see wf_dataset_shard_by_task), the init op (or the broadcast op after a
 * restore) on all of them, and no early exit of one task; and, since
 * setting up a collective's kernel is itself collective, every task must
 * prepare the signatures that hold collectives in the same order. Runs
 * without collectives (evaluation, saving) may be task 0's alone.
 * docs/data_parallel.md says what is exchanged per step and how to choose
 * the bucket size. */
#ifndef WEFT_PARALLEL_H
#define WEFT_PARALLEL_H

#include <weft/data.h>
#include <weft/export.h>
#include <weft/gradients.h>
#include <weft/graph.h>
#include <weft/layers.h>
#include <weft/runtime.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The bucket size used when none is given: gradients are fused into
 * AllReduce nodes of at most this many bytes each. */
#define WF_PARALLEL_BUCKET_BYTES ((int64_t)25 << 20)

/* Replaces each grads[i] (as wf_graph_add_gradients gave them) by its mean
 * over the tasks of the job. grads are in the forward order of their
 * variables; buckets are filled from the last one backwards, so the bucket
 * of the last layers can be reduced while backpropagation still computes
 * the first ones. A bucket is one AllReduce node (reduction "mean") of
 * gradients of one dtype and at most bucket_bytes bytes together (<= 0:
 * WF_PARALLEL_BUCKET_BYTES); a gradient larger than that, or whose shape is
 * not fully known, is a bucket of its own. The buckets are not ordered
 * among themselves: the transport matches collectives across tasks by
 * node and step, whatever order each task's executor starts them in.
 *
 * A sparse gradient (indices, values) is made dense first
 * (UnsortedSegmentSumToShape) and averaged like the others: after the
 * call every entry that had a gradient is dense, and an optimizer applies
 * the dense update to it. Entries without a gradient stay as they are.
 *
 * New nodes go under the scope "data_parallel". Errors: NOT_FOUND when the
 * AllReduce op is not registered (the transport plugin is not loaded),
 * INVALID_ARGUMENT for a gradient that is not float32 or float64 (naming
 * its index and node); on error grads are unchanged and the graph
 * keeps the nodes added so far, unreachable from them. */
WF_API int wf_graph_add_gradient_mean(wf_graph *g, wf_gradient *grads, int n,
                                      int64_t bucket_bytes, wf_status *st);

/* The mean over the tasks of the job of each x[i] (float32 or float64),
 * in one AllReduce node: y[i] is x[i] averaged, for a loss or a metric
 * that each task computed on its own part of the batch (fetch it in the
 * training step's run). y may alias x. NOT_FOUND without the transport
 * plugin; the node's errors (dtype) otherwise. */
WF_API int wf_graph_add_task_mean(wf_graph *g, const wf_output *x, int n,
                                  wf_output *y, wf_status *st);

/* A node that, run as a target, sets each variable handles[i] (VarHandle
 * outputs, as wf_model_variable_name gives them) to the value it has on
 * task 0: each is read, Broadcast from task 0 in buckets (as above) and
 * assigned. Nodes in after[0 .. nafter-1] run before any variable is read
 * (the initializers, for a broadcast that completes an init op). name
 * NULL: "broadcast_variables" made unique. Returns the node (owned by the
 * graph) or NULL with st set: NOT_FOUND when the Broadcast op is not
 * registered, INVALID_ARGUMENT for a handle that is not a variable's. */
WF_API wf_node *wf_graph_add_broadcast_variables(wf_graph *g,
                                                 const wf_output *handles,
                                                 int n, wf_node *const *after,
                                                 int nafter,
                                                 int64_t bucket_bytes,
                                                 const char *name,
                                                 wf_status *st);

/* The broadcast of every variable of the model (slots and global step
 * included) from task 0, for after a restore, or to bring replicas
 * together that were initialised apart. wf_model_init_op already ends with
 * it when the model's optimizer is data-parallel. */
WF_API wf_node *wf_model_broadcast_op(wf_model *m, wf_status *st);

/* ---- the input --------------------------------------------------------------- */

/* The per-task batch of a global batch: global_batch / size of the job
 * (joining it through wf_runtime_cluster). INVALID_ARGUMENT when the size
 * does not divide global_batch (each task's batch mean must weigh as much
 * as the others' for their mean to be the global batch's). */
WF_API int wf_parallel_task_batch(wf_runtime *rt, int64_t global_batch,
                                  int64_t *task_batch, wf_status *st);

/* Keeps the elements of `in` that this task reads: element i of each pass
 * when i % size == task (wf_dataset_shard, joining the job through
 * wf_runtime_cluster). Batched afterwards by the per-task batch b =
 * B / size (wf_parallel_task_batch), batch k of every task together holds
 * exactly elements [kB, (k+1)B) of `in`: the tasks read disjoint parts of
 * each global batch. For that, `in` must give every task the same sequence
 * (shuffle before sharding, with one seed on every task). The tasks may
 * hold different numbers of elements at the end of a pass, so run exactly
 * floor(n / B) steps per pass on every task (n elements in a pass) and
 * start the next pass with wf_iterator_reset; running to OUT_OF_RANGE
 * could leave one task waiting in a collective for another that stopped.
 * Takes over `in` as every stage does (weft/data.h). */
WF_API wf_dataset *wf_dataset_shard_by_task(wf_dataset *in, wf_runtime *rt,
                                            wf_status *st);

#ifdef __cplusplus
}
#endif
#endif /* WEFT_PARALLEL_H */
