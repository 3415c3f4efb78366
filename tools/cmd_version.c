/* tools/cmd_version.c — `weft version`: libweft's version and the plugin ABI it
 * implements. Options come parsed from tools/weft.c (tools/inspect.h). */
#include <config.h>

#include <jansson.h>
#include <stdio.h>

#include <weft/weft.h>

#include "inspect.h"

static int cmd_version(wf_runtime *rt, const opts *o) {
  (void)rt;
  if (o->json) {
    return weft_emit_json(json_pack("{s:s, s:s, s:{s:i, s:i}}", "version",
                                    wf_version(), "headers", WF_VERSION_STRING,
                                    "plugin_abi", "major", WF_ABI_MAJOR,
                                    "minor", WF_ABI_MINOR));
  }
  printf("weft %s (plugin ABI %d.%d)\n", wf_version(), WF_ABI_MAJOR,
         WF_ABI_MINOR);
  return 0;
}

const weft_inspect_command weft_version_command = {
    "version", cmd_version, 0, "print the version of weft and its plugin ABI",
    "usage: weft version [--json]\n\n"
    "Prints libweft's version and the plugin ABI version it implements.\n"};
