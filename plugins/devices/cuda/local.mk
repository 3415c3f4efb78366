# plugins/devices/cuda: the CUDA device plugin (module device_cuda), built
# and installed when configure found CUDA (nvcc, the CUDA runtime, cuBLAS
# and cuDNN). It reaches the core only through the host table and links the
# CUDA libraries itself (PLUGIN_LDFLAGS' -z defs proves it). It is always a
# shared module, also in a build that links the other plugins into libweft,
# and it loads without a GPU (it then lists cuda:0 as unavailable and
# registers no kernel).
#
# It is one of the build tree's default plugins (WF_PLUGIN_MODULES), so
# `tools/weft devices` run from the build tree shows cuda:0 and why it is
# unavailable; tests that list their plugins by path do not load it.
#
# The device code (*.cu) is compiled by nvcc through libtool, with
# NVCCFLAGS rather than CFLAGS (so sanitizer flags never reach nvcc); nvcc
# forwards the host compiler options it does not know, libtool's -fPIC
# among them (libtool would take -Xcompiler as its own option). Host code
# of the .cu files has no C++ runtime dependency (no exceptions, no
# thread-safe statics), so the module links with the C compiler.
EXTRA_DIST += plugins/devices/cuda/README.md \
	plugins/devices/cuda/cuda_common.cuh \
	plugins/devices/cuda/cuda_eltwise.cu \
	plugins/devices/cuda/cuda_random.cu \
	plugins/devices/cuda/cuda_math.cu \
	plugins/devices/cuda/cuda_reduce.cu \
	plugins/devices/cuda/cuda_nn.cu \
	plugins/devices/cuda/cuda_array.cu \
	plugins/devices/cuda/cuda_train.cu
if HAVE_CUDA
pkgplugin_LTLIBRARIES += plugins/devices/cuda/device_cuda.la
WF_PLUGIN_MODULES += plugins/devices/cuda/device_cuda.la
plugins_devices_cuda_device_cuda_la_SOURCES = \
	plugins/devices/cuda/cuda_cache.c \
	plugins/devices/cuda/cuda_cache.h \
	plugins/devices/cuda/cuda_stage.c \
	plugins/devices/cuda/cuda_stage.h \
	plugins/devices/cuda/cuda_device.h \
	plugins/devices/cuda/cuda_kernels.c \
	plugins/devices/cuda/cuda_lazy.c \
	plugins/devices/cuda/cuda_lazy.h \
	plugins/common/lazylib.h \
	plugins/devices/cuda/cuda_launch.h \
	plugins/devices/cuda/cuda_philox.h \
	plugins/devices/cuda/cuda_plugin.c \
	plugins/devices/cuda/cuda_tables.c \
	plugins/devices/cuda/cuda_work.c \
	plugins/devices/cuda/cuda_work.h \
	plugins/devices/cuda/cuda_math.c \
	plugins/devices/cuda/cuda_reduce.c \
	plugins/devices/cuda/cuda_nn.c \
	plugins/devices/cuda/cuda_array.c \
	plugins/devices/cuda/cuda_train.c
plugins_devices_cuda_device_cuda_la_CPPFLAGS = $(PLUGIN_CPPFLAGS) \
	$(CUDA_CPPFLAGS) $(HWLOC_CFLAGS) $(NUMERICS_CPPFLAGS) \
	-I$(top_srcdir)/plugins/common -DWF_CUDA_LAZY_LIBS
# libnumerics (plugins/numerics, shared with the op plugins, never theirs):
# the window geometry of convolutions and pools (SAME's padding split),
# Philox, and locking a variable with its slots in the order every update
# locks them. Output shapes come from the ops' shape functions
# (kernel_output_shape); the plugin links no op plugin's code.
plugins_devices_cuda_device_cuda_la_LIBADD = \
	plugins/devices/cuda/cuda_eltwise.lo \
	plugins/devices/cuda/cuda_random.lo \
	plugins/devices/cuda/cuda_math.lo \
	plugins/devices/cuda/cuda_reduce.lo \
	plugins/devices/cuda/cuda_nn.lo \
	plugins/devices/cuda/cuda_array.lo \
	plugins/devices/cuda/cuda_train.lo \
	plugins/numerics/libnumerics.la \
	$(CUDA_PLUGIN_LIBS) $(HWLOC_LIBS) $(PTHREAD_LIBS) $(LIBM)
# Only the CUDA runtime is linked, and statically: it opens the driver
# (libcuda) itself on its first call. cuBLAS and cuDNN are opened by the
# first kernel that calls them (cuda_lazy.c), so that loading the plugin
# maps none of them (`weft plugins` stays small on any machine).
CUDA_PLUGIN_LIBS = -L$(CUDA_LIBDIR) -lcudart_static -ldl -lrt
# The CUDA libraries are not made to be unloaded (the driver keeps threads
# and the runtime exit handlers): the module is marked nodelete, so they
# stay until the process ends, and so does the plugin's one state.
plugins_devices_cuda_device_cuda_la_LDFLAGS = $(PLUGIN_LDFLAGS) \
	-R$(CUDA_LIBDIR) -Wl,-z,nodelete

# Machine code for compute capability 9.0 and PTX that newer GPUs compile
# when the module loads.
CUDA_GENCODE = -gencode arch=compute_90,code=sm_90 \
	-gencode arch=compute_90,code=compute_90
NVCC_COMPILE = $(NVCC) $(NVCCFLAGS) $(CUDA_GENCODE) \
	-forward-unknown-to-host-compiler -fno-exceptions \
	-fno-threadsafe-statics -fvisibility=hidden \
	-I$(top_builddir) -I$(top_srcdir)/sdk/include $(CUDA_CPPFLAGS)
AM_V_NVCC = $(am__v_NVCC_@AM_V@)
am__v_NVCC_ = $(am__v_NVCC_@AM_DEFAULT_V@)
am__v_NVCC_0 = @echo "  NVCC    " $@;
am__v_NVCC_1 =
CUDA_CU_DEPS = plugins/devices/cuda/cuda_launch.h \
	plugins/devices/cuda/cuda_philox.h \
	plugins/devices/cuda/cuda_common.cuh
endif

SUFFIXES = .cu
.cu.lo:
	$(AM_V_NVCC)$(LIBTOOL) $(AM_V_lt) --tag=CC $(AM_LIBTOOLFLAGS) \
	$(LIBTOOLFLAGS) --mode=compile $(NVCC_COMPILE) -c -o $@ $<
plugins/devices/cuda/cuda_eltwise.lo plugins/devices/cuda/cuda_random.lo \
plugins/devices/cuda/cuda_math.lo plugins/devices/cuda/cuda_reduce.lo \
plugins/devices/cuda/cuda_nn.lo plugins/devices/cuda/cuda_array.lo \
plugins/devices/cuda/cuda_train.lo: \
	$(CUDA_CU_DEPS) plugins/devices/cuda/$(am__dirstamp) config.h
