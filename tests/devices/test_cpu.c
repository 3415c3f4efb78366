/* tests/devices/test_cpu.c — the CPU device plugin loaded through the real
 * loader: the devices it lists and what they say, its allocator, splitting
 * the cores with WEFT_CPU_DEVICES, and machines invented with hwloc's
 * HWLOC_SYNTHETIC (several NUMA nodes, memory binding and its fallback).
 *
 * Kernels and thread binding are not part of the plugin yet. */
#include <config.h>

#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <weft/weft.h>

#include "base/alloc.h"
#include "cpu_device.h"
#include "plugin/registry.h"
#include "plugin/runtime_internal.h"

#define CPU_PLUGIN_DIR TEST_BUILDDIR "/plugins/devices/cpu/.libs"

/* Two packages, each one NUMA node of 1 GiB and one L3, four cores of two
 * PUs each per package: 8 cores, 16 PUs. */
#define SYNTHETIC_2NUMA                                                        \
  "pack:2 numa:1(memory=1GiB) l3:1(size=16MiB) l2:4(size=1MiB) "              \
  "l1d:1(size=32KiB) core:1 pu:2"

/* Environment variables that change what the plugin sees; cleared before
 * every test so the caller's environment cannot leak in. */
static void clear_env(void) {
  unsetenv(WF_CPU_DEVICES_ENV);
  unsetenv("HWLOC_SYNTHETIC");
  unsetenv("HWLOC_THISSYSTEM");
  unsetenv("HWLOC_XMLFILE");
  unsetenv("HWLOC_FSROOT");
}

static int setup(void **state) {
  clear_env();
  return 0;
}

static int teardown(void **state) {
  clear_env();
  return 0;
}

/* A runtime that loads the built CPU plugin and nothing else; `strict`
 * turns a device type that fails to list its devices into an error. NULL
 * with st set when wf_runtime_new fails. */
static wf_runtime *cpu_runtime_with(int strict, wf_status *st) {
  wf_config *cfg = wf_config_new();
  wf_runtime *rt;

  assert_non_null(cfg);
  assert_int_equal(wf_config_set(cfg, "plugins", "strict",
                                 strict ? "true" : "false", st),
                   WF_OK);
  assert_int_equal(wf_config_set(cfg, "plugins", "paths", CPU_PLUGIN_DIR, st),
                   WF_OK);
  assert_int_equal(
      wf_config_set(cfg, "plugins", "use_default_dir", "false", st), WF_OK);
  assert_int_equal(wf_config_set(cfg, "plugins", "use_env_path", "false", st),
                   WF_OK);
  rt = wf_runtime_new(cfg, st);
  wf_config_free(cfg);
  return rt;
}

static wf_runtime *cpu_runtime(wf_status *st) { return cpu_runtime_with(1, st); }

/* The runtime's loaded "device-cpu" plugin; fails the test if it is not
 * there or was refused. */
static void assert_cpu_plugin_loaded(const wf_runtime *rt) {
  int found = 0;

  for (int i = 0; i < wf_runtime_plugin_count(rt); i++) {
    wf_plugin_info info = WF_PLUGIN_INFO_INIT;
    wf_runtime_plugin_get(rt, i, &info);
    if (!info.name || strcmp(info.name, "device-cpu") != 0)
      continue;
    found = 1;
    if (info.state != WF_PLUGIN_LOADED)
      fail_msg("device-cpu was not loaded from %s: %s", info.path,
               info.reason ? info.reason : "(no reason)");
    assert_int_equal(info.num_devices, 1);
    assert_int_equal(info.abi_major, WF_ABI_MAJOR);
  }
  if (!found)
    fail_msg("no plugin named device-cpu found in %s", CPU_PLUGIN_DIR);
}

/* The registry's "cpu" device type. */
static const wf__device_type *cpu_type(const wf_runtime *rt) {
  for (int i = 0; i < wf__registry_device_type_count(rt->reg); i++) {
    const wf__device_type *t = wf__registry_device_type_at(rt->reg, i);
    if (strcmp(t->def.type, "cpu") == 0)
      return t;
  }
  fail_msg("no device type \"cpu\" registered");
  return NULL;
}

/* Device i of the runtime, checked to be the cpu type's "cpu:i". */
static const wf__device *cpu_device(const wf_runtime *rt, int i) {
  const wf__device *d;
  char name[16];

  assert_true(i < rt->num_devices);
  d = &rt->devices[i];
  snprintf(name, sizeof(name), "cpu:%d", i);
  assert_string_equal(d->desc.name, name);
  assert_ptr_equal(d->type, cpu_type(rt));
  assert_non_null(d->desc.state);
  return d;
}

static int hwloc_count(hwloc_obj_type_t type) {
  hwloc_topology_t topo;
  int n;

  assert_int_equal(hwloc_topology_init(&topo), 0);
  assert_int_equal(hwloc_topology_load(topo), 0);
  n = hwloc_get_nbobjs_by_type(topo, type);
  hwloc_topology_destroy(topo);
  return n;
}

static void assert_contains(const char *text, const char *part) {
  if (!strstr(text, part))
    fail_msg("expected \"%s\" in:\n%s", part, text);
}

/* Allocates through the device type's allocator with every alignment and
 * a range of sizes; checks alignment, that blocks do not overlap, and that
 * every byte can be written and read back. */
static void check_allocator(const wf__device_type *t, void *dev_state) {
  static const size_t aligns[] = {0, 1, 8, 32, 64, 128, 4096, 65536};
  static const size_t sizes[] = {0, 1, 63, 64, 1000, 4096, 1u << 20};
  enum { NA = sizeof(aligns) / sizeof(aligns[0]),
         NS = sizeof(sizes) / sizeof(sizes[0]) };
  unsigned char *blocks[NA][NS];

  for (int a = 0; a < NA; a++) {
    size_t want = aligns[a] < 64 ? 64 : aligns[a];
    for (int s = 0; s < NS; s++) {
      unsigned char *p = t->def.alloc(dev_state, sizes[s], aligns[a]);
      if (!p)
        fail_msg("alloc(%zu bytes, align %zu) returned NULL", sizes[s],
                 aligns[a]);
      if ((uintptr_t)p % want != 0)
        fail_msg("alloc(%zu bytes, align %zu) gave %p: not %zu-aligned",
                 sizes[s], aligns[a], (void *)p, want);
      memset(p, (a * NS + s) & 0xff, sizes[s]);
      blocks[a][s] = p;
    }
  }
  /* Every block still holds its own pattern: none overlapped another. */
  for (int a = 0; a < NA; a++)
    for (int s = 0; s < NS; s++) {
      unsigned char want = (unsigned char)((a * NS + s) & 0xff);
      for (size_t k = 0; k < sizes[s]; k++)
        if (blocks[a][s][k] != want)
          fail_msg("block (%zu bytes, align %zu) byte %zu changed",
                   sizes[s], aligns[a], k);
      t->def.free(dev_state, blocks[a][s], sizes[s]);
    }
  t->def.free(dev_state, NULL, 0);
}

static void test_cpu_plugin_lists_cpu0_with_cores_and_caches(void **state) {
  wf_status *st = wf_status_new();
  wf_runtime *rt = cpu_runtime(st);
  wf_device_info info;
  char want[64];
  int cores = hwloc_count(HWLOC_OBJ_CORE);
  int pus = hwloc_count(HWLOC_OBJ_PU);

  if (!rt)
    fail_msg("wf_runtime_new: %s", wf_status_message(st));
  assert_cpu_plugin_loaded(rt);
  assert_int_equal(wf_runtime_device_count(rt), 1);
  wf_runtime_device_get(rt, 0, &info);
  assert_string_equal(info.name, "cpu:0");
  assert_string_equal(info.type, "cpu");
  assert_string_equal(info.plugin, "device-cpu");
  assert_true(info.available);
  assert_null(info.reason);
  /* The counts are hwloc's, for the whole machine. */
  if (cores > 0) {
    snprintf(want, sizeof(want), "%d core%s, ", cores, cores == 1 ? "" : "s");
    assert_contains(info.description, want);
  }
  snprintf(want, sizeof(want), "%d processing unit%s", pus,
           pus == 1 ? "" : "s");
  assert_contains(info.description, want);
  assert_contains(info.description, "\ncaches: ");
  if (hwloc_count(HWLOC_OBJ_L1CACHE) > 0)
    assert_contains(info.description, "L1");
  assert_contains(info.description, "\nNUMA node");
  assert_contains(info.description, "\nmemory: host memory aligned to 64");
  cpu_device(rt, 0);

  wf_runtime_free(rt);
  wf_status_free(st);
}

static void test_cpu_alloc_is_aligned_and_usable(void **state) {
  wf_status *st = wf_status_new();
  wf_runtime *rt = cpu_runtime(st);
  const wf__device *d;

  if (!rt)
    fail_msg("wf_runtime_new: %s", wf_status_message(st));
  d = cpu_device(rt, 0);
  check_allocator(cpu_type(rt), d->desc.state);
  wf_runtime_free(rt);
  wf_status_free(st);
}

typedef struct alloc_worker {
  const wf__device_type *type;
  void *dev_state;
  int id;
  int bad; /* blocks found misaligned or overwritten */
} alloc_worker;

/* Allocates, fills, checks and frees blocks of varied sizes in a loop,
 * keeping a few alive at a time. */
static void *alloc_worker_run(void *arg) {
  alloc_worker *w = arg;
  unsigned char *live[8] = {0};
  size_t sizes[8] = {0};

  for (int i = 0; i < 2000; i++) {
    int slot = i % 8;
    unsigned char tag = (unsigned char)(w->id * 16 + slot);

    if (live[slot]) {
      for (size_t k = 0; k < sizes[slot]; k++)
        w->bad += live[slot][k] != tag;
      w->type->def.free(w->dev_state, live[slot], sizes[slot]);
    }
    sizes[slot] = (size_t)(i * 37 % 5000);
    live[slot] = w->type->def.alloc(w->dev_state, sizes[slot], 0);
    if (!live[slot] || (uintptr_t)live[slot] % 64) {
      w->bad++;
      live[slot] = NULL;
      continue;
    }
    memset(live[slot], tag, sizes[slot]);
  }
  for (int slot = 0; slot < 8; slot++)
    if (live[slot])
      w->type->def.free(w->dev_state, live[slot], sizes[slot]);
  return NULL;
}

/* alloc and free may be called from many threads at once. */
static void test_cpu_alloc_is_safe_from_several_threads(void **state) {
  wf_status *st = wf_status_new();
  wf_runtime *rt = cpu_runtime(st);
  alloc_worker w[4];
  pthread_t th[4];

  if (!rt)
    fail_msg("wf_runtime_new: %s", wf_status_message(st));
  for (int i = 0; i < 4; i++) {
    w[i] = (alloc_worker){cpu_type(rt), cpu_device(rt, 0)->desc.state, i, 0};
    assert_int_equal(pthread_create(&th[i], NULL, alloc_worker_run, &w[i]), 0);
  }
  for (int i = 0; i < 4; i++) {
    assert_int_equal(pthread_join(th[i], NULL), 0);
    assert_int_equal(w[i].bad, 0);
  }
  wf_runtime_free(rt);
  wf_status_free(st);
}

/* WEFT_CPU_DEVICES=2: two devices, each a non-empty set of whole cores,
 * disjoint, together the whole machine, each described with its own PUs. */
static void test_cpu_devices_env_splits_cores_into_disjoint_devices(
    void **state) {
  wf_status *st = wf_status_new();
  wf_runtime *rt;
  const cpudev *dev[2];
  hwloc_bitmap_t all = hwloc_bitmap_alloc();

  if (hwloc_count(HWLOC_OBJ_CORE) < 2) {
    hwloc_bitmap_free(all);
    wf_status_free(st);
    skip(); /* one core cannot be split */
  }
  setenv(WF_CPU_DEVICES_ENV, "2", 1);
  rt = cpu_runtime(st);
  if (!rt)
    fail_msg("wf_runtime_new: %s", wf_status_message(st));
  assert_int_equal(wf_runtime_device_count(rt), 2);
  for (int i = 0; i < 2; i++) {
    const wf__device *d = cpu_device(rt, i);
    char list[256], want[300];

    dev[i] = d->desc.state;
    assert_int_equal(dev[i]->index, i);
    assert_true(dev[i]->num_units >= 1);
    assert_false(hwloc_bitmap_iszero(dev[i]->cpuset));
    hwloc_bitmap_list_snprintf(list, sizeof(list), dev[i]->cpuset);
    snprintf(want, sizeof(want), "(PUs %s)", list);
    assert_contains(d->desc.description, want);
    assert_contains(d->desc.description, " of ");
    hwloc_bitmap_or(all, all, dev[i]->cpuset);
    check_allocator(cpu_type(rt), d->desc.state);
  }
  assert_false(hwloc_bitmap_intersects(dev[0]->cpuset, dev[1]->cpuset));
  assert_true(hwloc_bitmap_isequal(
      all, hwloc_topology_get_topology_cpuset(dev[0]->plugin->topo)));

  hwloc_bitmap_free(all);
  wf_runtime_free(rt);
  wf_status_free(st);
}

/* A bad WEFT_CPU_DEVICES makes listing the cpu type's devices fail: with a
 * strict config wf_runtime_new fails with the plugin's message (naming the
 * variable, its value and why); otherwise the runtime comes up with the
 * plugin loaded but no cpu device. */
static void expect_refused(const char *value, const char *why) {
  wf_status *st = wf_status_new();
  wf_runtime *rt;

  setenv(WF_CPU_DEVICES_ENV, value, 1);
  rt = cpu_runtime_with(1, st);
  if (rt)
    fail_msg("%s=%s (%s) was accepted: %d device(s)", WF_CPU_DEVICES_ENV,
             value, why, wf_runtime_device_count(rt));
  assert_int_equal(wf_status_code(st), WF_FAILED_PRECONDITION);
  assert_contains(wf_status_message(st), "device-cpu: " WF_CPU_DEVICES_ENV);
  assert_contains(wf_status_message(st), value);
  assert_contains(wf_status_message(st), why);

  wf_status_reset(st);
  rt = cpu_runtime_with(0, st);
  if (!rt)
    fail_msg("wf_runtime_new (not strict): %s", wf_status_message(st));
  assert_cpu_plugin_loaded(rt);
  assert_int_equal(wf_runtime_device_count(rt), 0);
  wf_runtime_free(rt);
  wf_status_free(st);
}

static void test_cpu_devices_env_refuses_more_devices_than_cores(
    void **state) {
  char value[32];
  int cores = hwloc_count(HWLOC_OBJ_CORE);

  snprintf(value, sizeof(value), "%d", (cores > 0 ? cores : 1) + 1);
  expect_refused(value, "asks for more CPU devices than this machine has");
  expect_refused("100000000000000000000000",
                 "asks for more CPU devices than this machine has");
}

static void test_cpu_devices_env_refuses_what_is_not_a_count(void **state) {
  expect_refused("0", "is not a number of CPU devices");
  expect_refused("-2", "is not a number of CPU devices");
  expect_refused("two", "is not a number of CPU devices");
  expect_refused("2x", "is not a number of CPU devices");
}

/* An invented machine with two NUMA nodes: each half of the split sits on
 * its own node, and says so. Memory cannot be bound on a synthetic
 * topology, so the description says it is not NUMA-bound. */
static void test_cpu_describes_numa_nodes_of_a_two_node_machine(
    void **state) {
  wf_status *st = wf_status_new();
  wf_runtime *rt;

  setenv("HWLOC_SYNTHETIC", SYNTHETIC_2NUMA, 1);
  setenv(WF_CPU_DEVICES_ENV, "2", 1);
  rt = cpu_runtime(st);
  if (!rt)
    fail_msg("wf_runtime_new: %s", wf_status_message(st));
  assert_int_equal(wf_runtime_device_count(rt), 2);
  for (int i = 0; i < 2; i++) {
    const wf__device *d = cpu_device(rt, i);
    const cpudev *dev = d->desc.state;
    char want[64];

    snprintf(want, sizeof(want), "\nNUMA node %d: 1 GiB (2 on the machine)",
             i);
    assert_contains(d->desc.description, want);
    assert_contains(d->desc.description, "4 cores of 8 (logical cores ");
    assert_contains(d->desc.description, "8 processing units");
    assert_contains(d->desc.description,
                    "caches: L1d 4 x 32 KiB, L2 4 x 1 MiB, L3 1 x 16 MiB\n");
    assert_contains(d->desc.description, "not NUMA-bound");
    assert_int_equal(hwloc_bitmap_weight(dev->nodeset), 1);
    assert_true(hwloc_bitmap_isset(dev->nodeset, (unsigned)i));
    check_allocator(cpu_type(rt), d->desc.state);
  }
  wf_runtime_free(rt);
  wf_status_free(st);
}

/* Splitting three ways on 8 cores: sizes 2, 3, 3; a device may straddle
 * packages and NUMA nodes, and caches it shares with another device are
 * marked as shared. */
static void test_cpu_devices_env_splits_unevenly_and_marks_shared_caches(
    void **state) {
  wf_status *st = wf_status_new();
  wf_runtime *rt;
  static const int sizes[] = {2, 3, 3};

  setenv("HWLOC_SYNTHETIC", SYNTHETIC_2NUMA, 1);
  setenv(WF_CPU_DEVICES_ENV, "3", 1);
  rt = cpu_runtime(st);
  if (!rt)
    fail_msg("wf_runtime_new: %s", wf_status_message(st));
  assert_int_equal(wf_runtime_device_count(rt), 3);
  for (int i = 0; i < 3; i++) {
    const cpudev *dev = cpu_device(rt, i)->desc.state;
    assert_int_equal(dev->num_units, sizes[i]);
    assert_int_equal(hwloc_bitmap_weight(dev->cpuset), 2 * sizes[i]);
  }
  /* cpu:1 has cores 2-4: the end of package 0 and the start of package 1. */
  assert_contains(cpu_device(rt, 1)->desc.description,
                  "3 cores of 8 (logical cores 2-4)");
  assert_contains(cpu_device(rt, 1)->desc.description,
                  "NUMA nodes 0-1: 1 GiB each (2 on the machine)");
  assert_contains(cpu_device(rt, 1)->desc.description,
                  "CPU model unknown, 2 packages\n");
  assert_contains(cpu_device(rt, 1)->desc.description,
                  "caches: L1d 3 x 32 KiB, L2 3 x 1 MiB, "
                  "L3 2 x 16 MiB (shared with other devices)\n");
  /* cpu:0 (cores 0-1) shares package 0's L3 with cpu:1; cpu:2 (cores 5-7)
   * shares package 1's. */
  assert_contains(cpu_device(rt, 0)->desc.description,
                  "L3 1 x 16 MiB (shared with other devices)");
  assert_contains(cpu_device(rt, 2)->desc.description,
                  "L3 1 x 16 MiB (shared with other devices)");
  wf_runtime_free(rt);
  wf_status_free(st);
}

/* With HWLOC_THISSYSTEM=1 the invented machine is taken as this one, so
 * the plugin binds memory: node 0 exists here and binding to it works;
 * node 1 does not, so cpu:1 must fall back to plain memory (and stop
 * trying) while its allocations still succeed. */
static void test_cpu_alloc_binds_to_numa_node_and_falls_back(void **state) {
  wf_status *st = wf_status_new();
  wf_runtime *rt;
  const wf__device_type *t;
  const cpudev *dev0, *dev1;
  void *p;

  setenv("HWLOC_SYNTHETIC", SYNTHETIC_2NUMA, 1);
  setenv("HWLOC_THISSYSTEM", "1", 1);
  setenv(WF_CPU_DEVICES_ENV, "2", 1);
  rt = cpu_runtime(st);
  if (!rt)
    fail_msg("wf_runtime_new: %s", wf_status_message(st));
  t = cpu_type(rt);
  dev0 = cpu_device(rt, 0)->desc.state;
  dev1 = cpu_device(rt, 1)->desc.state;
  if (!dev0->plugin->can_bind) {
    wf_runtime_free(rt);
    wf_status_free(st);
    skip(); /* hwloc has no memory binding on this system */
  }
  assert_contains(cpu_device(rt, 0)->desc.description,
                  "bound to NUMA node 0");

  p = t->def.alloc((void *)dev0, 1u << 20, 0);
  assert_non_null(p);
  if (atomic_load(&dev0->bind)) {
    /* The kernel says where the pages must live. */
    hwloc_bitmap_t where = hwloc_bitmap_alloc();
    hwloc_membind_policy_t policy;
    memset(p, 1, 1u << 20);
    assert_int_equal(hwloc_get_area_membind(dev0->plugin->topo, p, 1u << 20,
                                            where, &policy,
                                            HWLOC_MEMBIND_BYNODESET),
                     0);
    assert_int_equal(policy, HWLOC_MEMBIND_BIND);
    assert_true(hwloc_bitmap_isequal(where, dev0->nodeset));
    hwloc_bitmap_free(where);
  }
  t->def.free((void *)dev0, p, 1u << 20);

  /* Node 1 is invented: binding fails, memory still comes. */
  check_allocator(t, (void *)dev1);
  assert_false(atomic_load(&dev1->bind));
  check_allocator(t, (void *)dev1);

  wf_runtime_free(rt);
  wf_status_free(st);
}

/* Failing each host allocation in turn (the plugin's state and device
 * sets come from the host allocator) never crashes or leaks: a strict
 * runtime either comes up whole or fails with a message. */
static void test_cpu_plugin_survives_each_allocation_failure(void **state) {
  wf_status *st = wf_status_new();
  wf_config *cfg = wf_config_new();
  int fired = 0;

  assert_non_null(cfg);
  assert_int_equal(wf_config_set(cfg, "plugins", "paths", CPU_PLUGIN_DIR, st),
                   WF_OK);
  assert_int_equal(wf_config_set(cfg, "plugins", "strict", "true", st), WF_OK);
  assert_int_equal(
      wf_config_set(cfg, "plugins", "use_default_dir", "false", st), WF_OK);
  assert_int_equal(wf_config_set(cfg, "plugins", "use_env_path", "false", st),
                   WF_OK);
  setenv(WF_CPU_DEVICES_ENV, hwloc_count(HWLOC_OBJ_CORE) >= 2 ? "2" : "1", 1);
  for (long n = 1; n < 100000; n++) {
    long before = wf__alloc_count();
    wf_runtime *rt;

    wf_status_reset(st);
    wf__alloc_fail_after(n, 0);
    rt = wf_runtime_new(cfg, st);
    wf__alloc_fail_after(0, 0);
    if (rt) {
      assert_true(wf_runtime_device_count(rt) >= 1);
      wf_runtime_free(rt);
      if (wf__alloc_count() - before < n)
        break; /* the n-th allocation never came: every one was tried */
      continue;
    }
    fired++;
    assert_int_not_equal(wf_status_code(st), WF_OK);
    assert_true(strlen(wf_status_message(st)) > 0);
  }
  assert_true(fired > 0);
  wf_config_free(cfg);
  wf_status_free(st);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(
          test_cpu_plugin_lists_cpu0_with_cores_and_caches, setup, teardown),
      cmocka_unit_test_setup_teardown(test_cpu_alloc_is_aligned_and_usable,
                                      setup, teardown),
      cmocka_unit_test_setup_teardown(
          test_cpu_alloc_is_safe_from_several_threads, setup, teardown),
      cmocka_unit_test_setup_teardown(
          test_cpu_devices_env_splits_cores_into_disjoint_devices, setup,
          teardown),
      cmocka_unit_test_setup_teardown(
          test_cpu_devices_env_refuses_more_devices_than_cores, setup,
          teardown),
      cmocka_unit_test_setup_teardown(
          test_cpu_devices_env_refuses_what_is_not_a_count, setup, teardown),
      cmocka_unit_test_setup_teardown(
          test_cpu_describes_numa_nodes_of_a_two_node_machine, setup,
          teardown),
      cmocka_unit_test_setup_teardown(
          test_cpu_devices_env_splits_unevenly_and_marks_shared_caches, setup,
          teardown),
      cmocka_unit_test_setup_teardown(
          test_cpu_alloc_binds_to_numa_node_and_falls_back, setup, teardown),
      cmocka_unit_test_setup_teardown(
          test_cpu_plugin_survives_each_allocation_failure, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
