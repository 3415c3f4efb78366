/* tools/cmd_import.c — `weft import`: a model file of another framework,
 * read by an importer plugin, written as a saved model that `weft run`
 * takes. It converts only; nothing is trained or run but the weights'
 * initial assignments. */
#include <config.h>

#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "commands.h"

const char weft_import_summary[] =
    "turn a model file of another framework into a saved model";
const char weft_import_help[] =
    "usage: weft import FILE --output DIR [--format NAME]\n\n"
    "Reads the model in FILE with an importer plugin — the one --format\n"
    "names, else the one whose extensions match FILE's name, else the first\n"
    "that recognises the file's first bytes — and writes it into DIR as a\n"
    "saved model with its weights and signatures (DIR is replaced\n"
    "atomically). Then: weft run DIR --show. Prints the signatures.\n\n"
    "  --output DIR       the saved model to write\n"
    "  --format NAME      the importer (weft plugins lists them)\n"
    "  --config FILE      the runtime's config (before `import`)\n";

int weft_cmd_import(int argc, char **argv, const char *config) {
  const char *output = NULL, *format = NULL;
  static const struct option longopts[] = {
      {"output", required_argument, NULL, 'o'},
      {"format", required_argument, NULL, 'f'},
      {NULL, 0, NULL, 0}};
  int c;
  optind = 1;
  while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
    switch (c) {
    case 'o': output = optarg; break;
    case 'f': format = optarg; break;
    default:
      fputs(weft_import_help, stderr);
      return 2;
    }
  }
  if (optind + 1 != argc || !output) {
    fprintf(stderr, "weft import: give one FILE and --output DIR (see weft "
                    "import --help)\n");
    return 2;
  }
  const char *file = argv[optind];
  wf_runtime *rt = weft_open_runtime(config);
  if (!rt)
    return 1;
  wf_status *st = wf_status_new();
  int rc = 0;
  if (!st) {
    fprintf(stderr, "weft import: out of memory\n");
    rc = 1;
  } else if (wf_import_saved_model(rt, file, format, output, st)) {
    fprintf(stderr, "weft import: %s\n", wf_status_message(st));
    rc = 1;
  } else {
    printf("imported %s into %s\n", file, output);
  }
  wf_status_free(st);
  wf_runtime_free(rt);
  return rc;
}
