# plugins/ops/array: the array op plugin (ops_array.so): op definitions,
# shape inference and reference CPU kernels for Const, Placeholder, Reshape,
# Transpose, Concat, Split, Slice, StridedSlice, Pad, Gather, OneHot, ...,
# the backward ops of their gradients and the gradient functions.
# Links libopcommon statically; needs nothing from libweft.
pkgplugin_LTLIBRARIES += plugins/ops/array/ops_array.la
plugins_ops_array_ops_array_la_SOURCES = \
	plugins/ops/array/array.h \
	plugins/ops/array/plugin.c \
	plugins/ops/array/util.c \
	plugins/ops/array/source.c \
	plugins/ops/array/reshape.c \
	plugins/ops/array/concat.c \
	plugins/ops/array/slice.c \
	plugins/ops/array/gather.c \
	plugins/ops/array/grad.c
plugins_ops_array_ops_array_la_CPPFLAGS = $(PLUGIN_CPPFLAGS) \
	-I$(top_srcdir)/plugins/ops/common
plugins_ops_array_ops_array_la_LDFLAGS = $(PLUGIN_LDFLAGS)
plugins_ops_array_ops_array_la_LIBADD = plugins/ops/common/libopcommon.la $(LIBM)
