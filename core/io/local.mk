# core/io — files: checkpoints (safetensors with a CRC-32C per tensor,
# written atomically; the Save and Restore ops), graph files (protobuf-c),
# saved models, .npy arrays, and the atomic file writing they share. Above
# core/data (a checkpoint holds the input pipeline's positions).
core_libweftcore_la_SOURCES += \
	core/io/checkpoint.c core/io/checkpoint_internal.h \
	core/io/checkpoint_ops.c \
	core/io/crc32c.c core/io/crc32c.h \
	core/io/file_io.c core/io/file_io.h \
	core/io/graph_file.c \
	core/io/import.c core/io/import_internal.h \
	core/io/npy.c \
	core/io/safetensors.c core/io/safetensors.h \
	core/io/saved_model.c
core_libweftcore_la_CFLAGS += $(JANSSON_CFLAGS)
core_libweftcore_la_LIBADD += $(JANSSON_LIBS)

# Graph files: the message code is generated from core/io/graph.proto by
# protoc-c at build time, into the build tree; only the .proto is
# distributed.
EXTRA_DIST += core/io/graph.proto
GRAPH_FILE_PB = core/io/graph.pb-c.c core/io/graph.pb-c.h
nodist_core_libweftcore_la_SOURCES += $(GRAPH_FILE_PB)
core_libweftcore_la_CFLAGS += $(PROTOBUF_C_CFLAGS)
core_libweftcore_la_LIBADD += $(PROTOBUF_C_LIBS)

BUILT_SOURCES += $(GRAPH_FILE_PB)
# Also when the core is built on its own (make <target>, not all).
$(core_libweftcore_la_OBJECTS): $(GRAPH_FILE_PB)
CLEANFILES += $(GRAPH_FILE_PB)
# One protoc-c run writes both files; the header follows the source.
core/io/graph.pb-c.c: $(top_srcdir)/core/io/graph.proto
	$(AM_V_GEN)$(MKDIR_P) core/io && \
	$(PROTOC_C) --proto_path=$(top_srcdir)/core/io --c_out=core/io \
		$(top_srcdir)/core/io/graph.proto
core/io/graph.pb-c.h: core/io/graph.pb-c.c
	@test -f $@ || { rm -f $<; $(MAKE) $(AM_MAKEFLAGS) $<; }
