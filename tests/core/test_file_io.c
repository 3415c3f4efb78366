/* tests/core/test_file_io.c — core/io/file_io.c: a committed file has the new
 * contents and the usual permissions, an aborted or failed one leaves the
 * old contents and no temporary file; temporary names carry their writer;
 * errno values become the right statuses. */
#include <config.h>

#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include <errno.h>

#include "base/alloc.h"
#include "io/file_io.h"

static char dir[128];
static char path[256];

static int setup(void **state) {
  (void)state;
  snprintf(dir, sizeof dir, "/tmp/weft-file-io-XXXXXX");
  assert_non_null(mkdtemp(dir));
  snprintf(path, sizeof path, "%s/data.bin", dir);
  return 0;
}

static int teardown(void **state) {
  (void)state;
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  return system(cmd);
}

static void assert_contents(const char *want) {
  char buf[64] = {0};
  FILE *f = fopen(path, "rb");
  assert_non_null(f);
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  assert_int_equal(n, strlen(want));
  assert_string_equal(buf, want);
}

static int entries(void) {
  int n = 0;
  DIR *d = opendir(dir);
  struct dirent *e;
  while ((e = readdir(d)))
    if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
      n++;
  closedir(d);
  return n;
}

static void test_commit_replaces_and_abort_keeps(void **state) {
  (void)state;
  wf_status *st = wf_status_new();
  assert_int_equal(wf__atomic_write_file(path, "first", 5, st), 0);
  assert_contents("first");
  struct stat sb;
  assert_int_equal(stat(path, &sb), 0);
  mode_t mask = umask(0);
  umask(mask);
  assert_int_equal(sb.st_mode & 0777, 0666 & ~mask);

  wf__atomic_file f;
  assert_int_equal(wf__atomic_open(&f, path, st), 0);
  assert_int_equal(wf__atomic_write(&f, "sec", 3, st), 0);
  assert_int_equal(entries(), 2); /* the file and its temporary */
  assert_contents("first");       /* unchanged until commit */
  wf__atomic_abort(&f);
  assert_int_equal(entries(), 1);
  assert_contents("first");

  assert_int_equal(wf__atomic_open(&f, path, st), 0);
  assert_int_equal(wf__atomic_write(&f, "sec", 3, st), 0);
  assert_int_equal(wf__atomic_write(&f, "ond", 3, st), 0);
  assert_int_equal(wf__atomic_commit(&f, st), 0);
  assert_contents("second");
  assert_int_equal(entries(), 1);
  wf_status_free(st);
}

static void test_missing_directory_is_an_error_naming_the_path(void **state) {
  (void)state;
  wf_status *st = wf_status_new();
  char bad[300];
  snprintf(bad, sizeof bad, "%s/nowhere/x.bin", dir);
  assert_int_equal(wf__atomic_write_file(bad, "x", 1, st), WF_NOT_FOUND);
  assert_non_null(strstr(wf_status_message(st), bad));
  snprintf(bad, sizeof bad, "%s/", dir);
  assert_int_equal(wf__atomic_write_file(bad, "x", 1, st),
                   WF_INVALID_ARGUMENT);
  wf_status_free(st);
}

static void test_rename_failure_leaves_the_old_file(void **state) {
  (void)state;
  wf_status *st = wf_status_new();
  /* A directory where the file should go: rename cannot replace it. */
  char target[300];
  snprintf(target, sizeof target, "%s/taken", dir);
  assert_int_equal(mkdir(target, 0700), 0);
  char inner[320];
  snprintf(inner, sizeof inner, "%s/keep", target);
  FILE *f = fopen(inner, "w");
  fclose(f);
  assert_int_equal(wf__atomic_write_file(target, "x", 1, st), WF_UNAVAILABLE);
  assert_non_null(strstr(wf_status_message(st), target));
  struct stat sb;
  assert_int_equal(stat(inner, &sb), 0);
  assert_int_equal(entries(), 2); /* data.bin and taken/, no temporary */
  wf_status_free(st);
}

static void test_temp_names_are_recognised(void **state) {
  (void)state;
  long pid = 0;
  assert_true(wf__atomic_is_temp(".data.bin.tmp-123-a1B2c3", "data.bin", &pid));
  assert_int_equal(pid, 123);
  assert_true(wf__atomic_is_temp(".data.bin.tmp-123-a1B2c3", "", NULL));
  assert_true(wf__atomic_is_temp(".a.tmp-b.tmp-77-zzzzzz", "a.tmp-b", &pid));
  assert_int_equal(pid, 77);
  assert_false(wf__atomic_is_temp(".data.bin.tmp-123-a1B2c3", "data", NULL));
  assert_false(wf__atomic_is_temp("data.bin.tmp-123-a1B2c3", "data.bin", NULL));
  assert_false(wf__atomic_is_temp(".data.bin.tmp-123-a1", "data.bin", NULL));
  assert_false(wf__atomic_is_temp(".data.bin.tmp-x-a1B2c3", NULL, NULL));
  assert_false(wf__atomic_is_temp(".data.bin.tmp--5-a1B2c3", NULL, NULL));
  assert_false(wf__atomic_is_temp(".hidden", NULL, NULL));

  /* What the writer makes is what the cleaner recognises. */
  wf_status *st = wf_status_new();
  wf__atomic_file f;
  assert_int_equal(wf__atomic_open(&f, path, st), 0);
  const char *base = strrchr(f.tmp, '/') + 1;
  assert_true(wf__atomic_is_temp(base, "data.bin", &pid));
  assert_int_equal(pid, (long)getpid());
  wf__atomic_abort(&f);
  char *d = wf__atomic_temp_dir(path, st);
  assert_non_null(d);
  assert_true(wf__atomic_is_temp(strrchr(d, '/') + 1, "data.bin", NULL));
  assert_int_equal(rmdir(d), 0);
  wf__free(d);
  wf_status_free(st);
}

static void test_errno_values_become_statuses(void **state) {
  (void)state;
  wf_status *st = wf_status_new();
  assert_int_equal(wf__errno_code(ENOENT), WF_NOT_FOUND);
  assert_int_equal(wf__errno_code(EROFS), WF_PERMISSION_DENIED);
  assert_int_equal(wf__errno_code(ENOSPC), WF_RESOURCE_EXHAUSTED);
  assert_int_equal(wf__errno_code(EIO), WF_UNAVAILABLE);
  assert_int_equal(wf__io_error(st, EACCES, "/x/y", "opening"),
                   WF_PERMISSION_DENIED);
  assert_non_null(strstr(wf_status_message(st), "/x/y: opening: "));
  wf_status_free(st);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_commit_replaces_and_abort_keeps),
      cmocka_unit_test(test_missing_directory_is_an_error_naming_the_path),
      cmocka_unit_test(test_rename_failure_leaves_the_old_file),
      cmocka_unit_test(test_temp_names_are_recognised),
      cmocka_unit_test(test_errno_values_become_statuses),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
