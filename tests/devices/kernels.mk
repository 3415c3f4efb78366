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
	plugins/ops/rnn/ops_rnn.la plugins/ops/state/ops_state.la

# The plans and their per-node cache on their own: cpu_dnnl.c compiled into
# the test with the core's host table (the test stands in for the engine
# and thread setup of cpu_kernels.c).
if HAVE_DNNL
check_PROGRAMS += tests/devices/test_cpu_plans
TESTS += tests/devices/test_cpu_plans
tests_devices_test_cpu_plans_SOURCES = tests/devices/test_cpu_plans.c \
	plugins/devices/cpu/cpu_dnnl.c plugins/devices/cpu/cpu_kernels.h
tests_devices_test_cpu_plans_CPPFLAGS = $(TEST_CPPFLAGS) \
	-I$(top_srcdir)/plugins/devices/cpu -I$(top_srcdir)/plugins/numerics
tests_devices_test_cpu_plans_CFLAGS = $(TEST_CFLAGS)
tests_devices_test_cpu_plans_LDADD = plugins/ops/common/libopcommon.la \
	$(TEST_LDADD) $(DNNL_LIBS)
endif

# The threaded dense optimizer updates against ops-train's reference
# kernels, through the public API (two runtimes, one denying them).
if HAVE_DNNL
check_PROGRAMS += tests/devices/test_cpu_apply
TESTS += tests/devices/test_cpu_apply
tests_devices_test_cpu_apply_SOURCES = tests/devices/test_cpu_apply.c
tests_devices_test_cpu_apply_CPPFLAGS = $(TEST_CPPFLAGS)
tests_devices_test_cpu_apply_CFLAGS = $(TEST_CFLAGS)
tests_devices_test_cpu_apply_LDADD = $(TEST_LDADD)
EXTRA_tests_devices_test_cpu_apply_DEPENDENCIES = \
	plugins/devices/cpu/device_cpu.la plugins/ops/math/ops_math.la \
	plugins/ops/array/ops_array.la plugins/ops/nn/ops_nn.la \
	plugins/ops/state/ops_state.la plugins/ops/random/ops_random.la \
	plugins/ops/train/ops_train.la
endif
