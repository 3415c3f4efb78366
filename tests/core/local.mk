# tests/core: cmocka tests of the core, one program per source file.
core_tests = \
	tests/core/test_alloc \
	tests/core/test_file_io \
	tests/core/test_attr \
	tests/core/test_graph \
	tests/core/test_registry \
	tests/core/test_shape \
	tests/core/test_status \
	tests/core/test_strmap \
	tests/core/test_tensor \
	tests/core/test_variables

check_PROGRAMS += $(core_tests)
TESTS += $(core_tests)

tests_core_test_alloc_SOURCES = tests/core/test_alloc.c
tests_core_test_alloc_CPPFLAGS = $(TEST_CPPFLAGS)
tests_core_test_alloc_CFLAGS = $(TEST_CFLAGS)
tests_core_test_alloc_LDADD = $(TEST_LDADD)

tests_core_test_file_io_SOURCES = tests/core/test_file_io.c
tests_core_test_file_io_CPPFLAGS = $(TEST_CPPFLAGS)
tests_core_test_file_io_CFLAGS = $(TEST_CFLAGS)
tests_core_test_file_io_LDADD = $(TEST_LDADD)

tests_core_test_attr_SOURCES = tests/core/test_attr.c
tests_core_test_attr_CPPFLAGS = $(TEST_CPPFLAGS)
tests_core_test_attr_CFLAGS = $(TEST_CFLAGS)
tests_core_test_attr_LDADD = $(TEST_LDADD)

tests_core_test_graph_SOURCES = tests/core/test_graph.c
tests_core_test_graph_CPPFLAGS = $(TEST_CPPFLAGS)
tests_core_test_graph_CFLAGS = $(TEST_CFLAGS)
tests_core_test_graph_LDADD = $(TEST_LDADD)

tests_core_test_registry_SOURCES = tests/core/test_registry.c
tests_core_test_registry_CPPFLAGS = $(TEST_CPPFLAGS)
tests_core_test_registry_CFLAGS = $(TEST_CFLAGS)
tests_core_test_registry_LDADD = $(TEST_LDADD)

tests_core_test_shape_SOURCES = tests/core/test_shape.c
tests_core_test_shape_CPPFLAGS = $(TEST_CPPFLAGS)
tests_core_test_shape_CFLAGS = $(TEST_CFLAGS)
tests_core_test_shape_LDADD = $(TEST_LDADD)

tests_core_test_status_SOURCES = tests/core/test_status.c
tests_core_test_status_CPPFLAGS = $(TEST_CPPFLAGS)
tests_core_test_status_CFLAGS = $(TEST_CFLAGS)
tests_core_test_status_LDADD = $(TEST_LDADD)

tests_core_test_strmap_SOURCES = tests/core/test_strmap.c
tests_core_test_strmap_CPPFLAGS = $(TEST_CPPFLAGS)
tests_core_test_strmap_CFLAGS = $(TEST_CFLAGS)
tests_core_test_strmap_LDADD = $(TEST_LDADD)

tests_core_test_tensor_SOURCES = tests/core/test_tensor.c
tests_core_test_tensor_CPPFLAGS = $(TEST_CPPFLAGS)
tests_core_test_tensor_CFLAGS = $(TEST_CFLAGS)
tests_core_test_tensor_LDADD = $(TEST_LDADD)

tests_core_test_variables_SOURCES = tests/core/test_variables.c
tests_core_test_variables_CPPFLAGS = $(TEST_CPPFLAGS)
tests_core_test_variables_CFLAGS = $(TEST_CFLAGS)
tests_core_test_variables_LDADD = $(TEST_LDADD)

# The core's rooms depend in one direction only (core/local.mk).
TESTS += tests/core/check_rooms.sh
EXTRA_DIST += tests/core/check_rooms.sh
