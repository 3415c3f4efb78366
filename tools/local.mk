# tools/weft: the command-line program (public API only). weft.c only
# dispatches; every subcommand has a file of its own (tools/cmd_*.c): the
# inspection commands share parsed options (tools/inspect.h), the others
# parse their own arguments (tools/commands.h).
bin_PROGRAMS += tools/weft
tools_weft_SOURCES = tools/weft.c tools/commands.h \
	tools/inspect.c tools/inspect.h \
	tools/cmd_version.c tools/cmd_plugins.c tools/cmd_ops.c \
	tools/cmd_devices.c tools/cmd_data.c \
	tools/cmd_graph.c tools/cmd_ckpt.c tools/cmd_run.c tools/cmd_worker.c \
	tools/cmd_import.c tools/cmd_serve.c
tools_weft_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS)
tools_weft_LDADD = core/libweft.la $(JANSSON_LIBS)
# `weft serve` links the server library when libmicrohttpd was found
# (lib/serve/local.mk); without it the command only says so.
if HAVE_MICROHTTPD
tools_weft_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/lib $(INIH_CFLAGS)
tools_weft_LDADD += lib/serve/libweftserve.la $(INIH_LIBS)
endif
