/* tests/fuzz/fuzz_idx.c — fuzz target for the idx reader. The first input
 * byte picks a mode: bit 0 gzips the images file before writing it (so the
 * parser behind inflate sees arbitrary bytes too), bit 1 pairs it with a
 * labels file (the next two bytes say where the input splits), bit 2
 * gzips the labels file. The rest of the input is the file(s); corrupt
 * gzip comes from inputs that are gzip already with bits 0 and 2 clear. */
#include <config.h>

#include <zlib.h>

#include "fuzz_common.h"

const wf_plugin_desc *reader_idx_LTX_weft_plugin(void);
int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc, (void)argv;
  fuzz_setup(reader_idx_LTX_weft_plugin());
  return 0;
}

/* Writes data[0..n) to path, gzip-compressed when gz. */
static void write_maybe_gz(const char *path, const uint8_t *data, size_t n,
                           int gz) {
  z_stream z;
  size_t cap;
  unsigned char *out;

  if (!gz) {
    fuzz_write(path, data, n);
    return;
  }
  memset(&z, 0, sizeof z);
  cap = compressBound((uLong)n) + 64;
  if (!(out = malloc(cap)) ||
      deflateInit2(&z, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY))
    abort();
  z.next_in = (unsigned char *)data;
  z.avail_in = (uInt)n;
  z.next_out = out;
  z.avail_out = (uInt)cap;
  if (deflate(&z, Z_FINISH) != Z_STREAM_END)
    abort();
  fuzz_write(path, out, cap - z.avail_out);
  deflateEnd(&z);
  free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const wf_attr_item label = {
      .name = "label_file",
      .value = {.type = WF_ATTR_STRING, .count = 1, .u.s = "labels.idx"}};
  uint8_t mode;
  size_t split;

  if (size < 1)
    return 0;
  mode = data[0];
  data++;
  size--;
  split = size;
  if (mode & 2) {
    if (size < 2)
      return 0;
    split = ((size_t)data[0] | (size_t)data[1] << 8) % (size - 1);
    data += 2;
    size -= 2;
    write_maybe_gz(fuzz_path("labels.idx", 1), data + split, size - split,
                   mode & 4);
  }
  write_maybe_gz(fuzz_path("images.idx", 0), data, split, mode & 1);
  fuzz_read_file(fuzz_path("images.idx", 0), &label, (mode & 2) ? 1 : 0);
  return 0;
}
