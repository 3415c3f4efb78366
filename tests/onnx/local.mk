# tests/onnx: ONNX import. onnx_conformance runs the backend test cases of
# Debian's libonnx-testdata ($(ONNX_TESTDATA)) through the importer and
# checks the outcome against expected_failures.txt (each entry with its
# reason), and the real models of tests/onnx/models (made by
# make_models.py with numpy references); it reads the TensorProtos with
# the importer's generated protobuf-c code.
ONNX_TESTDATA = /usr/share/libonnx-testdata/data
EXTRA_DIST += tests/onnx/expected_failures.txt tests/onnx/make_models.py \
	tests/onnx/models

check_PROGRAMS += tests/onnx/onnx_conformance
TESTS += tests/onnx/onnx_conformance
tests_onnx_onnx_conformance_SOURCES = tests/onnx/conformance.c
nodist_tests_onnx_onnx_conformance_SOURCES = \
	plugins/importers/onnx/onnx.pb-c.c plugins/importers/onnx/onnx.pb-c.h
tests_onnx_onnx_conformance_CPPFLAGS = $(TEST_CPPFLAGS) \
	-I$(top_builddir)/plugins/importers/onnx $(PROTOBUF_C_CFLAGS) \
	-DONNX_TESTDATA='"$(ONNX_TESTDATA)"' \
	-DONNX_MODELS='"$(abs_top_srcdir)/tests/onnx/models"' \
	-DONNX_EXPECTED='"$(abs_top_srcdir)/tests/onnx/expected_failures.txt"'
tests_onnx_onnx_conformance_CFLAGS = $(TEST_CFLAGS)
tests_onnx_onnx_conformance_LDADD = $(TEST_LDADD) $(PROTOBUF_C_LIBS)
$(tests_onnx_onnx_conformance_OBJECTS): plugins/importers/onnx/onnx.pb-c.h

check_PROGRAMS += tests/onnx/test_onnx_import
TESTS += tests/onnx/test_onnx_import
tests_onnx_test_onnx_import_SOURCES = tests/onnx/test_onnx_import.c
nodist_tests_onnx_test_onnx_import_SOURCES = \
	plugins/importers/onnx/onnx.pb-c.c plugins/importers/onnx/onnx.pb-c.h
tests_onnx_test_onnx_import_CPPFLAGS = $(TEST_CPPFLAGS) \
	-I$(top_builddir)/plugins/importers/onnx $(PROTOBUF_C_CFLAGS)
tests_onnx_test_onnx_import_CFLAGS = $(TEST_CFLAGS)
tests_onnx_test_onnx_import_LDADD = $(TEST_LDADD) $(PROTOBUF_C_LIBS)
$(tests_onnx_test_onnx_import_OBJECTS): plugins/importers/onnx/onnx.pb-c.h

check_PROGRAMS += tests/onnx/test_onnx_fusion
TESTS += tests/onnx/test_onnx_fusion
tests_onnx_test_onnx_fusion_SOURCES = tests/onnx/test_onnx_fusion.c
nodist_tests_onnx_test_onnx_fusion_SOURCES = \
	plugins/importers/onnx/onnx.pb-c.c plugins/importers/onnx/onnx.pb-c.h
tests_onnx_test_onnx_fusion_CPPFLAGS = $(TEST_CPPFLAGS) \
	-I$(top_builddir)/plugins/importers/onnx $(PROTOBUF_C_CFLAGS)
tests_onnx_test_onnx_fusion_CFLAGS = $(TEST_CFLAGS)
tests_onnx_test_onnx_fusion_LDADD = $(TEST_LDADD) $(PROTOBUF_C_LIBS)
$(tests_onnx_test_onnx_fusion_OBJECTS): plugins/importers/onnx/onnx.pb-c.h
