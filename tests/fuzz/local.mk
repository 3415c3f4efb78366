# tests/fuzz/local.mk: fuzz targets for the idx, csv and fixed readers.
#
# Under `make check`, replay_<reader> runs each target's seed corpus
# (tests/fuzz/corpus/<reader>/, crash reproducers included) once, built
# with $(CC) and without libFuzzer, so the targets keep compiling and every
# corpus file keeps passing.
#
# On request, with clang's libFuzzer (Debian: clang, libclang-rt-14-dev):
#   make fuzz-readers                   build all three into READER_FUZZ_DIR
#   make fuzz-idx                       build one (also fuzz-csv, fuzz-fixed)
#   make fuzz-idx-run FUZZ_TIME=600     fuzz for FUZZ_TIME seconds (default
#                                       60) from the seed corpus; new inputs
#                                       and crashes go to READER_FUZZ_DIR
#   make fuzz-readers-smoke             run each seed corpus once (for CI)
# The targets compile the reader's sources in (WF_PLUGIN_STATIC) and link
# the core's convenience library for the real host table and registry, so
# configure the tree without sanitizer flags of its own (the fuzzer brings
# ASan and UBSan). The tfrecord target has its own rules (tfrecord.mk).
READER_FUZZ_NAMES = idx csv fixed
# What every libFuzzer build links: the core's convenience library (built
# by `make`) and the libraries it needs.
FUZZ_CORE_LIBS = core/.libs/libweftcore.a $(LTDL_LIBS) $(INIH_LIBS) \
	$(HWLOC_LIBS) $(JANSSON_LIBS) $(PROTOBUF_C_LIBS) $(ZLIB_LIBS) \
	$(PTHREAD_LIBS) $(LIBM)
READER_FUZZ_idx_SRCS = plugins/readers/idx/idx.c \
	plugins/readers/idx/idx_stream.c plugins/readers/idx/idx_stream.h
READER_FUZZ_csv_SRCS = plugins/readers/csv/csv.c \
	plugins/readers/csv/csv_scan.c plugins/readers/csv/csv_scan.h
READER_FUZZ_fixed_SRCS = plugins/readers/fixed/fixed.c

check_PROGRAMS += tests/fuzz/replay_idx tests/fuzz/replay_csv \
	tests/fuzz/replay_fixed
TESTS += tests/fuzz/replay_idx tests/fuzz/replay_csv tests/fuzz/replay_fixed
READER_FUZZ_CPPFLAGS = $(TEST_CPPFLAGS) -DWF_PLUGIN_STATIC

tests_fuzz_replay_idx_SOURCES = tests/fuzz/replay.c tests/fuzz/fuzz_idx.c \
	tests/fuzz/fuzz_common.h $(READER_FUZZ_idx_SRCS)
tests_fuzz_replay_idx_CPPFLAGS = $(READER_FUZZ_CPPFLAGS) $(ZLIB_CFLAGS) \
	-DFUZZ_CORPUS='"$(abs_top_srcdir)/tests/fuzz/corpus/idx"'
tests_fuzz_replay_idx_LDADD = $(TEST_LDADD) $(ZLIB_LIBS)

tests_fuzz_replay_csv_SOURCES = tests/fuzz/replay.c tests/fuzz/fuzz_csv.c \
	tests/fuzz/fuzz_common.h $(READER_FUZZ_csv_SRCS)
tests_fuzz_replay_csv_CPPFLAGS = $(READER_FUZZ_CPPFLAGS) \
	-DFUZZ_CORPUS='"$(abs_top_srcdir)/tests/fuzz/corpus/csv"'
tests_fuzz_replay_csv_LDADD = $(TEST_LDADD)

tests_fuzz_replay_fixed_SOURCES = tests/fuzz/replay.c \
	tests/fuzz/fuzz_fixed.c tests/fuzz/fuzz_common.h \
	$(READER_FUZZ_fixed_SRCS)
tests_fuzz_replay_fixed_CPPFLAGS = $(READER_FUZZ_CPPFLAGS) \
	-DFUZZ_CORPUS='"$(abs_top_srcdir)/tests/fuzz/corpus/fixed"'
tests_fuzz_replay_fixed_LDADD = $(TEST_LDADD)

EXTRA_DIST += tests/fuzz/README.md tests/fuzz/seeds.py \
	tests/fuzz/corpus/idx tests/fuzz/corpus/csv tests/fuzz/corpus/fixed

# ---- libFuzzer builds (GNU make) ----
READER_FUZZ_CC = clang
READER_FUZZ_CFLAGS = -g -O1 -fno-omit-frame-pointer \
	-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
READER_FUZZ_DIR = tests/fuzz/readers.build
READER_FUZZ_BINS = $(READER_FUZZ_NAMES:%=$(READER_FUZZ_DIR)/fuzz_%)

$(READER_FUZZ_DIR)/fuzz_idx: $(READER_FUZZ_idx_SRCS)
$(READER_FUZZ_DIR)/fuzz_csv: $(READER_FUZZ_csv_SRCS)
$(READER_FUZZ_DIR)/fuzz_fixed: $(READER_FUZZ_fixed_SRCS)
$(READER_FUZZ_BINS): $(READER_FUZZ_DIR)/fuzz_%: tests/fuzz/fuzz_%.c \
		tests/fuzz/fuzz_common.h core/libweftcore.la config.h
	$(AM_V_GEN)$(MKDIR_P) $(READER_FUZZ_DIR) && \
	echo '*' > $(READER_FUZZ_DIR)/.gitignore && \
	$(READER_FUZZ_CC) $(READER_FUZZ_CFLAGS) -DWF_PLUGIN_STATIC \
		-I$(top_builddir) -I$(top_srcdir)/sdk/include -I$(top_srcdir)/core \
		$(ZLIB_CFLAGS) -o $@ $(top_srcdir)/tests/fuzz/fuzz_$*.c \
		$(addprefix $(top_srcdir)/,$(filter %.c,$(READER_FUZZ_$*_SRCS))) \
		$(FUZZ_CORE_LIBS)

fuzz-readers: $(READER_FUZZ_BINS)
$(READER_FUZZ_NAMES:%=fuzz-%): fuzz-%: $(READER_FUZZ_DIR)/fuzz_%
$(READER_FUZZ_NAMES:%=fuzz-%-run): fuzz-%-run: $(READER_FUZZ_DIR)/fuzz_%
	$(MKDIR_P) $(READER_FUZZ_DIR)/corpus-$* $(READER_FUZZ_DIR)/crashes-$*
	$(READER_FUZZ_DIR)/fuzz_$* -max_total_time=$(or $(FUZZ_TIME),60) \
		-max_len=8192 -timeout=10 -rss_limit_mb=2048 \
		-artifact_prefix=$(READER_FUZZ_DIR)/crashes-$*/ \
		$(READER_FUZZ_DIR)/corpus-$* $(top_srcdir)/tests/fuzz/corpus/$*
fuzz-readers-smoke: $(READER_FUZZ_BINS)
	for t in $(READER_FUZZ_NAMES); do \
		$(READER_FUZZ_DIR)/fuzz_$$t -runs=0 \
			$(top_srcdir)/tests/fuzz/corpus/$$t || exit 1; \
	done
fuzz-readers-clean:
	rm -rf $(READER_FUZZ_DIR)
.PHONY: fuzz-readers fuzz-readers-smoke fuzz-readers-clean \
	$(READER_FUZZ_NAMES:%=fuzz-%) $(READER_FUZZ_NAMES:%=fuzz-%-run)
