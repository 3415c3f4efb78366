/* tools/cmd_devices.c — `weft devices`: the device instances the device plugins
 * found, in the config's order, or why each is unavailable. Options come parsed
 * from tools/weft.c (tools/inspect.h). */
#include <config.h>

#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include <weft/weft.h>

#include "inspect.h"

static int cmd_devices(wf_runtime *rt, const opts *o) {
  int n = wf_runtime_device_count(rt);
  if (o->json) {
    json_t *arr = json_array();
    for (int i = 0; arr && i < n; i++) {
      wf_device_info d;
      wf_runtime_device_get(rt, i, &d);
      json_array_append_new(
          arr, json_pack("{s:s, s:s, s:s, s:b, s:o, s:s}", "name", d.name,
                         "type", d.type, "plugin", d.plugin, "available",
                         d.available, "reason", weft_json_str_or_null(d.reason),
                         "description", d.description ? d.description : ""));
    }
    return weft_emit_json(arr);
  }
  if (n == 0)
    printf("no devices (no device plugin loaded; see `weft plugins`)\n");
  for (int i = 0; i < n; i++) {
    wf_device_info d;
    wf_runtime_device_get(rt, i, &d);
    if (d.available)
      printf("%s  (plugin %s)\n", d.name, d.plugin);
    else
      printf("%s: unavailable (%s)  (plugin %s)\n", d.name,
             d.reason ? d.reason : "no reason given", d.plugin);
    if (d.description && d.description[0]) {
      /* Indent every line of the description. */
      const char *s = d.description;
      while (*s) {
        const char *e = strchr(s, '\n');
        size_t len = e ? (size_t)(e - s) : strlen(s);
        printf("  %.*s\n", (int)len, s);
        s += len + (e ? 1 : 0);
      }
    }
  }
  return 0;
}

const weft_inspect_command weft_devices_command = {
    "devices", cmd_devices, 1, "list devices and their topology",
    "usage: weft devices [--json] [--config FILE]\n\n"
    "Lists every device instance the device plugins found, in the\n"
    "config's preference order, with a description of its hardware, or\n"
    "why it is unavailable.\n"};
