# plugins/ops/common: libopcommon, the op plugins' gradient helper that
# needs ops-math's SumToLike (the general helpers are the SDK's layer,
# <weft/plugin_aux.h>; what op and device plugins must compute alike is
# plugins/numerics). A libtool convenience library that uses only the host
# table, never libweft; a module links it whole, a build with static
# plugins once into libweft (Makefile.am).
noinst_LTLIBRARIES += plugins/ops/common/libopcommon.la
plugins_ops_common_libopcommon_la_SOURCES = \
	plugins/ops/common/opcommon.c plugins/ops/common/opcommon.h
plugins_ops_common_libopcommon_la_CPPFLAGS = $(PLUGIN_CPPFLAGS)
