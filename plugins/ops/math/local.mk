# plugins/ops/math: the math op plugin (ops_math.so): op definitions, shape
# inference, reference CPU kernels and gradients. Links libopcommon
# statically; needs nothing from libweft (PLUGIN_LDFLAGS checks that at link
# time).
pkgplugin_LTLIBRARIES += plugins/ops/math/ops_math.la
plugins_ops_math_ops_math_la_SOURCES = \
	plugins/ops/math/math_ops.h \
	plugins/ops/math/plugin.c \
	plugins/ops/math/binary.c \
	plugins/ops/math/unary.c \
	plugins/ops/math/reduce.c \
	plugins/ops/math/matmul.c \
	plugins/ops/math/unary_grad.c \
	plugins/ops/math/reduce_grad.c \
	plugins/ops/math/grad.c \
	plugins/ops/common/opfused.c plugins/ops/common/opfused.h
plugins_ops_math_ops_math_la_CPPFLAGS = $(PLUGIN_CPPFLAGS) \
	-I$(top_srcdir)/plugins/ops/common
plugins_ops_math_ops_math_la_LDFLAGS = $(PLUGIN_LDFLAGS)
plugins_ops_math_ops_math_la_LIBADD = plugins/ops/common/libopcommon.la $(LIBM)
