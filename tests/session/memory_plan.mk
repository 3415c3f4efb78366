# Memory planning (core/compile/memplan.c) through sessions: the mlp with planning
# on and off, escaping tensors, concurrent steps, allocation counts, peak
# bytes and in-place outputs, with the built-in plugins of the build tree.
check_PROGRAMS += tests/session/test_memory_plan
TESTS += tests/session/test_memory_plan
tests_session_test_memory_plan_SOURCES = tests/session/test_memory_plan.c
tests_session_test_memory_plan_CPPFLAGS = $(TEST_CPPFLAGS)
tests_session_test_memory_plan_CFLAGS = $(TEST_CFLAGS)
tests_session_test_memory_plan_LDADD = $(TEST_LDADD)
