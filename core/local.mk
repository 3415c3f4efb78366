# libweft: the core. Everything is compiled once into a convenience library
# (which the tests link, internal symbols included) and wrapped as libweft.
noinst_LTLIBRARIES += core/libweftcore.la
# Each room of the core (one stage of the pipeline) lists its own sources in
# its local.mk, below; a room includes only headers of its own room and of
# the rooms under it (tests/core/check_rooms.sh):
#   base <- graph <- plugin <- compile <- exec <- data <- io <- dist <- host
core_libweftcore_la_SOURCES =
nodist_core_libweftcore_la_SOURCES =
core_libweftcore_la_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/core -I$(top_builddir)/core \
	-DWF_PLUGIN_DIR='"$(pkgplugindir)"' \
	-DWF_SYSCONF_DIR='"$(sysconfdir)"' \
	-DWF_BUILD_DIR='"$(abs_top_builddir)"'
core_libweftcore_la_CFLAGS = $(AM_CFLAGS) $(INIH_CFLAGS) $(HWLOC_CFLAGS)
core_libweftcore_la_LIBADD = $(LTDL_LIBS) $(INIH_LIBS) $(HWLOC_LIBS) $(PTHREAD_LIBS) $(LIBM)

# The in-tree plugin directories, regenerated when the plugin list (the
# Makefile) changes, so a new plugin is found without a clean build.
BUILT_SOURCES += core/plugin/uninstalled.h
nodist_core_libweftcore_la_SOURCES += core/plugin/uninstalled.h
CLEANFILES += core/plugin/uninstalled.h
core/plugin/uninstalled.h: Makefile
	$(AM_V_GEN)$(MKDIR_P) core/plugin && \
	echo '#define WF_UNINSTALLED_PLUGIN_PATH "$(UNINSTALLED_PLUGIN_PATH)"' > $@.tmp && \
	echo '#define WF_SHIPPED_MODULES ":$(SHIPPED_MODULES):"' >> $@.tmp && \
	if cmp -s $@.tmp $@; then rm -f $@.tmp; else mv $@.tmp $@; fi

lib_LTLIBRARIES += core/libweft.la
core_libweft_la_SOURCES =
core_libweft_la_LIBADD = lib/train/libwefttrain.la core/libweftcore.la
core_libweft_la_LDFLAGS = -version-info $(WF_LT_VERSION) -no-undefined \
	$(WF_LIB_LDFLAGS)

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
	sdk/include/weft/import.h \
	sdk/include/weft/layers.h \
	sdk/include/weft/plugin.h \
	sdk/include/weft/runtime.h \
	sdk/include/weft/session.h \
	sdk/include/weft/status.h \
	sdk/include/weft/tensor.h \
	sdk/include/weft/types.h \
	sdk/include/weft/weft.h


include core/base/local.mk
include core/graph/local.mk
include core/plugin/local.mk
include core/compile/local.mk
include core/exec/local.mk
include core/data/local.mk
include core/io/local.mk
include core/dist/local.mk
include core/host/local.mk
