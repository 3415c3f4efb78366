/* core/io/file_io.c — file statuses and atomic replacement (see file_io.h).
 * It does not lock: two writers of one path both succeed and the last
 * rename wins. */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/alloc.h"
#include "io/file_io.h"

#define TEMP_MARK ".tmp-"

int wf__sync_parent(const char *path, wf_status *st) {
  const char *slash = strrchr(path, '/');
  char *dir = slash ? wf__strndup(path, slash == path ? 1 : (size_t)(slash - path))
                    : wf__strdup(".");
  if (!dir)
    return wf_status_set(st, WF_RESOURCE_EXHAUSTED, "out of memory");
  int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  int rc = 0;
  /* File systems that cannot sync a directory (EINVAL) are let be. */
  if (fd < 0 || (fsync(fd) != 0 && errno != EINVAL && errno != ENOTSUP))
    rc = wf_status_set(st, wf__errno_code(errno),
                       "%s: written, but syncing directory '%s': %s", path,
                       dir, strerror(errno));
  if (fd >= 0)
    close(fd);
  wf__free(dir);
  return rc;
}

static void release(wf__atomic_file *f) {
  if (f->fd >= 0)
    close(f->fd);
  f->fd = -1;
  wf__free(f->path);
  wf__free(f->tmp);
  f->path = f->tmp = NULL;
}

wf_code wf__errno_code(int e) {
  switch (e) {
  case ENOENT:
  case ENOTDIR:
    return WF_NOT_FOUND;
  case EACCES:
  case EPERM:
  case EROFS:
    return WF_PERMISSION_DENIED;
  case ENOSPC:
  case EDQUOT:
  case EFBIG:
  case ENOMEM:
    return WF_RESOURCE_EXHAUSTED;
  default:
    return WF_UNAVAILABLE;
  }
}

int wf__io_error(wf_status *st, int err, const char *path, const char *doing) {
  return wf_status_set(st, wf__errno_code(err), "%s: %s: %s", path, doing,
                       strerror(err));
}

/* Six characters for a temporary name: counter, pid and clock mixed. */
static void random_suffix(char *out) {
  static const char digits[] =
      "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  static _Atomic unsigned long counter;
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  unsigned long long x = (unsigned long long)t.tv_nsec * 0x9E3779B97F4A7C15ull ^
                         ((unsigned long long)getpid() << 32) ^
                         (unsigned long long)counter++ * 0xBF58476D1CE4E5B9ull;
  for (int i = 0; i < 6; i++) {
    out[i] = digits[x % 62];
    x /= 62;
  }
}

int wf__atomic_open(wf__atomic_file *f, const char *path, wf_status *st) {
  f->fd = -1;
  f->tmp = NULL;
  f->path = NULL;
  const char *slash = strrchr(path, '/');
  const char *base = slash ? slash + 1 : path;
  if (!*base)
    return wf_status_set(st, WF_INVALID_ARGUMENT,
                         "'%s' names a directory, not a file", path);
  f->path = wf__strdup(path);
  f->tmp = wf__asprintf("%.*s.%s" TEMP_MARK "%ld-XXXXXX", (int)(base - path),
                        path, base, (long)getpid());
  if (!f->path || !f->tmp) {
    release(f);
    return wf_status_set(st, WF_RESOURCE_EXHAUSTED, "out of memory");
  }
  /* open(O_EXCL) rather than mkstemp: the file gets 0666 less the umask,
   * like any file the user creates, without touching the process umask. */
  char *suffix = f->tmp + strlen(f->tmp) - 6;
  for (int tries = 0; tries < 100; tries++) {
    random_suffix(suffix);
    f->fd = open(f->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (f->fd >= 0 || errno != EEXIST)
      break;
  }
  if (f->fd < 0) {
    int e = errno;
    release(f);
    return wf_status_set(st, wf__errno_code(e), "cannot create a file beside '%s': %s",
                         path, strerror(e));
  }
  return 0;
}

char *wf__atomic_temp_dir(const char *path, wf_status *st) {
  size_t len = strlen(path);
  while (len > 1 && path[len - 1] == '/')
    len--;
  const char *base = path + len;
  while (base > path && base[-1] != '/')
    base--;
  if (base == path + len) {
    wf_status_set(st, WF_INVALID_ARGUMENT, "'%s' has no name to put a "
                  "directory beside", path);
    return NULL;
  }
  char *tmp = wf__asprintf("%.*s.%.*s" TEMP_MARK "%ld-XXXXXX",
                           (int)(base - path), path, (int)(path + len - base),
                           base, (long)getpid());
  if (!tmp) {
    wf_status_set(st, WF_RESOURCE_EXHAUSTED, "out of memory");
    return NULL;
  }
  char *suffix = tmp + strlen(tmp) - 6;
  int rc = -1;
  for (int tries = 0; tries < 100 && rc != 0; tries++) {
    random_suffix(suffix);
    rc = mkdir(tmp, 0777);
    if (rc != 0 && errno != EEXIST)
      break;
  }
  if (rc != 0) {
    int e = errno;
    wf_status_set(st, wf__errno_code(e), "cannot create a directory beside '%s': %s",
                  path, strerror(e));
    wf__free(tmp);
    return NULL;
  }
  return tmp;
}

int wf__atomic_write(wf__atomic_file *f, const void *p, size_t n,
                     wf_status *st) {
  const char *c = p;
  while (n > 0) {
    ssize_t w = write(f->fd, c, n);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0)
      return wf_status_set(st, w < 0 ? wf__errno_code(errno) : WF_UNAVAILABLE,
                           "writing '%s': %s", f->path,
                           w < 0 ? strerror(errno) : "no progress");
    c += w;
    n -= (size_t)w;
  }
  return 0;
}

void wf__atomic_abort(wf__atomic_file *f) {
  if (f->tmp)
    unlink(f->tmp);
  release(f);
}

int wf__atomic_commit(wf__atomic_file *f, wf_status *st) {
  if (fsync(f->fd) != 0) {
    wf_status_set(st, wf__errno_code(errno), "writing '%s': %s", f->path,
                  strerror(errno));
    goto fail;
  }
  if (close(f->fd) != 0) {
    f->fd = -1;
    wf_status_set(st, wf__errno_code(errno), "writing '%s': %s", f->path,
                  strerror(errno));
    goto fail;
  }
  f->fd = -1;
  if (rename(f->tmp, f->path) != 0) {
    wf_status_set(st, wf__errno_code(errno), "replacing '%s': %s", f->path,
                  strerror(errno));
    goto fail;
  }
  int rc = wf__sync_parent(f->path, st);
  release(f);
  return rc;

fail:
  wf__atomic_abort(f);
  return wf_status_code(st);
}

int wf__atomic_write_file(const char *path, const void *buf, size_t n,
                          wf_status *st) {
  wf__atomic_file f;
  if (wf__atomic_open(&f, path, st))
    return wf_status_code(st);
  if (wf__atomic_write(&f, buf, n, st)) {
    wf__atomic_abort(&f);
    return wf_status_code(st);
  }
  return wf__atomic_commit(&f, st);
}

int wf__atomic_is_temp(const char *name, const char *final, long *pid) {
  if (name[0] != '.')
    return 0;
  /* The last mark: the final name may contain one itself. */
  const char *mark = NULL;
  for (const char *m = name; (m = strstr(m, TEMP_MARK)) != NULL; m++)
    mark = m;
  if (!mark || mark == name + 1)
    return 0;
  const char *p = mark + strlen(TEMP_MARK);
  char *end;
  errno = 0;
  long owner = strtol(p, &end, 10);
  if (errno || end == p || owner <= 0 || *end != '-' || strlen(end + 1) != 6)
    return 0;
  if (final && *final &&
      ((size_t)(mark - name - 1) != strlen(final) ||
       strncmp(name + 1, final, strlen(final)) != 0))
    return 0;
  if (pid)
    *pid = owner;
  return 1;
}
