/* tests/data/test_reader.h — the "test-reader" plugin (tests/data/
 * test_reader.c), built as a module for `weft data` and linked into the
 * pipeline tests, which register it in-process and read its counters. */
#ifndef WF_TESTS_DATA_TEST_READER_H
#define WF_TESTS_DATA_TEST_READER_H

#include <weft/plugin.h>

/* The plugin description (also what the module's entry point returns). */
const wf_plugin_desc *test_reader_desc(void);
/* Calls of the reader's next and open since the process started. */
long test_reader_next_calls(void);
long test_reader_open_calls(void);

#endif
