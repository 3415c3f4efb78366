/* plugins/transports/mpi/mpi_plugin.c — the MPI transport plugin: its
 * description, and the process's membership of the MPI job.
 *
 * Loading the plugin does not start MPI: a process joins the job when the
 * core opens the transport (weft/cluster.h) or a collective op's kernel is
 * set up, and leaves it at exit. Because MPI can be initialised only once
 * per process, the plugin then stays in memory even when a runtime unloads
 * it (dlopen with RTLD_NODELETE), and the exit handler stops the plugin's
 * threads before MPI_Finalize. */
#include <config.h>

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mpi_plugin.h"

/* The host table, for every file of the plugin: ABI 1.1 brought
 * transports. */
WFX_HOST_DEFINE(1, 1);

static pthread_mutex_t join_mu = PTHREAD_MUTEX_INITIALIZER;
static mpt_job job;
static const mpt_job *_Atomic joined;

const char *mpt_error_string(int err, char *buf, int len) {
  int n = 0;
  if (MPI_Error_string(err, buf, &n) != MPI_SUCCESS || n <= 0)
    snprintf(buf, (size_t)len, "MPI error %d", err);
  return buf;
}

const mpt_job *mpt_joined(void) { return joined; }

/* An MCA parameter as mpirun hands it to its processes (OMPI_MCA_name in
 * the environment), or dflt when unset or not a number. */
static long mca_long(const char *name, long dflt) {
  char var[96];
  snprintf(var, sizeof var, "OMPI_MCA_%s", name);
  const char *v = getenv(var);
  char *end = NULL;
  long n = v ? strtol(v, &end, 10) : 0;
  return v && end != v && *end == '\0' ? n : dflt;
}

/* How long a task that lost a peer stays before it exits, in seconds.
 *
 * When a host is cut off, mpirun learns it only through the keepalives of
 * its own TCP connection to that host's daemon, and only while that
 * connection is idle: once a surviving task exits with an error, mpirun
 * orders every daemon to end the job, the order to the unreachable one
 * sits unacknowledged, keepalives stop, and mpirun waits for TCP's
 * retransmissions to give up (net.ipv4.tcp_retries2: about 15 minutes).
 * So where the job was started with short keepalives
 * (oob_tcp_keepalive_time + intvl * probes at most MAX_LINGER_S), a task
 * that lost a peer waits that long plus a second before it exits: mpirun
 * has by then noticed the lost host (and ends the job, killing this
 * process), or the peer's host is reachable and mpirun ends the job
 * normally once this task exits. Without such settings it exits at once,
 * as before. */
#define MAX_LINGER_S 60
static long linger_s(void) {
  long t = mca_long("oob_tcp_keepalive_time", -1);
  if (t <= 0)
    return 0;
  long k = t + mca_long("oob_tcp_keepalive_intvl", 20) *
                   mca_long("oob_tcp_keepalive_probes", 9);
  return k > 0 && k <= MAX_LINGER_S ? k + 1 : 0;
}

static void leave_job(void) {
  if (!joined)
    return;
  /* MPI_Finalize waits for every process of the job: with one gone it
   * would hang, so a process that saw a task die leaves without it. */
  int task;
  int64_t silent;
  int lost = mpt_transport_lost(&task, &silent);
  int skipped = mpt_collectives_peer_skipped();
  mpt_transport_stop();
  mpt_collectives_stop();
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized)
    return;
  if (lost) {
    long linger = linger_s();
    wfx_host->log(WF_LOG_WARNING, "transport-mpi",
                  "task %d has been silent for %.1f s: leaving the job "
                  "without MPI_Finalize%s",
                  task, (double)silent / 1000.0,
                  linger ? " (after the launcher's keepalive time)" : "");
    fflush(stdout);
    fflush(stderr);
    for (struct timespec ts = {linger, 0};
         nanosleep(&ts, &ts) != 0 && errno == EINTR;)
      ;
    return;
  }
  if (skipped) {
    wfx_host->log(WF_LOG_WARNING, "transport-mpi",
                  "another task failed a step that this one ran: leaving "
                  "the job without MPI_Finalize (that task may never "
                  "reach it)");
    return;
  }
  MPI_Comm_free(&job.p2p);
  MPI_Comm_free(&job.coll);
  if (job.we_initialised)
    MPI_Finalize();
}

/* Runs first thing in MPI_Finalize, whoever calls it (MPI deletes the
 * attributes of MPI_COMM_SELF before anything else): a program that
 * initialised MPI itself finalizes it before the exit handler runs, and
 * the plugin's threads must not be inside MPI calls then. */
static int on_finalize(MPI_Comm comm, int key, void *value, void *extra) {
  (void)comm;
  (void)key;
  (void)value;
  (void)extra;
  mpt_transport_stop();
  mpt_collectives_stop();
  return MPI_SUCCESS;
}

/* The attribute is never copied to a duplicated communicator (what
 * MPI_COMM_NULL_COPY_FN does; that one is a function of the library,
 * which the plugin opens only on first use: mpi_lazy.h). */
static int no_copy(MPI_Comm comm, int key, void *extra, void *in, void *out,
                   int *flag) {
  (void)comm;
  (void)key;
  (void)extra;
  (void)in;
  (void)out;
  *flag = 0;
  return MPI_SUCCESS;
}

/* Keeps this module (and so libmpi) loaded until the process exits. */
static int stay_resident(wf_status *st) {
  Dl_info info;
  if (!dladdr((void *)&mpt_join, &info) || !info.dli_fname) {
    wfx_host->status_set(st, WF_INTERNAL,
                         "mpi: cannot find the plugin's own file");
    return -1;
  }
  /* Statically linked into the program: nothing can unload it. */
  if (!dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE))
    return 0;
  return 0;
}

const mpt_job *mpt_join(wf_status *st) {
  if (joined)
    return joined;
  pthread_mutex_lock(&join_mu);
  if (joined) {
    pthread_mutex_unlock(&join_mu);
    return joined;
  }
  char msg[MPI_MAX_ERROR_STRING];
  int inited = 0, finalized = 0, provided = 0, err;
  MPI_Initialized(&inited);
  MPI_Finalized(&finalized);
  if (finalized) {
    wfx_host->status_set(st, WF_FAILED_PRECONDITION,
                         "mpi: MPI was already finalized in this process");
    goto fail;
  }
  if (stay_resident(st))
    goto fail;
  if (!inited) {
    err = MPI_Init_thread(NULL, NULL, MPI_THREAD_MULTIPLE, &provided);
    if (err != MPI_SUCCESS) {
      wfx_host->status_set(st, WF_UNAVAILABLE,
                           "mpi: MPI_Init_thread failed: %s",
                           mpt_error_string(err, msg, sizeof msg));
      goto fail;
    }
    job.we_initialised = 1;
  } else {
    MPI_Query_thread(&provided);
  }
  if (provided < MPI_THREAD_MULTIPLE) {
    wfx_host->status_set(
        st, WF_FAILED_PRECONDITION,
        "mpi: this MPI provides thread level %d, weft needs "
        "MPI_THREAD_MULTIPLE (%d)%s",
        provided, MPI_THREAD_MULTIPLE,
        inited ? ": the program initialised MPI itself with a lower level"
               : "");
    goto fail;
  }
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  if (mpt_tune_collectives())
    wfx_host->log(WF_LOG_DEBUG, "transport-mpi",
                  "Open MPI's nonblocking allreduce set to its ring "
                  "algorithm (coll_libnbc_iallreduce_algorithm = 1)");
  if ((err = MPI_Comm_dup(MPI_COMM_WORLD, &job.p2p)) != MPI_SUCCESS ||
      (err = MPI_Comm_dup(MPI_COMM_WORLD, &job.coll)) != MPI_SUCCESS) {
    wfx_host->status_set(st, WF_UNAVAILABLE,
                         "mpi: duplicating MPI_COMM_WORLD failed: %s",
                         mpt_error_string(err, msg, sizeof msg));
    goto fail;
  }
  MPI_Comm_set_errhandler(job.p2p, MPI_ERRORS_RETURN);
  MPI_Comm_set_errhandler(job.coll, MPI_ERRORS_RETURN);
  MPI_Comm_rank(MPI_COMM_WORLD, &job.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &job.size);
  int key = MPI_KEYVAL_INVALID;
  if (MPI_Comm_create_keyval(no_copy, on_finalize, &key,
                             NULL) != MPI_SUCCESS ||
      MPI_Comm_set_attr(MPI_COMM_SELF, key, NULL) != MPI_SUCCESS)
    wfx_host->log(WF_LOG_WARNING, "transport-mpi",
                  "cannot hook MPI_Finalize: a program that finalizes MPI "
                  "itself must free its runtimes' job first");
  atexit(leave_job);
  joined = &job;
  pthread_mutex_unlock(&join_mu);
  return joined;
fail:
  pthread_mutex_unlock(&join_mu);
  return NULL;
}

static _Atomic int64_t heartbeat_ms = 10000;

int64_t mpt_heartbeat_ms(void) { return heartbeat_ms; }

static int plugin_init(const wf_host *host, void **state, wf_status *st) {
  if (WFX_HOST_INIT(host, "transport-mpi", st))
    return WF_FAILED_PRECONDITION;
  int64_t ms = wfx_host->config_int("cluster", "heartbeat_timeout_ms");
  if (ms > 0)
    heartbeat_ms = ms;
  *state = NULL;
  return 0;
}

static const wf_transport_def *const transports[] = {&mpt_transport,
                                                     NULL};

static const wf_plugin_desc desc = {
    WF_STRUCT_INIT(wf_plugin_desc),
    .name = "transport-mpi",
    .version = PACKAGE_VERSION,
    .license = "MIT",
    .description = "Joins the processes of an MPI job (Open MPI: shared "
                   "memory, TCP, RDMA through UCX): keyed point-to-point "
                   "messages for Send/Recv between tasks, and the "
                   "collective ops AllReduce, Broadcast, AllGather and "
                   "ReduceScatter",
    .ops = mpt_ops,
    .kernels = mpt_kernels,
    .gradients = mpt_gradients,
    .init = plugin_init,
    .transports = transports,
};

WF_PLUGIN(transport_mpi, desc)
