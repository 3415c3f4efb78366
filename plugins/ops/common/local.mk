# plugins/ops/common: helpers shared by the op plugins, each a libtool
# convenience library that uses only the host table, never libweft:
#  - libopcommon: the gradient helper that needs ops-math's SumToLike
#    (the general helpers are the SDK's layer, <weft/plugin_aux.h>);
#  - libopfused: the fused ops' attributes and epilogues (ops-math, ops-nn
#    and the CPU device plugin).
# A module links the ones it needs whole; a build with static plugins links
# each once into libweft (Makefile.am), so no helper is defined twice there.
noinst_LTLIBRARIES += plugins/ops/common/libopcommon.la \
	plugins/ops/common/libopfused.la
plugins_ops_common_libopcommon_la_SOURCES = \
	plugins/ops/common/opcommon.c plugins/ops/common/opcommon.h
plugins_ops_common_libopcommon_la_CPPFLAGS = $(PLUGIN_CPPFLAGS)
plugins_ops_common_libopfused_la_SOURCES = \
	plugins/ops/common/opfused.c plugins/ops/common/opfused.h
plugins_ops_common_libopfused_la_CPPFLAGS = $(PLUGIN_CPPFLAGS)
