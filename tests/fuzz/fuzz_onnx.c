/* tests/fuzz/fuzz_onnx.c — fuzz target for the ONNX importer
 * (plugins/importers/onnx, compiled in with WF_PLUGIN_STATIC): the input is
 * a model file, imported with wf_import into a runtime that holds the
 * build tree's op plugins (so nodes reach the real ops' shape functions)
 * and this target's copy of the importer instead of the installed one.
 * A model that imports is freed again; one that does not must be refused
 * with a status naming the file. Findings are crashes, sanitizer reports
 * and those contracts. The model never runs: a hostile file may ask for
 * any tensor size, which the importer need not refuse before running.
 *
 * Seeds: tests/fuzz/corpus/onnx/, written by tests/fuzz/seeds_onnx.py. */
#include <config.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <weft/weft.h>

#include "plugin/runtime_internal.h"

const wf_plugin_desc *importer_onnx_LTX_weft_plugin(void);
int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(c)                                                               \
  do {                                                                         \
    if (!(c)) {                                                                \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #c);    \
      abort();                                                                 \
    }                                                                          \
  } while (0)

static wf_runtime *fuzz_rt;
static char fuzz_dir[256], fuzz_model[300];

static void cleanup(void) {
  unlink(fuzz_model);
  rmdir(fuzz_dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc, (void)argv;
  wf_status *st = wf_status_new();
  wf_config *cfg = wf_config_new();
  const char *tmp = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
  setenv("WEFT_LOG_LEVEL", "error", 0);
  /* the build tree's plugins but its importer module: ours is compiled in */
  if (!cfg || wf_config_set(cfg, "plugins", "deny", "importer-onnx", st) ||
      !(fuzz_rt = wf_runtime_new(cfg, st)) ||
      wf__runtime_add_plugin(fuzz_rt, importer_onnx_LTX_weft_plugin(), NULL,
                             NULL, st)) {
    fprintf(stderr, "fuzz: cannot set up the runtime: %s\n",
            wf_status_message(st));
    abort();
  }
  wf_config_free(cfg);
  snprintf(fuzz_dir, sizeof fuzz_dir, "%s/weft-fuzz-onnx-%ld", tmp,
           (long)getpid());
  if (mkdir(fuzz_dir, 0700) != 0 && access(fuzz_dir, W_OK) != 0) {
    perror(fuzz_dir);
    abort();
  }
  snprintf(fuzz_model, sizeof fuzz_model, "%s/model.onnx", fuzz_dir);
  atexit(cleanup);
  wf_status_free(st);
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  wf_status *st = wf_status_new();
  FILE *f = fopen(fuzz_model, "wb");
  CHECK(st && f);
  CHECK(size == 0 || fwrite(data, 1, size, f) == size);
  CHECK(fclose(f) == 0);
  wf_imported *m = wf_import(fuzz_rt, fuzz_model, "onnx", st);
  if (m) {
    CHECK(wf_imported_num_signatures(m) >= 1);
    wf_imported_free(m);
  } else {
    CHECK(wf_status_code(st) != WF_OK);
    CHECK(strstr(wf_status_message(st), fuzz_model) != NULL);
  }
  wf_status_free(st);
  return 0;
}
