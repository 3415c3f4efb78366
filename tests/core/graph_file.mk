# tests/core/graph_file.mk — graph files (core/io/graph_file.c) with the
# built-in plugins of the build tree and a test plugin registered
# in-process. The test edits files at the protobuf level, so it includes
# the generated core/io/graph.pb-c.h and links protobuf-c.
check_PROGRAMS += tests/core/test_graph_file
TESTS += tests/core/test_graph_file
tests_core_test_graph_file_SOURCES = tests/core/test_graph_file.c
tests_core_test_graph_file_CPPFLAGS = $(TEST_CPPFLAGS) \
	-I$(top_builddir)/core $(PROTOBUF_C_CFLAGS)
tests_core_test_graph_file_CFLAGS = $(TEST_CFLAGS)
tests_core_test_graph_file_LDADD = $(TEST_LDADD) $(PROTOBUF_C_LIBS)
$(tests_core_test_graph_file_OBJECTS): $(GRAPH_FILE_PB)

# The graph files test_graph_cli.sh (tests/tools) looks at: a training
# graph built with the layers API, written by this helper.
check_PROGRAMS += tests/tools/test_graph_cli_fixture
tests_tools_test_graph_cli_fixture_SOURCES = \
	tests/tools/test_graph_cli_fixture.c
tests_tools_test_graph_cli_fixture_LDADD = core/libweft.la
EXTRA_DIST += tests/tools/test_graph_cli.sh
