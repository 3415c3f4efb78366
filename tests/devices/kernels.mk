# tests/devices/kernels.mk: the CPU plugin's fast kernels against the op
# plugins' reference kernels. It loads the built plugins through the real
# loader and reaches into the registry for the reference kernels, so it
# needs the core's internal headers (TEST_CPPFLAGS) and threads.
check_PROGRAMS += tests/devices/test_cpu_kernels
TESTS += tests/devices/test_cpu_kernels
tests_devices_test_cpu_kernels_SOURCES = tests/devices/test_cpu_kernels.c
tests_devices_test_cpu_kernels_CPPFLAGS = $(TEST_CPPFLAGS)
tests_devices_test_cpu_kernels_CFLAGS = $(TEST_CFLAGS)
tests_devices_test_cpu_kernels_LDADD = $(TEST_LDADD)
EXTRA_tests_devices_test_cpu_kernels_DEPENDENCIES = \
	plugins/devices/cpu/device_cpu.la plugins/ops/math/ops_math.la \
	plugins/ops/array/ops_array.la plugins/ops/nn/ops_nn.la \
	plugins/ops/rnn/ops_rnn.la
