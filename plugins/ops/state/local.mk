# plugins/ops/state: the state op plugin (ops_state.so): resource variables
# (VarHandle, ReadVariable, AssignVariable, AssignAdd/SubVariable,
# VarIsInitialized) over the session's variable store, reached through the
# host table. Links libopcommon; needs nothing from libweft.
# plugins/local.mk says how a plugin is built in each configuration.
OPS_STATE_SOURCES = plugins/ops/state/state.c
OPS_STATE_CPPFLAGS = $(PLUGIN_CPPFLAGS) -I$(top_srcdir)/plugins/ops/common
OPS_STATE_HELPERS = plugins/ops/common/libopcommon.la

WF_PLUGIN_MODULES += plugins/ops/state/ops_state.la
plugins_ops_state_ops_state_la_SOURCES = $(OPS_STATE_SOURCES)
plugins_ops_state_ops_state_la_CPPFLAGS = $(OPS_STATE_CPPFLAGS)
plugins_ops_state_ops_state_la_LDFLAGS = $(PLUGIN_LDFLAGS)
plugins_ops_state_ops_state_la_LIBADD = $(OPS_STATE_HELPERS)
if WF_PLUGIN_OPS_STATE_SHARED
pkgplugin_LTLIBRARIES += plugins/ops/state/ops_state.la
else
check_LTLIBRARIES += plugins/ops/state/ops_state.la
plugins_ops_state_ops_state_la_LDFLAGS += $(PLUGIN_CHECK_LDFLAGS)
endif

if WF_PLUGIN_OPS_STATE_STATIC
noinst_LTLIBRARIES += plugins/static/ops_state.la
WF_PRELOADED += plugins/static/ops_state.la
WF_PRELOADED_HELPERS += $(OPS_STATE_HELPERS)
endif
plugins_static_ops_state_la_SOURCES = $(OPS_STATE_SOURCES)
plugins_static_ops_state_la_CPPFLAGS = $(OPS_STATE_CPPFLAGS) $(PLUGIN_STATIC_CPPFLAGS)
plugins_static_ops_state_la_LDFLAGS = $(PLUGIN_STATIC_LDFLAGS)
