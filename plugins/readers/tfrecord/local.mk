# plugins/readers/tfrecord: the TFRecord reader plugin (reader_tfrecord.so).
# The tf.train.Example code is generated from
# example.proto by protoc-c at build time (into the build tree, never
# distributed). CRC-32C is the plugin's own (tfr_crc32c.c: no plugin
# compiles a core source); it links zlib and protobuf-c, nothing of libweft.
# plugins/local.mk says how a plugin is built in each configuration.
EXTRA_DIST += plugins/readers/tfrecord/example.proto

READER_TFRECORD_SOURCES = \
	plugins/readers/tfrecord/tfrecord.h \
	plugins/readers/tfrecord/tfr_crc32c.c \
	plugins/readers/tfrecord/tfr_crc32c.h \
	plugins/readers/tfrecord/stream.c \
	plugins/readers/tfrecord/record.c \
	plugins/readers/tfrecord/example.c \
	plugins/readers/tfrecord/reader.c
READER_TFRECORD_CPPFLAGS = $(PLUGIN_CPPFLAGS) \
	-I$(top_builddir) -I$(top_builddir)/plugins/readers/tfrecord \
	$(ZLIB_CFLAGS) $(PROTOBUF_C_CFLAGS)
READER_TFRECORD_LIBS = $(ZLIB_LIBS) $(PROTOBUF_C_LIBS) $(PTHREAD_LIBS)

WF_PLUGIN_MODULES += plugins/readers/tfrecord/reader_tfrecord.la
plugins_readers_tfrecord_reader_tfrecord_la_SOURCES = \
	$(READER_TFRECORD_SOURCES)
nodist_plugins_readers_tfrecord_reader_tfrecord_la_SOURCES = \
	plugins/readers/tfrecord/example.pb-c.c \
	plugins/readers/tfrecord/example.pb-c.h
plugins_readers_tfrecord_reader_tfrecord_la_CPPFLAGS = \
	$(READER_TFRECORD_CPPFLAGS)
plugins_readers_tfrecord_reader_tfrecord_la_LIBADD = $(READER_TFRECORD_LIBS)
plugins_readers_tfrecord_reader_tfrecord_la_LDFLAGS = $(PLUGIN_LDFLAGS)
if WF_PLUGIN_READERS_TFRECORD_SHARED
pkgplugin_LTLIBRARIES += plugins/readers/tfrecord/reader_tfrecord.la
else
check_LTLIBRARIES += plugins/readers/tfrecord/reader_tfrecord.la
plugins_readers_tfrecord_reader_tfrecord_la_LDFLAGS += $(PLUGIN_CHECK_LDFLAGS)
endif

if WF_PLUGIN_READERS_TFRECORD_STATIC
noinst_LTLIBRARIES += plugins/static/reader_tfrecord.la
WF_PRELOADED += plugins/static/reader_tfrecord.la
endif
plugins_static_reader_tfrecord_la_SOURCES = $(READER_TFRECORD_SOURCES)
nodist_plugins_static_reader_tfrecord_la_SOURCES = \
	plugins/readers/tfrecord/example.pb-c.c \
	plugins/readers/tfrecord/example.pb-c.h
plugins_static_reader_tfrecord_la_CPPFLAGS = $(READER_TFRECORD_CPPFLAGS) \
	$(PLUGIN_STATIC_CPPFLAGS)
plugins_static_reader_tfrecord_la_LDFLAGS = $(PLUGIN_STATIC_LDFLAGS)
plugins_static_reader_tfrecord_la_LIBADD = $(READER_TFRECORD_LIBS)

TFRECORD_PB = plugins/readers/tfrecord/example.pb-c.c \
	plugins/readers/tfrecord/example.pb-c.h
BUILT_SOURCES += $(TFRECORD_PB)
# Also when the plugin is built on its own (make <target>, not all).
$(plugins_readers_tfrecord_reader_tfrecord_la_OBJECTS): $(TFRECORD_PB)
$(plugins_static_reader_tfrecord_la_OBJECTS): $(TFRECORD_PB)
CLEANFILES += $(TFRECORD_PB)
# One protoc-c run writes both files; the header follows the source.
plugins/readers/tfrecord/example.pb-c.c: $(top_srcdir)/plugins/readers/tfrecord/example.proto
	$(AM_V_GEN)$(MKDIR_P) plugins/readers/tfrecord && \
	$(PROTOC_C) --proto_path=$(top_srcdir)/plugins/readers/tfrecord \
		--c_out=plugins/readers/tfrecord \
		$(top_srcdir)/plugins/readers/tfrecord/example.proto
plugins/readers/tfrecord/example.pb-c.h: plugins/readers/tfrecord/example.pb-c.c
	@test -f $@ || { rm -f $<; $(MAKE) $(AM_MAKEFLAGS) $<; }
