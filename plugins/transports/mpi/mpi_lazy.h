/* plugins/transports/mpi/mpi_lazy.h — <mpi.h> for a plugin that opens
 * Open MPI on first use (mpi_lazy.c) instead of linking it: include this
 * instead of <mpi.h>. The functions keep their names (mpi_lazy.c defines
 * them, hidden, over the library's); the predefined handles
 * (MPI_COMM_WORLD, MPI_FLOAT, MPI_SUM, ...), which <mpi.h> spells as
 * addresses of the library's objects, become the addresses of those
 * objects as found in the opened library, so reading one opens it too.
 *
 * Nothing of the plugin touches MPI before it joins a job (mpi_plugin.c),
 * so loading the plugin maps no part of Open MPI. */
#ifndef WF_PLUGINS_TRANSPORTS_MPI_MPI_LAZY_H
#define WF_PLUGINS_TRANSPORTS_MPI_MPI_LAZY_H

/* No default visibility: the plugin's definitions of the MPI functions
 * stay its own (built with -fvisibility=hidden). */
#ifndef OMPI_DECLSPEC
#define OMPI_DECLSPEC
#endif
#include <mpi.h>

/* The library's objects behind the handles the plugin uses. */
#define MPT_LAZY_GLOBALS(X)                                                    \
  X(ompi_mpi_comm_world)                                                       \
  X(ompi_mpi_comm_null)                                                        \
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

#undef OMPI_PREDEFINED_GLOBAL
#define OMPI_PREDEFINED_GLOBAL(type, global) ((type)mpt_lazy_global(MPT_G_##global))

#endif
