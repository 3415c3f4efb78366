# core/base — the lowest room, what every other room uses: the allocator
# (with failure injection for tests), statuses, string maps, and the
# thread pools with the host's core count (hwloc). Includes nothing of the
# other rooms.
core_libweftcore_la_SOURCES += \
	core/base/alloc.c core/base/alloc.h \
	core/base/log.c core/base/log.h \
	core/base/status.c core/base/status_internal.h \
	core/base/strmap.c core/base/strmap.h \
	core/base/threadpool.c core/base/threadpool.h
