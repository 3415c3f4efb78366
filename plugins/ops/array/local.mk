# plugins/ops/array: the array op plugin (ops_array.so): op definitions,
# shape inference and reference CPU kernels for Const, Placeholder, Reshape,
# Transpose, Concat, Split, Slice, StridedSlice, Pad, Gather, OneHot, ...,
# the backward ops of their gradients and the gradient functions.
# Links libopcommon; needs nothing from libweft. plugins/local.mk says how
# a plugin is built in each configuration.
OPS_ARRAY_SOURCES = \
	plugins/ops/array/array.h \
	plugins/ops/array/plugin.c \
	plugins/ops/array/util.c \
	plugins/ops/array/source.c \
	plugins/ops/array/reshape.c \
	plugins/ops/array/concat.c \
	plugins/ops/array/slice.c \
	plugins/ops/array/gather.c \
	plugins/ops/array/grad.c
OPS_ARRAY_CPPFLAGS = $(PLUGIN_CPPFLAGS) -I$(top_srcdir)/plugins/ops/common
OPS_ARRAY_HELPERS = plugins/ops/common/libopcommon.la
OPS_ARRAY_LIBS = $(LIBM)

WF_PLUGIN_MODULES += plugins/ops/array/ops_array.la
plugins_ops_array_ops_array_la_SOURCES = $(OPS_ARRAY_SOURCES)
plugins_ops_array_ops_array_la_CPPFLAGS = $(OPS_ARRAY_CPPFLAGS)
plugins_ops_array_ops_array_la_LDFLAGS = $(PLUGIN_LDFLAGS)
plugins_ops_array_ops_array_la_LIBADD = $(OPS_ARRAY_HELPERS) $(OPS_ARRAY_LIBS)
if WF_PLUGIN_OPS_ARRAY_SHARED
pkgplugin_LTLIBRARIES += plugins/ops/array/ops_array.la
else
check_LTLIBRARIES += plugins/ops/array/ops_array.la
plugins_ops_array_ops_array_la_LDFLAGS += $(PLUGIN_CHECK_LDFLAGS)
endif

if WF_PLUGIN_OPS_ARRAY_STATIC
noinst_LTLIBRARIES += plugins/static/ops_array.la
WF_PRELOADED += plugins/static/ops_array.la
WF_PRELOADED_HELPERS += $(OPS_ARRAY_HELPERS)
endif
plugins_static_ops_array_la_SOURCES = $(OPS_ARRAY_SOURCES)
plugins_static_ops_array_la_CPPFLAGS = $(OPS_ARRAY_CPPFLAGS) $(PLUGIN_STATIC_CPPFLAGS)
plugins_static_ops_array_la_LDFLAGS = $(PLUGIN_STATIC_LDFLAGS)
plugins_static_ops_array_la_LIBADD = $(OPS_ARRAY_LIBS)
