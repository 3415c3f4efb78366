# core/graph — graphs and their nodes, the ops they name, attributes,
# dtypes, tensors in host memory. Above core/base.
core_libweftcore_la_SOURCES += \
	core/graph/attr.c core/graph/attr.h \
	core/graph/dtype.c \
	core/graph/graph.c core/graph/graph_internal.h \
	core/graph/op.h \
	core/graph/tensor.c core/graph/tensor_internal.h
