/* weft/cluster.h — a runtime as one task of a job of processes.
 *
 * Processes launched together (mpirun) form a job; each runtime in it is
 * one task, numbered 0 .. size-1. Task 0 is the client: it builds graphs
 * and runs sessions; nodes whose device names another task
 * ("/task:1/cpu:0") run there, in a partition the client ships once per
 * signature and then starts with one small message per step. The other
 * tasks serve (wf_worker_serve, or `weft worker`). Data-parallel training
 * (weft/parallel.h) instead runs the same program on every task, each a
 * client of its own, joined by collective ops.
 *
 * The transport comes from a plugin (the MPI one: plugins/transports/mpi);
 * config: [cluster] transport = NAME (default: the first loaded transport;
 * "none": never join a job), heartbeat_timeout_ms = how long a silent task
 * may stay silent during a step before the step fails (default 10000). */
#ifndef WEFT_CLUSTER_H
#define WEFT_CLUSTER_H

#include <weft/export.h>
#include <weft/runtime.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Joins the job (on the first call; later calls return what it gave):
 * *task and *size (either may be NULL). A runtime without a transport, or
 * with [cluster] transport = none, is task 0 of a job of 1. Fails
 * (UNAVAILABLE, FAILED_PRECONDITION) naming the transport when joining
 * does. */
WF_API int wf_runtime_cluster(wf_runtime *rt, int32_t *task, int32_t *size,
                              wf_status *st);

/* The serving loop of a worker task (task >= 1): runs the partitions task
 * 0 ships and the steps it starts, until task 0 shuts the job down (its
 * runtime is freed or its process exits), then returns 0. Errors of a
 * step go back to the client; this returns non-zero only when the task
 * cannot serve at all (no job, task 0, the client vanished). */
WF_API int wf_worker_serve(wf_runtime *rt, wf_status *st);

#ifdef __cplusplus
}
#endif
#endif /* WEFT_CLUSTER_H */
