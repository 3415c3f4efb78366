# tests/abi: stability of the plugin ABI and of what libweft and the
# plugins export (tests/abi/README.md says how to keep them).
#  - Each released ABI minor has a frozen copy of the plugin headers in
#    tests/abi/MAJOR.MINOR/weft/. The test plugin abi_plugin.c is built
#    against each copy (its own -I, never sdk/include) as abi_vMAJOR_MINOR,
#    and test_abi_frozen loads them all into this core and runs them.
#  - check_symbols.sh compares the dynamic symbols of libweft and of every
#    installed plugin with tests/abi/symbols/*.txt; `make
#    update-abi-symbols` rewrites those lists on purpose.

# One module per frozen directory; a new minor adds a block like this one.
check_LTLIBRARIES += tests/abi/abi_v1_0.la
tests_abi_abi_v1_0_la_SOURCES = tests/abi/abi_plugin.c \
	tests/abi/1.0/weft/plugin.h tests/abi/1.0/weft/types.h
tests_abi_abi_v1_0_la_CPPFLAGS = -I$(top_srcdir)/tests/abi/1.0 \
	-DABI_MODULE=abi_v1_0
tests_abi_abi_v1_0_la_LDFLAGS = $(TEST_PLUGIN_LDFLAGS)

check_LTLIBRARIES += tests/abi/abi_v1_1.la
tests_abi_abi_v1_1_la_SOURCES = tests/abi/abi_plugin.c \
	tests/abi/1.1/weft/plugin.h tests/abi/1.1/weft/types.h
tests_abi_abi_v1_1_la_CPPFLAGS = -I$(top_srcdir)/tests/abi/1.1 \
	-DABI_MODULE=abi_v1_1
tests_abi_abi_v1_1_la_LDFLAGS = $(TEST_PLUGIN_LDFLAGS)

check_LTLIBRARIES += tests/abi/abi_v1_2.la
tests_abi_abi_v1_2_la_SOURCES = tests/abi/abi_plugin.c \
	tests/abi/1.2/weft/plugin.h tests/abi/1.2/weft/types.h
tests_abi_abi_v1_2_la_CPPFLAGS = -I$(top_srcdir)/tests/abi/1.2 \
	-DABI_MODULE=abi_v1_2
tests_abi_abi_v1_2_la_LDFLAGS = $(TEST_PLUGIN_LDFLAGS)

check_LTLIBRARIES += tests/abi/abi_v1_3.la
tests_abi_abi_v1_3_la_SOURCES = tests/abi/abi_plugin.c \
	tests/abi/1.3/weft/plugin.h tests/abi/1.3/weft/types.h
tests_abi_abi_v1_3_la_CPPFLAGS = -I$(top_srcdir)/tests/abi/1.3 \
	-DABI_MODULE=abi_v1_3
tests_abi_abi_v1_3_la_LDFLAGS = $(TEST_PLUGIN_LDFLAGS)

check_LTLIBRARIES += tests/abi/abi_v1_4.la
tests_abi_abi_v1_4_la_SOURCES = tests/abi/abi_plugin.c \
	tests/abi/1.4/weft/plugin.h tests/abi/1.4/weft/types.h
tests_abi_abi_v1_4_la_CPPFLAGS = -I$(top_srcdir)/tests/abi/1.4 \
	-DABI_MODULE=abi_v1_4
tests_abi_abi_v1_4_la_LDFLAGS = $(TEST_PLUGIN_LDFLAGS)

check_LTLIBRARIES += tests/abi/abi_v1_5.la
tests_abi_abi_v1_5_la_SOURCES = tests/abi/abi_plugin.c \
	tests/abi/1.5/weft/plugin.h tests/abi/1.5/weft/types.h
tests_abi_abi_v1_5_la_CPPFLAGS = -I$(top_srcdir)/tests/abi/1.5 \
	-DABI_MODULE=abi_v1_5
tests_abi_abi_v1_5_la_LDFLAGS = $(TEST_PLUGIN_LDFLAGS)
check_LTLIBRARIES += tests/abi/abi_v1_6.la
tests_abi_abi_v1_6_la_SOURCES = tests/abi/abi_plugin.c \
	tests/abi/1.6/weft/plugin.h tests/abi/1.6/weft/types.h
tests_abi_abi_v1_6_la_CPPFLAGS = -I$(top_srcdir)/tests/abi/1.6 \
	-DABI_MODULE=abi_v1_6
tests_abi_abi_v1_6_la_LDFLAGS = $(TEST_PLUGIN_LDFLAGS)
check_LTLIBRARIES += tests/abi/abi_v1_7.la
tests_abi_abi_v1_7_la_SOURCES = tests/abi/abi_plugin.c \
	tests/abi/1.7/weft/plugin.h tests/abi/1.7/weft/types.h
tests_abi_abi_v1_7_la_CPPFLAGS = -I$(top_srcdir)/tests/abi/1.7 \
	-DABI_MODULE=abi_v1_7
tests_abi_abi_v1_7_la_LDFLAGS = $(TEST_PLUGIN_LDFLAGS)
check_LTLIBRARIES += tests/abi/abi_v1_8.la
tests_abi_abi_v1_8_la_SOURCES = tests/abi/abi_plugin.c \
	tests/abi/1.8/weft/plugin.h tests/abi/1.8/weft/types.h
tests_abi_abi_v1_8_la_CPPFLAGS = -I$(top_srcdir)/tests/abi/1.8 \
	-DABI_MODULE=abi_v1_8
tests_abi_abi_v1_8_la_LDFLAGS = $(TEST_PLUGIN_LDFLAGS)

check_PROGRAMS += tests/abi/test_abi_frozen
TESTS += tests/abi/test_abi_frozen
tests_abi_test_abi_frozen_SOURCES = tests/abi/test_abi_frozen.c
tests_abi_test_abi_frozen_CPPFLAGS = $(TEST_CPPFLAGS)
tests_abi_test_abi_frozen_CFLAGS = $(TEST_CFLAGS)
tests_abi_test_abi_frozen_LDADD = $(TEST_LDADD)
EXTRA_tests_abi_test_abi_frozen_DEPENDENCIES = tests/abi/abi_v1_0.la \
	tests/abi/abi_v1_1.la tests/abi/abi_v1_2.la tests/abi/abi_v1_3.la \
	tests/abi/abi_v1_4.la tests/abi/abi_v1_5.la tests/abi/abi_v1_6.la \
	tests/abi/abi_v1_7.la tests/abi/abi_v1_8.la \
	plugins/ops/array/ops_array.la plugins/devices/cpu/device_cpu.la

# The installed plugins' libtool names, one a line, for check_symbols.sh.
check_DATA = tests/abi/plugins.list
CLEANFILES += tests/abi/plugins.list
tests/abi/plugins.list: Makefile
	$(AM_V_GEN)$(MKDIR_P) tests/abi && \
	for p in $(pkgplugin_LTLIBRARIES); do echo "$$p"; done >$@.tmp && \
	mv $@.tmp $@

TESTS += tests/abi/check_symbols.sh
EXTRA_DIST += tests/abi/check_symbols.sh tests/abi/README.md \
	tests/abi/symbols

# Rewrites tests/abi/symbols/ from the built libraries (in the source tree).
update-abi-symbols: core/libweft.la $(pkgplugin_LTLIBRARIES) \
		tests/abi/plugins.list
	top_srcdir='$(abs_top_srcdir)' top_builddir='$(abs_top_builddir)' \
	$(SHELL) $(top_srcdir)/tests/abi/check_symbols.sh --update
.PHONY: update-abi-symbols
