/* plugins/transports/mpi/mpi_plugin.h — what the parts of the MPI transport
 * plugin share: the process's place in the MPI job (joined on first use,
 * left at process exit) and each part's tables. The host table is the
 * helper layer's wfx_host.
 *
 *  mpi_plugin.c       the description, joining and leaving the job
 *  mpi_transport.c    the transport (keyed point-to-point messages for the
 *                     core's rendezvous and control, heartbeats)
 *  mpi_collectives.c  the collective ops: AllReduce, Broadcast, AllGather,
 *                     ReduceScatter, their kernels and gradients */
#ifndef WF_MPI_PLUGIN_H
#define WF_MPI_PLUGIN_H

#include "mpi_lazy.h" /* <mpi.h>, Open MPI opened on first use */
#include <weft/plugin_aux.h>

/* The process's MPI job. Each part works on a communicator of its own
 * (duplicates of MPI_COMM_WORLD made when the job is joined), so that their
 * messages never match each other's. */
typedef struct mpt_job {
  int rank, size;
  MPI_Comm p2p;  /* the transport's */
  MPI_Comm coll; /* the collective ops' */
  int we_initialised; /* MPI_Init_thread was ours, and so is MPI_Finalize */
} mpt_job;

/* Joins the job on first use (MPI_Init_thread with MPI_THREAD_MULTIPLE,
 * unless the program already initialised MPI with that level) and returns
 * it; NULL with st set when MPI cannot start or lacks thread support.
 * Thread-safe. The job is left at process exit: the parts' stop functions
 * run first, then MPI_Finalize. */
const mpt_job *mpt_join(wf_status *st);
/* The job if joined, else NULL. */
const mpt_job *mpt_joined(void);

/* MPI's text for an error code. */
const char *mpt_error_string(int err, char *buf, int len);

/* mpi_transport.c */
extern const wf_transport_def mpt_transport;
/* Stops the transport's thread after flushing queued sends (at exit). */
void mpt_transport_stop(void);
/* 1 when another task of the job (every task hears every other one's
 * heartbeats) has been silent longer than the heartbeat timeout: *task and
 * *silent_ms say which (the longest silent) and how long. 0 while the
 * transport is not open (no heartbeats to judge by). */
int mpt_transport_lost(int *task, int64_t *silent_ms);
/* Starts the transport's thread (heartbeats) without opening it: the
 * collectives use it to notice a task that died. */
int mpt_transport_start(wf_status *st);
/* [cluster] heartbeat_timeout_ms of the config the plugin was loaded with
 * (default 10000). */
int64_t mpt_heartbeat_ms(void);

/* mpi_collectives.c: NULL-terminated tables for the plugin description. */
extern const wf_op_def *const mpt_ops[];
extern const wf_kernel_def *const mpt_kernels[];
extern const wf_gradient_def *const mpt_gradients[];
/* Stops whatever the collectives run in the background (at exit). */
void mpt_collectives_stop(void);
/* 1 once a collective of this task failed because another task's step had
 * failed before it while this one took part: that task may never reach
 * MPI_Finalize (it may stay alive), so leaving the job waits for no one. */
int mpt_collectives_peer_skipped(void);

#endif
