# tests/fuzz/onnx.mk: the ONNX importer's fuzz target (fuzz_onnx.c), built
# the way tests/fuzz/local.mk builds the reader targets: the importer's
# sources compiled in (WF_PLUGIN_STATIC) with its generated protobuf-c
# code, next to the core's convenience library; the op plugins come from
# the build tree.
#
# Under `make check`, replay_onnx runs the seed corpus
# (tests/fuzz/corpus/onnx/, written by tests/fuzz/seeds_onnx.py) once,
# built with $(CC) and without libFuzzer.
#
# On request, with clang's libFuzzer:
#   make fuzz-onnx                    build ONNX_FUZZ_DIR/fuzz_onnx
#   make fuzz-onnx-run FUZZ_TIME=600  fuzz for FUZZ_TIME seconds (default 60);
#                                     new inputs and crashes go to
#                                     ONNX_FUZZ_DIR
#   make fuzz-onnx-smoke              run the seed corpus once (for CI)
ONNX_FUZZ_SRCS = $(filter %.c,$(IMPORTER_ONNX_SOURCES))
EXTRA_DIST += tests/fuzz/corpus/onnx tests/fuzz/seeds_onnx.py

check_PROGRAMS += tests/fuzz/replay_onnx
TESTS += tests/fuzz/replay_onnx
tests_fuzz_replay_onnx_SOURCES = tests/fuzz/replay.c tests/fuzz/fuzz_onnx.c \
	$(IMPORTER_ONNX_SOURCES)
nodist_tests_fuzz_replay_onnx_SOURCES = $(IMPORTER_ONNX_PB)
tests_fuzz_replay_onnx_CPPFLAGS = $(TEST_CPPFLAGS) -DWF_PLUGIN_STATIC \
	-I$(top_builddir)/plugins/importers/onnx $(PROTOBUF_C_CFLAGS) \
	$(OPENBLAS_CFLAGS) -I$(top_srcdir)/plugins/common \
	-DFUZZ_CORPUS='"$(abs_top_srcdir)/tests/fuzz/corpus/onnx"'
tests_fuzz_replay_onnx_LDADD = $(TEST_LDADD) $(IMPORTER_ONNX_LIBS)
$(tests_fuzz_replay_onnx_OBJECTS): $(IMPORTER_ONNX_PB)

# ---- libFuzzer build (GNU make; compiler and flags from local.mk) ----
ONNX_FUZZ_DIR = tests/fuzz/onnx.build
$(ONNX_FUZZ_DIR)/fuzz_onnx: tests/fuzz/fuzz_onnx.c \
		$(addprefix $(top_srcdir)/,$(IMPORTER_ONNX_SOURCES)) \
		$(IMPORTER_ONNX_PB) core/libweftcore.la config.h
	$(AM_V_GEN)$(MKDIR_P) $(ONNX_FUZZ_DIR) && \
	echo '*' > $(ONNX_FUZZ_DIR)/.gitignore && \
	$(READER_FUZZ_CC) $(READER_FUZZ_CFLAGS) -DWF_PLUGIN_STATIC \
		-I$(top_builddir) -I$(top_srcdir)/sdk/include -I$(top_srcdir)/core \
		-I$(top_builddir)/plugins/importers/onnx $(PROTOBUF_C_CFLAGS) \
		$(OPENBLAS_CFLAGS) -I$(top_srcdir)/plugins/common \
		-o $@ $(top_srcdir)/tests/fuzz/fuzz_onnx.c \
		$(addprefix $(top_srcdir)/,$(ONNX_FUZZ_SRCS)) \
		plugins/importers/onnx/onnx.pb-c.c -ldl $(FUZZ_CORE_LIBS)

fuzz-onnx: $(ONNX_FUZZ_DIR)/fuzz_onnx
fuzz-onnx-run: $(ONNX_FUZZ_DIR)/fuzz_onnx
	$(MKDIR_P) $(ONNX_FUZZ_DIR)/corpus $(ONNX_FUZZ_DIR)/crashes
	$(ONNX_FUZZ_DIR)/fuzz_onnx -max_total_time=$(or $(FUZZ_TIME),60) \
		-max_len=16384 -timeout=10 -rss_limit_mb=2048 \
		-artifact_prefix=$(ONNX_FUZZ_DIR)/crashes/ \
		$(ONNX_FUZZ_DIR)/corpus $(top_srcdir)/tests/fuzz/corpus/onnx
fuzz-onnx-smoke: $(ONNX_FUZZ_DIR)/fuzz_onnx
	$(ONNX_FUZZ_DIR)/fuzz_onnx -runs=0 $(top_srcdir)/tests/fuzz/corpus/onnx
fuzz-onnx-clean:
	rm -rf $(ONNX_FUZZ_DIR)
.PHONY: fuzz-onnx fuzz-onnx-run fuzz-onnx-smoke fuzz-onnx-clean
