# plugins/ops/rnn: the rnn op plugin (ops_rnn.so): LSTM and GRU, their
# backward ops, gradients and reference CPU kernels. Links libopcommon;
# needs nothing from libweft. plugins/local.mk says how a plugin is built
# in each configuration.
OPS_RNN_SOURCES = \
	plugins/ops/rnn/rnn.h \
	plugins/ops/rnn/rnn.c \
	plugins/ops/rnn/lstm.c \
	plugins/ops/rnn/gru.c \
	plugins/ops/rnn/grad.c \
	plugins/ops/rnn/plugin.c
OPS_RNN_CPPFLAGS = $(PLUGIN_CPPFLAGS) -I$(top_srcdir)/plugins/ops/common
OPS_RNN_HELPERS = plugins/ops/common/libopcommon.la
OPS_RNN_LIBS = $(LIBM)

WF_PLUGIN_MODULES += plugins/ops/rnn/ops_rnn.la
plugins_ops_rnn_ops_rnn_la_SOURCES = $(OPS_RNN_SOURCES)
plugins_ops_rnn_ops_rnn_la_CPPFLAGS = $(OPS_RNN_CPPFLAGS)
plugins_ops_rnn_ops_rnn_la_LDFLAGS = $(PLUGIN_LDFLAGS)
plugins_ops_rnn_ops_rnn_la_LIBADD = $(OPS_RNN_HELPERS) $(OPS_RNN_LIBS)
if WF_PLUGIN_OPS_RNN_SHARED
pkgplugin_LTLIBRARIES += plugins/ops/rnn/ops_rnn.la
else
check_LTLIBRARIES += plugins/ops/rnn/ops_rnn.la
plugins_ops_rnn_ops_rnn_la_LDFLAGS += $(PLUGIN_CHECK_LDFLAGS)
endif

if WF_PLUGIN_OPS_RNN_STATIC
noinst_LTLIBRARIES += plugins/static/ops_rnn.la
WF_PRELOADED += plugins/static/ops_rnn.la
WF_PRELOADED_HELPERS += $(OPS_RNN_HELPERS)
endif
plugins_static_ops_rnn_la_SOURCES = $(OPS_RNN_SOURCES)
plugins_static_ops_rnn_la_CPPFLAGS = $(OPS_RNN_CPPFLAGS) $(PLUGIN_STATIC_CPPFLAGS)
plugins_static_ops_rnn_la_LDFLAGS = $(PLUGIN_STATIC_LDFLAGS)
plugins_static_ops_rnn_la_LIBADD = $(OPS_RNN_LIBS)
