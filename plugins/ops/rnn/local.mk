# plugins/ops/rnn: the rnn op plugin (ops_rnn.so): LSTM and GRU, their
# backward ops, gradients and reference CPU kernels. Links libopcommon
# statically; needs nothing from libweft. (The CPU device plugin compiles
# lstm.c, gru.c and rnn.c too, for its fallbacks.)
pkgplugin_LTLIBRARIES += plugins/ops/rnn/ops_rnn.la
plugins_ops_rnn_ops_rnn_la_SOURCES = \
	plugins/ops/rnn/rnn.h \
	plugins/ops/rnn/rnn.c \
	plugins/ops/rnn/lstm.c \
	plugins/ops/rnn/gru.c \
	plugins/ops/rnn/grad.c \
	plugins/ops/rnn/plugin.c
plugins_ops_rnn_ops_rnn_la_CPPFLAGS = $(PLUGIN_CPPFLAGS) \
	-I$(top_srcdir)/plugins/ops/common
plugins_ops_rnn_ops_rnn_la_LDFLAGS = $(PLUGIN_LDFLAGS)
plugins_ops_rnn_ops_rnn_la_LIBADD = plugins/ops/common/libopcommon.la $(LIBM)
