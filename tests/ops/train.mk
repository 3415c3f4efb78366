# tests/ops/train.mk: the ops_state, ops_random and ops_train plugins through
# the real loader and sessions (tests/ops/train_harness.h loads them with
# ops_array and the CPU device from the build tree, so `make check` builds
# them first: they are part of `all`). test_random also links philox.c
# directly to check the generator against its published known answers.
TRAIN_TEST_PLUGINS = plugins/ops/state/ops_state.la \
	plugins/ops/random/ops_random.la plugins/ops/train/ops_train.la \
	plugins/ops/array/ops_array.la plugins/devices/cpu/device_cpu.la

check_PROGRAMS += tests/ops/test_state tests/ops/test_random \
	tests/ops/test_train
TESTS += tests/ops/test_state tests/ops/test_random tests/ops/test_train

tests_ops_test_state_SOURCES = tests/ops/test_state.c \
	tests/ops/train_harness.h
tests_ops_test_state_CPPFLAGS = $(TEST_CPPFLAGS)
tests_ops_test_state_CFLAGS = $(TEST_CFLAGS)
tests_ops_test_state_LDADD = $(TEST_LDADD)
EXTRA_tests_ops_test_state_DEPENDENCIES = $(TRAIN_TEST_PLUGINS)

tests_ops_test_random_SOURCES = tests/ops/test_random.c \
	tests/ops/train_harness.h plugins/numerics/philox.c \
	plugins/numerics/philox.h
tests_ops_test_random_CPPFLAGS = $(TEST_CPPFLAGS) \
	-I$(top_srcdir)/plugins/numerics
tests_ops_test_random_CFLAGS = $(TEST_CFLAGS)
tests_ops_test_random_LDADD = $(TEST_LDADD)
EXTRA_tests_ops_test_random_DEPENDENCIES = $(TRAIN_TEST_PLUGINS)

tests_ops_test_train_SOURCES = tests/ops/test_train.c \
	tests/ops/train_harness.h
tests_ops_test_train_CPPFLAGS = $(TEST_CPPFLAGS)
tests_ops_test_train_CFLAGS = $(TEST_CFLAGS)
tests_ops_test_train_LDADD = $(TEST_LDADD)
EXTRA_tests_ops_test_train_DEPENDENCIES = $(TRAIN_TEST_PLUGINS)
