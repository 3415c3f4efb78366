# tests/devices/lazy.mk: the device and transport plugins open their heavy
# libraries (oneDNN, OpenBLAS, CUDA's, Open MPI) on first use, not when
# they are loaded: test_lazy_libraries reads /proc/self/maps around a
# runtime's creation and a first kernel, and makes a library unopenable;
# test_lazy_weft_plugins.sh checks what `weft plugins` loads.
check_PROGRAMS += tests/devices/test_lazy_libraries
TESTS += tests/devices/test_lazy_libraries tests/devices/test_lazy_weft_plugins.sh
EXTRA_DIST += tests/devices/test_lazy_weft_plugins.sh
tests_devices_test_lazy_libraries_SOURCES = tests/devices/test_lazy_libraries.c
tests_devices_test_lazy_libraries_CPPFLAGS = $(TEST_CPPFLAGS)
if HAVE_CUDA
tests_devices_test_lazy_libraries_CPPFLAGS += -DWF_TEST_HAVE_CUDA=1
else
tests_devices_test_lazy_libraries_CPPFLAGS += -DWF_TEST_HAVE_CUDA=0
endif
tests_devices_test_lazy_libraries_CFLAGS = $(TEST_CFLAGS)
tests_devices_test_lazy_libraries_LDADD = $(TEST_LDADD)
# It loads the in-tree modules from their build directories.
EXTRA_tests_devices_test_lazy_libraries_DEPENDENCIES = $(WF_PLUGIN_MODULES)
