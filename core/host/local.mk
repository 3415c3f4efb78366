# core/host — the top room: the host table plugins receive, put together
# from the entries of every room below, and wf_runtime_new, which hands it
# to the core's own op sets and to the plugins it loads.
core_libweftcore_la_SOURCES += \
	core/host/host.c core/host/host.h \
	core/host/runtime_new.c
