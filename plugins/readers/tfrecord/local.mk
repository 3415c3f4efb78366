# plugins/readers/tfrecord: the TFRecord reader plugin (reader_tfrecord.so).
# The tf.train.Example code is generated from
# example.proto by protoc-c at build time (into the build tree, never
# distributed). CRC-32C is the core's source (core/crc32c.c), compiled in:
# the plugin links zlib and protobuf-c, nothing of libweft.
EXTRA_DIST += plugins/readers/tfrecord/example.proto

pkgplugin_LTLIBRARIES += plugins/readers/tfrecord/reader_tfrecord.la
plugins_readers_tfrecord_reader_tfrecord_la_SOURCES = \
	plugins/readers/tfrecord/tfrecord.h \
	core/crc32c.c core/crc32c.h \
	plugins/readers/tfrecord/stream.c \
	plugins/readers/tfrecord/record.c \
	plugins/readers/tfrecord/example.c \
	plugins/readers/tfrecord/reader.c
nodist_plugins_readers_tfrecord_reader_tfrecord_la_SOURCES = \
	plugins/readers/tfrecord/example.pb-c.c \
	plugins/readers/tfrecord/example.pb-c.h
plugins_readers_tfrecord_reader_tfrecord_la_CPPFLAGS = $(PLUGIN_CPPFLAGS) \
	-I$(top_builddir) -I$(top_builddir)/plugins/readers/tfrecord \
	-I$(top_srcdir)/core \
	$(ZLIB_CFLAGS) $(PROTOBUF_C_CFLAGS)
plugins_readers_tfrecord_reader_tfrecord_la_LIBADD = $(ZLIB_LIBS) \
	$(PROTOBUF_C_LIBS) $(PTHREAD_LIBS)
plugins_readers_tfrecord_reader_tfrecord_la_LDFLAGS = $(PLUGIN_LDFLAGS)

TFRECORD_PB = plugins/readers/tfrecord/example.pb-c.c \
	plugins/readers/tfrecord/example.pb-c.h
BUILT_SOURCES += $(TFRECORD_PB)
# Also when the plugin is built on its own (make <target>, not all).
$(plugins_readers_tfrecord_reader_tfrecord_la_OBJECTS): $(TFRECORD_PB)
CLEANFILES += $(TFRECORD_PB)
# One protoc-c run writes both files; the header follows the source.
plugins/readers/tfrecord/example.pb-c.c: $(top_srcdir)/plugins/readers/tfrecord/example.proto
	$(AM_V_GEN)$(MKDIR_P) plugins/readers/tfrecord && \
	$(PROTOC_C) --proto_path=$(top_srcdir)/plugins/readers/tfrecord \
		--c_out=plugins/readers/tfrecord \
		$(top_srcdir)/plugins/readers/tfrecord/example.proto
plugins/readers/tfrecord/example.pb-c.h: plugins/readers/tfrecord/example.pb-c.c
	@test -f $@ || { rm -f $<; $(MAKE) $(AM_MAKEFLAGS) $<; }
