/* tests/fuzz/fuzz_common.h — what the reader fuzz targets share: a runtime
 * holding one reader plugin compiled into the target (WF_PLUGIN_STATIC,
 * registered through wf__runtime_add_plugin as a preloaded plugin would
 * be), scratch files for the fuzzer's bytes, and a driver that opens a
 * file and reads it to its end or first fatal error, exercising count,
 * tell and seek on the way. Findings are crashes and sanitizer reports;
 * the driver itself asserts only the reader ABI's contracts (a record
 * fills every field, an error sets a status with a message).
 *
 * Each target includes this once and defines LLVMFuzzerTestOneInput. The
 * same sources build a libFuzzer binary (`make fuzz`) and a replay program
 * (replay.c) that runs the seed corpus under `make check`. */
#ifndef WF_TESTS_FUZZ_COMMON_H
#define WF_TESTS_FUZZ_COMMON_H

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <weft/weft.h>

#include "plugin/registry.h"
#include "host/host.h"
#include "plugin/runtime_internal.h"

/* Records read per file at most: a tiny gzip file can hold millions. */
#define FUZZ_MAX_RECORDS 20000

/* A field struct as the core hands it to a reader: zeroed, header set. */
static inline void fuzz_field_init(wf_reader_field *f) {
  memset(f, 0, sizeof *f);
  f->struct_size = (uint32_t)sizeof *f;
  f->abi_major = WF_ABI_MAJOR;
  f->abi_minor = WF_ABI_MINOR;
}

static wf_runtime *fuzz_rt;
static const wf_reader_def *fuzz_reader;
static char fuzz_dir[256];

/* Removes the scratch directory and what is in it (at exit). */
static inline void fuzz_cleanup(void) {
  DIR *d = opendir(fuzz_dir);
  struct dirent *e;
  char path[800];

  if (!d)
    return;
  while ((e = readdir(d)) != NULL)
    if (e->d_name[0] != '.') {
      snprintf(path, sizeof path, "%s/%s", fuzz_dir, e->d_name);
      unlink(path);
    }
  closedir(d);
  rmdir(fuzz_dir);
}

/* Registers desc and finds its only reader; aborts on failure (the target
 * is broken, not the input). */
static inline void fuzz_setup(const wf_plugin_desc *desc) {
  wf_status *st = wf_status_new();
  const char *tmp = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";

  if (getenv("TMPDIR") && *getenv("TMPDIR"))
    tmp = getenv("TMPDIR");
  /* Skipped-row summaries on every input would flood the fuzzer's log. */
  setenv("WEFT_LOG_LEVEL", "error", 0);
  fuzz_rt = wf__runtime_new_empty(NULL, st);
  if (!fuzz_rt || wf__runtime_add_plugin(fuzz_rt, desc, NULL, NULL, st) ||
      wf__registry_reader_count(fuzz_rt->reg) != 1) {
    fprintf(stderr, "fuzz: cannot register the reader: %s\n",
            wf_status_message(st));
    abort();
  }
  fuzz_reader = &wf__registry_reader_at(fuzz_rt->reg, 0)->def;
  snprintf(fuzz_dir, sizeof fuzz_dir, "%s/weft-fuzz-%ld", tmp,
           (long)getpid());
  if (mkdir(fuzz_dir, 0700) != 0 && access(fuzz_dir, W_OK) != 0) {
    perror(fuzz_dir);
    abort();
  }
  atexit(fuzz_cleanup);
  wf_status_free(st);
}

/* dir/name in a static buffer (slot 0 or 1). */
static inline const char *fuzz_path(const char *name, int slot) {
  static char paths[2][512];

  snprintf(paths[slot], sizeof paths[slot], "%s/%s", fuzz_dir, name);
  return paths[slot];
}

static inline void fuzz_write(const char *path, const void *data, size_t n) {
  FILE *f = fopen(path, "wb");

  if (!f || (n && fwrite(data, 1, n, f) != n) || fclose(f) != 0) {
    perror(path);
    abort();
  }
}

static inline void fuzz_check_error(int rc, const wf_status *st) {
  /* A negative return is -code with st set to that code and a message. */
  if (rc >= 0 || (int)wf_status_code(st) != -rc ||
      !*wf_status_message(st)) {
    fprintf(stderr, "fuzz: return %d with status %d \"%s\"\n", rc,
            (int)wf_status_code(st), wf_status_message(st));
    abort();
  }
}

/* One next: 1 for a record, 0 at the end or a fatal error, 2 for a
 * skipped bad record (DATA_LOSS). */
static inline int fuzz_next(void *rd, int nf, wf_status *st) {
  wf_tensor *fields[64] = {0};
  int rc = fuzz_reader->next(rd, fields, st);

  if (rc == WF_READER_RECORD) {
    for (int i = 0; i < nf; i++) {
      if (!fields[i])
        abort();
      /* Touch every byte, so a short buffer shows under ASan. */
      volatile unsigned char sink = 0;
      const unsigned char *p = wf_tensor_data(fields[i]);
      for (size_t k = 0; k < wf_tensor_nbytes(fields[i]); k++)
        sink ^= p[k];
      (void)sink;
      wf_tensor_release(fields[i]);
    }
    return 1;
  }
  if (rc == WF_READER_END)
    return 0;
  fuzz_check_error(rc, st);
  return rc == -WF_DATA_LOSS ? 2 : 0;
}

/* Opens path with opts and reads it; then seeks back to where the first
 * record ended and to the start, and reads a little again. */
static inline void fuzz_read_file(const char *path, const wf_attr_item *opts,
                                  int32_t nopts) {
  wf_status *st = wf_status_new();
  void *rd = NULL;
  uint64_t after_first = 0;
  int nf, rc = 1, n = 0;

  if (fuzz_reader->open(path, opts, nopts, &rd, st)) {
    fuzz_check_error(-(int)wf_status_code(st), st);
    goto done;
  }
  nf = fuzz_reader->num_fields(rd);
  if (nf < 1 || nf > 64)
    abort();
  for (int i = 0; i < nf; i++) {
    wf_reader_field f;
    fuzz_field_init(&f);
    fuzz_reader->field(rd, i, &f);
    if (!f.name[0] || memchr(f.name, 0, sizeof f.name) == NULL)
      abort();
  }
  if (fuzz_reader->count)
    (void)fuzz_reader->count(rd, st);
  while (n < FUZZ_MAX_RECORDS && (rc = fuzz_next(rd, nf, st)) != 0) {
    if (n++ == 0)
      after_first = fuzz_reader->tell(rd);
  }
  if (n > 0) {
    (void)fuzz_reader->tell(rd);
    if (fuzz_reader->seek(rd, after_first, st) == 0)
      for (int i = 0; i < 3 && fuzz_next(rd, nf, st); i++)
        ;
    if (fuzz_reader->seek(rd, 0, st) == 0)
      for (int i = 0; i < 3 && fuzz_next(rd, nf, st); i++)
        ;
  }
  fuzz_reader->close(rd);
done:
  wf_status_free(st);
}

#endif
