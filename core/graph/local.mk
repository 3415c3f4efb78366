# core/graph — the lowest room: graphs and their nodes, attributes, dtypes,
# tensors, statuses, the allocator and string maps. Includes nothing of the
# other rooms.
core_libweftcore_la_SOURCES += \
	core/graph/alloc.c core/graph/alloc.h \
	core/graph/attr.c core/graph/attr.h \
	core/graph/dtype.c \
	core/graph/graph.c core/graph/graph_internal.h \
	core/graph/status.c core/graph/status_internal.h \
	core/graph/strmap.c core/graph/strmap.h \
	core/graph/tensor.c core/graph/tensor_internal.h
