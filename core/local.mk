# libweft: the core. Everything is compiled once into a convenience library
# (which the tests link, internal symbols included) and wrapped as libweft.
noinst_LTLIBRARIES += core/libweftcore.la
core_libweftcore_la_SOURCES = \
	core/alloc.c core/alloc.h \
	core/file_io.c core/file_io.h \
	core/attr.c core/attr.h \
	core/config.c core/settings.h \
	core/cluster.c core/cluster.h core/worker.c \
	core/core_ops.c core/core_ops.h \
	core/data_codec.c \
	core/data_map.c \
	core/data_ops.c \
	core/data_parallel.c \
	core/data_source.c \
	core/dataset.c core/dataset.h \
	core/dl.c core/dl.h \
	core/dot.c \
	core/dtype.c \
	core/executor.c core/executor.h \
	core/gradients.c \
	core/graph.c core/graph.h \
	core/host.c core/host.h \
	core/iterator.c \
	core/kernel.c core/kernel.h \
	core/layers.c core/layers_internal.h \
	core/loader.c \
	core/memplan.c core/memplan.h \
	core/metadata.c \
	core/optimize.c core/optimize.h core/passes.h \
	core/optimizer.c \
	core/pass_arithmetic.c \
	core/pass_constant_folding.c \
	core/pass_cse.c \
	core/pass_fusion.c \
	core/partition.c core/partition.h \
	core/placement.c core/placement.h \
	core/prefetch.c \
	core/prune.c core/prune.h \
	core/registry.c core/registry.h \
	core/rendezvous.c core/rendezvous.h \
	core/runtime.c core/runtime.h \
	core/session.c core/session_internal.h \
	core/status.c core/status.h \
	core/strmap.c core/strmap.h \
	core/tensor.c core/tensor.h \
	core/threadpool.c core/threadpool.h \
	core/variables.c core/variables.h
core_libweftcore_la_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/core -I$(top_builddir)/core \
	-DWF_PLUGIN_DIR='"$(pkgplugindir)"' \
	-DWF_SYSCONF_DIR='"$(sysconfdir)"' \
	-DWF_BUILD_DIR='"$(abs_top_builddir)"'
core_libweftcore_la_CFLAGS = $(AM_CFLAGS) $(INIH_CFLAGS) $(HWLOC_CFLAGS)
core_libweftcore_la_LIBADD = $(LTDL_LIBS) $(INIH_LIBS) $(HWLOC_LIBS) $(PTHREAD_LIBS) $(LIBM)

# The in-tree plugin directories, regenerated when the plugin list (the
# Makefile) changes, so a new plugin is found without a clean build.
BUILT_SOURCES = core/uninstalled.h
nodist_core_libweftcore_la_SOURCES = core/uninstalled.h
CLEANFILES += core/uninstalled.h
core/uninstalled.h: Makefile
	$(AM_V_GEN)$(MKDIR_P) core && \
	echo '#define WF_UNINSTALLED_PLUGIN_PATH "$(UNINSTALLED_PLUGIN_PATH)"' > $@.tmp && \
	echo '#define WF_SHIPPED_MODULES ":$(SHIPPED_MODULES):"' >> $@.tmp && \
	if cmp -s $@.tmp $@; then rm -f $@.tmp; else mv $@.tmp $@; fi

lib_LTLIBRARIES += core/libweft.la
core_libweft_la_SOURCES =
core_libweft_la_LIBADD = core/libweftcore.la
core_libweft_la_LDFLAGS = -version-info $(WF_LT_VERSION) -no-undefined

weftinclude_HEADERS += \
	sdk/include/weft/checkpoint.h \
	sdk/include/weft/cluster.h \
	sdk/include/weft/data.h \
	sdk/include/weft/export.h \
	sdk/include/weft/gradients.h \
	sdk/include/weft/graph.h \
	sdk/include/weft/graph_file.h \
	sdk/include/weft/npy.h \
	sdk/include/weft/parallel.h \
	sdk/include/weft/saved_model.h \
	sdk/include/weft/layers.h \
	sdk/include/weft/plugin.h \
	sdk/include/weft/runtime.h \
	sdk/include/weft/session.h \
	sdk/include/weft/status.h \
	sdk/include/weft/tensor.h \
	sdk/include/weft/types.h \
	sdk/include/weft/weft.h

# Persistence: graph files (protobuf-c), checkpoints (safetensors), .npy
# arrays and saved models.
include core/graph_file.mk
include core/checkpoint.mk
include core/npy.mk
include core/saved_model.mk
