/* tests/fuzz/fuzz_fixed.c — fuzz target for the fixed-record reader. The
 * first input byte picks the options: bit 0 byte_order = big, bit 1
 * partial = report, bits 2-3 the layout (two fixed ones, a padded one, or
 * a fields string taken from the input up to its first line feed), bits
 * 4-7 header_bytes. The rest of the input is the file. */
#include <config.h>

#include "fuzz_common.h"

const wf_plugin_desc *reader_fixed_LTX_weft_plugin(void);
int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc, (void)argv;
  fuzz_setup(reader_fixed_LTX_weft_plugin());
  return 0;
}

#define STR(nm, v)                                                             \
  (wf_attr_item) {                                                             \
    .name = (nm), .value = {.type = WF_ATTR_STRING, .count = 1, .u.s = (v) }   \
  }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const char *const layouts[] = {"a:uint8:3x2,b:int32",
                                        "h:float16:5,d:float64,c:int8",
                                        "x:bool,y:bfloat16:2"};
  wf_attr_item opts[5];
  char fields[256];
  int32_t n = 0;
  uint8_t mode;

  if (size < 1)
    return 0;
  mode = data[0];
  data++;
  size--;
  opts[n++] = STR("byte_order", (mode & 1) ? "big" : "little");
  opts[n++] = STR("partial", (mode & 2) ? "report" : "error");
  opts[n++] = (wf_attr_item){
      .name = "header_bytes",
      .value = {.type = WF_ATTR_INT, .count = 1, .u.i = mode >> 4}};
  if (((mode >> 2) & 3) == 3) {
    const uint8_t *nl = memchr(data, '\n', size < 255 ? size : 255);
    size_t len = nl ? (size_t)(nl - data) : 0;
    if (!nl || memchr(data, 0, len))
      return 0;
    memcpy(fields, data, len);
    fields[len] = 0;
    data += len + 1;
    size -= len + 1;
    opts[n++] = STR("fields", fields);
  } else {
    opts[n++] = STR("fields", layouts[(mode >> 2) & 3]);
    if (((mode >> 2) & 3) == 2)
      opts[n++] = (wf_attr_item){
          .name = "record_bytes",
          .value = {.type = WF_ATTR_INT, .count = 1, .u.i = 7}};
  }
  fuzz_write(fuzz_path("in.bin", 0), data, size);
  fuzz_read_file(fuzz_path("in.bin", 0), opts, n);
  return 0;
}
