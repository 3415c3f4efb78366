/* tests/fuzz/fuzz_npy.c — fuzz target for .npy files (core/io/npy.c). The
 * input is the file. It is parsed from memory (wf_npy_parse) and read from a
 * scratch file (wf_npy_read, which checks the size before allocating and
 * reads the data straight into the tensor); the two must agree: both fail
 * with the same code, or both give the same tensor. An accepted input is
 * written back (wf_npy_to_buffer), which must parse to the same tensor and
 * write back to the same bytes again.
 *
 * Beyond crashes and sanitizer reports, a finding is a disagreement, a lost
 * value, or an error without a message naming its source. */
#include <config.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <weft/npy.h>
#include <weft/status.h>
#include <weft/tensor.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(c)                                                               \
  do {                                                                         \
    if (!(c)) {                                                                \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #c);    \
      abort();                                                                 \
    }                                                                          \
  } while (0)

static char scratch_dir[256];
static char scratch_file[300];

static void cleanup(void) {
  unlink(scratch_file);
  rmdir(scratch_dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  const char *tmp = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";

  (void)argc, (void)argv;
  if (getenv("TMPDIR") && *getenv("TMPDIR"))
    tmp = getenv("TMPDIR");
  snprintf(scratch_dir, sizeof scratch_dir, "%s/weft-fuzz-npy-%ld", tmp,
           (long)getpid());
  snprintf(scratch_file, sizeof scratch_file, "%s/input.npy", scratch_dir);
  if (mkdir(scratch_dir, 0700) != 0 && access(scratch_dir, W_OK) != 0) {
    perror(scratch_dir);
    abort();
  }
  atexit(cleanup);
  return 0;
}

/* An error must carry a message that names where it came from. */
static void check_error(const wf_status *st, const char *what) {
  const char *msg = wf_status_message(st);
  if (wf_status_code(st) == WF_OK || strstr(msg, what) != msg) {
    fprintf(stderr, "fuzz: error %s \"%s\" does not start with \"%s\"\n",
            wf_code_name(wf_status_code(st)), msg, what);
    abort();
  }
}

static void check_same(const wf_tensor *a, const wf_tensor *b) {
  wf_shape sa, sb;

  CHECK(wf_tensor_dtype(a) == wf_tensor_dtype(b));
  wf_tensor_shape(a, &sa);
  wf_tensor_shape(b, &sb);
  CHECK(wf_shape_equal(&sa, &sb));
  CHECK(wf_tensor_nbytes(a) == wf_tensor_nbytes(b));
  CHECK(wf_tensor_nbytes(a) == 0 ||
        memcmp(wf_tensor_data(a), wf_tensor_data(b), wf_tensor_nbytes(a)) ==
            0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  wf_status *st = wf_status_new(), *fst = wf_status_new();
  wf_tensor *t, *f, *again = NULL;
  void *buf = NULL, *buf2 = NULL;
  size_t len = 0, len2 = 0;
  FILE *out;

  CHECK(st && fst);
  t = wf_npy_parse(data, size, "fuzz input", st);
  if (!t)
    check_error(st, "fuzz input: ");

  out = fopen(scratch_file, "wb");
  CHECK(out && (size == 0 || fwrite(data, 1, size, out) == size) &&
        fclose(out) == 0);
  f = wf_npy_read(scratch_file, fst);
  if (!f)
    check_error(fst, scratch_file);
  CHECK(!t == !f);
  if (!t) {
    CHECK(wf_status_code(st) == wf_status_code(fst));
    goto done;
  }
  check_same(t, f);

  if (wf_tensor_dtype(t) == WF_BOOL)
    for (size_t i = 0; i < wf_tensor_nbytes(t); i++)
      CHECK(((const uint8_t *)wf_tensor_data(t))[i] <= 1);
  CHECK(wf_npy_to_buffer(t, &buf, &len, st) == WF_OK);
  /* the header pads the data to 64 bytes (text is written fixed-width,
   * not as the string tensor's buffer) */
  CHECK(wf_tensor_dtype(t) == WF_STRING ||
        len % 64 == wf_tensor_nbytes(t) % 64);
  again = wf_npy_parse(buf, len, "written back", st);
  CHECK(again);
  check_same(t, again);
  CHECK(wf_npy_to_buffer(again, &buf2, &len2, st) == WF_OK);
  CHECK(len2 == len && memcmp(buf, buf2, len) == 0);

done:
  free(buf);
  free(buf2);
  wf_tensor_release(again);
  wf_tensor_release(f);
  wf_tensor_release(t);
  wf_status_free(fst);
  wf_status_free(st);
  return 0;
}
