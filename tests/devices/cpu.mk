# tests/devices/cpu.mk: the CPU device plugin's test. It loads the built
# plugin through the real loader and looks into its device state, so it
# also needs the plugin's header and hwloc.
check_PROGRAMS += tests/devices/test_cpu
TESTS += tests/devices/test_cpu
tests_devices_test_cpu_SOURCES = tests/devices/test_cpu.c
tests_devices_test_cpu_CPPFLAGS = $(TEST_CPPFLAGS) \
	-I$(top_srcdir)/plugins/devices/cpu $(HWLOC_CFLAGS)
tests_devices_test_cpu_CFLAGS = $(TEST_CFLAGS)
tests_devices_test_cpu_LDADD = $(TEST_LDADD) $(HWLOC_LIBS)
# The test loads the module from its build directory.
EXTRA_tests_devices_test_cpu_DEPENDENCIES = plugins/devices/cpu/device_cpu.la
