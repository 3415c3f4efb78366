# tests/readers/tfrecord.mk: the tfrecord reader's test. It loads the built
# plugin through the real loader, and tests both implementations of the
# CRC-32C code of the plugin (plugins/readers/tfrecord/tfr_crc32c.c,
# compiled in here too). Fixtures (and the Python script
# that wrote them) are in tests/readers/fixtures/tfrecord/.
TFRECORD_FIXTURES = \
	tests/readers/fixtures/tfrecord/gen_tfrecord.py \
	tests/readers/fixtures/tfrecord/bad_block.tfrecord.gz \
	tests/readers/fixtures/tfrecord/bad_data_crc.tfrecord \
	tests/readers/fixtures/tfrecord/bad_length_crc.tfrecord \
	tests/readers/fixtures/tfrecord/bad_trailer.tfrecord.gz \
	tests/readers/fixtures/tfrecord/empty.tfrecord \
	tests/readers/fixtures/tfrecord/length_past_eof.tfrecord \
	tests/readers/fixtures/tfrecord/malformed.tfrecord \
	tests/readers/fixtures/tfrecord/missing_feature.tfrecord \
	tests/readers/fixtures/tfrecord/multi.tfrecord.gz \
	tests/readers/fixtures/tfrecord/no_kind.tfrecord \
	tests/readers/fixtures/tfrecord/raw.tfrecord \
	tests/readers/fixtures/tfrecord/truncated.tfrecord \
	tests/readers/fixtures/tfrecord/truncated.tfrecord.gz \
	tests/readers/fixtures/tfrecord/truncated_header.tfrecord \
	tests/readers/fixtures/tfrecord/unpacked.tfrecord \
	tests/readers/fixtures/tfrecord/valid.tfrecord \
	tests/readers/fixtures/tfrecord/valid.tfrecord.gz \
	tests/readers/fixtures/tfrecord/valid.tfrecord.zz \
	tests/readers/fixtures/tfrecord/wrong_kind.tfrecord \
	tests/readers/fixtures/tfrecord/zlib_lookalike.tfrecord
EXTRA_DIST += $(TFRECORD_FIXTURES)

check_PROGRAMS += tests/readers/test_tfrecord
TESTS += tests/readers/test_tfrecord
tests_readers_test_tfrecord_SOURCES = tests/readers/test_tfrecord.c \
	plugins/readers/tfrecord/tfr_crc32c.c
tests_readers_test_tfrecord_CPPFLAGS = $(TEST_CPPFLAGS) \
	-I$(top_srcdir)/plugins/readers/tfrecord \
	-I$(top_builddir)/plugins/readers/tfrecord \
	$(ZLIB_CFLAGS) $(PROTOBUF_C_CFLAGS)
tests_readers_test_tfrecord_CFLAGS = $(TEST_CFLAGS)
tests_readers_test_tfrecord_LDADD = $(TEST_LDADD)
# The test loads the module from its build directory; tfrecord.h includes
# the generated protobuf-c header.
EXTRA_tests_readers_test_tfrecord_DEPENDENCIES = \
	plugins/readers/tfrecord/reader_tfrecord.la
$(tests_readers_test_tfrecord_OBJECTS): $(TFRECORD_PB)
