# plugins/ops/random: the random op plugin (ops_random.so): RandomUniform,
# RandomNormal, TruncatedNormal, the Glorot/He/LeCun initializers, Zeros,
# Ones and Constant, over counter-based Philox-4x32-10 streams. Links
# libnumerics (the streams, plugins/numerics/philox.c, shared with ops-nn's
# Dropout and the CUDA plugin) and libopcommon; needs nothing from libweft.
# plugins/local.mk says how a plugin is built in each configuration.
OPS_RANDOM_SOURCES = plugins/ops/random/random.c
OPS_RANDOM_CPPFLAGS = $(PLUGIN_CPPFLAGS) -I$(top_srcdir)/plugins/ops/common \
	$(NUMERICS_CPPFLAGS)
OPS_RANDOM_HELPERS = plugins/numerics/libnumerics.la \
	plugins/ops/common/libopcommon.la
OPS_RANDOM_LIBS = $(LIBM)

WF_PLUGIN_MODULES += plugins/ops/random/ops_random.la
plugins_ops_random_ops_random_la_SOURCES = $(OPS_RANDOM_SOURCES)
plugins_ops_random_ops_random_la_CPPFLAGS = $(OPS_RANDOM_CPPFLAGS)
plugins_ops_random_ops_random_la_LDFLAGS = $(PLUGIN_LDFLAGS)
plugins_ops_random_ops_random_la_LIBADD = $(OPS_RANDOM_HELPERS) \
	$(OPS_RANDOM_LIBS)
if WF_PLUGIN_OPS_RANDOM_SHARED
pkgplugin_LTLIBRARIES += plugins/ops/random/ops_random.la
else
check_LTLIBRARIES += plugins/ops/random/ops_random.la
plugins_ops_random_ops_random_la_LDFLAGS += $(PLUGIN_CHECK_LDFLAGS)
endif

if WF_PLUGIN_OPS_RANDOM_STATIC
noinst_LTLIBRARIES += plugins/static/ops_random.la
WF_PRELOADED += plugins/static/ops_random.la
WF_PRELOADED_HELPERS += $(OPS_RANDOM_HELPERS)
endif
plugins_static_ops_random_la_SOURCES = $(OPS_RANDOM_SOURCES)
plugins_static_ops_random_la_CPPFLAGS = $(OPS_RANDOM_CPPFLAGS) $(PLUGIN_STATIC_CPPFLAGS)
plugins_static_ops_random_la_LDFLAGS = $(PLUGIN_STATIC_LDFLAGS)
plugins_static_ops_random_la_LIBADD = $(OPS_RANDOM_LIBS)
