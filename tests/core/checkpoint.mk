# tests/core/checkpoint.mk: checkpoints. test_safetensors checks the file
# format (core/io/safetensors.c) through the file API of weft/checkpoint.h;
# test_checkpoint checks sessions (variables, step counter, an iterator's
# position), directories of checkpoints, the Save and Restore ops, and a
# saver killed at random moments. It loads the state, array and CPU plugins
# and the csv reader from the build tree. ckpt_fixture writes checkpoint
# files for tests/tools/test_ckpt.sh.
CHECKPOINT_TEST_PLUGINS = plugins/ops/state/ops_state.la \
	plugins/ops/array/ops_array.la plugins/devices/cpu/device_cpu.la \
	plugins/readers/csv/reader_csv.la

check_PROGRAMS += tests/core/test_safetensors tests/core/test_checkpoint \
	tests/core/ckpt_fixture
TESTS += tests/core/test_safetensors tests/core/test_checkpoint
EXTRA_DIST += tests/tools/test_ckpt.sh

tests_core_test_safetensors_SOURCES = tests/core/test_safetensors.c \
	tests/core/checkpoint_harness.h
tests_core_test_safetensors_CPPFLAGS = $(TEST_CPPFLAGS)
tests_core_test_safetensors_CFLAGS = $(TEST_CFLAGS)
tests_core_test_safetensors_LDADD = $(TEST_LDADD)

tests_core_test_checkpoint_SOURCES = tests/core/test_checkpoint.c \
	tests/core/checkpoint_harness.h
tests_core_test_checkpoint_CPPFLAGS = $(TEST_CPPFLAGS) \
	-I$(top_srcdir)/tests/ops
tests_core_test_checkpoint_CFLAGS = $(TEST_CFLAGS)
tests_core_test_checkpoint_LDADD = $(TEST_LDADD)
EXTRA_tests_core_test_checkpoint_DEPENDENCIES = $(CHECKPOINT_TEST_PLUGINS)

tests_core_ckpt_fixture_SOURCES = tests/core/ckpt_fixture.c
tests_core_ckpt_fixture_CPPFLAGS = $(TEST_CPPFLAGS)
tests_core_ckpt_fixture_LDADD = $(TEST_LDADD)
