/* tools/cmd_run.c — (being written) */
#include <config.h>

#include <stdio.h>

#include "commands.h"

const char weft_run_summary[] = "(being written)";
const char weft_run_help[] = "(being written)\n";

int weft_cmd_run(int argc, char **argv, const char *config) {
  (void)argc;
  (void)argv;
  (void)config;
  fprintf(stderr, "weft run: not built yet\n");
  return 1;
}
