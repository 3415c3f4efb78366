# plugins/readers/fixed: the fixed-record reader plugin (reader_fixed.so):
# equal-sized binary records, memory-mapped, laid out by options. Reaches
# the core only through the host table (PLUGIN_LDFLAGS: -z defs).
# plugins/local.mk says how a plugin is built in each configuration.
READER_FIXED_SOURCES = plugins/readers/fixed/fixed.c
EXTRA_DIST += plugins/readers/fixed/README.md

WF_PLUGIN_MODULES += plugins/readers/fixed/reader_fixed.la
plugins_readers_fixed_reader_fixed_la_SOURCES = $(READER_FIXED_SOURCES)
plugins_readers_fixed_reader_fixed_la_CPPFLAGS = $(PLUGIN_CPPFLAGS)
plugins_readers_fixed_reader_fixed_la_LDFLAGS = $(PLUGIN_LDFLAGS)
if WF_PLUGIN_READERS_FIXED_SHARED
pkgplugin_LTLIBRARIES += plugins/readers/fixed/reader_fixed.la
else
check_LTLIBRARIES += plugins/readers/fixed/reader_fixed.la
plugins_readers_fixed_reader_fixed_la_LDFLAGS += $(PLUGIN_CHECK_LDFLAGS)
endif

if WF_PLUGIN_READERS_FIXED_STATIC
noinst_LTLIBRARIES += plugins/static/reader_fixed.la
WF_PRELOADED += plugins/static/reader_fixed.la
endif
plugins_static_reader_fixed_la_SOURCES = $(READER_FIXED_SOURCES)
plugins_static_reader_fixed_la_CPPFLAGS = $(PLUGIN_CPPFLAGS) $(PLUGIN_STATIC_CPPFLAGS)
plugins_static_reader_fixed_la_LDFLAGS = $(PLUGIN_STATIC_LDFLAGS)
