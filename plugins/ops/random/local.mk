# plugins/ops/random: the random op plugin (ops_random.so): RandomUniform,
# RandomNormal, TruncatedNormal, the Glorot/He/LeCun initializers, Zeros,
# Ones and Constant, over counter-based Philox-4x32-10 streams (philox.c,
# which tests/ops/test_random also links directly). Links libopcommon
# statically; needs nothing from libweft.
pkgplugin_LTLIBRARIES += plugins/ops/random/ops_random.la
plugins_ops_random_ops_random_la_SOURCES = \
	plugins/ops/random/philox.c plugins/ops/random/philox.h \
	plugins/ops/random/random.c
plugins_ops_random_ops_random_la_CPPFLAGS = $(PLUGIN_CPPFLAGS) \
	-I$(top_srcdir)/plugins/ops/common
plugins_ops_random_ops_random_la_LDFLAGS = $(PLUGIN_LDFLAGS)
plugins_ops_random_ops_random_la_LIBADD = \
	plugins/ops/common/libopcommon.la $(LIBM)
