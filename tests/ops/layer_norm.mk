# tests/ops/layer_norm.mk: LayerNorm and LayerNormGrad (ops_nn) against a
# float64 reference of the definition, on the reference kernels and on the
# CPU device's (test_layer_norm), and LayerNorm's gradient against finite
# differences (test_layer_norm_grad, the shared gradcheck.{h,c}).
check_PROGRAMS += tests/ops/test_layer_norm tests/ops/test_layer_norm_grad
TESTS += tests/ops/test_layer_norm tests/ops/test_layer_norm_grad

tests_ops_test_layer_norm_SOURCES = tests/ops/test_layer_norm.c \
	tests/ops/array_nn_harness.h
tests_ops_test_layer_norm_CPPFLAGS = $(TEST_CPPFLAGS)
tests_ops_test_layer_norm_CFLAGS = $(TEST_CFLAGS)
tests_ops_test_layer_norm_LDADD = $(TEST_LDADD)
EXTRA_tests_ops_test_layer_norm_DEPENDENCIES = plugins/ops/array/ops_array.la \
	plugins/ops/nn/ops_nn.la plugins/devices/cpu/device_cpu.la

tests_ops_test_layer_norm_grad_SOURCES = tests/ops/test_layer_norm_grad.c \
	tests/ops/array_nn_grad.h tests/ops/gradcheck.c tests/ops/gradcheck.h
tests_ops_test_layer_norm_grad_CPPFLAGS = $(TEST_CPPFLAGS)
tests_ops_test_layer_norm_grad_CFLAGS = $(TEST_CFLAGS)
tests_ops_test_layer_norm_grad_LDADD = $(TEST_LDADD)
EXTRA_tests_ops_test_layer_norm_grad_DEPENDENCIES = \
	plugins/ops/array/ops_array.la plugins/ops/math/ops_math.la \
	plugins/ops/nn/ops_nn.la plugins/devices/cpu/device_cpu.la
