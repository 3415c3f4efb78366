# tests/core/npy.mk: .npy files (core/io/npy.c). The fixtures were written by
# numpy through tests/core/fixtures/npy/gen_npy.py, which the test also runs
# (when numpy is installed) to check that numpy reads what weft writes.
check_PROGRAMS += tests/core/test_npy
TESTS += tests/core/test_npy
tests_core_test_npy_SOURCES = tests/core/test_npy.c
tests_core_test_npy_CPPFLAGS = $(TEST_CPPFLAGS)
tests_core_test_npy_CFLAGS = $(TEST_CFLAGS)
tests_core_test_npy_LDADD = $(TEST_LDADD)
EXTRA_DIST += tests/core/fixtures/npy
