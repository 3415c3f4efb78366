# plugins/ops/state: the state op plugin (ops_state.so): resource variables
# (VarHandle, ReadVariable, AssignVariable, AssignAdd/SubVariable,
# VarIsInitialized) over the session's variable store, reached through the
# host table. Links libopcommon statically; needs nothing from libweft.
pkgplugin_LTLIBRARIES += plugins/ops/state/ops_state.la
plugins_ops_state_ops_state_la_SOURCES = plugins/ops/state/state.c
plugins_ops_state_ops_state_la_CPPFLAGS = $(PLUGIN_CPPFLAGS) \
	-I$(top_srcdir)/plugins/ops/common
plugins_ops_state_ops_state_la_LDFLAGS = $(PLUGIN_LDFLAGS)
plugins_ops_state_ops_state_la_LIBADD = plugins/ops/common/libopcommon.la
