# plugins/readers/idx: the idx reader plugin (reader_idx.so): MNIST-style
# idx files, raw or gzip (zlib), optionally paired with a labels file. It
# reaches the core only through the host table and links zlib, nothing of
# libweft (PLUGIN_LDFLAGS carries -z defs to prove it). plugins/local.mk
# says how a plugin is built in each configuration.
READER_IDX_SOURCES = \
	plugins/readers/idx/idx.c \
	plugins/readers/idx/idx_stream.c plugins/readers/idx/idx_stream.h
READER_IDX_CPPFLAGS = $(PLUGIN_CPPFLAGS) $(ZLIB_CFLAGS)
READER_IDX_LIBS = $(ZLIB_LIBS)
EXTRA_DIST += plugins/readers/idx/README.md

WF_PLUGIN_MODULES += plugins/readers/idx/reader_idx.la
plugins_readers_idx_reader_idx_la_SOURCES = $(READER_IDX_SOURCES)
plugins_readers_idx_reader_idx_la_CPPFLAGS = $(READER_IDX_CPPFLAGS)
plugins_readers_idx_reader_idx_la_LIBADD = $(READER_IDX_LIBS)
plugins_readers_idx_reader_idx_la_LDFLAGS = $(PLUGIN_LDFLAGS)
if WF_PLUGIN_READERS_IDX_SHARED
pkgplugin_LTLIBRARIES += plugins/readers/idx/reader_idx.la
else
check_LTLIBRARIES += plugins/readers/idx/reader_idx.la
plugins_readers_idx_reader_idx_la_LDFLAGS += $(PLUGIN_CHECK_LDFLAGS)
endif

if WF_PLUGIN_READERS_IDX_STATIC
noinst_LTLIBRARIES += plugins/static/reader_idx.la
WF_PRELOADED += plugins/static/reader_idx.la
endif
plugins_static_reader_idx_la_SOURCES = $(READER_IDX_SOURCES)
plugins_static_reader_idx_la_CPPFLAGS = $(READER_IDX_CPPFLAGS) $(PLUGIN_STATIC_CPPFLAGS)
plugins_static_reader_idx_la_LDFLAGS = $(PLUGIN_STATIC_LDFLAGS)
plugins_static_reader_idx_la_LIBADD = $(READER_IDX_LIBS)
