# plugins/readers/csv: the csv reader plugin (reader_csv.so): RFC 4180
# files with a typed schema, memory-mapped. Reaches the core only through
# the host table; links nothing of libweft (PLUGIN_LDFLAGS: -z defs).
# plugins/local.mk says how a plugin is built in each configuration.
READER_CSV_SOURCES = \
	plugins/readers/csv/csv.c \
	plugins/readers/csv/csv_scan.c plugins/readers/csv/csv_scan.h
READER_CSV_LIBS = $(LIBM)
EXTRA_DIST += plugins/readers/csv/README.md

WF_PLUGIN_MODULES += plugins/readers/csv/reader_csv.la
plugins_readers_csv_reader_csv_la_SOURCES = $(READER_CSV_SOURCES)
plugins_readers_csv_reader_csv_la_CPPFLAGS = $(PLUGIN_CPPFLAGS)
plugins_readers_csv_reader_csv_la_LIBADD = $(READER_CSV_LIBS)
plugins_readers_csv_reader_csv_la_LDFLAGS = $(PLUGIN_LDFLAGS)
if WF_PLUGIN_READERS_CSV_SHARED
pkgplugin_LTLIBRARIES += plugins/readers/csv/reader_csv.la
else
check_LTLIBRARIES += plugins/readers/csv/reader_csv.la
plugins_readers_csv_reader_csv_la_LDFLAGS += $(PLUGIN_CHECK_LDFLAGS)
endif

if WF_PLUGIN_READERS_CSV_STATIC
noinst_LTLIBRARIES += plugins/static/reader_csv.la
WF_PRELOADED += plugins/static/reader_csv.la
endif
plugins_static_reader_csv_la_SOURCES = $(READER_CSV_SOURCES)
plugins_static_reader_csv_la_CPPFLAGS = $(PLUGIN_CPPFLAGS) $(PLUGIN_STATIC_CPPFLAGS)
plugins_static_reader_csv_la_LDFLAGS = $(PLUGIN_STATIC_LDFLAGS)
plugins_static_reader_csv_la_LIBADD = $(READER_CSV_LIBS)
