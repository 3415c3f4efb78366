/* core/io/file_io.h — what every reader and writer of weft's files shares:
 * statuses for failed file operations, and atomic replacement, so that
 * readers (and a crash at any moment) see either a file's old contents or
 * its complete new contents: a temporary file beside it, fsync, rename over
 * it, fsync of the directory. Used for graph files, checkpoints, saved
 * models and .npy files. */
#ifndef WF_CORE_FILE_IO_H
#define WF_CORE_FILE_IO_H

#include <stddef.h>
#include <weft/status.h>

/* The status code for errno value err: NOT_FOUND (ENOENT, ENOTDIR),
 * PERMISSION_DENIED (EACCES, EPERM, EROFS), RESOURCE_EXHAUSTED (ENOSPC,
 * EDQUOT, EFBIG, ENOMEM), else UNAVAILABLE. */
wf_code wf__errno_code(int err);
/* Sets st to "PATH: DOING: strerror(err)" with wf__errno_code(err). */
int wf__io_error(wf_status *st, int err, const char *path, const char *doing);

typedef struct wf__atomic_file {
  int fd;     /* the temporary file; -1 when closed */
  char *path; /* the final name */
  char *tmp;  /* the temporary file: ".NAME.tmp-PID-XXXXXX" beside it */
} wf__atomic_file;

/* Creates the temporary file for path (its directory must exist). On error
 * (naming path) nothing is created and f needs no abort. */
int wf__atomic_open(wf__atomic_file *f, const char *path, wf_status *st);
/* Appends n bytes (retrying short writes). On error the caller aborts. */
int wf__atomic_write(wf__atomic_file *f, const void *p, size_t n,
                     wf_status *st);
/* Flushes the data to disk, renames the temporary file over path and
 * flushes the directory. On error the temporary file is removed and path
 * keeps its old contents. Either way f is closed. */
int wf__atomic_commit(wf__atomic_file *f, wf_status *st);
/* Gives up: removes the temporary file; path is untouched. */
void wf__atomic_abort(wf__atomic_file *f);

/* Flushes the directory holding path (after a rename or creation in it).
 * File systems that cannot sync a directory are let be. */
int wf__sync_parent(const char *path, wf_status *st);

/* The whole of buf as path's new contents, atomically. */
int wf__atomic_write_file(const char *path, const void *buf, size_t n,
                          wf_status *st);

/* Creates an empty directory beside path, named as the temporary files are
 * (".NAME.tmp-PID-XXXXXX"), with the usual permissions; returns its name
 * (wf__free it) or NULL with st naming path. For replacing a directory:
 * fill it, then swap it in. */
char *wf__atomic_temp_dir(const char *path, wf_status *st);

/* Whether name (a directory entry) is a temporary file or directory this
 * module made for a file called final (NULL or "": for any file); *pid (if
 * not NULL) receives the writer's process id, so that cleaners remove only
 * the leftovers of writers that are gone. */
int wf__atomic_is_temp(const char *name, const char *final, long *pid);

#endif /* WF_CORE_FILE_IO_H */
