# plugins/transports/mpi: the MPI transport plugin (module transport_mpi),
# built when configure found Open MPI (pkg-config ompi-c, Debian's
# libopenmpi-dev; --without-mpi leaves it out) and installed when
# --enable-plugins selects transports/mpi (the default: all). It reaches the
# core only through the host table (-z defs in PLUGIN_LDFLAGS proves it)
# and opens libmpi itself when the process joins a job (mpi_lazy.c). Like
# the CUDA plugin it is always a shared module: a process joins the MPI
# job once and the module then stays loaded until exit. It is one of the build tree's default plugins; loading it
# does not start MPI (docs/distributed.md says when a process joins).
EXTRA_DIST += plugins/transports/mpi/README.md
if HAVE_MPI
WF_PLUGIN_MODULES += plugins/transports/mpi/transport_mpi.la
plugins_transports_mpi_transport_mpi_la_SOURCES = \
	plugins/transports/mpi/mpi_plugin.c \
	plugins/transports/mpi/mpi_plugin.h \
	plugins/transports/mpi/mpi_transport.c \
	plugins/transports/mpi/mpi_collectives.c \
	plugins/transports/mpi/mpi_coll_progress.h \
	plugins/transports/mpi/mpi_coll_progress.c \
	plugins/transports/mpi/mpi_lazy.h \
	plugins/transports/mpi/mpi_lazy.c \
	plugins/common/lazylib.h
plugins_transports_mpi_transport_mpi_la_CPPFLAGS = $(PLUGIN_CPPFLAGS) \
	$(MPI_CFLAGS) -I$(top_srcdir)/plugins/common
# libmpi is not linked: mpi_lazy.c opens it when the process joins a job,
# so that loading the plugin maps no part of Open MPI.
plugins_transports_mpi_transport_mpi_la_LIBADD = $(PTHREAD_LIBS)
plugins_transports_mpi_transport_mpi_la_LDFLAGS = $(PLUGIN_LDFLAGS)
if WF_PLUGIN_TRANSPORTS_MPI_SELECTED
pkgplugin_LTLIBRARIES += plugins/transports/mpi/transport_mpi.la
else
check_LTLIBRARIES += plugins/transports/mpi/transport_mpi.la
plugins_transports_mpi_transport_mpi_la_LDFLAGS += $(PLUGIN_CHECK_LDFLAGS)
endif
endif
