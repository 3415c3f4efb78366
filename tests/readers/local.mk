# tests/readers: the reader plugins (idx, csv, fixed) through the real
# loader and the registry, driven directly through their wf_reader_def
# (reader_harness.h). The modules are part of `all`, so `make check` has
# built them; the tests write their files into a temporary directory.
READER_TEST_PLUGINS = plugins/readers/idx/reader_idx.la \
	plugins/readers/csv/reader_csv.la plugins/readers/fixed/reader_fixed.la

check_PROGRAMS += tests/readers/test_idx tests/readers/test_csv \
	tests/readers/test_fixed
TESTS += tests/readers/test_idx tests/readers/test_csv \
	tests/readers/test_fixed

tests_readers_test_idx_SOURCES = tests/readers/test_idx.c \
	tests/readers/reader_harness.h
tests_readers_test_idx_CPPFLAGS = $(TEST_CPPFLAGS) $(ZLIB_CFLAGS)
tests_readers_test_idx_CFLAGS = $(TEST_CFLAGS)
tests_readers_test_idx_LDADD = $(TEST_LDADD) $(ZLIB_LIBS)
EXTRA_tests_readers_test_idx_DEPENDENCIES = $(READER_TEST_PLUGINS)

tests_readers_test_csv_SOURCES = tests/readers/test_csv.c \
	tests/readers/reader_harness.h
tests_readers_test_csv_CPPFLAGS = $(TEST_CPPFLAGS) $(ZLIB_CFLAGS)
tests_readers_test_csv_CFLAGS = $(TEST_CFLAGS)
tests_readers_test_csv_LDADD = $(TEST_LDADD) $(ZLIB_LIBS)
EXTRA_tests_readers_test_csv_DEPENDENCIES = $(READER_TEST_PLUGINS)

tests_readers_test_fixed_SOURCES = tests/readers/test_fixed.c \
	tests/readers/reader_harness.h
tests_readers_test_fixed_CPPFLAGS = $(TEST_CPPFLAGS) $(ZLIB_CFLAGS)
tests_readers_test_fixed_CFLAGS = $(TEST_CFLAGS)
tests_readers_test_fixed_LDADD = $(TEST_LDADD) $(ZLIB_LIBS)
EXTRA_tests_readers_test_fixed_DEPENDENCIES = $(READER_TEST_PLUGINS)
