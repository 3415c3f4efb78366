/* tools/cmd_ckpt.c — (being written) */
#include <config.h>

#include <stdio.h>

#include "commands.h"

const char weft_ckpt_summary[] = "(being written)";
const char weft_ckpt_help[] = "(being written)\n";

int weft_cmd_ckpt(int argc, char **argv, const char *config) {
  (void)argc;
  (void)argv;
  (void)config;
  fprintf(stderr, "weft ckpt: not built yet\n");
  return 1;
}
