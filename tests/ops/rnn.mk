# tests/ops/rnn.mk: the ops_rnn plugin — forward values, shape inference,
# and gradients against finite differences through the shared checker
# (tests/ops/gradcheck.{h,c}, with array_nn_grad.h's builder), float64 on
# the reference kernels and float32 on the CPU plugin's oneDNN kernels.
check_PROGRAMS += tests/ops/test_rnn
TESTS += tests/ops/test_rnn
tests_ops_test_rnn_SOURCES = tests/ops/test_rnn.c tests/ops/array_nn_grad.h \
	tests/ops/gradcheck.c tests/ops/gradcheck.h
tests_ops_test_rnn_CPPFLAGS = $(TEST_CPPFLAGS)
tests_ops_test_rnn_CFLAGS = $(TEST_CFLAGS)
tests_ops_test_rnn_LDADD = $(TEST_LDADD)
EXTRA_tests_ops_test_rnn_DEPENDENCIES = plugins/ops/array/ops_array.la \
	plugins/ops/math/ops_math.la plugins/ops/rnn/ops_rnn.la \
	plugins/devices/cpu/device_cpu.la
