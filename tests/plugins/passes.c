/* tests/plugins/passes.c — graph passes from a plugin, for
 * tests/core/test_plugin_passes.c:
 *   double_neg (order 10)    Neg(Neg(x)) becomes x, through pass_match and
 *                            pass_replace;
 *   break_graph (order 20)   when a node is named "break_me", makes its
 *                            first input read its own output (a cycle the
 *                            core must refuse and undo);
 *   fail (order 30)          when a node is named "fail_me", adds a node
 *                            and then fails (the core must undo the node).
 * Each counts its runs in a file named by $WEFT_TEST_PASS_LOG, so the test
 * sees which ran. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <weft/plugin.h>

static const wf_host *host;

static void note(const char *what) {
  const char *path = getenv("WEFT_TEST_PASS_LOG");
  FILE *f = path ? fopen(path, "a") : NULL;
  if (!f)
    return;
  fprintf(f, "%s\n", what);
  fclose(f);
}

static wf_node *named(wf_pass_ctx *ctx, const char *name) {
  for (int32_t i = 0; i < host->pass_num_nodes(ctx); i++) {
    wf_node *n = host->pass_node(ctx, i);
    if (strcmp(host->node_name(n), name) == 0)
      return n;
  }
  return NULL;
}

static int double_neg(wf_pass_ctx *ctx, wf_status *st) {
  static const wf_pattern_node pattern[] = {
      {WF_STRUCT_INIT(wf_pattern_node), .op = "Neg", .parent = -1},
      {WF_STRUCT_INIT(wf_pattern_node), .op = "Neg", .parent = 0,
       .parent_input = 0, .single_use = 1},
  };
  note("double_neg");
  int32_t n = host->pass_num_nodes(ctx);
  for (int32_t i = 0; i < n; i++) {
    wf_node *m[2];
    if (!host->pass_match(ctx, host->pass_node(ctx, i), pattern, 2, m))
      continue;
    wf_output outer = {m[0], 0};
    if (host->pass_replace(ctx, outer, host->node_input(m[1], 0), st))
      return host->status_code(st);
  }
  return 0;
}

static int break_graph(wf_pass_ctx *ctx, wf_status *st) {
  note("break_graph");
  wf_node *n = named(ctx, "break_me");
  if (!n || host->node_num_inputs(n) < 1)
    return 0;
  return host->pass_set_input(ctx, n, 0, (wf_output){n, 0}, st);
}

static int fail(wf_pass_ctx *ctx, wf_status *st) {
  note("fail");
  wf_node *n = named(ctx, "fail_me");
  if (!n)
    return 0;
  wf_output in = {n, 0};
  if (!host->pass_add_node(ctx, "Neg", "fail_added", NULL, &in, 1, NULL, 0,
                           st))
    return host->status_code(st);
  host->status_set(st, WF_INTERNAL, "gave up after adding a node");
  return WF_INTERNAL;
}

static const wf_pass_def pass_double_neg = {
    WF_STRUCT_INIT(wf_pass_def), .name = "double_neg",
    .doc = "Neg(Neg(x)) -> x", .order = 10, .run = double_neg};
static const wf_pass_def pass_break = {
    WF_STRUCT_INIT(wf_pass_def), .name = "break_graph",
    .doc = "makes a cycle at a node named break_me", .order = 20,
    .run = break_graph};
static const wf_pass_def pass_fail = {
    WF_STRUCT_INIT(wf_pass_def), .name = "fail",
    .doc = "fails at a node named fail_me", .order = 30, .run = fail};
static const wf_pass_def *const passes[] = {&pass_double_neg, &pass_break,
                                            &pass_fail, NULL};

static int init(const wf_host *h, void **state, wf_status *st) {
  (void)state;
  if (!WF_STRUCT_HAS(h, wf_host, pass_remove_control_edge)) {
    h->status_set(st, WF_FAILED_PRECONDITION,
                  "needs a host of plugin ABI 1.3 or later");
    return WF_FAILED_PRECONDITION;
  }
  host = h;
  return 0;
}

static const wf_plugin_desc desc = {
    WF_STRUCT_INIT(wf_plugin_desc), .name = "test-passes",
    .version = "1.0", .passes = passes, .init = init};

WF_PLUGIN(passes, desc)
