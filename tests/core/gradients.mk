# The autodiff core, with the math and array plugins and a test plugin.
check_LTLIBRARIES += tests/core/test_grad_ops.la
tests_core_test_grad_ops_la_SOURCES = tests/core/grad_test_ops.c
tests_core_test_grad_ops_la_CPPFLAGS = $(PLUGIN_CPPFLAGS)
tests_core_test_grad_ops_la_LDFLAGS = $(PLUGIN_LDFLAGS) -rpath /nowhere

check_PROGRAMS += tests/core/test_gradients
TESTS += tests/core/test_gradients
tests_core_test_gradients_SOURCES = tests/core/test_gradients.c
tests_core_test_gradients_CPPFLAGS = $(TEST_CPPFLAGS)
tests_core_test_gradients_CFLAGS = $(TEST_CFLAGS)
tests_core_test_gradients_LDADD = $(TEST_LDADD)

check_PROGRAMS += tests/core/test_layers
TESTS += tests/core/test_layers
tests_core_test_layers_SOURCES = tests/core/test_layers.c
tests_core_test_layers_CPPFLAGS = $(TEST_CPPFLAGS)
tests_core_test_layers_CFLAGS = $(TEST_CFLAGS)
tests_core_test_layers_LDADD = $(TEST_LDADD)

# The graph passes (core/pass_*.c) with the built-in plugins.
check_PROGRAMS += tests/core/test_passes
TESTS += tests/core/test_passes
tests_core_test_passes_SOURCES = tests/core/test_passes.c
tests_core_test_passes_CPPFLAGS = $(TEST_CPPFLAGS)
tests_core_test_passes_CFLAGS = $(TEST_CFLAGS)
tests_core_test_passes_LDADD = $(TEST_LDADD)
EXTRA_tests_core_test_passes_DEPENDENCIES = tests/devices/memdev.la

# The recurrent layers (wf_layer_gru, wf_layer_lstm) with the rnn plugin.
check_PROGRAMS += tests/core/test_layers_rnn
TESTS += tests/core/test_layers_rnn
tests_core_test_layers_rnn_SOURCES = tests/core/test_layers_rnn.c
tests_core_test_layers_rnn_CPPFLAGS = $(TEST_CPPFLAGS)
tests_core_test_layers_rnn_CFLAGS = $(TEST_CFLAGS)
tests_core_test_layers_rnn_LDADD = $(TEST_LDADD)

# The transformer layers (layer norm, positions, attention, encoder block).
check_PROGRAMS += tests/core/test_layers_transformer
TESTS += tests/core/test_layers_transformer
tests_core_test_layers_transformer_SOURCES = tests/core/test_layers_transformer.c
tests_core_test_layers_transformer_CPPFLAGS = $(TEST_CPPFLAGS)
tests_core_test_layers_transformer_CFLAGS = $(TEST_CFLAGS)
tests_core_test_layers_transformer_LDADD = $(TEST_LDADD)

# The fusion pass (ops-nn's plugin pass, plugins/ops/nn/fusion.c) on
# working graphs, with the math, nn and cpu plugins.
check_PROGRAMS += tests/core/test_pass_fusion
TESTS += tests/core/test_pass_fusion
tests_core_test_pass_fusion_SOURCES = tests/core/test_pass_fusion.c
tests_core_test_pass_fusion_CPPFLAGS = $(TEST_CPPFLAGS)
tests_core_test_pass_fusion_CFLAGS = $(TEST_CFLAGS)
tests_core_test_pass_fusion_LDADD = $(TEST_LDADD)
EXTRA_tests_core_test_pass_fusion_DEPENDENCIES = tests/devices/memdev.la
