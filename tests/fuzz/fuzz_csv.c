/* tests/fuzz/fuzz_csv.c — fuzz target for the csv reader. The first input
 * byte picks the options: bit 0 header, bits 1-2 the missing policy
 * (error, default, skip, default with defaults = "7"), bit 3 bad_rows =
 * skip, bits 4-5 the delimiter (, ; tab |), bits 6-7 the schema (two fixed
 * ones, every header column, or a columns string taken from the input up
 * to its first line feed). The rest of the input is the file. */
#include <config.h>

#include "fuzz_common.h"

const wf_plugin_desc *reader_csv_LTX_weft_plugin(void);
int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc, (void)argv;
  fuzz_setup(reader_csv_LTX_weft_plugin());
  return 0;
}

#define STR(nm, v)                                                             \
  (wf_attr_item) {                                                             \
    .name = (nm), .value = {.type = WF_ATTR_STRING, .count = 1, .u.s = (v) }   \
  }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const char *const missing[] = {"error", "default", "skip",
                                        "default"};
  static const char *const delims[] = {",", ";", "\\t", "|"};
  static const char *const schemas[] = {"a:int32,b:float32",
                                        "x:int8,skip,z:bool,w:uint8", NULL};
  wf_attr_item opts[6];
  char columns[256];
  int32_t n = 0;
  uint8_t mode;

  if (size < 1)
    return 0;
  mode = data[0];
  data++;
  size--;
  opts[n++] = (wf_attr_item){
      .name = "header",
      .value = {.type = WF_ATTR_BOOL, .count = 1, .u.b = (mode & 1) != 0}};
  opts[n++] = STR("missing", missing[(mode >> 1) & 3]);
  if (((mode >> 1) & 3) == 3)
    opts[n++] = STR("defaults", "7");
  opts[n++] = STR("bad_rows", (mode & 8) ? "skip" : "error");
  opts[n++] = STR("delimiter", delims[(mode >> 4) & 3]);
  if ((mode >> 6) == 3) {
    const uint8_t *nl = memchr(data, '\n', size < 255 ? size : 255);
    size_t len = nl ? (size_t)(nl - data) : 0;
    if (!nl || memchr(data, 0, len))
      return 0;
    memcpy(columns, data, len);
    columns[len] = 0;
    data += len + 1;
    size -= len + 1;
    opts[n++] = STR("columns", columns);
  } else if (schemas[mode >> 6 & 3]) {
    opts[n++] = STR("columns", schemas[(mode >> 6) & 3]);
  }
  fuzz_write(fuzz_path("in.csv", 0), data, size);
  fuzz_read_file(fuzz_path("in.csv", 0), opts, n);
  return 0;
}
