/* tests/core/checkpoint_harness.h — what test_safetensors.c and
 * test_checkpoint.c share: a scratch directory per program, files written
 * byte by byte (a header given as JSON text, or raw bytes), a byte flipped
 * in place, tensors filled with a value, and message checks that fail the
 * test saying what was missing. Included once per program after cmocka.h;
 * everything is static, so a program need not use all of it. */
#ifndef WF_TESTS_CORE_CHECKPOINT_HARNESS_H
#define WF_TESTS_CORE_CHECKPOINT_HARNESS_H

#include <dirent.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <weft/weft.h>

static char ch_dir[64];

static inline int ch_setup_dir(void) {
  strcpy(ch_dir, "/tmp/weft-test-ckpt-XXXXXX");
  return mkdtemp(ch_dir) ? 0 : -1;
}

static inline void ch_remove_dir(void) {
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", ch_dir);
  if (system(cmd) != 0)
    fprintf(stderr, "could not remove %s\n", ch_dir);
}

/* ch_dir/name, in one of 8 static buffers used in turn. */
static inline const char *ch_path(const char *name) {
  static char buf[8][256];
  static int next;
  char *b = buf[next++ % 8];
  snprintf(b, 256, "%s/%s", ch_dir, name);
  return b;
}

static inline void ch_write_bytes(const char *path, const void *p, size_t n) {
  FILE *f = fopen(path, "wb");
  if (!f || (n && fwrite(p, 1, n, f) != n) || fclose(f) != 0)
    fail_msg("cannot write %s", path);
}

/* A safetensors file: the 8-byte length of json, json, then ndata bytes
 * of data (data NULL: ndata bytes counting 0, 1, 2, ...). */
static inline void ch_write_file(const char *path, const char *json,
                                 const void *data, size_t ndata) {
  size_t hlen = strlen(json);
  unsigned char *buf = malloc(8 + hlen + ndata + 1);
  assert_non_null(buf);
  for (int i = 0; i < 8; i++)
    buf[i] = (unsigned char)((uint64_t)hlen >> (8 * i));
  memcpy(buf + 8, json, hlen);
  for (size_t i = 0; i < ndata; i++)
    buf[8 + hlen + i] =
        data ? ((const unsigned char *)data)[i] : (unsigned char)i;
  ch_write_bytes(path, buf, 8 + hlen + ndata);
  free(buf);
}

static inline long ch_file_size(const char *path) {
  struct stat sb;
  return stat(path, &sb) == 0 ? (long)sb.st_size : -1;
}

/* XORs the byte at offset (negative: from the end) with 0xff. */
static inline void ch_flip_byte(const char *path, long offset) {
  FILE *f = fopen(path, "r+b");
  int c;
  assert_non_null(f);
  if (offset < 0)
    offset += ch_file_size(path);
  assert_int_equal(fseek(f, offset, SEEK_SET), 0);
  c = fgetc(f);
  assert_true(c != EOF);
  assert_int_equal(fseek(f, offset, SEEK_SET), 0);
  fputc(c ^ 0xff, f);
  assert_int_equal(fclose(f), 0);
}

/* Offset in the file of the first data byte of tensor name (found in the
 * header text as weft writes it: compact, offsets after the dtype). */
static inline long ch_data_offset(const char *path, const char *name) {
  FILE *f = fopen(path, "rb");
  unsigned char len8[8];
  uint64_t hlen = 0;
  char key[300], *text, *e;
  long at;

  assert_non_null(f);
  assert_int_equal(fread(len8, 1, 8, f), 8);
  for (int i = 7; i >= 0; i--)
    hlen = hlen << 8 | len8[i];
  text = malloc(hlen + 1);
  assert_non_null(text);
  assert_int_equal(fread(text, 1, hlen, f), hlen);
  fclose(f);
  text[hlen] = 0;
  snprintf(key, sizeof key, "\"%s\":{", name);
  if (!(e = strstr(text, key)) || !(e = strstr(e, "\"data_offsets\":[")))
    fail_msg("%s has no tensor '%s'", path, name);
  at = 8 + (long)hlen + strtol(e + 16, NULL, 10);
  free(text);
  return at;
}

/* A new float32 tensor of the given dims with every element v. */
static inline wf_tensor *ch_filled(const int64_t *dims, int rank, float v) {
  wf_tensor *t = wf_tensor_new(WF_FLOAT32, dims, rank, NULL);
  assert_non_null(t);
  for (int64_t i = 0; i < wf_tensor_count(t); i++)
    ((float *)wf_tensor_data(t))[i] = v;
  return t;
}

/* Fails unless st's message contains every one of the NULL-terminated
 * parts. */
static inline void ch_expect_message(const wf_status *st, const char *part,
                                     ...) {
  va_list ap;
  va_start(ap, part);
  for (const char *p = part; p; p = va_arg(ap, const char *))
    if (!strstr(wf_status_message(st), p)) {
      va_end(ap);
      fail_msg("message \"%s\" does not mention \"%s\"", wf_status_message(st),
               p);
    }
  va_end(ap);
}

/* Names in dir that start with '.' (temporary files), counted. */
static inline int ch_count_hidden(const char *dir) {
  DIR *d = opendir(dir);
  struct dirent *e;
  int n = 0;
  assert_non_null(d);
  while ((e = readdir(d)) != NULL)
    if (e->d_name[0] == '.' && strcmp(e->d_name, ".") != 0 &&
        strcmp(e->d_name, "..") != 0)
      n++;
  closedir(d);
  return n;
}

#endif /* WF_TESTS_CORE_CHECKPOINT_HARNESS_H */
