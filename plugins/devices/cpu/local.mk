# plugins/devices/cpu: the CPU device plugin (module device_cpu). It reaches
# the core only through the host table, so it links hwloc and nothing of
# libweft (PLUGIN_LDFLAGS carries -z defs to prove it).
pkgplugin_LTLIBRARIES += plugins/devices/cpu/device_cpu.la
plugins_devices_cpu_device_cpu_la_SOURCES = \
	plugins/devices/cpu/cpu_alloc.c \
	plugins/devices/cpu/cpu_describe.c \
	plugins/devices/cpu/cpu_device.h \
	plugins/devices/cpu/cpu_plugin.c
plugins_devices_cpu_device_cpu_la_CPPFLAGS = $(PLUGIN_CPPFLAGS) $(HWLOC_CFLAGS)
plugins_devices_cpu_device_cpu_la_LIBADD = $(HWLOC_LIBS)
plugins_devices_cpu_device_cpu_la_LDFLAGS = $(PLUGIN_LDFLAGS)
EXTRA_DIST += plugins/devices/cpu/README.md
