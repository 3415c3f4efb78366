# plugins/ops/common: helpers shared by the op plugins (broadcasting, dtype
# dispatch, axes, attributes). A libtool convenience library that each op
# plugin links statically; it uses only the host table, never libweft.
noinst_LTLIBRARIES += plugins/ops/common/libopcommon.la
plugins_ops_common_libopcommon_la_SOURCES = \
	plugins/ops/common/opcommon.c plugins/ops/common/opcommon.h
plugins_ops_common_libopcommon_la_CPPFLAGS = $(PLUGIN_CPPFLAGS)
