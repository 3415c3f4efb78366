/* tests/core/test_config.c — the configuration: defaults, every key of
 * every section, value checking, messages naming file and line, and a
 * config left unchanged by any failed load or set. */
#include <config.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "base/alloc.h"
#include "plugin/runtime_internal.h" /* and through it core/config.h */
#include "base/status_internal.h"

/* ---- helpers ---------------------------------------------------------------
 */

static char tmpdir[64];

static int make_tmpdir(void **state) {
  (void)state;
  strcpy(tmpdir, "/tmp/weft-test-config-XXXXXX");
  assert_non_null(mkdtemp(tmpdir));
  return 0;
}

static int remove_tmpdir(void **state) {
  char cmd[128];
  (void)state;
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
  assert_int_equal(system(cmd), 0);
  return 0;
}

/* Writes text to tmpdir/name; returns the path (static buffer). */
static const char *write_file(const char *name, const char *text) {
  static char path[256];
  FILE *f;
  snprintf(path, sizeof path, "%s/%s", tmpdir, name);
  f = fopen(path, "w");
  assert_non_null(f);
  fputs(text, f);
  fclose(f);
  return path;
}

/* Loads text as a file; returns the code, message in st. */
static int load_text(wf_config *cfg, const char *text, wf_status *st) {
  const char *path = write_file("weft.conf", text);
  return wf_config_load(cfg, path, st);
}

static void assert_list(const wf__strlist *l, int n, ...) {
  va_list ap;
  assert_int_equal(l->n, n);
  va_start(ap, n);
  for (int i = 0; i < n; i++)
    assert_string_equal(l->items[i], va_arg(ap, const char *));
  va_end(ap);
}

/* Two configs hold the same values. */
static void assert_same_config(const wf_config *a, const wf_config *b) {
  const wf__strlist *la[] = {&a->plugin_paths, &a->plugin_load, &a->plugin_deny,
                             &a->device_order, &a->files};
  const wf__strlist *lb[] = {&b->plugin_paths, &b->plugin_load, &b->plugin_deny,
                             &b->device_order, &b->files};
  for (size_t k = 0; k < sizeof la / sizeof la[0]; k++) {
    assert_int_equal(la[k]->n, lb[k]->n);
    for (int i = 0; i < la[k]->n; i++)
      assert_string_equal(la[k]->items[i], lb[k]->items[i]);
  }
  assert_int_equal(a->plugin_strict, b->plugin_strict);
  assert_int_equal(a->plugin_env_path, b->plugin_env_path);
  assert_int_equal(a->plugin_default_dir, b->plugin_default_dir);
  assert_int_equal(a->inter_op, b->inter_op);
  assert_int_equal(a->intra_op, b->intra_op);
  assert_int_equal(a->pin, b->pin);
  assert_int_equal(a->pass_prune, b->pass_prune);
  assert_int_equal(a->pass_cse, b->pass_cse);
  assert_int_equal(a->pass_constant_folding, b->pass_constant_folding);
  assert_int_equal(a->plugin_passes_off.n, b->plugin_passes_off.n);
  for (int i = 0; i < a->plugin_passes_off.n; i++)
    assert_string_equal(a->plugin_passes_off.items[i],
                        b->plugin_passes_off.items[i]);
  assert_int_equal(a->pass_dead_nodes, b->pass_dead_nodes);
  assert_int_equal(a->pass_placement, b->pass_placement);
  assert_true(a->constant_folding_max_bytes == b->constant_folding_max_bytes);
  assert_true((a->plugin_deny_from == NULL) == (b->plugin_deny_from == NULL));
  if (a->plugin_deny_from)
    assert_string_equal(a->plugin_deny_from, b->plugin_deny_from);
}

static void assert_message(const wf_status *st, const char *expected) {
  assert_string_equal(wf_status_message(st), expected);
}

/* ---- defaults and every key ------------------------------------------------
 */

static void test_config_defaults(void **state) {
  wf_config *cfg = wf_config_new();
  (void)state;
  assert_non_null(cfg);
  assert_int_equal(cfg->plugin_paths.n, 0);
  assert_int_equal(cfg->plugin_load.n, 0);
  assert_int_equal(cfg->plugin_deny.n, 0);
  assert_int_equal(cfg->plugin_strict, 0);
  assert_int_equal(cfg->plugin_env_path, 1);
  assert_int_equal(cfg->plugin_default_dir, 1);
  assert_int_equal(cfg->device_order.n, 0);
  assert_int_equal(cfg->inter_op, 0);
  assert_int_equal(cfg->intra_op, 0);
  assert_int_equal(cfg->pin, 1);
  assert_int_equal(cfg->pass_prune, 1);
  assert_int_equal(cfg->pass_cse, 1);
  assert_int_equal(cfg->pass_constant_folding, 1);
  assert_int_equal(cfg->plugin_passes_off.n, 0);
  assert_int_equal(cfg->pass_dead_nodes, 1);
  assert_int_equal(cfg->pass_placement, 1);
  assert_true(cfg->constant_folding_max_bytes == 10LL * 1024 * 1024);
  wf_config_free(cfg);
}

static void test_config_reads_every_key(void **state) {
  wf_config *cfg = wf_config_new();
  wf_status *st = wf_status_new();
  char real[4096], abs_dir[4200], rel_dir[4200];
  const char *path;
  (void)state;

  assert_non_null(realpath(tmpdir, real));
  snprintf(abs_dir, sizeof abs_dir, "%s/plugins", real);
  snprintf(rel_dir, sizeof rel_dir, "%s/more/x.so", real);
  path = write_file("every.conf", "; every key the config knows\n"
                                  "[plugins]\n"
                                  "paths = plugins, /opt/weft/p.so ,more/x.so\n"
                                  "load = ops-math, device-cpu\n"
                                  "deny = test-evil\n"
                                  "strict = yes\n"
                                  "use_env_path = off\n"
                                  "use_default_dir = 0\n"
                                  "[devices]\n"
                                  "order = cuda, cpu\n"
                                  "[threads]\n"
                                  "inter_op = 3\n"
                                  "intra_op = 5\n"
                                  "pin = false\n"
                                  "[passes]\n"
                                  "prune = no\n"
                                  "cse = false\n"
                                  "constant_folding = off\n"
                                  "arithmetic = 0\n"
                                  "fusion = no\n"
                                  "dead_nodes = false\n"
                                  "placement = off\n"
                                  "constant_folding_max_bytes = 4096\n");
  assert_int_equal(wf_config_load(cfg, path, st), WF_OK);
  assert_list(&cfg->plugin_paths, 3, abs_dir, "/opt/weft/p.so", rel_dir);
  assert_list(&cfg->plugin_load, 2, "ops-math", "device-cpu");
  assert_list(&cfg->plugin_deny, 1, "test-evil");
  assert_string_equal(cfg->plugin_deny_from, path);
  assert_string_equal(cfg->plugin_load_from, path);
  assert_int_equal(cfg->plugin_strict, 1);
  assert_int_equal(cfg->plugin_env_path, 0);
  assert_int_equal(cfg->plugin_default_dir, 0);
  assert_list(&cfg->device_order, 2, "cuda", "cpu");
  assert_int_equal(cfg->inter_op, 3);
  assert_int_equal(cfg->intra_op, 5);
  assert_int_equal(cfg->pin, 0);
  assert_int_equal(cfg->pass_prune, 0);
  assert_int_equal(cfg->pass_cse, 0);
  assert_int_equal(cfg->pass_constant_folding, 0);
  /* ops-math's and ops-nn's passes */
  assert_list(&cfg->plugin_passes_off, 2, "arithmetic", "fusion");
  assert_int_equal(cfg->pass_dead_nodes, 0);
  assert_int_equal(cfg->pass_placement, 0);
  assert_true(cfg->constant_folding_max_bytes == 4096);
  assert_list(&cfg->files, 1, path);
  wf_status_free(st);
  wf_config_free(cfg);
}

static void test_config_accepts_every_boolean_spelling(void **state) {
  static const char *const yes[] = {"true", "yes", "on", "1", "TRUE", "Yes"};
  static const char *const no[] = {"false", "no", "off", "0", "FALSE", "Off"};
  wf_config *cfg = wf_config_new();
  wf_status *st = wf_status_new();
  (void)state;
  /* Adapting the teams to crowded cores is asked for, never assumed. */
  assert_int_equal(cfg->adapt, 0);
  for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++) {
    assert_int_equal(wf_config_set(cfg, "threads", "pin", no[i], st), WF_OK);
    assert_int_equal(cfg->pin, 0);
    assert_int_equal(wf_config_set(cfg, "threads", "pin", yes[i], st), WF_OK);
    assert_int_equal(cfg->pin, 1);
    assert_int_equal(wf_config_set(cfg, "threads", "adapt", yes[i], st),
                     WF_OK);
    assert_int_equal(cfg->adapt, 1);
    assert_int_equal(wf_config_set(cfg, "threads", "adapt", no[i], st), WF_OK);
    assert_int_equal(cfg->adapt, 0);
  }
  wf_status_free(st);
  wf_config_free(cfg);
}

static void test_config_lists_trim_spaces_and_skip_empty_items(void **state) {
  wf_config *cfg = wf_config_new();
  wf_status *st = wf_status_new();
  (void)state;
  assert_int_equal(
      wf_config_set(cfg, "devices", "order", "  cuda ,,\tcpu , ", st), WF_OK);
  assert_list(&cfg->device_order, 2, "cuda", "cpu");
  /* An empty value empties the list (load = : every plugin). */
  assert_int_equal(wf_config_set(cfg, "devices", "order", "", st), WF_OK);
  assert_int_equal(cfg->device_order.n, 0);
  wf_status_free(st);
  wf_config_free(cfg);
}

static void test_config_list_continues_on_indented_lines(void **state) {
  wf_config *cfg = wf_config_new();
  wf_status *st = wf_status_new();
  (void)state;
  assert_int_equal(load_text(cfg,
                             "[plugins]\n"
                             "deny = a,\n"
                             "   b, c\n"
                             "\td\n"
                             "load = x\n",
                             st),
                   WF_OK);
  assert_list(&cfg->plugin_deny, 4, "a", "b", "c", "d");
  assert_list(&cfg->plugin_load, 1, "x");
  wf_status_free(st);
  wf_config_free(cfg);
}

static void test_config_later_values_override_earlier(void **state) {
  wf_config *cfg = wf_config_new();
  wf_status *st = wf_status_new();
  const char *first = "[plugins]\ndeny = a, b\nstrict = true\n"
                      "[threads]\ninter_op = 2\n";
  (void)state;
  assert_int_equal(load_text(cfg, first, st), WF_OK);
  assert_int_equal(load_text(cfg,
                             "[plugins]\ndeny = c\n[threads]\n"
                             "inter_op = 7\ninter_op = 8\n",
                             st),
                   WF_OK);
  assert_list(&cfg->plugin_deny, 1, "c");
  assert_int_equal(cfg->plugin_strict, 1); /* not named again: kept */
  assert_int_equal(cfg->inter_op, 8);
  assert_int_equal(cfg->files.n, 2);
  wf_status_free(st);
  wf_config_free(cfg);
}

/* ---- errors
 * ------------------------------------------------------------------ */

static void test_config_refuses_unknown_key_naming_file_and_line(void **state) {
  wf_config *cfg = wf_config_new();
  wf_status *st = wf_status_new();
  char expected[512];
  const char *path;
  (void)state;
  path =
      write_file("unknown.conf", "[plugins]\nstrict = true\n\nsearch = /x\n");
  assert_int_equal(wf_config_load(cfg, path, st), WF_INVALID_ARGUMENT);
  snprintf(expected, sizeof expected,
           "%s:4: unknown key 'search' in section [plugins]", path);
  assert_message(st, expected);
  wf_status_free(st);
  wf_config_free(cfg);
}

static void
test_config_refuses_unknown_section_naming_file_and_line(void **state) {
  wf_config *cfg = wf_config_new();
  wf_status *st = wf_status_new();
  char expected[512];
  const char *path;
  (void)state;
  path = write_file("section.conf", "# comment\n[plugin]\nstrict = true\n");
  assert_int_equal(wf_config_load(cfg, path, st), WF_INVALID_ARGUMENT);
  snprintf(expected, sizeof expected, "%s:3: unknown section [plugin]", path);
  assert_message(st, expected);
  wf_status_free(st);
  wf_config_free(cfg);
}

static void test_config_refuses_key_outside_a_section(void **state) {
  wf_config *cfg = wf_config_new();
  wf_status *st = wf_status_new();
  char expected[512];
  const char *path;
  (void)state;
  path = write_file("nosection.conf", "strict = true\n");
  assert_int_equal(wf_config_load(cfg, path, st), WF_INVALID_ARGUMENT);
  snprintf(expected, sizeof expected,
           "%s:1: key 'strict' is outside any [section]", path);
  assert_message(st, expected);
  wf_status_free(st);
  wf_config_free(cfg);
}

static void test_config_refuses_bad_values_naming_file_and_line(void **state) {
  static const struct {
    const char *text;
    const char *message; /* after "FILE:" */
  } cases[] = {
      {"[plugins]\nstrict = maybe\n",
       "2: bad value 'maybe' for strict in [plugins]: expected "
       "true/false/yes/no/on/off/1/0"},
      {"[threads]\n\ninter_op = -1\n",
       "3: bad value '-1' for inter_op in [threads]: expected a whole "
       "number >= 0"},
      {"[threads]\nintra_op = 4 cores\n",
       "2: bad value '4 cores' for intra_op in [threads]: expected a whole "
       "number >= 0"},
      {"[threads]\nintra_op = 99999999999\n",
       "2: bad value '99999999999' for intra_op in [threads]: expected a "
       "whole number >= 0"},
      {"[passes]\nconstant_folding_max_bytes = 1e6\n",
       "2: bad value '1e6' for constant_folding_max_bytes in [passes]: "
       "expected a number of bytes >= 0"},
      {"[passes]\ncse =\n",
       "2: bad value '' for cse in [passes]: expected "
       "true/false/yes/no/on/off/1/0"},
      {"[passes]\nfusion =\n",
       "2: bad value '' for fusion in [passes]: expected true or false (a "
       "plugin pass's switch)"},
      {"[threads]\npin = yes\n  no\n",
       "3: indented line continues pin in [threads], which takes one value "
       "(remove the indentation)"},
      {"[plugins]\ndeny = a\n  strict = true\n",
       "3: indented line 'strict = true' continues the list deny in "
       "[plugins] (remove the indentation to start a new key)"},
      {"[plugins]\nstrict\n",
       "2: syntax error: expected [section], key = value or a comment"},
      {"[plugins\n",
       "1: syntax error: expected [section], key = value or a comment"},
  };
  wf_status *st = wf_status_new();
  (void)state;
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    wf_config *cfg = wf_config_new();
    const char *path = write_file("bad.conf", cases[i].text);
    char expected[512];
    snprintf(expected, sizeof expected, "%s:%s", path, cases[i].message);
    assert_int_equal(wf_config_load(cfg, path, st), WF_INVALID_ARGUMENT);
    assert_message(st, expected);
    wf_config_free(cfg);
  }
  wf_status_free(st);
}

static void test_config_refuses_overlong_line(void **state) {
  wf_config *cfg = wf_config_new();
  wf_status *st = wf_status_new();
  char text[1200], prefix[300];
  const char *path;
  (void)state;
  memset(text, 0, sizeof text);
  strcpy(text, "[plugins]\ndeny = ");
  memset(text + strlen(text), 'a', 1000);
  strcat(text, "\nstrict = true\n");
  path = write_file("long.conf", text);
  assert_int_equal(wf_config_load(cfg, path, st), WF_INVALID_ARGUMENT);
  snprintf(prefix, sizeof prefix, "%s:2: line longer than ", path);
  assert_memory_equal(wf_status_message(st), prefix, strlen(prefix));
  assert_int_equal(cfg->plugin_strict, 0);
  wf_status_free(st);
  wf_config_free(cfg);
}

static void test_config_missing_file_is_not_found(void **state) {
  wf_config *cfg = wf_config_new();
  wf_status *st = wf_status_new();
  char path[256];
  (void)state;
  snprintf(path, sizeof path, "%s/does-not-exist.conf", tmpdir);
  assert_int_equal(wf_config_load(cfg, path, st), WF_NOT_FOUND);
  assert_non_null(strstr(wf_status_message(st), path));
  assert_int_equal(cfg->files.n, 0);
  wf_status_free(st);
  wf_config_free(cfg);
}

static void test_config_refuses_a_directory(void **state) {
  wf_config *cfg = wf_config_new();
  wf_status *st = wf_status_new();
  (void)state;
  assert_int_equal(wf_config_load(cfg, tmpdir, st), WF_INVALID_ARGUMENT);
  assert_non_null(strstr(wf_status_message(st), tmpdir));
  assert_non_null(strstr(wf_status_message(st), "is a directory"));
  wf_status_free(st);
  wf_config_free(cfg);
}

static void test_config_unchanged_after_failed_load(void **state) {
  wf_config *cfg = wf_config_new(), *before;
  wf_status *st = wf_status_new();
  (void)state;
  assert_int_equal(load_text(cfg,
                             "[plugins]\npaths = /a\ndeny = x\n"
                             "[threads]\ninter_op = 2\n",
                             st),
                   WF_OK);
  before = wf__config_copy(cfg);
  assert_non_null(before);
  /* Every line but the last is good and would change something. */
  assert_int_equal(load_text(cfg,
                             "[plugins]\npaths = /b, /c\ndeny = y\n"
                             "strict = on\n[threads]\ninter_op = 9\n"
                             "[passes]\nfusion = off\nfusion = sometimes\n",
                             st),
                   WF_INVALID_ARGUMENT);
  assert_same_config(cfg, before);
  wf_config_free(before);
  wf_status_free(st);
  wf_config_free(cfg);
}

static void test_config_unchanged_when_memory_runs_out(void **state) {
  wf_config *cfg = wf_config_new(), *before;
  wf_status *st = wf_status_new();
  const char *path;
  int code = -1;
  (void)state;
  assert_int_equal(wf_config_set(cfg, "plugins", "deny", "old", st), WF_OK);
  before = wf__config_copy(cfg);
  path = write_file("oom.conf", "[plugins]\npaths = /p1, /p2\ndeny = a, b\n"
                                "[devices]\norder = cpu\n");
  /* Fail the 1st, 2nd, ... allocation until the load gets through. */
  for (long n = 1; n < 1000 && code != WF_OK; n++) {
    wf__alloc_fail_after(n, 0);
    code = wf_config_load(cfg, path, st);
    wf__alloc_fail_after(0, 0);
    if (code != WF_OK) {
      assert_int_equal(code, WF_RESOURCE_EXHAUSTED);
      assert_same_config(cfg, before);
    }
  }
  assert_int_equal(code, WF_OK);
  assert_list(&cfg->plugin_deny, 2, "a", "b");
  wf_config_free(before);
  wf_status_free(st);
  wf_config_free(cfg);
}

/* ---- wf_config_set and paths
 * ------------------------------------------------- */

static void test_config_set_refuses_unknown_and_bad(void **state) {
  wf_config *cfg = wf_config_new();
  wf_status *st = wf_status_new();
  (void)state;
  assert_int_equal(wf_config_set(cfg, "plugins", "stirct", "true", st),
                   WF_INVALID_ARGUMENT);
  assert_message(st, "config: unknown key 'stirct' in section [plugins]");
  assert_int_equal(wf_config_set(cfg, "thread", "pin", "true", st),
                   WF_INVALID_ARGUMENT);
  assert_message(st, "config: unknown section [thread]");
  assert_int_equal(wf_config_set(cfg, "threads", "inter_op", "many", st),
                   WF_INVALID_ARGUMENT);
  assert_message(st, "config: bad value 'many' for inter_op in [threads]: "
                     "expected a whole number >= 0");
  assert_int_equal(cfg->inter_op, 0);
  /* Set by a program: no file to name, relative paths kept as given. */
  assert_int_equal(wf_config_set(cfg, "plugins", "deny", "x", st), WF_OK);
  assert_null(cfg->plugin_deny_from);
  assert_int_equal(wf_config_set(cfg, "plugins", "paths", "rel/p", st), WF_OK);
  assert_list(&cfg->plugin_paths, 1, "rel/p");
  wf_status_free(st);
  wf_config_free(cfg);
}

static void test_config_copy_is_deep(void **state) {
  wf_config *cfg = wf_config_new(), *copy;
  wf_status *st = wf_status_new();
  (void)state;
  assert_int_equal(load_text(cfg, "[plugins]\ndeny = a\npaths = /x\n", st),
                   WF_OK);
  copy = wf__config_copy(cfg);
  assert_non_null(copy);
  assert_same_config(cfg, copy);
  assert_ptr_not_equal(copy->plugin_deny.items[0], cfg->plugin_deny.items[0]);
  assert_ptr_not_equal(copy->plugin_deny_from, cfg->plugin_deny_from);
  wf_config_free(cfg);
  assert_list(&copy->plugin_deny, 1, "a"); /* still readable */
  assert_true(wf__strlist_has(&copy->plugin_deny, "a"));
  assert_false(wf__strlist_has(&copy->plugin_deny, "b"));
  wf_config_free(copy);
  wf_status_free(st);
}

static void test_config_default_path_honours_environment(void **state) {
  const char *p;
  (void)state;
  setenv("WEFT_CONFIG", "/somewhere/else.conf", 1);
  assert_string_equal(wf_config_default_path(), "/somewhere/else.conf");
  unsetenv("WEFT_CONFIG");
  p = wf_config_default_path();
  if (p) {
    size_t n = strlen(p);
    assert_true(n > 16);
    assert_string_equal(p + n - 16, "/weft/weft.conf");
    assert_int_equal(access(p, F_OK), 0);
  }
}

static void test_config_plugin_dir_is_absolute(void **state) {
  const char *d = wf_config_plugin_dir();
  size_t n = strlen(d);
  (void)state;
  assert_int_equal(d[0], '/');
  assert_true(n > 13);
  assert_string_equal(d + n - 13, "/weft/plugins");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_config_defaults),
      cmocka_unit_test(test_config_reads_every_key),
      cmocka_unit_test(test_config_accepts_every_boolean_spelling),
      cmocka_unit_test(test_config_lists_trim_spaces_and_skip_empty_items),
      cmocka_unit_test(test_config_list_continues_on_indented_lines),
      cmocka_unit_test(test_config_later_values_override_earlier),
      cmocka_unit_test(test_config_refuses_unknown_key_naming_file_and_line),
      cmocka_unit_test(
          test_config_refuses_unknown_section_naming_file_and_line),
      cmocka_unit_test(test_config_refuses_key_outside_a_section),
      cmocka_unit_test(test_config_refuses_bad_values_naming_file_and_line),
      cmocka_unit_test(test_config_refuses_overlong_line),
      cmocka_unit_test(test_config_missing_file_is_not_found),
      cmocka_unit_test(test_config_refuses_a_directory),
      cmocka_unit_test(test_config_unchanged_after_failed_load),
      cmocka_unit_test(test_config_unchanged_when_memory_runs_out),
      cmocka_unit_test(test_config_set_refuses_unknown_and_bad),
      cmocka_unit_test(test_config_copy_is_deep),
      cmocka_unit_test(test_config_default_path_honours_environment),
      cmocka_unit_test(test_config_plugin_dir_is_absolute),
  };
  return cmocka_run_group_tests(tests, make_tmpdir, remove_tmpdir);
}
