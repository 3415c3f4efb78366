/* tests/fuzz/fuzz_checkpoint.c — fuzz target for checkpoint files
 * (core/io/safetensors.c through weft/checkpoint.h). The first input byte
 * picks a mode; the rest is
 *   bit 0 clear: the whole file;
 *   bit 0 set:   the header's JSON text only: the target puts its 8-byte
 *                length in front and (mode >> 1) bytes of data after it,
 *                so that mutations explore the JSON rather than the
 *                length field.
 *
 * Each file is opened, listed (tensors and metadata), every tensor read,
 * verified, found (or not) by wf_checkpoint_latest as the only checkpoint
 * of a directory, and restored (partially) into a session with two
 * variables. Beyond crashes and sanitizer reports it checks the API's
 * contracts: an error sets a code and a message naming the file, listings
 * are sorted and agree with the look-ups, a tensor read has its declared
 * size, and verify succeeds exactly when opening and every read do. */
#include <config.h>

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <weft/weft.h>

#include "exec/executor.h"
#include "host/host.h"
#include "plugin/runtime_internal.h"
#include "exec/session_internal.h"
#include "exec/variables.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(c)                                                               \
  do {                                                                         \
    if (!(c)) {                                                                \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #c);    \
      abort();                                                                 \
    }                                                                          \
  } while (0)

static char dir[256], file[320];
static wf_runtime *rt;
static wf_graph *graph;
static wf_session *session;

static void cleanup(void) {
  DIR *d = opendir(dir);
  struct dirent *e;
  char path[600];

  wf_session_free(session);
  wf_graph_free(graph);
  wf_runtime_free(rt);
  if (!d)
    return;
  while ((e = readdir(d)) != NULL)
    if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) {
      snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
      unlink(path);
    }
  closedir(d);
  rmdir(dir);
}

/* A session (no plugins, no threads) with variables "a" float32 (2) and
 * "b" int64 (), for restores. */
int LLVMFuzzerInitialize(int *argc, char ***argv) {
  wf_status *st = wf_status_new();
  wf_config *cfg = wf_config_new();
  const char *tmp = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
  wf_shape a = {.rank = 1, .dims = {2}}, b = {.rank = 0};
  (void)argc, (void)argv;

  if (getenv("TMPDIR") && *getenv("TMPDIR"))
    tmp = getenv("TMPDIR");
  setenv("WEFT_LOG_LEVEL", "error", 0);
  if (!st || !cfg || wf_config_set(cfg, "threads", "inter_op", "1", st) ||
      !(rt = wf__runtime_new_empty(cfg, st)) || !(graph = wf_graph_new(rt)) ||
      !(session = wf_session_new(graph, st)) ||
      !wf__varstore_get(wf__session_state_of(session)->vars, "a", WF_FLOAT32,
                        &a, st) ||
      !wf__varstore_get(wf__session_state_of(session)->vars, "b", WF_INT64, &b,
                        st)) {
    fprintf(stderr, "fuzz: cannot make the session: %s\n",
            st ? wf_status_message(st) : "out of memory");
    abort();
  }
  wf_config_free(cfg);
  wf_status_free(st);
  snprintf(dir, sizeof dir, "%s/weft-fuzz-ckpt-%ld", tmp, (long)getpid());
  if (mkdir(dir, 0700) != 0 && access(dir, W_OK) != 0) {
    perror(dir);
    abort();
  }
  snprintf(file, sizeof file, "%s/ckpt-0000000001.safetensors", dir);
  atexit(cleanup);
  return 0;
}

static void write_file(const uint8_t *data, size_t size, int json_only,
                       size_t ndata) {
  FILE *f = fopen(file, "wb");
  unsigned char len8[8];
  CHECK(f != NULL);
  if (json_only) {
    for (int i = 0; i < 8; i++)
      len8[i] = (unsigned char)((uint64_t)size >> (8 * i));
    CHECK(fwrite(len8, 1, 8, f) == 8);
  }
  CHECK(size == 0 || fwrite(data, 1, size, f) == size);
  for (size_t i = 0; i < ndata; i++)
    CHECK(fputc((int)(i * 7 + 1) & 0xff, f) != EOF);
  CHECK(fclose(f) == 0);
}

/* An error: a code, and a message naming the file. */
static void check_error(int rc, const wf_status *st) {
  CHECK(rc != WF_OK);
  CHECK((int)wf_status_code(st) == rc);
  CHECK(strstr(wf_status_message(st), file) != NULL);
}

/* Opens, lists and reads; returns 1 when the file and every tensor are
 * whole, 0 otherwise (and the code of opening in *open_rc). */
static int exercise(wf_status *st, int *open_rc) {
  wf_checkpoint *c = wf_checkpoint_open(file, st);
  int whole = 1;

  *open_rc = c ? WF_OK : (int)wf_status_code(st);
  if (!c) {
    check_error(*open_rc, st);
    return 0;
  }
  CHECK(strcmp(wf_checkpoint_file(c), file) == 0);
  int n = wf_checkpoint_num_tensors(c);
  CHECK(n >= 0);
  for (int i = 0; i < n; i++) {
    const char *name = wf_checkpoint_tensor_name(c, i);
    wf_shape s;
    CHECK(name && *name);
    CHECK(wf_checkpoint_find(c, name) == i);
    CHECK(i == 0 || strcmp(wf_checkpoint_tensor_name(c, i - 1), name) < 0);
    CHECK(wf_dtype_size(wf_checkpoint_tensor_dtype(c, i)) > 0);
    wf_checkpoint_tensor_shape(c, i, &s);
    CHECK(s.rank >= 0 && s.rank <= WF_MAX_RANK);
    for (int k = 0; k < s.rank; k++)
      CHECK(s.dims[k] >= 0);
    wf_tensor *t = wf_checkpoint_read(c, i, st);
    if (!t) {
      check_error((int)wf_status_code(st), st);
      CHECK(strstr(wf_status_message(st), name) != NULL);
      whole = 0;
      continue;
    }
    CHECK(wf_tensor_dtype(t) == wf_checkpoint_tensor_dtype(c, i));
    CHECK(wf_tensor_count(t) == wf_shape_count(&s));
    /* Touch every byte, so a short buffer shows under ASan. */
    volatile unsigned char sink = 0;
    const unsigned char *p = wf_tensor_data(t);
    for (size_t k = 0; k < wf_tensor_nbytes(t); k++)
      sink ^= p[k];
    (void)sink;
    wf_tensor_release(t);
  }
  CHECK(wf_checkpoint_find(c, "") == -1);
  int nmeta = wf_checkpoint_num_metadata(c);
  for (int i = 0; i < nmeta; i++) {
    const char *key = wf_checkpoint_metadata_key(c, i);
    const char *value = wf_checkpoint_metadata_value(c, i);
    CHECK(key && value);
    CHECK(i == 0 || strcmp(wf_checkpoint_metadata_key(c, i - 1), key) < 0);
    CHECK(wf_checkpoint_metadata(c, key) == value);
  }
  wf_checkpoint_close(c);
  return whole;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  wf_status *st = wf_status_new();
  wf_restore_options ro = WF_RESTORE_OPTIONS_INIT;
  char latest[400];
  int open_rc, whole, rc;

  CHECK(st != NULL);
  if (size < 1)
    goto out;
  write_file(data + 1, size - 1, data[0] & 1, (data[0] & 1) ? data[0] >> 1 : 0);

  whole = exercise(st, &open_rc);
  rc = wf_checkpoint_verify(file, st);
  if (whole)
    CHECK(rc == WF_OK);
  else
    check_error(rc, st);
  if (open_rc != WF_OK)
    CHECK(rc == open_rc);

  rc = wf_checkpoint_latest(dir, latest, sizeof latest, st);
  if (whole)
    CHECK(rc == WF_OK && strcmp(latest, file) == 0);
  else
    CHECK(rc == WF_NOT_FOUND && strstr(wf_status_message(st), dir));

  ro.partial = 1;
  rc = wf_session_restore(session, file, &ro, st);
  if (rc != WF_OK)
    check_error(rc, st);
out:
  wf_status_free(st);
  return 0;
}
