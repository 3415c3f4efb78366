# plugins/ops/nn: the nn op plugin (ops_nn.so): op definitions, shape
# inference and reference CPU kernels for BiasAdd, Conv2D, the pools,
# softmax and its losses, BatchNorm and Dropout, their backward ops and
# gradient functions, and the graph pass that fuses MatMul or Conv2D with
# BiasAdd and an activation (fusion.c). Links libopcommon and libnumerics (Dropout's Philox
# streams, the fused epilogue, the window geometry of Conv2D and the
# pools); needs nothing from libweft. plugins/local.mk says how a plugin is
# built in each configuration.
OPS_NN_SOURCES = \
	plugins/ops/nn/nn.h \
	plugins/ops/nn/plugin.c \
	plugins/ops/nn/util.c \
	plugins/ops/nn/bias.c \
	plugins/ops/nn/conv.c \
	plugins/ops/nn/pool.c \
	plugins/ops/nn/softmax.c \
	plugins/ops/nn/batchnorm.c \
	plugins/ops/nn/layernorm.c \
	plugins/ops/nn/fused.c \
	plugins/ops/nn/dropout.c \
	plugins/ops/nn/fusion.c \
	plugins/ops/nn/grad.c
OPS_NN_CPPFLAGS = $(PLUGIN_CPPFLAGS) \
	-I$(top_srcdir)/plugins/ops/common $(NUMERICS_CPPFLAGS)
OPS_NN_HELPERS = plugins/numerics/libnumerics.la \
	plugins/ops/common/libopcommon.la
OPS_NN_LIBS = $(LIBM)

WF_PLUGIN_MODULES += plugins/ops/nn/ops_nn.la
plugins_ops_nn_ops_nn_la_SOURCES = $(OPS_NN_SOURCES)
plugins_ops_nn_ops_nn_la_CPPFLAGS = $(OPS_NN_CPPFLAGS)
plugins_ops_nn_ops_nn_la_LDFLAGS = $(PLUGIN_LDFLAGS)
plugins_ops_nn_ops_nn_la_LIBADD = $(OPS_NN_HELPERS) $(OPS_NN_LIBS)
if WF_PLUGIN_OPS_NN_SHARED
pkgplugin_LTLIBRARIES += plugins/ops/nn/ops_nn.la
else
check_LTLIBRARIES += plugins/ops/nn/ops_nn.la
plugins_ops_nn_ops_nn_la_LDFLAGS += $(PLUGIN_CHECK_LDFLAGS)
endif

if WF_PLUGIN_OPS_NN_STATIC
noinst_LTLIBRARIES += plugins/static/ops_nn.la
WF_PRELOADED += plugins/static/ops_nn.la
WF_PRELOADED_HELPERS += $(OPS_NN_HELPERS)
endif
plugins_static_ops_nn_la_SOURCES = $(OPS_NN_SOURCES)
plugins_static_ops_nn_la_CPPFLAGS = $(OPS_NN_CPPFLAGS) $(PLUGIN_STATIC_CPPFLAGS)
plugins_static_ops_nn_la_LDFLAGS = $(PLUGIN_STATIC_LDFLAGS)
plugins_static_ops_nn_la_LIBADD = $(OPS_NN_LIBS)
