/* plugins/transports/mpi/mpi_lazy.c — Open MPI opened on first use
 * (plugins/common/lazylib.h): the plugin does not link libmpi, so loading
 * it (every `weft` command, every runtime) maps no part of Open MPI; the
 * first MPI call, when a process joins a job, opens it. Every MPI function
 * the plugin calls is renamed by mpi_lazy.h to a wrapper defined here
 * (mpt_lz_<name>), which calls through the address found when the library
 * was opened; mpi_lazy.h also turns the predefined handles into the
 * addresses of the library's objects.
 *
 * When the library cannot be opened, every function returns MPI_ERR_OTHER
 * and MPI_Error_string gives the reason (which library, which plugin,
 * why), so the plugin's usual messages ("mpi: MPI_Init_thread failed:
 * ...") carry it. It does not decide when MPI starts (mpi_plugin.c does). */
#include <config.h>

#include "mpi_plugin.h"

#include "lazylib.h"

/* X(name, (parameters), (arguments)); every one returns an MPI code. */
#define MPT_LAZY_FUNCS(X)                                                      \
  X(MPI_Init_thread,                                                           \
    (int *argc, char ***argv, int required, int *provided),                   \
    (argc, argv, required, provided))                                          \
  X(MPI_Initialized, (int *flag), (flag))                                      \
  X(MPI_Finalized, (int *flag), (flag))                                        \
  X(MPI_Finalize, (void), ())                                                  \
  X(MPI_Query_thread, (int *provided), (provided))                             \
  X(MPI_Abort, (MPI_Comm comm, int errorcode), (comm, errorcode))              \
  X(MPI_Comm_dup, (MPI_Comm comm, MPI_Comm * newcomm), (comm, newcomm))        \
  X(MPI_Comm_idup, (MPI_Comm comm, MPI_Comm * newcomm, MPI_Request * request), \
    (comm, newcomm, request))                                                  \
  X(MPI_Comm_free, (MPI_Comm * comm), (comm))                                  \
  X(MPI_Comm_rank, (MPI_Comm comm, int *rank), (comm, rank))                   \
  X(MPI_Comm_size, (MPI_Comm comm, int *size), (comm, size))                   \
  X(MPI_Comm_set_errhandler, (MPI_Comm comm, MPI_Errhandler errhandler),       \
    (comm, errhandler))                                                        \
  X(MPI_Comm_create_keyval,                                                    \
    (MPI_Comm_copy_attr_function * copy_fn,                                    \
     MPI_Comm_delete_attr_function * delete_fn, int *keyval, void *extra),     \
    (copy_fn, delete_fn, keyval, extra))                                       \
  X(MPI_Comm_set_attr, (MPI_Comm comm, int keyval, void *value),               \
    (comm, keyval, value))                                                     \
  X(MPI_Cancel, (MPI_Request * request), (request))                            \
  X(MPI_Request_free, (MPI_Request * request), (request))                      \
  X(MPI_Test, (MPI_Request * request, int *flag, MPI_Status *status),          \
    (request, flag, status))                                                   \
  X(MPI_Testsome,                                                              \
    (int incount, MPI_Request array_of_requests[], int *outcount,              \
     int array_of_indices[], MPI_Status array_of_statuses[]),                  \
    (incount, array_of_requests, outcount, array_of_indices,                   \
     array_of_statuses))                                                       \
  X(MPI_Get_count,                                                             \
    (const MPI_Status *status, MPI_Datatype datatype, int *count),             \
    (status, datatype, count))                                                 \
  X(MPI_Isend,                                                                 \
    (const void *buf, int count, MPI_Datatype datatype, int dest, int tag,     \
     MPI_Comm comm, MPI_Request *request),                                     \
    (buf, count, datatype, dest, tag, comm, request))                          \
  X(MPI_Improbe,                                                               \
    (int source, int tag, MPI_Comm comm, int *flag, MPI_Message *message,      \
     MPI_Status *status),                                                      \
    (source, tag, comm, flag, message, status))                                \
  X(MPI_Mrecv,                                                                 \
    (void *buf, int count, MPI_Datatype type, MPI_Message *message,            \
     MPI_Status *status),                                                      \
    (buf, count, type, message, status))                                       \
  X(MPI_Iallreduce,                                                            \
    (const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,     \
     MPI_Op op, MPI_Comm comm, MPI_Request *request),                          \
    (sendbuf, recvbuf, count, datatype, op, comm, request))                    \
  X(MPI_Ireduce,                                                               \
    (const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,     \
     MPI_Op op, int root, MPI_Comm comm, MPI_Request *request),                \
    (sendbuf, recvbuf, count, datatype, op, root, comm, request))              \
  X(MPI_Ireduce_scatter_block,                                                 \
    (const void *sendbuf, void *recvbuf, int recvcount,                        \
     MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Request *request),   \
    (sendbuf, recvbuf, recvcount, datatype, op, comm, request))                \
  X(MPI_Iallgather,                                                            \
    (const void *sendbuf, int sendcount, MPI_Datatype sendtype,                \
     void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm,       \
     MPI_Request *request),                                                    \
    (sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm,         \
     request))                                                                 \
  X(MPI_Ibcast,                                                                \
    (void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm,  \
     MPI_Request *request),                                                    \
    (buffer, count, datatype, root, comm, request))

#define MPT_NAME(n, p, a) #n,
#define MPT_GLOBAL_NAME(g) #g,
static const char *const mpi_symbols[] = {
    MPT_LAZY_FUNCS(MPT_NAME) "MPI_Error_string",
    MPT_LAZY_GLOBALS(MPT_GLOBAL_NAME) NULL};
#undef MPT_GLOBAL_NAME
#undef MPT_NAME

/* Every name is renamed by mpi_lazy.h: the definitions below are the
 * wrappers, never functions of the library's own name. */
#define MPT_RENAMED(n, p, a)                                                   \
  _Static_assert(sizeof LAZYLIB_STR(n) == sizeof "mpt_lz_" #n,                 \
                 #n " is not renamed in mpi_lazy.h");
MPT_LAZY_FUNCS(MPT_RENAMED)
MPT_RENAMED(MPI_Error_string, , )
#undef MPT_RENAMED

#define MPT_INDEX(n, p, a) MPT_F_##n,
enum { MPT_LAZY_FUNCS(MPT_INDEX) MPT_F_error_string, MPT_NUM_FUNCS };
#undef MPT_INDEX

/* The functions' addresses, then the objects'. */
static void *mpi_addrs[MPT_NUM_FUNCS + MPT_NUM_GLOBALS];

/* The predefined objects in use are the process's first definitions, not
 * necessarily the library's own: a program that links libmpi itself holds
 * copies of those it names (copy relocations), and the library then uses
 * the program's copies, leaving its own untouched. Looked up again in the
 * global scope (which holds the library, opened RTLD_GLOBAL), so that the
 * plugin passes MPI_COMM_WORLD and the rest as the library knows them. */
/* The tool interface's functions that mpt_tune_collectives uses: looked up
 * when the library opens but not required (NULL where it lacks them). */
static const char *const tool_symbols[] = {
    "MPI_T_init_thread", "MPI_T_finalize", "MPI_T_cvar_get_index",
    "MPI_T_cvar_handle_alloc", "MPI_T_cvar_handle_free", "MPI_T_cvar_read",
    "MPI_T_cvar_write", NULL};
enum { T_INIT, T_FINALIZE, T_INDEX, T_ALLOC, T_FREE, T_READ, T_WRITE, T_NUM };
static void *tool_addrs[T_NUM];

static int mpi_opened(lazylib *lib, char *why, size_t len) {
  (void)why;
  (void)len;
  for (int i = 0; i < MPT_NUM_GLOBALS; i++) {
    void *a = dlsym(RTLD_DEFAULT, mpi_symbols[MPT_NUM_FUNCS + i]);
    if (a)
      mpi_addrs[MPT_NUM_FUNCS + i] = a;
  }
  for (int i = 0; i < T_NUM; i++)
    tool_addrs[i] = dlsym(lib->handle, tool_symbols[i]);
  return 0;
}

/* Open MPI's components (dlopened by libmpi) look symbols up in the
 * global scope: the library is opened RTLD_GLOBAL, as programs linked
 * with it have it. */
static lazylib mpi_lib = LAZYLIB_INIT(
    .plugin = "transport-mpi", .what = "Open MPI", .soname = "libmpi.so.40",
    .env = "WEFT_MPI_LIBRARY",
    .dlflags = RTLD_NOW | RTLD_GLOBAL | RTLD_NODELETE,
    .symbols = mpi_symbols, .addrs = mpi_addrs, .opened = mpi_opened);

void *mpt_lazy_global(int i) {
  if (lazylib_open(&mpi_lib))
    return NULL;
  return mpi_addrs[MPT_NUM_FUNCS + i];
}

#define MPT_DEF(n, p, a)                                                       \
  int n p {                                                                    \
    if (lazylib_open(&mpi_lib))                                                \
      return MPI_ERR_OTHER;                                                    \
    return ((int(*) p)mpi_addrs[MPT_F_##n])a;                                  \
  }
MPT_LAZY_FUNCS(MPT_DEF)
#undef MPT_DEF

int MPI_Error_string(int errorcode, char *string, int *resultlen) {
  if (lazylib_open(&mpi_lib)) {
    snprintf(string, MPI_MAX_ERROR_STRING, "%.*s", MPI_MAX_ERROR_STRING - 1,
             lazylib_error(&mpi_lib));
    *resultlen = (int)strlen(string);
    return MPI_SUCCESS;
  }
  return ((int (*)(int, char *, int *))mpi_addrs[MPT_F_error_string])(
      errorcode, string, resultlen);
}

/* Open MPI's nonblocking allreduce (coll/libnbc), left to choose (its
 * variable coll_libnbc_iallreduce_algorithm at 0), reduces to one task and
 * broadcasts back for jobs of fewer than 4 tasks and for in-place buffers:
 * the whole buffer crosses the network twice, one way at a time, where
 * its blocking MPI_Allreduce exchanges halves both ways at once. The ring
 * algorithm (1) does the latter; the plugin's data calls are all
 * MPI_Iallreduce (mpi_coll_progress.c). Measured on 2 test hosts over TCP
 * (bench/cross_host.sh, 3 runs, the plugin's AllReduce over a blocking
 * MPI_Allreduce): 1 MiB 0.40-0.66 -> 0.71-0.88, 4 MiB 0.77-0.82 ->
 * 0.98-1.15, 16 MiB 0.63-0.77 -> 0.94-1.10, 64 MiB 0.93-1.03 ->
 * 1.57-1.71; in shared memory on one host no worse at any size.
 *
 * Set through MPI's tool interface once the library is initialised (the
 * variable is writable at run time), for the whole process; left alone
 * when the user chose an algorithm (the variable is not 0, or its
 * environment variable is set), and skipped where the library has no such
 * variable (another MPI). Returns 1 when it set the ring. */
int mpt_tune_collectives(void) {
  typedef int (*t_init_fn)(int, int *);
  typedef int (*t_void_fn)(void);
  typedef int (*t_index_fn)(const char *, int *);
  typedef int (*t_alloc_fn)(int, void *, MPI_T_cvar_handle *, int *);
  typedef int (*t_free_fn)(MPI_T_cvar_handle *);
  typedef int (*t_rw_fn)(MPI_T_cvar_handle, void *);
  static const char var[] = "coll_libnbc_iallreduce_algorithm";
  MPI_T_cvar_handle h;
  int provided, index, count, value = -1, ring = 1, set = 0;

  if (lazylib_open(&mpi_lib) || getenv("OMPI_MCA_coll_libnbc_iallreduce_algorithm"))
    return 0;
  for (int i = 0; i < T_NUM; i++)
    if (!tool_addrs[i])
      return 0;
  if (((t_init_fn)tool_addrs[T_INIT])(MPI_THREAD_MULTIPLE, &provided) !=
      MPI_SUCCESS)
    return 0;
  if (((t_index_fn)tool_addrs[T_INDEX])(var, &index) == MPI_SUCCESS &&
      ((t_alloc_fn)tool_addrs[T_ALLOC])(index, NULL, &h, &count) ==
          MPI_SUCCESS) {
    if (count == 1 &&
        ((t_rw_fn)tool_addrs[T_READ])(h, &value) == MPI_SUCCESS &&
        value == 0)
      set = ((t_rw_fn)tool_addrs[T_WRITE])(h, &ring) == MPI_SUCCESS;
    ((t_free_fn)tool_addrs[T_FREE])(&h);
  }
  ((t_void_fn)tool_addrs[T_FINALIZE])();
  return set;
}
