/* plugins/transports/mpi/mpi_lazy.h — <mpi.h> for a plugin that opens
 * Open MPI on first use (mpi_lazy.c) instead of linking it: include this
 * instead of <mpi.h>. Each MPI function the plugin calls is renamed to its
 * mpt_lz_ wrapper (mpi_lazy.c), which opens the library and calls through
 * (renamed, not defined under MPI's names, so that the plugin never
 * stands in for the library in a process that uses both); the predefined
 * handles
 * (MPI_COMM_WORLD, MPI_FLOAT, MPI_SUM, ...), which <mpi.h> spells as
 * addresses of the library's objects, become the addresses of those
 * objects as found in the opened library, so reading one opens it too.
 *
 * Nothing of the plugin touches MPI before it joins a job (mpi_plugin.c),
 * so loading the plugin maps no part of Open MPI. */
#ifndef WF_PLUGINS_TRANSPORTS_MPI_MPI_LAZY_H
#define WF_PLUGINS_TRANSPORTS_MPI_MPI_LAZY_H

/* Before <mpi.h>, so that it declares the wrappers; without its default
 * visibility, so that they stay the plugin's own (-fvisibility=hidden). */
#define MPI_Init_thread mpt_lz_MPI_Init_thread
#define MPI_Initialized mpt_lz_MPI_Initialized
#define MPI_Finalized mpt_lz_MPI_Finalized
#define MPI_Finalize mpt_lz_MPI_Finalize
#define MPI_Query_thread mpt_lz_MPI_Query_thread
#define MPI_Abort mpt_lz_MPI_Abort
#define MPI_Comm_dup mpt_lz_MPI_Comm_dup
#define MPI_Comm_idup mpt_lz_MPI_Comm_idup
#define MPI_Comm_free mpt_lz_MPI_Comm_free
#define MPI_Comm_rank mpt_lz_MPI_Comm_rank
#define MPI_Comm_size mpt_lz_MPI_Comm_size
#define MPI_Comm_set_errhandler mpt_lz_MPI_Comm_set_errhandler
#define MPI_Comm_create_keyval mpt_lz_MPI_Comm_create_keyval
#define MPI_Comm_set_attr mpt_lz_MPI_Comm_set_attr
#define MPI_Cancel mpt_lz_MPI_Cancel
#define MPI_Request_free mpt_lz_MPI_Request_free
#define MPI_Test mpt_lz_MPI_Test
#define MPI_Testsome mpt_lz_MPI_Testsome
#define MPI_Get_count mpt_lz_MPI_Get_count
#define MPI_Isend mpt_lz_MPI_Isend
#define MPI_Improbe mpt_lz_MPI_Improbe
#define MPI_Mrecv mpt_lz_MPI_Mrecv
#define MPI_Iallreduce mpt_lz_MPI_Iallreduce
#define MPI_Ireduce mpt_lz_MPI_Ireduce
#define MPI_Ireduce_scatter_block mpt_lz_MPI_Ireduce_scatter_block
#define MPI_Iallgather mpt_lz_MPI_Iallgather
#define MPI_Ibcast mpt_lz_MPI_Ibcast
#define MPI_Error_string mpt_lz_MPI_Error_string
#ifndef OMPI_DECLSPEC
#define OMPI_DECLSPEC
#endif
#include <mpi.h>

/* The library's objects behind the handles the plugin uses. */
#define MPT_LAZY_GLOBALS(X)                                                    \
  X(ompi_mpi_comm_world)                                                       \
  X(ompi_mpi_comm_null)                                                        \
  X(ompi_mpi_comm_self)                                                        \
  X(ompi_mpi_op_max)                                                           \
  X(ompi_mpi_op_sum)                                                           \
  X(ompi_mpi_byte)                                                             \
  X(ompi_mpi_float)                                                            \
  X(ompi_mpi_double)                                                           \
  X(ompi_mpi_uint8_t)                                                          \
  X(ompi_mpi_uint16_t)                                                         \
  X(ompi_mpi_int32_t)                                                          \
  X(ompi_mpi_uint32_t)                                                         \
  X(ompi_mpi_int64_t)                                                          \
  X(ompi_mpi_uint64_t)                                                         \
  X(ompi_mpi_errors_return)

#define MPT_LAZY_INDEX(g) MPT_G_##g,
enum { MPT_LAZY_GLOBALS(MPT_LAZY_INDEX) MPT_NUM_GLOBALS };
#undef MPT_LAZY_INDEX

/* The address of the library's object i (opening the library first);
 * NULL when it cannot be opened (every MPI function then fails, and
 * MPI_Error_string says why). */
void *mpt_lazy_global(int i);

/* Chooses the ring algorithm for Open MPI's nonblocking allreduce where the
 * user left it to the library (mpi_lazy.c says why). Called once MPI is
 * initialised; 1 when it set it. */
int mpt_tune_collectives(void);

#undef OMPI_PREDEFINED_GLOBAL
#define OMPI_PREDEFINED_GLOBAL(type, global) ((type)mpt_lazy_global(MPT_G_##global))

#endif
