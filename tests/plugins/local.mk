# tests/plugins: test plugins (each a small module built only for
# `make check`, never installed) and the tests of the loader, the config and
# kernel contexts that load them. The plugins link like real ones: no
# libweft, every symbol resolved ($(PLUGIN_ZDEFS)).
TEST_PLUGIN_LDFLAGS = -module -avoid-version -shared -rpath /nowhere \
	$(PLUGIN_ZDEFS)

check_LTLIBRARIES += \
	tests/plugins/good.la \
	tests/plugins/abi_major.la \
	tests/plugins/newer_minor.la \
	tests/plugins/no_entry.la \
	tests/plugins/init_fails.la \
	tests/plugins/conflict_a.la \
	tests/plugins/conflict_b.la \
	tests/plugins/needs_good.la \
	tests/plugins/cycle_a.la \
	tests/plugins/cycle_b.la \
	tests/plugins/unresolved.la

tests_plugins_good_la_SOURCES = tests/plugins/good.c
tests_plugins_good_la_CPPFLAGS = $(PLUGIN_CPPFLAGS)
tests_plugins_good_la_LDFLAGS = $(TEST_PLUGIN_LDFLAGS)
tests_plugins_good_la_LIBADD = $(PTHREAD_LIBS)
# Deliberately without $(PLUGIN_ZDEFS): it needs a symbol nothing defines.
tests_plugins_unresolved_la_SOURCES = tests/plugins/unresolved.c
tests_plugins_unresolved_la_CPPFLAGS = $(PLUGIN_CPPFLAGS)
tests_plugins_unresolved_la_LDFLAGS = -module -avoid-version -shared \
	-rpath /nowhere
tests_plugins_abi_major_la_SOURCES = tests/plugins/abi_major.c
tests_plugins_abi_major_la_CPPFLAGS = $(PLUGIN_CPPFLAGS)
tests_plugins_abi_major_la_LDFLAGS = $(TEST_PLUGIN_LDFLAGS)
tests_plugins_newer_minor_la_SOURCES = tests/plugins/newer_minor.c
tests_plugins_newer_minor_la_CPPFLAGS = $(PLUGIN_CPPFLAGS)
tests_plugins_newer_minor_la_LDFLAGS = $(TEST_PLUGIN_LDFLAGS)
tests_plugins_no_entry_la_SOURCES = tests/plugins/no_entry.c
tests_plugins_no_entry_la_CPPFLAGS = $(PLUGIN_CPPFLAGS)
tests_plugins_no_entry_la_LDFLAGS = $(TEST_PLUGIN_LDFLAGS)
tests_plugins_init_fails_la_SOURCES = tests/plugins/init_fails.c
tests_plugins_init_fails_la_CPPFLAGS = $(PLUGIN_CPPFLAGS)
tests_plugins_init_fails_la_LDFLAGS = $(TEST_PLUGIN_LDFLAGS)
tests_plugins_conflict_a_la_SOURCES = tests/plugins/conflict_a.c
tests_plugins_conflict_a_la_CPPFLAGS = $(PLUGIN_CPPFLAGS)
tests_plugins_conflict_a_la_LDFLAGS = $(TEST_PLUGIN_LDFLAGS)
tests_plugins_conflict_b_la_SOURCES = tests/plugins/conflict_b.c
tests_plugins_conflict_b_la_CPPFLAGS = $(PLUGIN_CPPFLAGS)
tests_plugins_conflict_b_la_LDFLAGS = $(TEST_PLUGIN_LDFLAGS)
tests_plugins_needs_good_la_SOURCES = tests/plugins/needs_good.c
tests_plugins_needs_good_la_CPPFLAGS = $(PLUGIN_CPPFLAGS)
tests_plugins_needs_good_la_LDFLAGS = $(TEST_PLUGIN_LDFLAGS)
tests_plugins_cycle_a_la_SOURCES = tests/plugins/cycle_a.c
tests_plugins_cycle_a_la_CPPFLAGS = $(PLUGIN_CPPFLAGS)
tests_plugins_cycle_a_la_LDFLAGS = $(TEST_PLUGIN_LDFLAGS)
tests_plugins_cycle_b_la_SOURCES = tests/plugins/cycle_b.c
tests_plugins_cycle_b_la_CPPFLAGS = $(PLUGIN_CPPFLAGS)
tests_plugins_cycle_b_la_LDFLAGS = $(TEST_PLUGIN_LDFLAGS)

# cmocka tests of the loader, the config and kernel contexts.
check_PROGRAMS += tests/core/test_loader tests/core/test_config \
	tests/core/test_kernel
TESTS += tests/core/test_loader tests/core/test_config tests/core/test_kernel
tests_core_test_loader_SOURCES = tests/core/test_loader.c
tests_core_test_loader_CPPFLAGS = $(TEST_CPPFLAGS)
tests_core_test_loader_CFLAGS = $(TEST_CFLAGS)
tests_core_test_loader_LDADD = $(TEST_LDADD)
tests_core_test_config_SOURCES = tests/core/test_config.c
tests_core_test_config_CPPFLAGS = $(TEST_CPPFLAGS)
tests_core_test_config_CFLAGS = $(TEST_CFLAGS)
tests_core_test_config_LDADD = $(TEST_LDADD)
tests_core_test_kernel_SOURCES = tests/core/test_kernel.c
tests_core_test_kernel_CPPFLAGS = $(TEST_CPPFLAGS)
tests_core_test_kernel_CFLAGS = $(TEST_CFLAGS)
tests_core_test_kernel_LDADD = $(TEST_LDADD)

# No plugin, in-tree or test, may need libweft (readelf -d).
TESTS += tests/plugins/test_no_libweft.sh
EXTRA_DIST += tests/plugins/test_no_libweft.sh

# Plugins on the SDK's helper layer (<weft/plugin_aux.h>): vendor-domain ops
# that run, a plugin needing a newer host ABI, and a third-party MatMul that
# must lose to ops-math's whatever the search order.
check_LTLIBRARIES += tests/plugins/vendor_op.la tests/plugins/needs_newer.la \
	tests/plugins/clash_matmul.la
tests_plugins_vendor_op_la_SOURCES = tests/plugins/vendor_op.c
tests_plugins_vendor_op_la_CPPFLAGS = $(PLUGIN_CPPFLAGS)
tests_plugins_vendor_op_la_LDFLAGS = $(TEST_PLUGIN_LDFLAGS)
tests_plugins_needs_newer_la_SOURCES = tests/plugins/needs_newer.c
tests_plugins_needs_newer_la_CPPFLAGS = $(PLUGIN_CPPFLAGS)
tests_plugins_needs_newer_la_LDFLAGS = $(TEST_PLUGIN_LDFLAGS)
tests_plugins_clash_matmul_la_SOURCES = tests/plugins/clash_matmul.c
tests_plugins_clash_matmul_la_CPPFLAGS = $(PLUGIN_CPPFLAGS)
tests_plugins_clash_matmul_la_LDFLAGS = $(TEST_PLUGIN_LDFLAGS)
check_PROGRAMS += tests/plugins/test_plugin_aux
TESTS += tests/plugins/test_plugin_aux tests/plugins/test_op_clash.sh
EXTRA_DIST += tests/plugins/test_op_clash.sh
tests_plugins_test_plugin_aux_SOURCES = tests/plugins/test_plugin_aux.c
tests_plugins_test_plugin_aux_CPPFLAGS = $(TEST_CPPFLAGS)
tests_plugins_test_plugin_aux_CFLAGS = $(TEST_CFLAGS)
tests_plugins_test_plugin_aux_LDADD = $(TEST_LDADD)

# Graph passes from a plugin (tests/core/test_plugin_passes.c).
check_LTLIBRARIES += tests/plugins/passes.la
tests_plugins_passes_la_SOURCES = tests/plugins/passes.c
tests_plugins_passes_la_CPPFLAGS = $(PLUGIN_CPPFLAGS)
tests_plugins_passes_la_LDFLAGS = $(TEST_PLUGIN_LDFLAGS)
check_PROGRAMS += tests/core/test_plugin_passes
TESTS += tests/core/test_plugin_passes
tests_core_test_plugin_passes_SOURCES = tests/core/test_plugin_passes.c
tests_core_test_plugin_passes_CPPFLAGS = $(TEST_CPPFLAGS)
tests_core_test_plugin_passes_CFLAGS = $(TEST_CFLAGS)
tests_core_test_plugin_passes_LDADD = $(TEST_LDADD)
EXTRA_tests_core_test_plugin_passes_DEPENDENCIES = tests/plugins/passes.la

# Importers (tests/core/test_import.c).
check_LTLIBRARIES += tests/plugins/importer.la
tests_plugins_importer_la_SOURCES = tests/plugins/importer.c
tests_plugins_importer_la_CPPFLAGS = $(PLUGIN_CPPFLAGS)
tests_plugins_importer_la_LDFLAGS = $(TEST_PLUGIN_LDFLAGS)
check_PROGRAMS += tests/core/test_import
TESTS += tests/core/test_import
tests_core_test_import_SOURCES = tests/core/test_import.c
tests_core_test_import_CPPFLAGS = $(TEST_CPPFLAGS)
tests_core_test_import_CFLAGS = $(TEST_CFLAGS)
tests_core_test_import_LDADD = $(TEST_LDADD)
EXTRA_tests_core_test_import_DEPENDENCIES = tests/plugins/importer.la \
	tools/weft

# A kernel that declines nodes (tests/core/test_kernel_supports.c).
check_LTLIBRARIES += tests/plugins/picky.la
tests_plugins_picky_la_SOURCES = tests/plugins/picky.c
tests_plugins_picky_la_CPPFLAGS = $(PLUGIN_CPPFLAGS)
tests_plugins_picky_la_LDFLAGS = $(TEST_PLUGIN_LDFLAGS)
check_PROGRAMS += tests/core/test_kernel_supports
TESTS += tests/core/test_kernel_supports
tests_core_test_kernel_supports_SOURCES = tests/core/test_kernel_supports.c
tests_core_test_kernel_supports_CPPFLAGS = $(TEST_CPPFLAGS)
tests_core_test_kernel_supports_CFLAGS = $(TEST_CFLAGS)
tests_core_test_kernel_supports_LDADD = $(TEST_LDADD)
EXTRA_tests_core_test_kernel_supports_DEPENDENCIES = tests/plugins/picky.la
