# core/dist — a runtime as a task of a job of processes: joining a job over
# a transport plugin, splitting graphs between tasks, the worker's loop.
# Above core/io.
core_libweftcore_la_SOURCES += \
	core/dist/cluster.c core/dist/cluster_internal.h \
	core/dist/worker.c
