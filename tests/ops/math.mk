# tests/ops/math.mk: the ops_math plugin's test. It loads the built ops_math
# and ops_array plugins through the real loader (Placeholders come from
# ops_array) and runs every kernel against the generated fixtures. The
# fixtures are regenerated with `python3 tests/ops/fixtures/gen_math.py`
# (numpy and mpmath); the test itself needs neither.
check_PROGRAMS += tests/ops/test_math
TESTS += tests/ops/test_math
tests_ops_test_math_SOURCES = tests/ops/test_math.c \
	tests/ops/fixtures/math_cases.h
tests_ops_test_math_CPPFLAGS = $(TEST_CPPFLAGS)
tests_ops_test_math_CFLAGS = $(TEST_CFLAGS)
tests_ops_test_math_LDADD = $(TEST_LDADD)
EXTRA_tests_ops_test_math_DEPENDENCIES = plugins/ops/math/ops_math.la \
	plugins/ops/array/ops_array.la
EXTRA_DIST += tests/ops/fixtures/gen_math.py

# The shared op helpers, linked directly and driven through the core's host
# table.
check_PROGRAMS += tests/ops/test_opcommon
TESTS += tests/ops/test_opcommon
tests_ops_test_opcommon_SOURCES = tests/ops/test_opcommon.c
tests_ops_test_opcommon_CPPFLAGS = $(TEST_CPPFLAGS) \
	-I$(top_srcdir)/plugins/ops/common
tests_ops_test_opcommon_CFLAGS = $(TEST_CFLAGS)
tests_ops_test_opcommon_LDADD = plugins/ops/common/libopcommon.la $(TEST_LDADD)

# The gradients of the math ops against finite differences, through the
# shared checker tests/ops/gradcheck.{h,c} (other op families' gradient
# tests add those two files to their SOURCES). gradcheck_ops is a test
# plugin with a deliberately wrong and a sparse gradient, for the checker's
# self-tests.
check_LTLIBRARIES += tests/ops/gradcheck_ops.la
tests_ops_gradcheck_ops_la_SOURCES = tests/ops/gradcheck_ops.c
tests_ops_gradcheck_ops_la_CPPFLAGS = $(PLUGIN_CPPFLAGS)
tests_ops_gradcheck_ops_la_LDFLAGS = -module -avoid-version -shared \
	-rpath /nowhere $(PLUGIN_ZDEFS)

check_PROGRAMS += tests/ops/test_math_grad
TESTS += tests/ops/test_math_grad
tests_ops_test_math_grad_SOURCES = tests/ops/test_math_grad.c \
	tests/ops/gradcheck.c tests/ops/gradcheck.h
tests_ops_test_math_grad_CPPFLAGS = $(TEST_CPPFLAGS)
tests_ops_test_math_grad_CFLAGS = $(TEST_CFLAGS)
tests_ops_test_math_grad_LDADD = $(TEST_LDADD)
EXTRA_tests_ops_test_math_grad_DEPENDENCIES = plugins/ops/math/ops_math.la \
	plugins/ops/array/ops_array.la plugins/devices/cpu/device_cpu.la \
	tests/ops/gradcheck_ops.la
