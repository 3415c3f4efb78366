# plugins/devices/cpu: the CPU device plugin (module device_cpu). It reaches
# the core only through the host table, so it links hwloc and nothing of
# libweft (PLUGIN_LDFLAGS carries -z defs to prove it).
pkgplugin_LTLIBRARIES += plugins/devices/cpu/device_cpu.la
plugins_devices_cpu_device_cpu_la_SOURCES = \
	plugins/devices/cpu/cpu_alloc.c \
	plugins/devices/cpu/cpu_describe.c \
	plugins/devices/cpu/cpu_device.h \
	plugins/devices/cpu/cpu_plugin.c \
	plugins/devices/cpu/cpu_kernels.c \
	plugins/devices/cpu/cpu_kernels.h \
	plugins/ops/common/opfused.c plugins/ops/common/opfused.h
plugins_devices_cpu_device_cpu_la_CPPFLAGS = $(PLUGIN_CPPFLAGS) $(HWLOC_CFLAGS) \
	-I$(top_srcdir)/plugins/ops/common
plugins_devices_cpu_device_cpu_la_LIBADD = $(HWLOC_LIBS) \
	plugins/ops/common/libopcommon.la
plugins_devices_cpu_device_cpu_la_LDFLAGS = $(PLUGIN_LDFLAGS)
EXTRA_DIST += plugins/devices/cpu/README.md

# Fast kernels (cpu_kernels.c lists them): MatMul and BatchMatMul with
# oneDNN or OpenBLAS, the nn ops and LSTM/GRU with oneDNN. Their reference
# fallbacks are the op plugins' own reference kernels, compiled in here
# from plugins/ops/nn and plugins/ops/rnn (hidden symbols: nothing clashes
# with ops_nn or ops_rnn loaded beside). oneDNN runs on OpenMP (libgomp),
# whose per-thread team size the kernels set; the plugin is marked
# nodelete so that unloading it never unmaps libgomp or oneDNN under their
# own idle threads.
if HAVE_DNNL
plugins_devices_cpu_device_cpu_la_SOURCES += \
	plugins/devices/cpu/cpu_dnnl.c \
	plugins/devices/cpu/cpu_nn.h \
	plugins/devices/cpu/cpu_gemm.c \
	plugins/devices/cpu/cpu_conv.c \
	plugins/devices/cpu/cpu_pool.c \
	plugins/devices/cpu/cpu_eltwise.c \
	plugins/devices/cpu/cpu_softmax.c \
	plugins/devices/cpu/cpu_bnorm.c \
	plugins/devices/cpu/cpu_bias.c \
	plugins/devices/cpu/cpu_rnn.c \
	plugins/ops/nn/nn.h \
	plugins/ops/nn/util.c \
	plugins/ops/nn/bias.c \
	plugins/ops/nn/conv.c \
	plugins/ops/nn/pool.c \
	plugins/ops/nn/softmax.c \
	plugins/ops/nn/batchnorm.c \
	plugins/ops/nn/fused.c \
	plugins/ops/rnn/rnn.h \
	plugins/ops/rnn/lstm.c \
	plugins/ops/rnn/gru.c \
	plugins/ops/rnn/rnn.c
plugins_devices_cpu_device_cpu_la_CPPFLAGS += \
	-I$(top_srcdir)/plugins/ops/nn -I$(top_srcdir)/plugins/ops/rnn
plugins_devices_cpu_device_cpu_la_LIBADD += $(DNNL_LIBS) -lgomp
plugins_devices_cpu_device_cpu_la_LDFLAGS += -Wl,-z,nodelete
else
if HAVE_OPENBLAS
plugins_devices_cpu_device_cpu_la_SOURCES += plugins/devices/cpu/cpu_gemm.c
endif
endif
if HAVE_OPENBLAS
plugins_devices_cpu_device_cpu_la_CPPFLAGS += $(OPENBLAS_CFLAGS)
plugins_devices_cpu_device_cpu_la_LIBADD += $(OPENBLAS_LIBS)
endif
plugins_devices_cpu_device_cpu_la_LIBADD += $(LIBM)
