# tests/fuzz/npy.mk: the .npy fuzz target (fuzz_npy.c), built the way
# tests/fuzz/local.mk builds the reader targets (see tests/fuzz/README.md).
# core/io/npy.c is compiled into the target, so the fuzzer's coverage and
# sanitizers reach it; the rest of the core comes from its convenience
# library.
#
# Under `make check`, replay_npy runs the seed corpus (tests/fuzz/corpus/npy/,
# written by tests/core/fixtures/npy/gen_npy.py, crash reproducers
# included) once, without libFuzzer.
#
# On request, with clang's libFuzzer:
#   make fuzz-npy                    build READER_FUZZ_DIR/fuzz_npy
#   make fuzz-npy-run FUZZ_TIME=600  fuzz for FUZZ_TIME seconds (default 60);
#                                    new inputs and crashes go to
#                                    READER_FUZZ_DIR
#   make fuzz-npy-smoke              run the seed corpus once (for CI)
EXTRA_DIST += tests/fuzz/corpus/npy

check_PROGRAMS += tests/fuzz/replay_npy
TESTS += tests/fuzz/replay_npy
tests_fuzz_replay_npy_SOURCES = tests/fuzz/replay.c tests/fuzz/fuzz_npy.c
tests_fuzz_replay_npy_CPPFLAGS = $(TEST_CPPFLAGS) \
	-DFUZZ_CORPUS='"$(abs_top_srcdir)/tests/fuzz/corpus/npy"'
tests_fuzz_replay_npy_LDADD = $(TEST_LDADD)

# ---- libFuzzer build (GNU make; compiler and flags from local.mk) ----
$(READER_FUZZ_DIR)/fuzz_npy: tests/fuzz/fuzz_npy.c core/io/npy.c \
		core/libweftcore.la config.h
	$(AM_V_GEN)$(MKDIR_P) $(READER_FUZZ_DIR) && \
	echo '*' > $(READER_FUZZ_DIR)/.gitignore && \
	$(READER_FUZZ_CC) $(READER_FUZZ_CFLAGS) -I$(top_builddir) \
		-I$(top_srcdir)/sdk/include -I$(top_srcdir)/core -o $@ \
		$(top_srcdir)/tests/fuzz/fuzz_npy.c $(top_srcdir)/core/io/npy.c \
		$(FUZZ_CORE_LIBS)

fuzz-npy: $(READER_FUZZ_DIR)/fuzz_npy
fuzz-npy-run: $(READER_FUZZ_DIR)/fuzz_npy
	$(MKDIR_P) $(READER_FUZZ_DIR)/corpus-npy $(READER_FUZZ_DIR)/crashes-npy
	$(READER_FUZZ_DIR)/fuzz_npy -max_total_time=$(or $(FUZZ_TIME),60) \
		-max_len=8192 -timeout=10 -rss_limit_mb=2048 \
		-artifact_prefix=$(READER_FUZZ_DIR)/crashes-npy/ \
		$(READER_FUZZ_DIR)/corpus-npy $(top_srcdir)/tests/fuzz/corpus/npy
fuzz-npy-smoke: $(READER_FUZZ_DIR)/fuzz_npy
	$(READER_FUZZ_DIR)/fuzz_npy -runs=0 $(top_srcdir)/tests/fuzz/corpus/npy
.PHONY: fuzz-npy fuzz-npy-run fuzz-npy-smoke
