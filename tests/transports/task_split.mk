# tests/transports/task_split.mk — jobs of processes: task_split.sh runs
# test_task_split (a graph split between tasks) under mpirun with 2 and 3
# processes and with `weft worker` workers; worker_killed.sh checks that a
# worker dying mid-step is an error on the client within the heartbeat
# timeout; dp_restart.sh kills a task of a data-parallel training job and
# resumes it in a new job from the last checkpoint; dp_peer_silent.sh
# stops task 2 of 3 and checks that tasks 0 and 1 each report it.
EXTRA_DIST += tests/transports/task_split.sh tests/transports/worker_killed.sh \
	tests/transports/dp_restart.sh tests/transports/dp_peer_silent.sh \
	tests/transports/mpi_env.sh
if HAVE_MPI
check_PROGRAMS += tests/transports/test_task_split \
	tests/transports/test_worker_killed
tests_transports_test_task_split_SOURCES = tests/transports/test_task_split.c
tests_transports_test_task_split_CPPFLAGS = $(TEST_CPPFLAGS)
tests_transports_test_task_split_CFLAGS = $(TEST_CFLAGS)
tests_transports_test_task_split_LDADD = core/libweft.la $(CMOCKA_LIBS) \
	$(PTHREAD_LIBS)
tests_transports_test_worker_killed_SOURCES = \
	tests/transports/test_worker_killed.c
tests_transports_test_worker_killed_CPPFLAGS = $(TEST_CPPFLAGS)
tests_transports_test_worker_killed_CFLAGS = $(TEST_CFLAGS)
tests_transports_test_worker_killed_LDADD = core/libweft.la $(PTHREAD_LIBS)
TESTS += tests/transports/task_split.sh tests/transports/worker_killed.sh \
	tests/transports/dp_restart.sh tests/transports/dp_peer_silent.sh
endif
