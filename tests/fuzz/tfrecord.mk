# tests/fuzz/tfrecord.mk: the tfrecord reader's libFuzzer target. Built
# only on request, with clang, outside the automake programs (the rest of
# the tree is built with $(CC) and without the fuzzer runtime):
#   make fuzz-tfrecord                 build tests/fuzz/tfrecord.build/fuzz_tfrecord
#   make fuzz-tfrecord-run FUZZ_TIME=600
#                                      fuzz for FUZZ_TIME seconds from the seed
#                                      corpus (tests/fuzz/corpus/tfrecord); new
#                                      inputs and crashes go to the build directory
#   make fuzz-tfrecord-smoke           replay the seed corpus once (for CI)
# The target links the plugin's sources and its own host table: no libweft.
TFRECORD_FUZZ_SEEDS = \
	tests/fuzz/corpus/tfrecord/missing_feature.tfrecord \
	tests/fuzz/corpus/tfrecord/multi.tfrecord.gz \
	tests/fuzz/corpus/tfrecord/raw.tfrecord \
	tests/fuzz/corpus/tfrecord/unpacked.tfrecord \
	tests/fuzz/corpus/tfrecord/valid.tfrecord \
	tests/fuzz/corpus/tfrecord/valid.tfrecord.gz \
	tests/fuzz/corpus/tfrecord/valid.tfrecord.zz
EXTRA_DIST += tests/fuzz/fuzz_tfrecord.c $(TFRECORD_FUZZ_SEEDS)

if HAVE_PROTOBUF_C
FUZZ_CC = clang
FUZZ_CFLAGS = -g -O1 -fno-omit-frame-pointer \
	-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
FUZZ_TIME = 60
TFRECORD_FUZZ_DIR = tests/fuzz/tfrecord.build
TFRECORD_FUZZ_SRCS = \
	$(top_srcdir)/tests/fuzz/fuzz_tfrecord.c \
	$(top_srcdir)/plugins/readers/tfrecord/crc32c.c \
	$(top_srcdir)/plugins/readers/tfrecord/stream.c \
	$(top_srcdir)/plugins/readers/tfrecord/record.c \
	$(top_srcdir)/plugins/readers/tfrecord/example.c \
	$(top_srcdir)/plugins/readers/tfrecord/reader.c \
	$(top_srcdir)/plugins/readers/tfrecord/tfrecord.h

$(TFRECORD_FUZZ_DIR)/fuzz_tfrecord: $(TFRECORD_FUZZ_SRCS) \
		$(top_srcdir)/plugins/readers/tfrecord/example.proto config.h
	$(AM_V_GEN)$(MKDIR_P) $(TFRECORD_FUZZ_DIR) && \
	echo '*' > $(TFRECORD_FUZZ_DIR)/.gitignore && \
	$(PROTOC_C) --proto_path=$(top_srcdir)/plugins/readers/tfrecord \
		--c_out=$(TFRECORD_FUZZ_DIR) \
		$(top_srcdir)/plugins/readers/tfrecord/example.proto && \
	$(FUZZ_CC) $(FUZZ_CFLAGS) -I$(TFRECORD_FUZZ_DIR) -I$(top_builddir) \
		-I$(top_srcdir)/sdk/include -I$(top_srcdir)/plugins/readers/tfrecord \
		$(ZLIB_CFLAGS) $(PROTOBUF_C_CFLAGS) -o $@ \
		$(filter %.c,$(TFRECORD_FUZZ_SRCS)) \
		$(TFRECORD_FUZZ_DIR)/example.pb-c.c \
		$(PROTOBUF_C_LIBS) $(ZLIB_LIBS) $(PTHREAD_LIBS)

fuzz-tfrecord: $(TFRECORD_FUZZ_DIR)/fuzz_tfrecord

fuzz-tfrecord-run: fuzz-tfrecord
	$(MKDIR_P) $(TFRECORD_FUZZ_DIR)/corpus $(TFRECORD_FUZZ_DIR)/crashes
	$(TFRECORD_FUZZ_DIR)/fuzz_tfrecord -max_total_time=$(FUZZ_TIME) \
		-max_len=16384 -timeout=10 -rss_limit_mb=2048 \
		-artifact_prefix=$(TFRECORD_FUZZ_DIR)/crashes/ \
		$(TFRECORD_FUZZ_DIR)/corpus $(top_srcdir)/tests/fuzz/corpus/tfrecord

fuzz-tfrecord-smoke: fuzz-tfrecord
	$(TFRECORD_FUZZ_DIR)/fuzz_tfrecord -runs=0 \
		$(top_srcdir)/tests/fuzz/corpus/tfrecord

fuzz-tfrecord-clean:
	rm -rf $(TFRECORD_FUZZ_DIR)

endif
.PHONY: fuzz-tfrecord fuzz-tfrecord-run fuzz-tfrecord-smoke \
	fuzz-tfrecord-clean
