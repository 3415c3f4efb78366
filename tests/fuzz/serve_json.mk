# tests/fuzz/serve_json.mk: the model server's JSON request decoder
# (lib/serve/codec.c, fuzz_serve_json.c), built the way tests/fuzz/local.mk
# builds the reader targets (see tests/fuzz/README.md): the codec and its
# JSON reader (json_read.c) need nothing but the core, so the target and
# its replay build with or without libmicrohttpd.
#
# Under `make check`, replay_serve_json runs the seed corpus
# (tests/fuzz/corpus/serve_json/) once, without libFuzzer.
#
# On request, with clang's libFuzzer:
#   make fuzz-serve_json                    build READER_FUZZ_DIR/fuzz_serve_json
#   make fuzz-serve_json-run FUZZ_TIME=600  fuzz for FUZZ_TIME seconds
EXTRA_DIST += tests/fuzz/corpus/serve_json

check_PROGRAMS += tests/fuzz/replay_serve_json
TESTS += tests/fuzz/replay_serve_json
tests_fuzz_replay_serve_json_SOURCES = tests/fuzz/replay.c \
	tests/fuzz/fuzz_serve_json.c lib/serve/codec.c lib/serve/codec.h \
	lib/serve/json_read.c lib/serve/json_read.h
tests_fuzz_replay_serve_json_CPPFLAGS = $(TEST_CPPFLAGS) \
	-DFUZZ_CORPUS='"$(abs_top_srcdir)/tests/fuzz/corpus/serve_json"'
tests_fuzz_replay_serve_json_LDADD = $(TEST_LDADD)

# ---- libFuzzer build (GNU make; compiler and flags from local.mk) ----
$(READER_FUZZ_DIR)/fuzz_serve_json: tests/fuzz/fuzz_serve_json.c \
		lib/serve/codec.c lib/serve/codec.h lib/serve/json_read.c \
		lib/serve/json_read.h core/libweftcore.la config.h
	$(AM_V_GEN)$(MKDIR_P) $(READER_FUZZ_DIR) && \
	echo '*' > $(READER_FUZZ_DIR)/.gitignore && \
	$(READER_FUZZ_CC) $(READER_FUZZ_CFLAGS) -I$(top_builddir) \
		-I$(top_srcdir)/sdk/include -o $@ \
		$(top_srcdir)/tests/fuzz/fuzz_serve_json.c \
		$(top_srcdir)/lib/serve/codec.c \
		$(top_srcdir)/lib/serve/json_read.c $(FUZZ_CORE_LIBS)

fuzz-serve_json: $(READER_FUZZ_DIR)/fuzz_serve_json
fuzz-serve_json-run: $(READER_FUZZ_DIR)/fuzz_serve_json
	$(MKDIR_P) $(READER_FUZZ_DIR)/corpus-serve_json \
		$(READER_FUZZ_DIR)/crashes-serve_json
	$(READER_FUZZ_DIR)/fuzz_serve_json \
		-max_total_time=$(or $(FUZZ_TIME),60) \
		-max_len=8192 -timeout=10 -rss_limit_mb=2048 \
		-artifact_prefix=$(READER_FUZZ_DIR)/crashes-serve_json/ \
		$(READER_FUZZ_DIR)/corpus-serve_json \
		$(top_srcdir)/tests/fuzz/corpus/serve_json
fuzz-serve_json-smoke: $(READER_FUZZ_DIR)/fuzz_serve_json
	$(READER_FUZZ_DIR)/fuzz_serve_json -runs=0 \
		$(top_srcdir)/tests/fuzz/corpus/serve_json
.PHONY: fuzz-serve_json fuzz-serve_json-run fuzz-serve_json-smoke
