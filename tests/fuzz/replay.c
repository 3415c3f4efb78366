/* tests/fuzz/replay.c — runs a fuzz target's LLVMFuzzerTestOneInput over
 * every file of its seed corpus (or of the directories and files given as
 * arguments) without libFuzzer, so `make check` keeps the targets building
 * and every corpus file, crash reproducers included, passing. Fails when
 * it found no input at all. */
#include <config.h>

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path) {
  FILE *f = fopen(path, "rb");
  unsigned char *buf = NULL;
  long n;

  if (!f || fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 ||
      fseek(f, 0, SEEK_SET) != 0 || !(buf = malloc((size_t)n + 1)) ||
      fread(buf, 1, (size_t)n, f) != (size_t)n) {
    fprintf(stderr, "replay: cannot read %s\n", path);
    exit(1);
  }
  fclose(f);
  LLVMFuzzerTestOneInput(buf, (size_t)n);
  free(buf);
  return 1;
}

/* Runs path, or every file in it when it is a directory (sorted, so runs
 * repeat). Returns how many inputs ran. */
static int run_path(const char *path) {
  struct dirent **names;
  struct stat sb;
  int n, count = 0;

  if (stat(path, &sb) != 0) {
    fprintf(stderr, "replay: %s does not exist\n", path);
    exit(1);
  }
  if (!S_ISDIR(sb.st_mode))
    return run_file(path);
  if ((n = scandir(path, &names, NULL, alphasort)) < 0) {
    fprintf(stderr, "replay: cannot list %s\n", path);
    exit(1);
  }
  for (int i = 0; i < n; i++) {
    char full[4096];
    if (names[i]->d_name[0] != '.') {
      snprintf(full, sizeof full, "%s/%s", path, names[i]->d_name);
      count += run_file(full);
    }
    free(names[i]);
  }
  free(names);
  return count;
}

int main(int argc, char **argv) {
  int count = 0;

  LLVMFuzzerInitialize(&argc, &argv);
  if (argc < 2)
    count = run_path(FUZZ_CORPUS);
  for (int i = 1; i < argc; i++)
    count += run_path(argv[i]);
  printf("replay: %d inputs ran\n", count);
  return count > 0 ? 0 : 1;
}
