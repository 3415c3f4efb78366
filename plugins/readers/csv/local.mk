# plugins/readers/csv: the csv reader plugin (reader_csv.so): RFC 4180
# files with a typed schema, memory-mapped. Reaches the core only through
# the host table; links nothing of libweft (PLUGIN_LDFLAGS: -z defs).
pkgplugin_LTLIBRARIES += plugins/readers/csv/reader_csv.la
plugins_readers_csv_reader_csv_la_SOURCES = \
	plugins/readers/csv/csv.c \
	plugins/readers/csv/csv_scan.c plugins/readers/csv/csv_scan.h
plugins_readers_csv_reader_csv_la_CPPFLAGS = $(PLUGIN_CPPFLAGS)
plugins_readers_csv_reader_csv_la_LIBADD = $(LIBM)
plugins_readers_csv_reader_csv_la_LDFLAGS = $(PLUGIN_LDFLAGS)
EXTRA_DIST += plugins/readers/csv/README.md
