# plugins/ops/string: the string op plugin (ops_string.so): StringNormalizer,
# AsString and StringToNumber on string tensors, with reference CPU
# kernels; case mappings and number formats through the C library's
# locales (newlocale, towupper_l, uselocale). Needs no helper library
# and nothing from libweft. plugins/local.mk says how a plugin is built in
# each configuration.
OPS_STRING_SOURCES = \
	plugins/ops/string/strops.h \
	plugins/ops/string/casemap.c \
	plugins/ops/string/normalizer.c \
	plugins/ops/string/shortest.c \
	plugins/ops/string/as_string.c \
	plugins/ops/string/to_number.c \
	plugins/ops/string/plugin.c
OPS_STRING_CPPFLAGS = $(PLUGIN_CPPFLAGS)

WF_PLUGIN_MODULES += plugins/ops/string/ops_string.la
plugins_ops_string_ops_string_la_SOURCES = $(OPS_STRING_SOURCES)
plugins_ops_string_ops_string_la_CPPFLAGS = $(OPS_STRING_CPPFLAGS)
plugins_ops_string_ops_string_la_LDFLAGS = $(PLUGIN_LDFLAGS)
if WF_PLUGIN_OPS_STRING_SHARED
pkgplugin_LTLIBRARIES += plugins/ops/string/ops_string.la
else
check_LTLIBRARIES += plugins/ops/string/ops_string.la
plugins_ops_string_ops_string_la_LDFLAGS += $(PLUGIN_CHECK_LDFLAGS)
endif

if WF_PLUGIN_OPS_STRING_STATIC
noinst_LTLIBRARIES += plugins/static/ops_string.la
WF_PRELOADED += plugins/static/ops_string.la
endif
plugins_static_ops_string_la_SOURCES = $(OPS_STRING_SOURCES)
plugins_static_ops_string_la_CPPFLAGS = $(OPS_STRING_CPPFLAGS) $(PLUGIN_STATIC_CPPFLAGS)
plugins_static_ops_string_la_LDFLAGS = $(PLUGIN_STATIC_LDFLAGS)
