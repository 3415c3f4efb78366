# plugins/ops/nn: the nn op plugin (ops_nn.so): op definitions, shape
# inference and reference CPU kernels for BiasAdd, Conv2D, the pools,
# softmax and its losses, BatchNorm and Dropout, their backward ops and
# gradient functions. Dropout draws from the Philox streams of
# plugins/ops/random/philox.c, compiled in here too. Links libopcommon
# statically; needs nothing from libweft.
pkgplugin_LTLIBRARIES += plugins/ops/nn/ops_nn.la
plugins_ops_nn_ops_nn_la_SOURCES = \
	plugins/ops/nn/nn.h \
	plugins/ops/nn/plugin.c \
	plugins/ops/nn/util.c \
	plugins/ops/nn/bias.c \
	plugins/ops/nn/conv.c \
	plugins/ops/nn/pool.c \
	plugins/ops/nn/softmax.c \
	plugins/ops/nn/batchnorm.c \
	plugins/ops/nn/dropout.c \
	plugins/ops/nn/grad.c \
	plugins/ops/nn/fused.c \
	plugins/ops/common/opfused.c plugins/ops/common/opfused.h \
	plugins/ops/random/philox.c plugins/ops/random/philox.h
plugins_ops_nn_ops_nn_la_CPPFLAGS = $(PLUGIN_CPPFLAGS) \
	-I$(top_srcdir)/plugins/ops/common -I$(top_srcdir)/plugins/ops/random
plugins_ops_nn_ops_nn_la_LDFLAGS = $(PLUGIN_LDFLAGS)
plugins_ops_nn_ops_nn_la_LIBADD = plugins/ops/common/libopcommon.la $(LIBM)
