# core/plugin — plugins and what they register: loading (libltdl behind
# dl.c), the registries of ops, kernels, gradients, devices, readers and
# transports, the host table, the runtime that owns them, and the config.
# Above core/graph.
core_libweftcore_la_SOURCES += \
	core/plugin/config.c core/plugin/settings.h \
	core/plugin/config_notes.c core/plugin/config_notes.h \
	core/plugin/device_memory.c core/plugin/device_memory.h \
	core/plugin/dl.c core/plugin/dl.h \
	core/plugin/kernel_choice.c core/plugin/kernel_choice.h \
	core/plugin/loader.c \
	core/plugin/registry.c core/plugin/registry.h \
	core/plugin/runtime.c core/plugin/runtime_internal.h
