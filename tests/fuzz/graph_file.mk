# tests/fuzz/graph_file.mk: the graph-file loader's fuzz target
# (fuzz_graph_file.c), built the way tests/fuzz/local.mk builds the reader
# targets, with its own small op set registered in the target instead of a
# plugin (see the comment at the top of fuzz_graph_file.c).
#
# Under `make check`, replay_graph_file runs the seed corpus
# (tests/fuzz/corpus/graph_file/, crash reproducers included) once, built
# with $(CC) and without libFuzzer. The seed-* files are written by
#   WEFT_FUZZ_WRITE_SEEDS=tests/fuzz/corpus/graph_file \
#     tests/fuzz/replay_graph_file
#
# On request, with clang's libFuzzer:
#   make fuzz-graph_file                    build GRAPH_FUZZ_DIR/fuzz_graph_file
#   make fuzz-graph_file-run FUZZ_TIME=600  fuzz for FUZZ_TIME seconds
#                                           (default 60); new inputs and
#                                           crashes go to GRAPH_FUZZ_DIR
#   make fuzz-graph_file-smoke              run the seed corpus once (for CI)
# The code under test is the core itself, so the loader and what it drives
# (graph_file.c, the generated message code, graph.c, attr.c, strmap.c,
# tensor.c) are compiled into the target with the fuzzer's instrumentation;
# the rest of the core comes from its convenience library.
EXTRA_DIST += tests/fuzz/corpus/graph_file

check_PROGRAMS += tests/fuzz/replay_graph_file
TESTS += tests/fuzz/replay_graph_file
tests_fuzz_replay_graph_file_SOURCES = tests/fuzz/replay.c \
	tests/fuzz/fuzz_graph_file.c
tests_fuzz_replay_graph_file_CPPFLAGS = $(TEST_CPPFLAGS) \
	-DFUZZ_CORPUS='"$(abs_top_srcdir)/tests/fuzz/corpus/graph_file"'
tests_fuzz_replay_graph_file_LDADD = $(TEST_LDADD)

# ---- libFuzzer build (GNU make; compiler and flags from local.mk) ----
GRAPH_FUZZ_DIR = tests/fuzz/graph_file.build
GRAPH_FUZZ_CORE = core/io/graph_file.c core/graph/graph.c core/graph/attr.c core/base/strmap.c \
	core/graph/tensor.c

$(GRAPH_FUZZ_DIR)/fuzz_graph_file: tests/fuzz/fuzz_graph_file.c \
		$(GRAPH_FUZZ_CORE) $(GRAPH_FILE_PB) core/libweftcore.la config.h
	$(AM_V_GEN)$(MKDIR_P) $(GRAPH_FUZZ_DIR) && \
	echo '*' > $(GRAPH_FUZZ_DIR)/.gitignore && \
	$(READER_FUZZ_CC) $(READER_FUZZ_CFLAGS) -I$(top_builddir) \
		-I$(top_srcdir)/sdk/include -I$(top_srcdir)/core \
		-I$(top_builddir)/core $(PROTOBUF_C_CFLAGS) -o $@ \
		$(top_srcdir)/tests/fuzz/fuzz_graph_file.c \
		$(addprefix $(top_srcdir)/,$(GRAPH_FUZZ_CORE)) \
		core/io/graph.pb-c.c \
		core/.libs/libweftcore.a $(LTDL_LIBS) $(INIH_LIBS) $(HWLOC_LIBS) \
		$(JANSSON_LIBS) $(PROTOBUF_C_LIBS) $(ZLIB_LIBS) $(PTHREAD_LIBS) \
		$(LIBM)

fuzz-graph_file: $(GRAPH_FUZZ_DIR)/fuzz_graph_file
fuzz-graph_file-run: $(GRAPH_FUZZ_DIR)/fuzz_graph_file
	$(MKDIR_P) $(GRAPH_FUZZ_DIR)/corpus $(GRAPH_FUZZ_DIR)/crashes
	$(GRAPH_FUZZ_DIR)/fuzz_graph_file -max_total_time=$(or $(FUZZ_TIME),60) \
		-max_len=16384 -timeout=10 -rss_limit_mb=2048 \
		-artifact_prefix=$(GRAPH_FUZZ_DIR)/crashes/ \
		$(GRAPH_FUZZ_DIR)/corpus $(top_srcdir)/tests/fuzz/corpus/graph_file
fuzz-graph_file-smoke: $(GRAPH_FUZZ_DIR)/fuzz_graph_file
	$(GRAPH_FUZZ_DIR)/fuzz_graph_file -runs=0 \
		$(top_srcdir)/tests/fuzz/corpus/graph_file
fuzz-graph_file-clean:
	rm -rf $(GRAPH_FUZZ_DIR)
.PHONY: fuzz-graph_file fuzz-graph_file-run fuzz-graph_file-smoke \
	fuzz-graph_file-clean
