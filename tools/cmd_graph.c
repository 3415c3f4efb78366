/* tools/cmd_graph.c — (being written) */
#include <config.h>

#include <stdio.h>

#include "commands.h"

const char weft_graph_summary[] = "(being written)";
const char weft_graph_help[] = "(being written)\n";

int weft_cmd_graph(int argc, char **argv, const char *config) {
  (void)argc;
  (void)argv;
  (void)config;
  fprintf(stderr, "weft graph: not built yet\n");
  return 1;
}
