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

# The sense of crowded cores that shrinks the intra-op teams
# (cpu_crowding.c compiled in: it depends on nothing of the plugin), with
# threads that really wait for one CPU.
check_PROGRAMS += tests/devices/test_cpu_crowding
TESTS += tests/devices/test_cpu_crowding
tests_devices_test_cpu_crowding_SOURCES = tests/devices/test_cpu_crowding.c \
	plugins/devices/cpu/cpu_crowding.c plugins/devices/cpu/cpu_crowding.h
tests_devices_test_cpu_crowding_CPPFLAGS = $(TEST_CPPFLAGS) \
	-I$(top_srcdir)/plugins/devices/cpu
tests_devices_test_cpu_crowding_CFLAGS = $(TEST_CFLAGS)
tests_devices_test_cpu_crowding_LDADD = $(CMOCKA_LIBS) $(PTHREAD_LIBS)

# The loop pieces cpu_team's kernels share (cpu_pieces.c compiled in: it
# depends on nothing but C11 atomics), taken by real threads.
check_PROGRAMS += tests/devices/test_cpu_pieces
TESTS += tests/devices/test_cpu_pieces
tests_devices_test_cpu_pieces_SOURCES = tests/devices/test_cpu_pieces.c \
	plugins/devices/cpu/cpu_pieces.c plugins/devices/cpu/cpu_pieces.h
tests_devices_test_cpu_pieces_CPPFLAGS = $(TEST_CPPFLAGS) \
	-I$(top_srcdir)/plugins/devices/cpu
tests_devices_test_cpu_pieces_CFLAGS = $(TEST_CFLAGS)
tests_devices_test_cpu_pieces_LDADD = $(CMOCKA_LIBS) $(PTHREAD_LIBS)
