# tests/transports/collectives.mk: the collective ops of the MPI transport
# plugin (plugins/transports/mpi/mpi_collectives.c).
#  - coll_ops.sh runs coll_ops (cmocka) as a job of 1 (no mpirun), 2 and 3
#    processes: every op against values computed for the job's size,
#    readiness orders that differ by task, concurrent steps, sessions in a
#    row, gradients against their analytic values, and the errors (shapes
#    that differ across tasks, mean of integers, bad root or rows).
#    mpirun runs under a timeout, so a deadlock fails the test.
EXTRA_DIST += tests/transports/coll_ops.sh
if HAVE_MPI
check_PROGRAMS += tests/transports/coll_ops
TESTS += tests/transports/coll_ops.sh
tests_transports_coll_ops_SOURCES = tests/transports/coll_ops.c
tests_transports_coll_ops_CPPFLAGS = $(TEST_CPPFLAGS)
tests_transports_coll_ops_CFLAGS = $(TEST_CFLAGS)
tests_transports_coll_ops_LDADD = $(TEST_LDADD)
endif
# mpi_linked.sh: a program that links Open MPI and starts MPI itself, then
# uses the plugin's collectives (the plugin must use the program's MPI
# objects).
EXTRA_DIST += tests/transports/mpi_linked.sh
if HAVE_MPI
check_PROGRAMS += tests/transports/mpi_linked
TESTS += tests/transports/mpi_linked.sh
tests_transports_mpi_linked_SOURCES = tests/transports/mpi_linked.c
tests_transports_mpi_linked_CPPFLAGS = $(AM_CPPFLAGS) $(MPI_CFLAGS)
tests_transports_mpi_linked_LDADD = core/libweft.la $(MPI_LIBS)
endif
