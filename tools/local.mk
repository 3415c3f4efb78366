# tools/weft: the command-line program (public API only). weft.c holds the
# dispatch and the inspection commands; graph, ckpt and run have files of
# their own (tools/commands.h).
bin_PROGRAMS += tools/weft
tools_weft_SOURCES = tools/weft.c tools/commands.h \
	tools/cmd_graph.c tools/cmd_ckpt.c tools/cmd_run.c tools/cmd_worker.c \
	tools/cmd_serve.c
tools_weft_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS)
tools_weft_LDADD = core/libweft.la $(JANSSON_LIBS)
# `weft serve` links the server library when libmicrohttpd was found
# (lib/serve/local.mk); without it the command only says so.
if HAVE_MICROHTTPD
tools_weft_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/lib $(INIH_CFLAGS)
tools_weft_LDADD += lib/serve/libweftserve.la $(INIH_LIBS)
endif
