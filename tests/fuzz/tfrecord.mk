# tests/fuzz/tfrecord.mk: the tfrecord reader's fuzz target, built the way
# tests/fuzz/local.mk builds the others (see tests/fuzz/README.md): the
# reader's sources compiled in (WF_PLUGIN_STATIC) next to the core's
# convenience library, the shared driver in fuzz_common.h.
#
# Under `make check`, replay_tfrecord runs the seed corpus
# (tests/fuzz/corpus/tfrecord/, written by
# tests/readers/fixtures/tfrecord/gen_tfrecord.py) once, without libFuzzer.
#
# On request, with clang's libFuzzer:
#   make fuzz-tfrecord                    build READER_FUZZ_DIR/fuzz_tfrecord
#   make fuzz-tfrecord-run FUZZ_TIME=600  fuzz for FUZZ_TIME seconds (default
#                                         60); new inputs and crashes go to
#                                         READER_FUZZ_DIR
#   make fuzz-tfrecord-smoke              run the seed corpus once (for CI)
TFRECORD_FUZZ_SRCS = \
	plugins/readers/tfrecord/tfrecord.h \
	plugins/readers/tfrecord/tfr_crc32c.c \
	plugins/readers/tfrecord/tfr_crc32c.h \
	plugins/readers/tfrecord/stream.c \
	plugins/readers/tfrecord/record.c \
	plugins/readers/tfrecord/example.c \
	plugins/readers/tfrecord/reader.c
EXTRA_DIST += tests/fuzz/corpus/tfrecord

check_PROGRAMS += tests/fuzz/replay_tfrecord
TESTS += tests/fuzz/replay_tfrecord
tests_fuzz_replay_tfrecord_SOURCES = tests/fuzz/replay.c \
	tests/fuzz/fuzz_tfrecord.c tests/fuzz/fuzz_common.h \
	$(TFRECORD_FUZZ_SRCS)
nodist_tests_fuzz_replay_tfrecord_SOURCES = $(TFRECORD_PB)
tests_fuzz_replay_tfrecord_CPPFLAGS = $(TEST_CPPFLAGS) -DWF_PLUGIN_STATIC \
	-I$(top_srcdir)/plugins/readers/tfrecord \
	-I$(top_builddir)/plugins/readers/tfrecord \
	$(ZLIB_CFLAGS) $(PROTOBUF_C_CFLAGS) \
	-DFUZZ_CORPUS='"$(abs_top_srcdir)/tests/fuzz/corpus/tfrecord"'
tests_fuzz_replay_tfrecord_LDADD = $(TEST_LDADD) $(PROTOBUF_C_LIBS) \
	$(ZLIB_LIBS)
$(tests_fuzz_replay_tfrecord_OBJECTS): $(TFRECORD_PB)

# ---- libFuzzer build (GNU make; compiler and flags from local.mk) ----
$(READER_FUZZ_DIR)/fuzz_tfrecord: tests/fuzz/fuzz_tfrecord.c \
		tests/fuzz/fuzz_common.h $(TFRECORD_FUZZ_SRCS) \
		plugins/readers/tfrecord/example.proto core/libweftcore.la config.h
	$(AM_V_GEN)$(MKDIR_P) $(READER_FUZZ_DIR)/tfrecord-pb && \
	echo '*' > $(READER_FUZZ_DIR)/.gitignore && \
	$(PROTOC_C) --proto_path=$(top_srcdir)/plugins/readers/tfrecord \
		--c_out=$(READER_FUZZ_DIR)/tfrecord-pb \
		$(top_srcdir)/plugins/readers/tfrecord/example.proto && \
	$(READER_FUZZ_CC) $(READER_FUZZ_CFLAGS) -DWF_PLUGIN_STATIC \
		-I$(READER_FUZZ_DIR)/tfrecord-pb -I$(top_builddir) \
		-I$(top_srcdir)/sdk/include -I$(top_srcdir)/core \
		-I$(top_srcdir)/plugins/readers/tfrecord \
		$(ZLIB_CFLAGS) $(PROTOBUF_C_CFLAGS) -o $@ \
		$(top_srcdir)/tests/fuzz/fuzz_tfrecord.c \
		$(addprefix $(top_srcdir)/,$(filter %.c,$(TFRECORD_FUZZ_SRCS))) \
		$(READER_FUZZ_DIR)/tfrecord-pb/example.pb-c.c \
		$(FUZZ_CORE_LIBS)

fuzz-tfrecord: $(READER_FUZZ_DIR)/fuzz_tfrecord
fuzz-tfrecord-run: $(READER_FUZZ_DIR)/fuzz_tfrecord
	$(MKDIR_P) $(READER_FUZZ_DIR)/corpus-tfrecord \
		$(READER_FUZZ_DIR)/crashes-tfrecord
	$(READER_FUZZ_DIR)/fuzz_tfrecord -max_total_time=$(or $(FUZZ_TIME),60) \
		-max_len=8192 -timeout=10 -rss_limit_mb=2048 \
		-artifact_prefix=$(READER_FUZZ_DIR)/crashes-tfrecord/ \
		$(READER_FUZZ_DIR)/corpus-tfrecord \
		$(top_srcdir)/tests/fuzz/corpus/tfrecord
fuzz-tfrecord-smoke: $(READER_FUZZ_DIR)/fuzz_tfrecord
	$(READER_FUZZ_DIR)/fuzz_tfrecord -runs=0 \
		$(top_srcdir)/tests/fuzz/corpus/tfrecord
.PHONY: fuzz-tfrecord fuzz-tfrecord-run fuzz-tfrecord-smoke
