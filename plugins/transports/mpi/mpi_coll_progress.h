/* plugins/transports/mpi/mpi_coll_progress.h — the engine under the
 * collective ops (mpi_coll_progress.c): one communicator per node, runs
 * queued per node and started in an order every task agrees on, one
 * progress thread that drives the nonblocking MPI calls and completes the
 * kernels.
 *
 * mpi_collectives.c holds the ops themselves (definitions, shapes, kernels,
 * gradients): a kernel's compute fills a run (buffers, element count, the
 * shapes' hash) and submits it; the engine does the rest. */
#ifndef WF_MPI_COLL_PROGRESS_H
#define WF_MPI_COLL_PROGRESS_H

#include <stddef.h>
#include <stdint.h>

#include "mpi_plugin.h"

typedef enum coll_kind {
  WF__COLL_ALLREDUCE = 1,
  WF__COLL_REDUCE,
  WF__COLL_BROADCAST,
  WF__COLL_ALLGATHER,
  WF__COLL_REDUCE_SCATTER
} coll_kind;

/* A node's settings, fixed when its kernel is set up. Every task must
 * have the same (checked with each run). */
typedef struct coll_config {
  coll_kind kind;
  int32_t dtype; /* the element type (attribute T) */
  int32_t n;     /* tensors in the list (attribute N; 1 for the others) */
  int32_t mean;  /* reductions: the result is divided by the job size */
  int32_t root;  /* Broadcast and Reduce: the task whose values count */
} coll_config;

/* The engine's state of one node of one executor (the kernel's state). */
typedef struct coll_node coll_node;

/* One output filled from the receive buffer once the call completed. */
typedef struct coll_piece {
  void *dst;
  size_t bytes;
} coll_piece;

/* One execution of a node in one step. The kernel fills the first group;
 * the engine owns the run from coll_submit on. The MPI call is, on
 * the node's communicator with the element type of cfg.dtype:
 *  ALLREDUCE       Iallreduce(send, or MPI_IN_PLACE when send is NULL;
 *                  recv, count, SUM)
 *  REDUCE          Ireduce(send, or MPI_IN_PLACE (root only); recv (root
 *                  only), count, SUM, root)
 *  BROADCAST       Ibcast(recv, count, root): root's values are in recv
 *  ALLGATHER       Iallgather(send, count, recv, count)
 *  REDUCE_SCATTER  Ireduce_scatter_block(send, recv, count / size, SUM)
 * Then, with cfg.mean, the received elements are divided by the job size,
 * and the pieces are copied out of recv, in order, end to end. */
typedef struct coll_run {
  int64_t count;       /* elements this task passes (<= INT_MAX) */
  uint64_t shape_hash; /* of the input shapes, compared across tasks */
  const void *send;
  void *recv;
  void *pack;      /* a buffer the run owns (coll_run_pack), or NULL */
  wf_tensor *recv_tensor; /* the output tensor recv points into, or NULL */
  int32_t npieces; /* at most cfg.n */
  int32_t refused; /* coll_run_refuse: a wf_code, with why */
  int32_t skip;    /* coll_skip's: the step failed here before the node */
  /* -- the engine's -- */
  coll_node *node;
  wf_kernel_ctx *ctx;
  int64_t step;     /* host->kernel_step: the order of a node's runs */
  int64_t since_ns; /* when it was submitted, for the stall warning */
  int warned;
  struct coll_run *next;
  int32_t code; /* its completion: a wf_code, and why */
  char why[448];
  coll_piece pieces[]; /* cfg.n of them */
} coll_run;

/* Sets up a node's engine state: joins the job and, in a job of several
 * tasks, registers the node under a key (its name and how many nodes of
 * that name this process set up before); the progress thread gets it a
 * communicator of its own once every task set up the same key. Never
 * blocks on the other tasks. name is copied. NULL with st set on
 * failure. */
coll_node *coll_node_new(const char *name, const coll_config *cfg,
                                 wf_status *st);
/* Frees the node and its communicator (unless MPI is finalized); a node
 * not yet given its communicator goes once it has it, since the other
 * tasks count on that. No run of it may be queued or running, except after
 * the process left the job (it then stays). */
void coll_node_free(coll_node *nd);
int coll_node_rank(const coll_node *nd);
int coll_node_size(const coll_node *nd);
const coll_config *coll_node_config(const coll_node *nd);

/* A new run of nd for the kernel context ctx (this step's); NULL with st
 * set when out of memory. */
coll_run *coll_run_new(coll_node *nd, wf_kernel_ctx *ctx,
                               wf_status *st);
/* Allocates r->pack (bytes, 64-byte aligned) and returns it; NULL with st
 * set. */
void *coll_run_pack(coll_run *r, size_t bytes, wf_status *st);
/* Marks r as a run this task cannot take part in (its inputs are wrong
 * here, memory ran out): submitted all the same, it goes through the
 * header so that every task fails it together, this one with code and
 * the formatted message, the others saying which task refused. */
void coll_run_refuse(coll_run *r, int32_t code, const char *fmt, ...)
    WF_PRINTF_LIKE(3, 4);
/* Frees a run that was not submitted (NULL is fine). */
void coll_run_free(coll_run *r);
/* Queues r: the kernel completes later through kernel_done, from the
 * progress thread. Returns 0, or fails with st set (r freed, nothing
 * started) when the process is leaving the job. Thread-safe. */
int coll_submit(coll_run *r, wf_status *st);

/* The step `step` failed on this task before nd ran: a run that only
 * refuses is queued in its place, so that the other tasks, which wait in
 * nd's collective for this task, fail their run of that step together
 * ("task K could not take part ...") and the node stays in step. No
 * kernel completes it. Does nothing in a job of one task or while the
 * process is leaving the job. */
void coll_skip(coll_node *nd, int64_t step);

/* Folds a shape into a hash (FNV-1a over rank and dims). */
uint64_t coll_hash_shape(uint64_t h, const wf_shape *s);
#define WF__COLL_HASH_INIT UINT64_C(14695981039346656037)

#endif
