# lib/serve: the model server (serve.h), a library on weft's public API
# above libweft, linked into `weft serve` and the tests. Built only when
# configure found libmicrohttpd (Debian package libmicrohttpd-dev). A
# convenience library: its header is not installed, since the embedding
# API may still change.
if HAVE_MICROHTTPD
noinst_LTLIBRARIES += lib/serve/libweftserve.la
lib_serve_libweftserve_la_SOURCES = lib/serve/serve.h lib/serve/server.c \
	lib/serve/codec.h lib/serve/codec.c lib/serve/json_read.h \
	lib/serve/json_read.c lib/serve/model.h \
	lib/serve/model.c lib/serve/metrics.h lib/serve/metrics.c \
	lib/serve/mhd_lazy.h lib/serve/mhd_lazy.c plugins/common/lazylib.h
# libmicrohttpd is opened on first use (mhd_lazy.h), not linked.
lib_serve_libweftserve_la_CPPFLAGS = $(AM_CPPFLAGS) \
	-I$(top_srcdir)/plugins/common
lib_serve_libweftserve_la_CFLAGS = $(AM_CFLAGS) $(MICROHTTPD_CFLAGS)
lib_serve_libweftserve_la_LIBADD = core/libweft.la -ldl \
	$(PTHREAD_LIBS) $(LIBM)
endif
EXTRA_DIST += lib/serve/serve.h lib/serve/server.c lib/serve/codec.h \
	lib/serve/codec.c lib/serve/json_read.h lib/serve/json_read.c \
	lib/serve/model.h lib/serve/model.c \
	lib/serve/metrics.h lib/serve/metrics.c \
	lib/serve/mhd_lazy.h lib/serve/mhd_lazy.c
