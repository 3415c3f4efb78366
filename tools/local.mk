# tools/weft: the command-line program (public API only).
bin_PROGRAMS += tools/weft
tools_weft_SOURCES = tools/weft.c
tools_weft_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS)
tools_weft_LDADD = core/libweft.la $(JANSSON_LIBS)
