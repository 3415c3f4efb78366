# plugins/readers/fixed: the fixed-record reader plugin (reader_fixed.so):
# equal-sized binary records, memory-mapped, laid out by options. Reaches
# the core only through the host table (PLUGIN_LDFLAGS: -z defs).
pkgplugin_LTLIBRARIES += plugins/readers/fixed/reader_fixed.la
plugins_readers_fixed_reader_fixed_la_SOURCES = plugins/readers/fixed/fixed.c
plugins_readers_fixed_reader_fixed_la_CPPFLAGS = $(PLUGIN_CPPFLAGS)
plugins_readers_fixed_reader_fixed_la_LDFLAGS = $(PLUGIN_LDFLAGS)
EXTRA_DIST += plugins/readers/fixed/README.md
