# plugins/readers/idx: the idx reader plugin (reader_idx.so): MNIST-style
# idx files, raw or gzip (zlib), optionally paired with a labels file. It
# reaches the core only through the host table and links zlib, nothing of
# libweft (PLUGIN_LDFLAGS carries -z defs to prove it).
pkgplugin_LTLIBRARIES += plugins/readers/idx/reader_idx.la
plugins_readers_idx_reader_idx_la_SOURCES = \
	plugins/readers/idx/idx.c \
	plugins/readers/idx/idx_stream.c plugins/readers/idx/idx_stream.h
plugins_readers_idx_reader_idx_la_CPPFLAGS = $(PLUGIN_CPPFLAGS) $(ZLIB_CFLAGS)
plugins_readers_idx_reader_idx_la_LIBADD = $(ZLIB_LIBS)
plugins_readers_idx_reader_idx_la_LDFLAGS = $(PLUGIN_LDFLAGS)
EXTRA_DIST += plugins/readers/idx/README.md
