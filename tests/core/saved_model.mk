# tests/core/saved_model.mk — saved models, and training resumed from
# checkpoints (in process and after a SIGKILL) against an uninterrupted run,
# and the size of the reference mlp's checkpoints.
saved_model_tests = tests/core/test_saved_model tests/core/test_recovery \
  tests/core/test_checkpoint_size
check_PROGRAMS += $(saved_model_tests)
TESTS += $(saved_model_tests)

tests_core_test_saved_model_SOURCES = tests/core/test_saved_model.c
tests_core_test_saved_model_CPPFLAGS = $(TEST_CPPFLAGS)
tests_core_test_saved_model_CFLAGS = $(TEST_CFLAGS)
tests_core_test_saved_model_LDADD = $(TEST_LDADD)

tests_core_test_recovery_SOURCES = tests/core/test_recovery.c
tests_core_test_recovery_CPPFLAGS = $(TEST_CPPFLAGS)
tests_core_test_recovery_CFLAGS = $(TEST_CFLAGS)
tests_core_test_recovery_LDADD = $(TEST_LDADD)

tests_core_test_checkpoint_size_SOURCES = tests/core/test_checkpoint_size.c
tests_core_test_checkpoint_size_CPPFLAGS = $(TEST_CPPFLAGS)
tests_core_test_checkpoint_size_CFLAGS = $(TEST_CFLAGS)
tests_core_test_checkpoint_size_LDADD = $(TEST_LDADD)
