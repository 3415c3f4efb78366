# tests/devices/cuda.mk: the CUDA device plugin's tests, built when
# configure found CUDA.
#  - test_cuda_host runs without a GPU: the staged copies (cuda_stage.c)
#    and the memory cache (cuda_cache.c) over fake backends, the device
#    Philox functions against the CPU kernels' (philox.c compiled in), and
#    the built plugin loaded with CUDA's devices hidden.
#  - tests/gpu/test_cuda_kernels compares every CUDA kernel with the CPU's
#    on a GPU; without one it says why and skips (exit 77) at once.
#  - tests/gpu/test_cuda_graph runs graphs split over cpu:0 and cuda:0 and
#    a few training steps with the variables on cuda:0 against the CPU;
#    it skips like test_cuda_kernels.
# tests/gpu/run.sh runs them on a GPU machine (from a build, or from a
# bundle made by tests/gpu/bundle.sh).
if HAVE_CUDA
check_PROGRAMS += tests/devices/test_cuda_host tests/gpu/test_cuda_kernels
TESTS += tests/devices/test_cuda_host tests/gpu/test_cuda_kernels
tests_devices_test_cuda_host_SOURCES = tests/devices/test_cuda_host.c \
	plugins/devices/cuda/cuda_cache.c plugins/devices/cuda/cuda_stage.c \
	plugins/numerics/philox.c
tests_devices_test_cuda_host_CPPFLAGS = $(TEST_CPPFLAGS) \
	-I$(top_srcdir)/plugins/devices/cuda -I$(top_srcdir)/plugins/numerics
tests_devices_test_cuda_host_CFLAGS = $(TEST_CFLAGS)
tests_devices_test_cuda_host_LDADD = $(TEST_LDADD)
# Both load the modules from their build directories.
CUDA_TEST_MODULES = plugins/devices/cuda/device_cuda.la \
	plugins/devices/cpu/device_cpu.la plugins/ops/math/ops_math.la \
	plugins/ops/array/ops_array.la plugins/ops/random/ops_random.la \
	plugins/ops/nn/ops_nn.la plugins/ops/state/ops_state.la \
	plugins/ops/train/ops_train.la
EXTRA_tests_devices_test_cuda_host_DEPENDENCIES = $(CUDA_TEST_MODULES)
tests_gpu_test_cuda_kernels_SOURCES = tests/gpu/test_cuda_kernels.c
tests_gpu_test_cuda_kernels_CPPFLAGS = $(TEST_CPPFLAGS)
tests_gpu_test_cuda_kernels_CFLAGS = $(TEST_CFLAGS)
tests_gpu_test_cuda_kernels_LDADD = $(TEST_LDADD)
EXTRA_tests_gpu_test_cuda_kernels_DEPENDENCIES = $(CUDA_TEST_MODULES)
check_PROGRAMS += tests/gpu/test_cuda_graph
TESTS += tests/gpu/test_cuda_graph
tests_gpu_test_cuda_graph_SOURCES = tests/gpu/test_cuda_graph.c
tests_gpu_test_cuda_graph_CPPFLAGS = $(TEST_CPPFLAGS)
tests_gpu_test_cuda_graph_CFLAGS = $(TEST_CFLAGS)
tests_gpu_test_cuda_graph_LDADD = $(TEST_LDADD)
EXTRA_tests_gpu_test_cuda_graph_DEPENDENCIES = $(CUDA_TEST_MODULES) \
	plugins/ops/nn/ops_nn.la plugins/ops/state/ops_state.la \
	plugins/ops/train/ops_train.la
endif
EXTRA_DIST += tests/gpu/run.sh tests/gpu/bundle.sh
