# plugins/ops/math: the math op plugin (ops_math.so): op definitions, shape
# inference, reference CPU kernels and gradients, and the arithmetic
# simplification pass (arithmetic.c). Links libnumerics (the fused
# epilogue) and libopcommon; needs nothing from libweft (PLUGIN_LDFLAGS
# checks that at link time). plugins/local.mk says how a plugin is built in each
# configuration.
OPS_MATH_SOURCES = \
	plugins/ops/math/math_ops.h \
	plugins/ops/math/plugin.c \
	plugins/ops/math/binary.c \
	plugins/ops/math/unary.c \
	plugins/ops/math/reduce.c \
	plugins/ops/math/matmul.c \
	plugins/ops/math/unary_grad.c \
	plugins/ops/math/reduce_grad.c \
	plugins/ops/math/grad.c \
	plugins/ops/math/arithmetic.c
OPS_MATH_CPPFLAGS = $(PLUGIN_CPPFLAGS) -I$(top_srcdir)/plugins/ops/common \
	$(NUMERICS_CPPFLAGS)
OPS_MATH_HELPERS = plugins/numerics/libnumerics.la \
	plugins/ops/common/libopcommon.la
OPS_MATH_LIBS = $(LIBM)

WF_PLUGIN_MODULES += plugins/ops/math/ops_math.la
plugins_ops_math_ops_math_la_SOURCES = $(OPS_MATH_SOURCES)
plugins_ops_math_ops_math_la_CPPFLAGS = $(OPS_MATH_CPPFLAGS)
plugins_ops_math_ops_math_la_LDFLAGS = $(PLUGIN_LDFLAGS)
plugins_ops_math_ops_math_la_LIBADD = $(OPS_MATH_HELPERS) $(OPS_MATH_LIBS)
if WF_PLUGIN_OPS_MATH_SHARED
pkgplugin_LTLIBRARIES += plugins/ops/math/ops_math.la
else
check_LTLIBRARIES += plugins/ops/math/ops_math.la
plugins_ops_math_ops_math_la_LDFLAGS += $(PLUGIN_CHECK_LDFLAGS)
endif

if WF_PLUGIN_OPS_MATH_STATIC
noinst_LTLIBRARIES += plugins/static/ops_math.la
WF_PRELOADED += plugins/static/ops_math.la
WF_PRELOADED_HELPERS += $(OPS_MATH_HELPERS)
endif
plugins_static_ops_math_la_SOURCES = $(OPS_MATH_SOURCES)
plugins_static_ops_math_la_CPPFLAGS = $(OPS_MATH_CPPFLAGS) $(PLUGIN_STATIC_CPPFLAGS)
plugins_static_ops_math_la_LDFLAGS = $(PLUGIN_STATIC_LDFLAGS)
plugins_static_ops_math_la_LIBADD = $(OPS_MATH_LIBS)
