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
static int mpi_opened(lazylib *lib, char *why, size_t len) {
  (void)lib;
  (void)why;
  (void)len;
  for (int i = 0; i < MPT_NUM_GLOBALS; i++) {
    void *a = dlsym(RTLD_DEFAULT, mpi_symbols[MPT_NUM_FUNCS + i]);
    if (a)
      mpi_addrs[MPT_NUM_FUNCS + i] = a;
  }
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
