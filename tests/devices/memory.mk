# tests/devices/memory.mk: tensors in the memory of a device that has its
# own (wf_device_def.copy), without a GPU: the test-memdev plugin (a module
# built only for `make check`, linked like a real plugin) and the test that
# loads it with the CPU and op plugins from their build directories.
check_LTLIBRARIES += tests/devices/memdev.la
tests_devices_memdev_la_SOURCES = tests/devices/memdev.c
tests_devices_memdev_la_CPPFLAGS = $(PLUGIN_CPPFLAGS)
tests_devices_memdev_la_LDFLAGS = $(TEST_PLUGIN_LDFLAGS)
tests_devices_memdev_la_LIBADD = $(PTHREAD_LIBS)

check_PROGRAMS += tests/devices/test_device_memory
TESTS += tests/devices/test_device_memory
tests_devices_test_device_memory_SOURCES = tests/devices/test_device_memory.c
tests_devices_test_device_memory_CPPFLAGS = $(TEST_CPPFLAGS)
tests_devices_test_device_memory_CFLAGS = $(TEST_CFLAGS)
tests_devices_test_device_memory_LDADD = $(TEST_LDADD)
EXTRA_tests_devices_test_device_memory_DEPENDENCIES = tests/devices/memdev.la \
	plugins/devices/cpu/device_cpu.la plugins/ops/math/ops_math.la \
	plugins/ops/array/ops_array.la plugins/ops/state/ops_state.la \
	plugins/ops/train/ops_train.la
