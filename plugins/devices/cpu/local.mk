# plugins/devices/cpu: the CPU device plugin (module device_cpu). It reaches
# the core only through the host table, so it links hwloc and nothing of
# libweft (PLUGIN_LDFLAGS carries -z defs to prove it), and of the op
# plugins nothing either: what it must compute as they do (the fused
# epilogue, the optimizer updates, the window geometry) comes from
# plugins/numerics, which both link (tests/test_wall.sh checks it).
# plugins/local.mk says how a plugin is built in each configuration.
DEVICE_CPU_SOURCES = \
	plugins/devices/cpu/cpu_alloc.c \
	plugins/devices/cpu/cpu_describe.c \
	plugins/devices/cpu/cpu_device.h \
	plugins/devices/cpu/cpu_plugin.c \
	plugins/devices/cpu/cpu_kernels.c \
	plugins/devices/cpu/cpu_kernels.h \
	plugins/devices/cpu/cpu_crowding.c \
	plugins/devices/cpu/cpu_crowding.h \
	plugins/devices/cpu/cpu_pieces.c \
	plugins/devices/cpu/cpu_pieces.h
DEVICE_CPU_CPPFLAGS = $(PLUGIN_CPPFLAGS) $(HWLOC_CFLAGS) $(NUMERICS_CPPFLAGS) \
	-I$(top_srcdir)/plugins/common
DEVICE_CPU_HELPERS = plugins/numerics/libnumerics.la
DEVICE_CPU_LIBS = $(HWLOC_LIBS)
EXTRA_DIST += plugins/devices/cpu/README.md

# Fast kernels (cpu_kernels.c lists them): MatMul and BatchMatMul with
# oneDNN or OpenBLAS, the nn ops and LSTM/GRU with oneDNN. They take the
# output shapes the ops' shape functions give (kernel_output_shape), so an
# input the op refuses gets the op's own error, and compute empty tensors
# themselves; what they cannot run they decline (supports), and the op
# plugins' reference kernels run it. oneDNN runs on OpenMP (libgomp), whose
# per-thread team size the kernels set; the module is marked nodelete so that unloading it never unmaps
# libgomp or oneDNN under their own idle threads.
if HAVE_DNNL
DEVICE_CPU_SOURCES += \
	plugins/devices/cpu/cpu_dnnl.c \
	plugins/devices/cpu/cpu_nn.h \
	plugins/devices/cpu/cpu_gemm.c \
	plugins/devices/cpu/cpu_conv.c \
	plugins/devices/cpu/cpu_winograd.c \
	plugins/devices/cpu/cpu_winograd_lanes.h \
	plugins/devices/cpu/cpu_conv_shallow.c \
	plugins/devices/cpu/cpu_pool.c \
	plugins/devices/cpu/cpu_eltwise.c \
	plugins/devices/cpu/cpu_softmax.c \
	plugins/devices/cpu/cpu_vexp.h \
	plugins/devices/cpu/cpu_bnorm.c \
	plugins/devices/cpu/cpu_bias.c \
	plugins/devices/cpu/cpu_layernorm.c \
	plugins/devices/cpu/cpu_rnn.c \
	plugins/devices/cpu/cpu_apply.c \
	plugins/devices/cpu/cpu_arith.c
# -fopenmp: cpu_team (cpu_kernels.c) shares a loop among the intra-op
# threads with an OpenMP parallel region, for cpu_apply.c and cpu_arith.c
# (the other files have no OpenMP directives).
DEVICE_CPU_CPPFLAGS += -fopenmp
DEVICE_CPU_LIBS += -lgomp
else
if HAVE_OPENBLAS
DEVICE_CPU_SOURCES += plugins/devices/cpu/cpu_gemm.c
endif
endif
if HAVE_OPENBLAS
DEVICE_CPU_CPPFLAGS += $(OPENBLAS_CFLAGS)
endif
# oneDNN and OpenBLAS are not linked: cpu_lazy.c opens them when a kernel
# first calls one (plugins/common/lazylib.h), so that loading the plugin
# and listing the CPU map neither.
DEVICE_CPU_SOURCES += plugins/devices/cpu/cpu_lazy.h
if HAVE_DNNL
DEVICE_CPU_SOURCES += plugins/devices/cpu/cpu_lazy.c plugins/common/lazylib.h
DEVICE_CPU_CPPFLAGS += -DWF_CPU_LAZY_LIBS
else
if HAVE_OPENBLAS
DEVICE_CPU_SOURCES += plugins/devices/cpu/cpu_lazy.c plugins/common/lazylib.h
DEVICE_CPU_CPPFLAGS += -DWF_CPU_LAZY_LIBS
endif
endif
DEVICE_CPU_LIBS += $(LIBM)

WF_PLUGIN_MODULES += plugins/devices/cpu/device_cpu.la
# The plugin's own loops (BiasAdd, its gradient) vectorize only with the
# dynamic cost model (it allows a loop epilogue); IEEE operations without
# contraction (-std=c11) keep the results the same bits.
DEVICE_CPU_CFLAGS = $(AM_CFLAGS) -ftree-vectorize -fvect-cost-model=dynamic
plugins_devices_cpu_device_cpu_la_SOURCES = $(DEVICE_CPU_SOURCES)
plugins_devices_cpu_device_cpu_la_CPPFLAGS = $(DEVICE_CPU_CPPFLAGS)
plugins_devices_cpu_device_cpu_la_CFLAGS = $(DEVICE_CPU_CFLAGS)
plugins_devices_cpu_device_cpu_la_LDFLAGS = $(PLUGIN_LDFLAGS)
plugins_devices_cpu_device_cpu_la_LIBADD = $(DEVICE_CPU_HELPERS) \
	$(DEVICE_CPU_LIBS)
if HAVE_DNNL
plugins_devices_cpu_device_cpu_la_LDFLAGS += -Wl,-z,nodelete
endif
if WF_PLUGIN_DEVICES_CPU_SHARED
pkgplugin_LTLIBRARIES += plugins/devices/cpu/device_cpu.la
else
check_LTLIBRARIES += plugins/devices/cpu/device_cpu.la
plugins_devices_cpu_device_cpu_la_LDFLAGS += $(PLUGIN_CHECK_LDFLAGS)
endif

if WF_PLUGIN_DEVICES_CPU_STATIC
noinst_LTLIBRARIES += plugins/static/device_cpu.la
WF_PRELOADED += plugins/static/device_cpu.la
WF_PRELOADED_HELPERS += $(DEVICE_CPU_HELPERS)
endif
plugins_static_device_cpu_la_SOURCES = $(DEVICE_CPU_SOURCES)
plugins_static_device_cpu_la_CPPFLAGS = $(DEVICE_CPU_CPPFLAGS) $(PLUGIN_STATIC_CPPFLAGS)
plugins_static_device_cpu_la_CFLAGS = $(DEVICE_CPU_CFLAGS)
plugins_static_device_cpu_la_LDFLAGS = $(PLUGIN_STATIC_LDFLAGS)
plugins_static_device_cpu_la_LIBADD = $(DEVICE_CPU_LIBS)
