/* tests/core/test_loader.c — finding, checking and loading plugins: every
 * reason a plugin is refused (and that the reason names the file), strict
 * mode, the config's deny and load lists, dependency order, world-writable
 * locations, shadowing, the search path, and in-process descriptions. */
#include <config.h>

#include <errno.h>
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
#include "plugin/dl.h"
#include "host/host.h"
#include "plugin/runtime_internal.h"
#include "base/status_internal.h"

#define PLUGIN(name) TEST_PLUGIN_DIR "/" name ".so"

/* ---- helpers
 * ----------------------------------------------------------------- */


/* What every runtime registers before any plugin file: the core's own
 * plugins (core/exec/core_ops.c, core/data/data_ops.c). */
#define BUILTIN_PLUGINS builtin_count(2)
#define BUILTIN_OPS builtin_count(0)
#define BUILTIN_KERNELS builtin_count(1)

/* Whether r's plugin called name is one of the core's own. */

#define STR_(x) #x
#define STR(x) STR_(x)
/* "MAJOR.MINOR" of this core, as the loader words refusals. */
#define OUR_ABI STR(WF_ABI_MAJOR) "." STR(WF_ABI_MINOR)
static int is_builtin(wf_runtime *r, const char *name) {
  for (int i = 0; i < wf_runtime_plugin_count(r); i++) {
    wf_plugin_info p;
    wf_runtime_plugin_get(r, i, &p);
    if (strcmp(p.name, name) == 0 && strcmp(p.path, "(built in)") == 0)
      return 1;
  }
  return 0;
}

/* How many ops (what 0), kernels (what 1) or plugins (what 2) the core
 * registers itself. */
static int builtin_count(int what) {
  static int n[3] = {-1, -1, -1};
  if (n[what] < 0) {
    wf_status *s = wf_status_new();
    wf_config *c = wf_config_new();
    wf_config_set(c, "plugins", "use_default_dir", "false", s);
    wf_config_set(c, "plugins", "use_env_path", "false", s);
    wf_runtime *r = wf_runtime_new(c, s);
    n[0] = n[1] = n[2] = 0;
    for (int i = 0; r && i < wf_runtime_op_count(r); i++)
      n[0] += is_builtin(r, wf_runtime_op_plugin(r, i));
    for (int i = 0; r && i < wf_runtime_kernel_count(r); i++) {
      wf_kernel_info k;
      wf_runtime_kernel_get(r, i, &k);
      n[1] += is_builtin(r, k.plugin);
    }
    for (int i = 0; r && i < wf_runtime_plugin_count(r); i++) {
      wf_plugin_info p;
      wf_runtime_plugin_get(r, i, &p);
      n[2] += is_builtin(r, p.name);
    }
    wf_runtime_free(r);
    wf_config_free(c);
    wf_status_free(s);
  }
  return n[what];
}

static char tmp_root[64];
static int tmp_count;

static int make_tmp_root(void **state) {
  (void)state;
  strcpy(tmp_root, "/tmp/weft-test-loader-XXXXXX");
  assert_non_null(mkdtemp(tmp_root));
  /* Refusals are expected here: keep the test log to errors. */
  setenv("WEFT_LOG_LEVEL", "error", 1);
  unsetenv("WEFT_PLUGIN_PATH");
  return 0;
}

static int remove_tmp_root(void **state) {
  char cmd[256];
  (void)state;
  snprintf(cmd, sizeof cmd, "chmod -R u+w '%s' && rm -rf '%s'", tmp_root,
           tmp_root);
  assert_int_equal(system(cmd), 0);
  return 0;
}

/* A new directory under the temporary root with the given mode; returns
 * its path (static buffer, one per call up to 8 alive). */
static const char *new_dir(mode_t mode) {
  static char paths[8][128];
  char *p = paths[tmp_count % 8];
  snprintf(p, 128, "%s/d%d", tmp_root, tmp_count++);
  assert_int_equal(mkdir(p, 0700), 0);
  assert_int_equal(chmod(p, mode), 0); /* chmod: not filtered by umask */
  return p;
}

static void copy_file(const char *from, const char *dir, const char *name,
                      mode_t mode) {
  char to[256], buf[8192];
  FILE *in, *out;
  size_t n;
  snprintf(to, sizeof to, "%s/%s", dir, name);
  in = fopen(from, "rb");
  assert_non_null(in);
  out = fopen(to, "wb");
  assert_non_null(out);
  while ((n = fread(buf, 1, sizeof buf, in)) > 0)
    assert_int_equal(fwrite(buf, 1, n, out), n);
  fclose(in);
  fclose(out);
  assert_int_equal(chmod(to, mode), 0);
}

static void write_text(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs(text, f);
  fclose(f);
}

/* A config that searches only the given comma-separated paths. */
static wf_config *config_for(const char *paths) {
  wf_config *cfg = wf_config_new();
  wf_status *st = wf_status_new();
  assert_non_null(cfg);
  assert_int_equal(wf_config_set(cfg, "plugins", "use_env_path", "no", st),
                   WF_OK);
  assert_int_equal(wf_config_set(cfg, "plugins", "use_default_dir", "no", st),
                   WF_OK);
  assert_int_equal(wf_config_set(cfg, "plugins", "paths", paths, st), WF_OK);
  wf_status_free(st);
  return cfg;
}

static void config_set(wf_config *cfg, const char *section, const char *key,
                       const char *value) {
  wf_status *st = wf_status_new();
  assert_int_equal(wf_config_set(cfg, section, key, value, st), WF_OK);
  wf_status_free(st);
}

/* A runtime from cfg that must be created; frees cfg. */
static wf_runtime *runtime_for(wf_config *cfg) {
  wf_status *st = wf_status_new();
  wf_runtime *rt = wf_runtime_new(cfg, st);
  if (!rt)
    fail_msg("wf_runtime_new: %s", wf_status_message(st));
  wf_status_free(st);
  wf_config_free(cfg);
  return rt;
}

/* Index of plugin name in rt (the loaded one when several share the name),
 * or -1. */
static int plugin_index(const wf_runtime *rt, const char *name) {
  wf_plugin_info info;
  int found = -1;
  for (int i = 0; i < wf_runtime_plugin_count(rt); i++) {
    wf_runtime_plugin_get(rt, i, &info);
    if (strcmp(info.name, name) != 0)
      continue;
    if (info.state == WF_PLUGIN_LOADED)
      return i;
    if (found < 0)
      found = i;
  }
  return found;
}

static wf_plugin_info plugin_info(const wf_runtime *rt, const char *name) {
  wf_plugin_info info;
  int i = plugin_index(rt, name);
  if (i < 0)
    fail_msg("plugin '%s' is not listed", name);
  wf_runtime_plugin_get(rt, i, &info);
  return info;
}

/* The plugin is refused (or denied) and its reason contains every given
 * fragment. */
static void assert_refused(const wf_runtime *rt, const char *name,
                           wf_plugin_state state, ...) {
  wf_plugin_info info = plugin_info(rt, name);
  const char *frag;
  va_list ap;
  assert_int_equal(info.state, state);
  assert_non_null(info.reason);
  va_start(ap, state);
  while ((frag = va_arg(ap, const char *)) != NULL)
    if (!strstr(info.reason, frag))
      fail_msg("reason of '%s' lacks \"%s\": %s", name, frag, info.reason);
  va_end(ap);
}

/* ---- loading
 * ------------------------------------------------------------------- */

static void
test_loader_loads_good_plugin_with_everything_it_registers(void **state) {
  wf_runtime *rt = runtime_for(config_for(PLUGIN("good")));
  wf_plugin_info info = plugin_info(rt, "test-good");
  wf_kernel_info k;
  wf_device_info d;
  int found = 0;
  (void)state;

  assert_int_equal(info.state, WF_PLUGIN_LOADED);
  assert_string_equal(info.path, PLUGIN("good"));
  assert_string_equal(info.version, "1.2.3");
  assert_string_equal(info.license, "MIT");
  assert_null(info.reason);
  assert_int_equal(info.abi_major, WF_ABI_MAJOR);
  assert_int_equal(info.abi_minor, WF_ABI_MINOR);
  assert_int_equal(info.abi_capped, 0);
  assert_int_equal(info.num_ops, 2);
  assert_int_equal(info.num_kernels, 2);
  assert_int_equal(info.num_gradients, 1);
  assert_int_equal(info.num_devices, 1);
  assert_int_equal(info.num_readers, 0);
  assert_int_equal(info.num_passes, 0);
  assert_null(info.requires);

  assert_int_equal(wf_runtime_op_count(rt), 2 + BUILTIN_OPS);
  /* Ops and kernels are sorted by name; the core's own ("IteratorGetNext",
   * "_Feed", ...) fall around the plugin's. */
  int op0 = 0, k0 = 0;
  while (op0 < wf_runtime_op_count(rt) &&
         strcmp(wf_runtime_op_get(rt, op0)->name, "TestScale") != 0)
    op0++;
  assert_string_equal(wf_runtime_op_get(rt, op0)->name, "TestScale");
  assert_string_equal(wf_runtime_op_get(rt, op0 + 1)->name, "TestSource");
  assert_string_equal(wf_runtime_op_plugin(rt, op0), "test-good");
  assert_non_null(wf_runtime_op_find(rt, "TestScale"));
  assert_null(wf_runtime_op_find(rt, "Nope"));
  assert_int_equal(wf_runtime_op_gradient(rt, "TestScale"), 0);
  assert_int_equal(wf_runtime_op_gradient(rt, "TestSource"), -1);

  assert_int_equal(wf_runtime_kernel_count(rt), 2 + BUILTIN_KERNELS);
  for (wf_runtime_kernel_get(rt, k0, &k); strcmp(k.op, "TestScale") != 0;
       wf_runtime_kernel_get(rt, k0, &k))
    k0++;
  for (int i = k0; i < k0 + 2; i++) {
    wf_runtime_kernel_get(rt, i, &k);
    assert_string_equal(k.op, "TestScale");
    assert_string_equal(k.plugin, "test-good");
    if (strcmp(k.device_type, "testdev") == 0) {
      assert_string_equal(k.label, "test-reference");
      assert_string_equal(k.type_attr, "T");
      assert_int_equal(k.dtypes, WF_DTYPE_BIT(WF_FLOAT32));
      found = 1;
    }
  }
  assert_true(found);

  assert_int_equal(wf_runtime_device_count(rt), 1);
  wf_runtime_device_get(rt, 0, &d);
  assert_string_equal(d.name, "testdev:0");
  assert_string_equal(d.type, "testdev");
  assert_string_equal(d.plugin, "test-good");
  assert_int_equal(d.available, 1);
  assert_null(d.reason);
  wf_runtime_free(rt);
}

static void test_loader_refuses_other_abi_major(void **state) {
  wf_runtime *rt = runtime_for(config_for(PLUGIN("abi_major")));
  wf_plugin_info info;
  (void)state;
  /* Its name cannot be trusted: the file names it. */
  assert_refused(rt, "abi_major", WF_PLUGIN_REFUSED, PLUGIN("abi_major"),
                 "built for plugin ABI 2.0, this weft has " OUR_ABI, NULL);
  info = plugin_info(rt, "abi_major");
  assert_int_equal(info.abi_major, WF_ABI_MAJOR + 1);
  assert_null(info.version);
  assert_int_equal(info.num_ops, 0);
  assert_int_equal(wf_runtime_op_count(rt), 0 + BUILTIN_OPS);
  wf_runtime_free(rt);
}

static void test_loader_caps_newer_minor(void **state) {
  wf_runtime *rt = runtime_for(config_for(PLUGIN("newer_minor")));
  wf_plugin_info info = plugin_info(rt, "test-newer-minor");
  (void)state;
  assert_int_equal(info.state, WF_PLUGIN_LOADED);
  assert_int_equal(info.abi_capped, 1);
  assert_int_equal(info.abi_major, WF_ABI_MAJOR);
  assert_int_equal(info.abi_minor, WF_ABI_MINOR + 1);
  assert_string_equal(info.version, "0.9");
  assert_non_null(wf_runtime_op_find(rt, "TestNewer"));
  wf_runtime_free(rt);
}

static void test_loader_refuses_module_without_entry_point(void **state) {
  wf_runtime *rt = runtime_for(config_for(PLUGIN("no_entry")));
  (void)state;
  assert_refused(rt, "no_entry", WF_PLUGIN_REFUSED, PLUGIN("no_entry"),
                 "no entry point 'weft_plugin'", NULL);
  assert_int_equal(plugin_info(rt, "no_entry").abi_major, -1);
  wf_runtime_free(rt);
}

static void test_loader_refuses_file_that_is_not_an_object(void **state) {
  const char *dir = new_dir(0700);
  char path[256];
  wf_runtime *rt;
  (void)state;
  snprintf(path, sizeof path, "%s/x.so", dir);
  write_text(path, "this is text, not an ELF object: it is long enough to "
                   "hold an ELF header, so the loader reads one\n");
  rt = runtime_for(config_for(dir));
  assert_refused(rt, "x", WF_PLUGIN_REFUSED, path, "not a loadable object",
                 NULL);
  /* The system loader's reason comes first, then libltdl's. */
  assert_refused(rt, "x", WF_PLUGIN_REFUSED, "invalid ELF header",
                 "(libltdl: ", NULL);
  wf_runtime_free(rt);
}

static void test_loader_refuses_plugin_whose_init_fails(void **state) {
  wf_runtime *rt = runtime_for(config_for(PLUGIN("init_fails")));
  (void)state;
  assert_refused(rt, "test-init-fails", WF_PLUGIN_REFUSED, PLUGIN("init_fails"),
                 "init failed: cannot open /dev/weft-test-device: no such "
                 "device",
                 NULL);
  assert_null(wf_runtime_op_find(rt, "TestNeverRegistered"));
  wf_runtime_free(rt);
}

static void test_loader_refuses_plugin_with_unresolved_symbol(void **state) {
  wf_runtime *rt = runtime_for(config_for(PLUGIN("unresolved")));
  (void)state;
  /* Refused at open: its init, which would call the missing function and
   * end the process, never runs. */
  assert_refused(rt, "unresolved", WF_PLUGIN_REFUSED, PLUGIN("unresolved"),
                 "undefined symbol: wf_test_function_nobody_defines", NULL);
  wf_runtime_free(rt);
}

static void
test_loader_refuses_conflicting_op_naming_both_plugins(void **state) {
  wf_runtime *rt =
      runtime_for(config_for(PLUGIN("conflict_a") "," PLUGIN("conflict_b")));
  (void)state;
  assert_int_equal(plugin_info(rt, "test-conflict-a").state, WF_PLUGIN_LOADED);
  assert_refused(rt, "test-conflict-b", WF_PLUGIN_REFUSED, PLUGIN("conflict_b"),
                 "TestConflict", "test-conflict-a", "test-conflict-b", NULL);
  /* The op is the first plugin's. */
  assert_non_null(wf_runtime_op_find(rt, "TestConflict")->inputs[0].name);
  assert_int_equal(
      wf_runtime_op_find(rt, "TestConflict")->inputs[1].struct_size, 0);
  wf_runtime_free(rt);
}

static void test_loader_skips_broken_plugins_and_loads_the_rest(void **state) {
  /* The whole test plugin directory: good and broken ones together. */
  wf_runtime *rt = runtime_for(config_for(TEST_PLUGIN_DIR));
  (void)state;
  assert_int_equal(plugin_info(rt, "test-good").state, WF_PLUGIN_LOADED);
  assert_int_equal(plugin_info(rt, "test-needs-good").state, WF_PLUGIN_LOADED);
  assert_int_equal(plugin_info(rt, "test-newer-minor").state, WF_PLUGIN_LOADED);
  assert_int_equal(plugin_info(rt, "abi_major").state, WF_PLUGIN_REFUSED);
  assert_int_equal(plugin_info(rt, "no_entry").state, WF_PLUGIN_REFUSED);
  assert_int_equal(plugin_info(rt, "test-init-fails").state, WF_PLUGIN_REFUSED);
  assert_int_equal(plugin_info(rt, "test-cycle-a").state, WF_PLUGIN_REFUSED);
  assert_int_equal(plugin_info(rt, "test-cycle-b").state, WF_PLUGIN_REFUSED);
  wf_runtime_free(rt);
}

/* ---- strict mode and the config's lists
 * ---------------------------------------- */

static void test_loader_strict_turns_a_refusal_into_an_error(void **state) {
  static const struct {
    const char *path;
    const char *why;
  } cases[] = {
      {PLUGIN("abi_major"), "built for plugin ABI 2.0, this weft has " OUR_ABI},
      {PLUGIN("init_fails"), "init failed: cannot open"},
      {PLUGIN("no_entry"), "no entry point"},
      {PLUGIN("needs_good"), "requires plugin 'test-good'"},
  };
  wf_status *st = wf_status_new();
  (void)state;
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    wf_config *cfg = config_for(cases[i].path);
    config_set(cfg, "plugins", "strict", "true");
    assert_null(wf_runtime_new(cfg, st));
    assert_int_equal(wf_status_code(st), WF_FAILED_PRECONDITION);
    assert_non_null(strstr(wf_status_message(st), cases[i].path));
    assert_non_null(strstr(wf_status_message(st), cases[i].why));
    wf_config_free(cfg);
  }
  wf_status_free(st);
}

static void test_loader_strict_fails_on_missing_config_path(void **state) {
  wf_config *cfg = config_for("/nonexistent/weft-plugins");
  wf_status *st = wf_status_new();
  wf_runtime *rt;
  (void)state;
  /* Not strict: a warning, and a runtime without plugins. */
  rt = wf_runtime_new(cfg, st);
  assert_non_null(rt);
  assert_int_equal(wf_runtime_plugin_count(rt), 0 + BUILTIN_PLUGINS);
  wf_runtime_free(rt);
  config_set(cfg, "plugins", "strict", "on");
  assert_null(wf_runtime_new(cfg, st));
  assert_int_equal(wf_status_code(st), WF_NOT_FOUND);
  assert_non_null(strstr(wf_status_message(st), "/nonexistent/weft-plugins"));
  wf_config_free(cfg);
  wf_status_free(st);
}

static void
test_loader_deny_list_skips_plugin_naming_config_file(void **state) {
  const char *dir = new_dir(0700);
  char conf[256], text[512];
  wf_config *cfg = wf_config_new();
  wf_status *st = wf_status_new();
  wf_runtime *rt;
  (void)state;
  snprintf(conf, sizeof conf, "%s/weft.conf", dir);
  snprintf(text, sizeof text,
           "[plugins]\npaths = %s, %s\ndeny = test-conflict-b\n"
           "use_env_path = no\nuse_default_dir = no\nstrict = yes\n",
           PLUGIN("conflict_a"), PLUGIN("conflict_b"));
  write_text(conf, text);
  assert_int_equal(wf_config_load(cfg, conf, st), WF_OK);
  /* Denied plugins are no refusals, even when strict. */
  rt = runtime_for(cfg);
  assert_int_equal(plugin_info(rt, "test-conflict-a").state, WF_PLUGIN_LOADED);
  assert_refused(rt, "test-conflict-b", WF_PLUGIN_DENIED, "denied by config",
                 conf, NULL);
  assert_string_equal(plugin_info(rt, "test-conflict-b").path,
                      PLUGIN("conflict_b"));
  wf_runtime_free(rt);
  wf_status_free(st);
}

static void test_loader_load_list_loads_only_named_plugins(void **state) {
  wf_config *cfg = config_for(
      PLUGIN("good") "," PLUGIN("conflict_a") "," PLUGIN("newer_minor"));
  wf_runtime *rt;
  (void)state;
  config_set(cfg, "plugins", "load", "test-good, test-newer-minor");
  rt = runtime_for(cfg);
  assert_int_equal(plugin_info(rt, "test-good").state, WF_PLUGIN_LOADED);
  assert_int_equal(plugin_info(rt, "test-newer-minor").state, WF_PLUGIN_LOADED);
  assert_refused(rt, "test-conflict-a", WF_PLUGIN_DENIED, "load list", NULL);
  assert_null(wf_runtime_op_find(rt, "TestConflict"));
  wf_runtime_free(rt);
}

/* ---- dependencies
 * --------------------------------------------------------------- */

static void test_loader_loads_required_plugin_first(void **state) {
  /* The dependant is found first. */
  wf_runtime *rt =
      runtime_for(config_for(PLUGIN("needs_good") "," PLUGIN("good")));
  wf_plugin_info info = plugin_info(rt, "test-needs-good");
  (void)state;
  assert_int_equal(info.state, WF_PLUGIN_LOADED);
  assert_non_null(info.requires);
  assert_string_equal(info.requires[0], "test-good");
  assert_null(info.requires[1]);
  assert_int_equal(plugin_info(rt, "test-good").state, WF_PLUGIN_LOADED);
  assert_true(plugin_index(rt, "test-good") <
              plugin_index(rt, "test-needs-good"));
  assert_int_equal(wf_runtime_kernel_count(rt), 3 + BUILTIN_KERNELS);
  wf_runtime_free(rt);
}

static void
test_loader_refuses_plugin_whose_requirement_is_missing(void **state) {
  wf_runtime *rt = runtime_for(config_for(PLUGIN("needs_good")));
  (void)state;
  assert_refused(rt, "test-needs-good", WF_PLUGIN_REFUSED, PLUGIN("needs_good"),
                 "requires plugin 'test-good', which was not found", NULL);
  wf_runtime_free(rt);
}

static void
test_loader_refuses_plugin_whose_requirement_is_refused(void **state) {
  wf_config *cfg = config_for(PLUGIN("needs_good") "," PLUGIN("good"));
  wf_runtime *rt;
  (void)state;
  config_set(cfg, "plugins", "deny", "test-good");
  rt = runtime_for(cfg);
  assert_int_equal(plugin_info(rt, "test-good").state, WF_PLUGIN_DENIED);
  assert_refused(rt, "test-needs-good", WF_PLUGIN_REFUSED, PLUGIN("needs_good"),
                 "requires plugin 'test-good'", "denied by config", NULL);
  wf_runtime_free(rt);
}

static void test_loader_refuses_dependency_cycle(void **state) {
  wf_runtime *rt =
      runtime_for(config_for(PLUGIN("cycle_a") "," PLUGIN("cycle_b")));
  (void)state;
  assert_refused(rt, "test-cycle-a", WF_PLUGIN_REFUSED, PLUGIN("cycle_a"),
                 "dependency cycle: test-cycle-a -> test-cycle-b -> "
                 "test-cycle-a",
                 NULL);
  assert_refused(rt, "test-cycle-b", WF_PLUGIN_REFUSED, PLUGIN("cycle_b"),
                 "dependency cycle: test-cycle-a -> test-cycle-b -> "
                 "test-cycle-a",
                 NULL);
  wf_runtime_free(rt);
}

/* ---- where plugins come from
 * ------------------------------------------------------ */

static void
test_loader_refuses_plugin_in_world_writable_directory(void **state) {
  const char *dir = new_dir(0777);
  char path[256], why[256];
  wf_runtime *rt;
  (void)state;
  copy_file(PLUGIN("good"), dir, "good.so", 0755);
  snprintf(path, sizeof path, "%s/good.so", dir);
  snprintf(why, sizeof why, "directory %s is world-writable (mode 0777)", dir);
  rt = runtime_for(config_for(dir));
  assert_refused(rt, "good", WF_PLUGIN_REFUSED, path, why, NULL);
  assert_int_equal(wf_runtime_op_count(rt), 0 + BUILTIN_OPS);
  wf_runtime_free(rt);
}

static void test_loader_refuses_world_writable_file(void **state) {
  const char *dir = new_dir(0700);
  char path[256];
  wf_runtime *rt;
  (void)state;
  copy_file(PLUGIN("good"), dir, "good.so", 0666);
  snprintf(path, sizeof path, "%s/good.so", dir);
  rt = runtime_for(config_for(path));
  assert_refused(rt, "good", WF_PLUGIN_REFUSED, path,
                 "the file is world-writable (mode 0666)", NULL);
  wf_runtime_free(rt);
}

static void test_loader_first_plugin_of_a_name_wins(void **state) {
  const char *dir = new_dir(0700);
  char paths[512], copy[256], why[600];
  wf_runtime *rt;
  (void)state;
  copy_file(PLUGIN("good"), dir, "good.so", 0755);
  snprintf(copy, sizeof copy, "%s/good.so", dir);
  snprintf(paths, sizeof paths, "%s, %s", PLUGIN("good"), dir);
  snprintf(why, sizeof why, "%s: shadowed by %s", copy, PLUGIN("good"));
  rt = runtime_for(config_for(paths));
  assert_int_equal(wf_runtime_plugin_count(rt), 2 + BUILTIN_PLUGINS);
  for (int i = BUILTIN_PLUGINS; i < 2 + BUILTIN_PLUGINS; i++) {
    wf_plugin_info info;
    wf_runtime_plugin_get(rt, i, &info);
    assert_string_equal(info.name, "test-good");
    if (info.state == WF_PLUGIN_LOADED) {
      assert_string_equal(info.path, PLUGIN("good"));
    } else {
      assert_int_equal(info.state, WF_PLUGIN_REFUSED);
      assert_string_equal(info.path, copy);
      assert_string_equal(info.reason, why);
    }
  }
  assert_int_equal(plugin_info(rt, "test-good").state, WF_PLUGIN_LOADED);
  wf_runtime_free(rt);
}

static void test_loader_scans_directory_in_name_order(void **state) {
  const char *dir = new_dir(0700);
  char a[256], b[256];
  wf_runtime *rt;
  (void)state;
  /* Renamed copies: "a.so" holds conflict-b, "b.so" conflict-a. libltdl
   * finds their entry points under the plain name. */
  copy_file(PLUGIN("conflict_a"), dir, "b.so", 0755);
  copy_file(PLUGIN("conflict_b"), dir, "a.so", 0755);
  copy_file(PLUGIN("conflict_a"), dir, "notes.txt", 0644);
  snprintf(a, sizeof a, "%s/a.so", dir);
  snprintf(b, sizeof b, "%s/b.so", dir);
  rt = runtime_for(config_for(dir));
  assert_int_equal(wf_runtime_plugin_count(rt), 2 + BUILTIN_PLUGINS);
  assert_int_equal(plugin_info(rt, "test-conflict-b").state, WF_PLUGIN_LOADED);
  assert_string_equal(plugin_info(rt, "test-conflict-b").path, a);
  assert_refused(rt, "test-conflict-a", WF_PLUGIN_REFUSED, b, NULL);
  wf_runtime_free(rt);
}

static void test_loader_reads_env_path_only_when_allowed(void **state) {
  const char *dir = new_dir(0700);
  char env[512];
  wf_config *cfg;
  wf_runtime *rt;
  (void)state;
  copy_file(PLUGIN("good"), dir, "good.so", 0755);
  snprintf(env, sizeof env, "/nonexistent-weft-dir::%s", dir);
  setenv("WEFT_PLUGIN_PATH", env, 1);

  cfg = config_for("");
  config_set(cfg, "plugins", "use_env_path", "yes");
  rt = runtime_for(cfg);
  assert_int_equal(wf_runtime_plugin_count(rt), 1 + BUILTIN_PLUGINS);
  assert_int_equal(plugin_info(rt, "test-good").state, WF_PLUGIN_LOADED);
  wf_runtime_free(rt);

  rt = runtime_for(config_for(""));
  assert_int_equal(wf_runtime_plugin_count(rt), 0 + BUILTIN_PLUGINS);
  wf_runtime_free(rt);

  /* The config's paths come first: the env's copy is shadowed. */
  cfg = config_for(PLUGIN("good"));
  config_set(cfg, "plugins", "use_env_path", "yes");
  rt = runtime_for(cfg);
  assert_string_equal(plugin_info(rt, "test-good").path, PLUGIN("good"));
  assert_int_equal(wf_runtime_plugin_count(rt), 2 + BUILTIN_PLUGINS);
  wf_runtime_free(rt);
  unsetenv("WEFT_PLUGIN_PATH");
}

static void
test_loader_searches_build_tree_plugins_from_build_tree(void **state) {
  const char *cpu = TEST_BUILDDIR "/plugins/devices/cpu/.libs/device_cpu.so";
  wf_config *cfg;
  wf_runtime *rt;
  int from_tree = 0;
  (void)state;
  if (access(cpu, F_OK) != 0)
    skip(); /* the in-tree CPU plugin is not built in this configuration */
  /* This test program runs from the build tree: the default directories
   * include the in-tree plugins. */
  cfg = config_for("");
  config_set(cfg, "plugins", "use_default_dir", "yes");
  rt = runtime_for(cfg);
  for (int i = 0; i < wf_runtime_plugin_count(rt); i++) {
    wf_plugin_info info;
    wf_runtime_plugin_get(rt, i, &info);
    if (strcmp(info.path, cpu) == 0)
      from_tree = 1;
  }
  assert_true(from_tree);
  wf_runtime_free(rt);
}

static void test_loader_same_file_twice_is_looked_at_once(void **state) {
  wf_runtime *rt = runtime_for(
      config_for(PLUGIN("good") "," TEST_PLUGIN_DIR "/../.libs/good.so"));
  (void)state;
  assert_int_equal(wf_runtime_plugin_count(rt), 1 + BUILTIN_PLUGINS);
  wf_runtime_free(rt);
}

/* ---- in-process descriptions
 * ------------------------------------------------------ */

static int inproc_inits, inproc_finis;

static int inproc_init(const wf_host *host, void **pstate, wf_status *st) {
  (void)st;
  assert_non_null(host);
  assert_true(WF_HOST_HAS(host, kernel_done));
  inproc_inits++;
  *pstate = &inproc_inits;
  return 0;
}

static void inproc_fini(void *pstate) {
  assert_ptr_equal(pstate, &inproc_inits);
  inproc_finis++;
}

static const wf_arg_def one_output[] = {
    WF_ARG_FIXED("y", WF_FLOAT32, "() scalar"), WF_ARG_END};
static const wf_arg_def other_output[] = {
    WF_ARG_FIXED("y", WF_INT32, "() scalar"), WF_ARG_END};
static const wf_op_def inproc_op = {WF_STRUCT_INIT(wf_op_def), .name = "InProc",
                                    .outputs = one_output,
                                    .flags = WF_OP_SOURCE_FED};
static const wf_op_def inproc_other_op = {
    WF_STRUCT_INIT(wf_op_def), .name = "InProc", .outputs = other_output,
    .flags = WF_OP_SOURCE_FED};
static const wf_op_def *const inproc_ops[] = {&inproc_op, NULL};
static const wf_op_def *const inproc_other_ops[] = {&inproc_other_op, NULL};

static void test_runtime_checks_in_process_descriptions(void **state) {
  wf_status *st = wf_status_new();
  wf_runtime *rt = wf__runtime_new_empty(NULL, st);
  wf_plugin_desc tiny = {.struct_size = 8, .abi_major = WF_ABI_MAJOR};
  wf_plugin_desc unnamed = {WF_STRUCT_INIT(wf_plugin_desc)};
  wf_plugin_desc first = {WF_STRUCT_INIT(wf_plugin_desc), .name = "inproc",
                          .ops = inproc_ops, .init = inproc_init,
                          .fini = inproc_fini};
  wf_plugin_desc clash = {WF_STRUCT_INIT(wf_plugin_desc),
                          .name = "inproc-clash", .ops = inproc_other_ops,
                          .init = inproc_init, .fini = inproc_fini};
  (void)state;
  assert_non_null(rt);
  inproc_inits = inproc_finis = 0;

  assert_int_equal(wf__runtime_add_plugin(rt, NULL, "mem:null", NULL, st),
                   WF_FAILED_PRECONDITION);
  assert_string_equal(wf_status_message(st),
                      "mem:null: the entry point returned no plugin "
                      "description");
  assert_int_equal(wf__runtime_add_plugin(rt, &tiny, "mem:tiny", NULL, st),
                   WF_FAILED_PRECONDITION);
  assert_non_null(strstr(wf_status_message(st),
                         "mem:tiny: plugin description struct_size 8 is too "
                         "small"));
  assert_int_equal(wf__runtime_add_plugin(rt, &unnamed, NULL, NULL, st),
                   WF_FAILED_PRECONDITION);
  assert_string_equal(wf_status_message(st),
                      "(preloaded): the plugin description has no name");

  assert_int_equal(wf__runtime_add_plugin(rt, &first, NULL, NULL, st), WF_OK);
  assert_int_equal(inproc_inits, 1);
  assert_int_equal(wf__runtime_add_plugin(rt, &first, "mem:again", NULL, st),
                   WF_ALREADY_EXISTS);
  assert_non_null(strstr(wf_status_message(st), "already loaded"));
  /* init ran, registration failed: fini is called at once. */
  assert_int_not_equal(
      wf__runtime_add_plugin(rt, &clash, "mem:clash", NULL, st), WF_OK);
  assert_non_null(strstr(wf_status_message(st), "mem:clash: "));
  assert_non_null(strstr(wf_status_message(st), "inproc"));
  assert_int_equal(inproc_inits, 2);
  assert_int_equal(inproc_finis, 1);

  assert_int_equal(wf_runtime_plugin_count(rt), 6); /* an empty runtime */
  {
    wf_plugin_info info;
    wf_runtime_plugin_get(rt, 3, &info);
    assert_string_equal(info.name, "inproc");
    assert_string_equal(info.path, "(preloaded)");
    assert_int_equal(info.state, WF_PLUGIN_LOADED);
    assert_int_equal(info.num_ops, 1);
    for (int i = 0; i < 6; i++) {
      wf_runtime_plugin_get(rt, i, &info);
      assert_int_equal(info.state,
                       i == 3 ? WF_PLUGIN_LOADED : WF_PLUGIN_REFUSED);
    }
  }
  wf_runtime_free(rt);
  assert_int_equal(inproc_finis, 2); /* the loaded one, at free */
  wf_status_free(st);
}

/* Device types of in-process plugins, to check the config's order. */
static int enum_two(void *ps, wf_device_desc *out, int max, wf_status *st,
                    const char *type) {
  (void)ps;
  (void)st;
  assert_true(max >= 2);
  assert_int_equal(out[0].struct_size, sizeof(wf_device_desc));
  for (int i = 0; i < 2; i++) {
    snprintf(out[i].name, sizeof out[i].name, "%s:%d", type, i);
    out[i].available = i == 0;
    if (i == 1)
      strcpy(out[i].reason, "busy");
  }
  return 2;
}
static int enum_alpha(void *ps, wf_device_desc *out, int max, wf_status *st) {
  return enum_two(ps, out, max, st, "alpha");
}
static int enum_beta(void *ps, wf_device_desc *out, int max, wf_status *st) {
  return enum_two(ps, out, max, st, "beta");
}
static int enum_fails(void *ps, wf_device_desc *out, int max, wf_status *st) {
  (void)ps;
  (void)out;
  (void)max;
  wf_status_set(st, WF_UNAVAILABLE, "driver missing");
  return -1;
}
static void *dev_alloc(void *s, size_t b, size_t a) {
  (void)s;
  (void)b;
  (void)a;
  return NULL;
}
static void dev_free(void *s, void *p, size_t b) {
  (void)s;
  (void)p;
  (void)b;
}
static const wf_device_def alpha = {WF_STRUCT_INIT(wf_device_def),
                                    .type = "alpha", .enumerate = enum_alpha,
                                    .alloc = dev_alloc, .free = dev_free};
static const wf_device_def beta = {WF_STRUCT_INIT(wf_device_def),
                                   .type = "beta", .enumerate = enum_beta,
                                   .alloc = dev_alloc, .free = dev_free};
static const wf_device_def broken = {WF_STRUCT_INIT(wf_device_def),
                                     .type = "broken", .enumerate = enum_fails,
                                     .alloc = dev_alloc, .free = dev_free};
static const wf_device_def *const three_devices[] = {&alpha, &beta, &broken,
                                                     NULL};

static void test_runtime_orders_devices_by_config(void **state) {
  wf_config *cfg = wf_config_new();
  wf_status *st = wf_status_new();
  wf_plugin_desc devs = {WF_STRUCT_INIT(wf_plugin_desc), .name = "devs",
                         .devices = three_devices};
  wf_runtime *rt;
  wf_device_info d;
  static const char *const names[] = {"beta:0", "beta:1", "alpha:0", "alpha:1"};
  (void)state;
  config_set(cfg, "devices", "order", "nosuch, beta");
  rt = wf__runtime_new_empty(cfg, st);
  assert_int_equal(wf__runtime_add_plugin(rt, &devs, NULL, NULL, st), WF_OK);
  /* A type whose listing fails has no devices (a warning). */
  assert_int_equal(wf__runtime_enumerate_devices(rt, st), WF_OK);
  assert_int_equal(wf_runtime_device_count(rt), 4);
  for (int i = 0; i < 4; i++) {
    wf_runtime_device_get(rt, i, &d);
    assert_string_equal(d.name, names[i]);
    assert_string_equal(d.plugin, "devs");
    if (i % 2) {
      assert_int_equal(d.available, 0);
      assert_string_equal(d.reason, "busy");
    } else {
      assert_null(d.reason);
    }
  }
  wf_runtime_free(rt);

  /* Strict: the failing type is an error naming it. */
  config_set(cfg, "plugins", "strict", "true");
  rt = wf__runtime_new_empty(cfg, st);
  assert_int_equal(wf__runtime_add_plugin(rt, &devs, NULL, NULL, st), WF_OK);
  assert_int_equal(wf__runtime_enumerate_devices(rt, st),
                   WF_FAILED_PRECONDITION);
  assert_non_null(strstr(wf_status_message(st), "'broken'"));
  assert_non_null(strstr(wf_status_message(st), "driver missing"));
  wf_runtime_free(rt);
  wf_config_free(cfg);
  wf_status_free(st);
}

/* ---- the dl layer
 * ---------------------------------------------------------------- */

static void test_dl_reports_libltdl_errors(void **state) {
  char *err = NULL;
  wf__dl *dl;
  void *sym;
  (void)state;
  assert_null(wf__dl_open("/nonexistent/weft/x.so", &err));
  assert_non_null(err);
  assert_true(strlen(err) > 0);
  wf__free(err);

  dl = wf__dl_open(PLUGIN("good"), &err);
  assert_non_null(dl);
  assert_null(err);
  assert_string_equal(wf__dl_name(dl), "good");
  /* The module's own <module>_LTX_ form is what libltdl finds first. */
  sym = wf__dl_sym(dl, WF_PLUGIN_ENTRY_NAME, &err);
  assert_non_null(sym);
  assert_null(err);
  assert_null(wf__dl_sym(dl, "no_such_symbol_in_good", &err));
  assert_non_null(err);
  wf__free(err);
  wf__dl_close(dl);
}

static void test_dl_without_preloaded_modules_reports_error(void **state) {
  wf__dl **dls = NULL;
  char *err = NULL;
  int n = -1;
  (void)state;
  /* This program was linked without -dlpreopen: there is no list. */
  assert_int_equal(wf__dl_open_preloaded(NULL, &dls, &n, &err), -1);
  assert_null(dls);
  assert_int_equal(n, 0);
  assert_non_null(err);
  wf__free(err);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(
          test_loader_loads_good_plugin_with_everything_it_registers),
      cmocka_unit_test(test_loader_refuses_other_abi_major),
      cmocka_unit_test(test_loader_caps_newer_minor),
      cmocka_unit_test(test_loader_refuses_module_without_entry_point),
      cmocka_unit_test(test_loader_refuses_file_that_is_not_an_object),
      cmocka_unit_test(test_loader_refuses_plugin_whose_init_fails),
      cmocka_unit_test(test_loader_refuses_plugin_with_unresolved_symbol),
      cmocka_unit_test(test_loader_refuses_conflicting_op_naming_both_plugins),
      cmocka_unit_test(test_loader_skips_broken_plugins_and_loads_the_rest),
      cmocka_unit_test(test_loader_strict_turns_a_refusal_into_an_error),
      cmocka_unit_test(test_loader_strict_fails_on_missing_config_path),
      cmocka_unit_test(test_loader_deny_list_skips_plugin_naming_config_file),
      cmocka_unit_test(test_loader_load_list_loads_only_named_plugins),
      cmocka_unit_test(test_loader_loads_required_plugin_first),
      cmocka_unit_test(test_loader_refuses_plugin_whose_requirement_is_missing),
      cmocka_unit_test(test_loader_refuses_plugin_whose_requirement_is_refused),
      cmocka_unit_test(test_loader_refuses_dependency_cycle),
      cmocka_unit_test(test_loader_refuses_plugin_in_world_writable_directory),
      cmocka_unit_test(test_loader_refuses_world_writable_file),
      cmocka_unit_test(test_loader_first_plugin_of_a_name_wins),
      cmocka_unit_test(test_loader_scans_directory_in_name_order),
      cmocka_unit_test(test_loader_reads_env_path_only_when_allowed),
      cmocka_unit_test(test_loader_searches_build_tree_plugins_from_build_tree),
      cmocka_unit_test(test_loader_same_file_twice_is_looked_at_once),
      cmocka_unit_test(test_runtime_checks_in_process_descriptions),
      cmocka_unit_test(test_runtime_orders_devices_by_config),
      cmocka_unit_test(test_dl_reports_libltdl_errors),
      cmocka_unit_test(test_dl_without_preloaded_modules_reports_error),
  };
  return cmocka_run_group_tests(tests, make_tmp_root, remove_tmp_root);
}
