# Sessions and the executor, against the ops of a test plugin.
check_LTLIBRARIES += tests/session/test_session_ops.la
tests_session_test_session_ops_la_SOURCES = tests/session/session_ops.c
tests_session_test_session_ops_la_CPPFLAGS = $(PLUGIN_CPPFLAGS)
tests_session_test_session_ops_la_LDFLAGS = $(PLUGIN_LDFLAGS) -rpath /nowhere
tests_session_test_session_ops_la_LIBADD = $(PTHREAD_LIBS)

check_PROGRAMS += tests/session/test_session
TESTS += tests/session/test_session
tests_session_test_session_SOURCES = tests/session/test_session.c
tests_session_test_session_CPPFLAGS = $(TEST_CPPFLAGS)
tests_session_test_session_CFLAGS = $(TEST_CFLAGS)
tests_session_test_session_LDADD = $(TEST_LDADD)

check_PROGRAMS += tests/session/test_placement
TESTS += tests/session/test_placement
tests_session_test_placement_SOURCES = tests/session/test_placement.c
tests_session_test_placement_CPPFLAGS = $(TEST_CPPFLAGS)
tests_session_test_placement_CFLAGS = $(TEST_CFLAGS)
tests_session_test_placement_LDADD = $(TEST_LDADD)

# One program on different kernels by config alone ([kernels] deny and
# prefer, [devices] order), with the built-in plugins of the build tree.
check_PROGRAMS += tests/session/test_backends
TESTS += tests/session/test_backends
tests_session_test_backends_SOURCES = tests/session/test_backends.c
tests_session_test_backends_CPPFLAGS = $(TEST_CPPFLAGS)
tests_session_test_backends_CFLAGS = $(TEST_CFLAGS)
tests_session_test_backends_LDADD = $(TEST_LDADD)

# [debug] check_numerics and the CheckNumerics op, with the build tree's
# plugins.
check_PROGRAMS += tests/session/test_check_numerics
TESTS += tests/session/test_check_numerics
tests_session_test_check_numerics_SOURCES = tests/session/test_check_numerics.c
tests_session_test_check_numerics_CPPFLAGS = $(TEST_CPPFLAGS)
tests_session_test_check_numerics_CFLAGS = $(TEST_CFLAGS)
tests_session_test_check_numerics_LDADD = $(TEST_LDADD)

# One training session used by many threads at once (stepping, reading
# variables, checkpointing, iterators of its pipeline); the core of the
# ThreadSanitizer stage of .ci/run. Loads the build tree's plugins.
SESSION_STRESS_PLUGINS = plugins/ops/array/ops_array.la \
	plugins/ops/math/ops_math.la plugins/ops/nn/ops_nn.la \
	plugins/ops/state/ops_state.la plugins/ops/random/ops_random.la \
	plugins/ops/train/ops_train.la plugins/readers/idx/reader_idx.la \
	plugins/devices/cpu/device_cpu.la
check_PROGRAMS += tests/session/test_stress
TESTS += tests/session/test_stress
tests_session_test_stress_SOURCES = tests/session/test_stress.c \
	tests/session/train_job.h
tests_session_test_stress_CPPFLAGS = $(TEST_CPPFLAGS)
tests_session_test_stress_CFLAGS = $(TEST_CFLAGS)
tests_session_test_stress_LDADD = $(TEST_LDADD)
EXTRA_tests_session_test_stress_DEPENDENCIES = $(SESSION_STRESS_PLUGINS)

# Allocation-failure sweeps over session creation, training steps,
# checkpoints, saved models and a prefetching iterator (bounded in time:
# see the file's header).
check_PROGRAMS += tests/session/test_alloc_sweep
TESTS += tests/session/test_alloc_sweep
tests_session_test_alloc_sweep_SOURCES = tests/session/test_alloc_sweep.c \
	tests/session/train_job.h
tests_session_test_alloc_sweep_CPPFLAGS = $(TEST_CPPFLAGS)
tests_session_test_alloc_sweep_CFLAGS = $(TEST_CFLAGS)
tests_session_test_alloc_sweep_LDADD = $(TEST_LDADD)
EXTRA_tests_session_test_alloc_sweep_DEPENDENCIES = $(SESSION_STRESS_PLUGINS)
# What the ThreadSanitizer stage (.ci/tsan) and the sweeps cover and found.
EXTRA_DIST += docs/sanitizers.md
