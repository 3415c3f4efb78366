/* tools/cmd_plugins.c — `weft plugins`: every plugin file found, loaded,
 * refused or denied and why, and what each registered. Options come parsed from
 * tools/weft.c (tools/inspect.h). */
#include <config.h>

#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include <weft/weft.h>

#include "inspect.h"

static const char *state_name(wf_plugin_state s) {
  switch (s) {
  case WF_PLUGIN_LOADED:
    return "loaded";
  case WF_PLUGIN_REFUSED:
    return "refused";
  case WF_PLUGIN_DENIED:
    return "denied";
  }
  return "?";
}

/* After the list, on stderr: every plugin refused for a reason other than
 * being shadowed by a plugin of its name (a clash of op definitions, a
 * failed init, a bad ABI...), so that a refusal is not lost among the
 * entries. (With [plugins] strict = true such a refusal already failed the
 * runtime, and weft exited non-zero.) */
static void refusals_summary(wf_runtime *rt) {
  int n = wf_runtime_plugin_count(rt), refused = 0;
  /* The list goes out first: with both streams in one file, a buffered
   * list would otherwise be cut by the summary wherever its buffer was. */
  fflush(stdout);
  for (int i = 0; i < n; i++) {
    wf_plugin_info p = WF_PLUGIN_INFO_INIT;
    wf_runtime_plugin_get(rt, i, &p);
    if (p.state != WF_PLUGIN_REFUSED ||
        (p.reason && strstr(p.reason, ": shadowed by ")))
      continue;
    if (refused++ == 0)
      fprintf(stderr, "\nweft: WARNING: plugins were refused (their ops, "
                      "kernels and readers are not available):\n");
    fprintf(stderr, "  %s (%s): %s\n", p.name, p.path,
            p.reason ? p.reason : "(no reason)");
  }
}

static int cmd_plugins(wf_runtime *rt, const opts *o) {
  int n = wf_runtime_plugin_count(rt);
  if (o->json) {
    json_t *arr = json_array();
    for (int i = 0; arr && i < n; i++) {
      wf_plugin_info p = WF_PLUGIN_INFO_INIT;
      wf_runtime_plugin_get(rt, i, &p);
      json_t *req = json_array();
      for (int r = 0; req && p.requires && p.requires[r]; r++)
        json_array_append_new(req, json_string(p.requires[r]));
      json_t *abi =
          p.abi_major < 0
              ? json_null()
              : json_pack("{s:i, s:i, s:b}", "major", p.abi_major, "minor",
                          p.abi_minor, "capped", p.abi_capped);
      json_t *reg = json_pack(
          "{s:i, s:i, s:i, s:i, s:i, s:i, s:i, s:i}", "ops", p.num_ops,
          "kernels", p.num_kernels, "gradients", p.num_gradients, "devices",
          p.num_devices, "readers", p.num_readers, "passes", p.num_passes,
          "transports", p.num_transports, "importers", p.num_importers);
      json_array_append_new(
          arr,
          json_pack("{s:s, s:s, s:o, s:o, s:o, s:o, s:o, s:s, s:o, "
                    "s:o, s:o}",
                    "name", p.name, "path", p.path, "version",
                    weft_json_str_or_null(p.version), "license",
                    weft_json_str_or_null(p.license), "description",
                    weft_json_str_or_null(p.description), "abi", abi,
                    "requires", req, "state", state_name(p.state), "reason",
                    weft_json_str_or_null(p.reason), "registers", reg, "loaded",
                    json_boolean(p.state == WF_PLUGIN_LOADED)));
    }
    return weft_emit_json(arr);
  }
  if (n == 0) {
    printf("no plugins found (search order: config [plugins] paths, "
           "$WEFT_PLUGIN_PATH, %s)\n",
           wf_config_plugin_dir());
    return 0;
  }
  for (int i = 0; i < n; i++) {
    wf_plugin_info p = WF_PLUGIN_INFO_INIT;
    wf_runtime_plugin_get(rt, i, &p);
    printf("%s %s\n", p.name, p.version ? p.version : "");
    printf("  path:     %s\n", p.path);
    if (p.abi_major >= 0)
      printf("  abi:      %d.%d%s\n", p.abi_major, p.abi_minor,
             p.abi_capped ? " (newer than this weft: capped to "
                            "its minor)"
                          : "");
    if (p.license)
      printf("  license:  %s\n", p.license);
    if (p.description)
      printf("  about:    %s\n", p.description);
    if (p.requires && p.requires[0]) {
      printf("  requires:");
      for (int r = 0; p.requires[r]; r++)
        printf(" %s", p.requires[r]);
      printf("\n");
    }
    printf("  state:    %s%s%s\n", state_name(p.state), p.reason ? ": " : "",
           p.reason ? p.reason : "");
    if (p.state == WF_PLUGIN_LOADED)
      printf("  registers: %d ops, %d kernels, %d gradients, %d device "
             "types, %d readers, %d passes, %d transports, %d importers\n",
             p.num_ops, p.num_kernels, p.num_gradients, p.num_devices,
             p.num_readers, p.num_passes, p.num_transports, p.num_importers);
  }
  refusals_summary(rt);
  return 0;
}

const weft_inspect_command weft_plugins_command = {
    "plugins", cmd_plugins, 1,
    "list every plugin found, loaded or refused, and why",
    "usage: weft plugins [--json] [--config FILE]\n\n"
    "Lists every plugin file found in the search order (config [plugins]\n"
    "paths, $WEFT_PLUGIN_PATH, the installed plugin directory): its path,\n"
    "version, ABI, whether it was loaded, refused or denied and why, and\n"
    "what it registered.\n"};
