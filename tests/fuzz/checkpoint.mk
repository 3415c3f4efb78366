# tests/fuzz/checkpoint.mk: the checkpoint file fuzz target, built the way
# tests/fuzz/local.mk builds the readers' (see tests/fuzz/README.md): the
# checkpoint sources compiled in, next to the core's convenience library.
#
# Under `make check`, replay_checkpoint runs the seed corpus
# (tests/fuzz/corpus/checkpoint/: valid small checkpoints, broken ones, and
# the inputs of findings) once, without libFuzzer.
#
# On request, with clang's libFuzzer:
#   make fuzz-checkpoint                    build READER_FUZZ_DIR/fuzz_checkpoint
#   make fuzz-checkpoint-run FUZZ_TIME=600  fuzz for FUZZ_TIME seconds
#                                           (default 60); new inputs and
#                                           crashes go to READER_FUZZ_DIR
#   make fuzz-checkpoint-smoke              run the seed corpus once (for CI)
CHECKPOINT_FUZZ_SRCS = core/io/safetensors.c core/io/checkpoint.c \
	core/io/checkpoint_ops.c core/io/crc32c.c
EXTRA_DIST += tests/fuzz/corpus/checkpoint

check_PROGRAMS += tests/fuzz/replay_checkpoint
TESTS += tests/fuzz/replay_checkpoint
tests_fuzz_replay_checkpoint_SOURCES = tests/fuzz/replay.c \
	tests/fuzz/fuzz_checkpoint.c
tests_fuzz_replay_checkpoint_CPPFLAGS = $(TEST_CPPFLAGS) \
	-DFUZZ_CORPUS='"$(abs_top_srcdir)/tests/fuzz/corpus/checkpoint"'
tests_fuzz_replay_checkpoint_LDADD = $(TEST_LDADD)

# ---- libFuzzer build (GNU make; compiler and flags from local.mk) ----
$(READER_FUZZ_DIR)/fuzz_checkpoint: tests/fuzz/fuzz_checkpoint.c \
		$(CHECKPOINT_FUZZ_SRCS) core/libweftcore.la config.h
	$(AM_V_GEN)$(MKDIR_P) $(READER_FUZZ_DIR) && \
	echo '*' > $(READER_FUZZ_DIR)/.gitignore && \
	$(READER_FUZZ_CC) $(READER_FUZZ_CFLAGS) -I$(top_builddir) \
		-I$(top_srcdir)/sdk/include -I$(top_srcdir)/core \
		$(JANSSON_CFLAGS) -o $@ $(top_srcdir)/tests/fuzz/fuzz_checkpoint.c \
		$(addprefix $(top_srcdir)/,$(CHECKPOINT_FUZZ_SRCS)) \
		$(FUZZ_CORE_LIBS)

fuzz-checkpoint: $(READER_FUZZ_DIR)/fuzz_checkpoint
fuzz-checkpoint-run: $(READER_FUZZ_DIR)/fuzz_checkpoint
	$(MKDIR_P) $(READER_FUZZ_DIR)/corpus-checkpoint \
		$(READER_FUZZ_DIR)/crashes-checkpoint
	$(READER_FUZZ_DIR)/fuzz_checkpoint -max_total_time=$(or $(FUZZ_TIME),60) \
		-max_len=4096 -timeout=10 -rss_limit_mb=2048 \
		-artifact_prefix=$(READER_FUZZ_DIR)/crashes-checkpoint/ \
		$(READER_FUZZ_DIR)/corpus-checkpoint \
		$(top_srcdir)/tests/fuzz/corpus/checkpoint
fuzz-checkpoint-smoke: $(READER_FUZZ_DIR)/fuzz_checkpoint
	$(READER_FUZZ_DIR)/fuzz_checkpoint -runs=0 \
		$(top_srcdir)/tests/fuzz/corpus/checkpoint
.PHONY: fuzz-checkpoint fuzz-checkpoint-run fuzz-checkpoint-smoke
