# tests/serve: the model server (lib/serve) driven over loopback HTTP by
# Python's standard library and curl, against a saved model the test writes
# with make_model. Skipped (exit 77, with a message) when weft was built
# without libmicrohttpd.
check_PROGRAMS += tests/serve/make_model
tests_serve_make_model_SOURCES = tests/serve/make_model.c
tests_serve_make_model_LDADD = core/libweft.la
TESTS += tests/serve/test_serve.sh
EXTRA_DIST += tests/serve/test_serve.sh tests/serve/test_serve.py
# The JSON reader and the codec on their own (no HTTP, no model).
check_PROGRAMS += tests/serve/test_codec
TESTS += tests/serve/test_codec
tests_serve_test_codec_SOURCES = tests/serve/test_codec.c \
	lib/serve/codec.c lib/serve/codec.h lib/serve/json_read.c \
	lib/serve/json_read.h
tests_serve_test_codec_CPPFLAGS = $(TEST_CPPFLAGS)
tests_serve_test_codec_CFLAGS = $(TEST_CFLAGS)
tests_serve_test_codec_LDADD = $(TEST_LDADD)
