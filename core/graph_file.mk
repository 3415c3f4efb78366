# core/graph_file.mk — graph files (core/graph_file.c). The message code is
# generated from core/graph.proto by protoc-c at build time, into the build
# tree (core/graph.pb-c.[ch]); only the .proto is distributed.
EXTRA_DIST += core/graph.proto

core_libweftcore_la_SOURCES += core/graph_file.c
GRAPH_FILE_PB = core/graph.pb-c.c core/graph.pb-c.h
nodist_core_libweftcore_la_SOURCES += $(GRAPH_FILE_PB)
core_libweftcore_la_CFLAGS += $(PROTOBUF_C_CFLAGS)
core_libweftcore_la_LIBADD += $(PROTOBUF_C_LIBS)

BUILT_SOURCES += $(GRAPH_FILE_PB)
# Also when the core is built on its own (make <target>, not all).
$(core_libweftcore_la_OBJECTS): $(GRAPH_FILE_PB)
CLEANFILES += $(GRAPH_FILE_PB)
# One protoc-c run writes both files; the header follows the source.
core/graph.pb-c.c: $(top_srcdir)/core/graph.proto
	$(AM_V_GEN)$(MKDIR_P) core && \
	$(PROTOC_C) --proto_path=$(top_srcdir)/core --c_out=core \
		$(top_srcdir)/core/graph.proto
core/graph.pb-c.h: core/graph.pb-c.c
	@test -f $@ || { rm -f $<; $(MAKE) $(AM_MAKEFLAGS) $<; }
