# tests/ops/string.mk: the ops_string plugin — StringNormalizer's values
# (ONNX's examples, case changes through the locale, stopwords with and
# without case), shape inference and every refusal, on string tensors fed
# to a Placeholder (ops_array) and run on the CPU device; and its
# conversions between numbers and strings (test_string_convert, below).
check_PROGRAMS += tests/ops/test_string
TESTS += tests/ops/test_string
tests_ops_test_string_SOURCES = tests/ops/test_string.c tests/ops/string_harness.h
tests_ops_test_string_CPPFLAGS = $(TEST_CPPFLAGS)
tests_ops_test_string_CFLAGS = $(TEST_CFLAGS)
tests_ops_test_string_LDADD = $(TEST_LDADD)
EXTRA_tests_ops_test_string_DEPENDENCIES = plugins/ops/array/ops_array.la \
	plugins/ops/string/ops_string.la plugins/devices/cpu/device_cpu.la

# AsString and StringToNumber: AsString's shortest against a table NumPy
# wrote (regenerated into the test with `python3
# tests/ops/fixtures/gen_as_string.py --update`; the test needs no NumPy),
# the printf formats against snprintf, StringToNumber against strtod, a
# process locale with a decimal comma, and every refusal.
check_PROGRAMS += tests/ops/test_string_convert
TESTS += tests/ops/test_string_convert
tests_ops_test_string_convert_SOURCES = tests/ops/test_string_convert.c \
	tests/ops/string_harness.h
tests_ops_test_string_convert_CPPFLAGS = $(TEST_CPPFLAGS)
tests_ops_test_string_convert_CFLAGS = $(TEST_CFLAGS)
tests_ops_test_string_convert_LDADD = $(TEST_LDADD)
EXTRA_tests_ops_test_string_convert_DEPENDENCIES = \
	plugins/ops/array/ops_array.la plugins/ops/string/ops_string.la \
	plugins/devices/cpu/device_cpu.la
EXTRA_DIST += tests/ops/fixtures/gen_as_string.py
