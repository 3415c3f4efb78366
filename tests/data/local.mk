# tests/data: the input pipeline (core/data/dataset.c, core/data/iterator.c and the
# stages beside them), the IteratorGetNext op and `weft data`, on the files
# of a test reader. The reader is built as a plugin module (for `weft data`)
# and linked into the cmocka programs, which register it in-process so that
# they can count its calls.
check_LTLIBRARIES += tests/data/test_reader.la
tests_data_test_reader_la_SOURCES = tests/data/test_reader.c \
	tests/data/test_reader.h
tests_data_test_reader_la_CPPFLAGS = $(PLUGIN_CPPFLAGS)
tests_data_test_reader_la_LDFLAGS = $(TEST_PLUGIN_LDFLAGS)

data_tests = \
	tests/data/test_dataset \
	tests/data/test_iterator \
	tests/data/test_data_map \
	tests/data/test_data_ops
check_PROGRAMS += $(data_tests)
TESTS += $(data_tests) tests/data/test_data_cli.sh
EXTRA_DIST += tests/data/test_data_cli.sh
DATA_TEST_SOURCES = tests/data/data_harness.h tests/data/test_reader.c \
	tests/data/test_reader.h

tests_data_test_dataset_SOURCES = tests/data/test_dataset.c \
	$(DATA_TEST_SOURCES)
tests_data_test_dataset_CPPFLAGS = $(TEST_CPPFLAGS)
tests_data_test_dataset_CFLAGS = $(TEST_CFLAGS)
tests_data_test_dataset_LDADD = $(TEST_LDADD)

tests_data_test_iterator_SOURCES = tests/data/test_iterator.c \
	$(DATA_TEST_SOURCES)
tests_data_test_iterator_CPPFLAGS = $(TEST_CPPFLAGS)
tests_data_test_iterator_CFLAGS = $(TEST_CFLAGS)
tests_data_test_iterator_LDADD = $(TEST_LDADD)

tests_data_test_data_map_SOURCES = tests/data/test_data_map.c \
	$(DATA_TEST_SOURCES)
tests_data_test_data_map_CPPFLAGS = $(TEST_CPPFLAGS)
tests_data_test_data_map_CFLAGS = $(TEST_CFLAGS)
tests_data_test_data_map_LDADD = $(TEST_LDADD)

tests_data_test_data_ops_SOURCES = tests/data/test_data_ops.c \
	$(DATA_TEST_SOURCES)
tests_data_test_data_ops_CPPFLAGS = $(TEST_CPPFLAGS)
tests_data_test_data_ops_CFLAGS = $(TEST_CFLAGS)
tests_data_test_data_ops_LDADD = $(TEST_LDADD)
