# tests/transports/data_parallel.mk: data-parallel training
# (lib/train/data_parallel.c, weft/parallel.h) over the MPI transport plugin.
#  - dp_graph (run by dp_graph.sh, which sets the MPI test environment):
#    cmocka, one process: the graphs built (buckets, order, chaining,
#    sparse gradients, the init broadcast, errors) and a job of one task
#    training exactly as alone.
#  - dp_equivalence.sh: jobs of 1, 2 and 3 processes (mpirun) train the mlp
#    to the weights and losses of one process training alone, within
#    stated tolerances; replicas start from task 0's weights.
#  - dp_shard.sh: tasks read disjoint parts covering each global batch.
#  - dp_input_error.sh: one task's input runs out and it stays alive; the
#    others' steps fail naming it, and the job ends.
# The shell checks skip (77) when mpirun is not found.
EXTRA_DIST += tests/transports/dp_equivalence.sh tests/transports/dp_shard.sh \
	tests/transports/dp_graph.sh tests/transports/dp_input_error.sh
if HAVE_MPI
check_PROGRAMS += tests/transports/dp_graph tests/transports/dp_train \
	tests/transports/dp_shard
TESTS += tests/transports/dp_graph.sh tests/transports/dp_equivalence.sh \
	tests/transports/dp_shard.sh tests/transports/dp_input_error.sh

tests_transports_dp_graph_SOURCES = tests/transports/dp_graph.c
tests_transports_dp_graph_CPPFLAGS = $(TEST_CPPFLAGS)
tests_transports_dp_graph_CFLAGS = $(TEST_CFLAGS)
tests_transports_dp_graph_LDADD = $(TEST_LDADD)

tests_transports_dp_train_SOURCES = tests/transports/dp_train.c
tests_transports_dp_train_CPPFLAGS = $(TEST_CPPFLAGS)
tests_transports_dp_train_LDADD = $(TEST_LDADD)

tests_transports_dp_shard_SOURCES = tests/transports/dp_shard.c
tests_transports_dp_shard_CPPFLAGS = $(TEST_CPPFLAGS)
tests_transports_dp_shard_LDADD = $(TEST_LDADD)
endif
