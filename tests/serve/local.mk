# tests/serve: the model server (lib/serve) driven over loopback HTTP by
# Python's standard library and curl, against a saved model the test writes
# with make_model. Skipped (exit 77, with a message) when weft was built
# without libmicrohttpd.
check_PROGRAMS += tests/serve/make_model
tests_serve_make_model_SOURCES = tests/serve/make_model.c
tests_serve_make_model_LDADD = core/libweft.la
TESTS += tests/serve/test_serve.sh
EXTRA_DIST += tests/serve/test_serve.sh tests/serve/test_serve.py
