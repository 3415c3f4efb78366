/* plugins/common/lazylib.h — a vendor library that a plugin opens on first
 * use instead of linking it: the plugin loads and registers without it,
 * and the library (oneDNN, OpenBLAS, cuBLAS, cuDNN, ...) is mapped only
 * when a kernel first calls into it. The plugin's code keeps calling the
 * vendor's API as written: a header of the plugin renames each function it
 * uses to a wrapper under the plugin's own prefix (so that a program
 * linking both the plugin and the library keeps calling the library), and
 * a file of the plugin defines the wrappers, which open the library once,
 * look up every function it needs, and call through the addresses found.
 * A wrapper whose library cannot be opened returns the library's own error
 * status, and the library's error-text function then says which library
 * and plugin failed and why (lazylib_error).
 *
 * Header only (static functions), so that plugins linked together into
 * libweft share no symbol. It does not choose what to wrap, nor retry: a
 * library that failed to open stays failed for the life of the process, so
 * every later call fails the same way at once. */
#ifndef WF_PLUGINS_LAZYLIB_H
#define WF_PLUGINS_LAZYLIB_H

#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One library. The first members are set by the plugin (a static
 * initialiser); the rest belong to lazylib_open. */
typedef struct lazylib {
  const char *plugin;  /* the plugin's name, for messages ("device-cpu") */
  const char *user;    /* who else opens it, for messages ("weft serve"),
                          instead of "plugin <plugin>"; NULL for plugins */
  const char *what;    /* the library's name for people ("oneDNN") */
  const char *soname;  /* the file dlopen is given ("libdnnl.so.2") */
  const char *env;     /* variable naming another file to open, or NULL */
  int dlflags;         /* 0: RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE */
  const char *const *symbols; /* every symbol used, NULL-terminated */
  void **addrs;               /* one address per symbol, filled on open */
  /* Runs once after every symbol was found, before any wrapper calls
   * through: checks (a version) and setup (thread counts). Nonzero refuses
   * the library with the reason written to why. May be NULL. */
  int (*opened)(struct lazylib *lib, char *why, size_t len);

  _Atomic int state; /* 0: not tried, 1: open, 2: opened is running,
                        -1: failed */
  pthread_t opener;   /* the thread running opened (state 2) */
  pthread_mutex_t mu;
  void *handle;
  char error[640];
} lazylib;

/* A static initialiser: LAZYLIB_INIT(.plugin = ..., .soname = ..., ...). */
#define LAZYLIB_INIT(...) {__VA_ARGS__, .mu = PTHREAD_MUTEX_INITIALIZER}

/* The file to open: the variable's value when set and not empty. */
static inline const char *lazylib_file(const lazylib *lib) {
  const char *f = lib->env ? getenv(lib->env) : NULL;
  return f && *f ? f : lib->soname;
}

static inline void lazylib_fail_(lazylib *lib, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static inline void lazylib_fail_(lazylib *lib, const char *fmt, ...) {
  char why[512];
  va_list ap;

  va_start(ap, fmt);
  vsnprintf(why, sizeof why, fmt, ap);
  va_end(ap);
  snprintf(lib->error, sizeof lib->error, "%s%s cannot use %s (%s): %s%s%s",
           lib->user ? "" : "plugin ", lib->user ? lib->user : lib->plugin,
           lib->what,
           lazylib_file(lib), why,
           lib->env ? "; set " : "", lib->env ? lib->env : "");
  if (lib->env) {
    size_t n = strlen(lib->error);
    snprintf(lib->error + n, sizeof lib->error - n,
             " to the library's path if it is installed elsewhere");
  }
}

/* Opens lib once per process (later calls return at once). Returns 0 when
 * it is open and every symbol was found, else -1 with lazylib_error saying
 * why. Thread-safe. */
static inline int lazylib_open(lazylib *lib) {
  int s = atomic_load_explicit(&lib->state, memory_order_acquire);
  const char *file;
  void *h = NULL;
  int i, ran = 0;

  if (s == 1 || s == -1)
    return s == 1 ? 0 : -1;
  /* opened calls wrappers itself; other threads wait for it to finish. */
  if (s == 2 && pthread_equal(lib->opener, pthread_self()))
    return 0;
  pthread_mutex_lock(&lib->mu);
  s = atomic_load_explicit(&lib->state, memory_order_relaxed);
  if (s) {
    pthread_mutex_unlock(&lib->mu);
    return s > 0 ? 0 : -1;
  }
  file = lazylib_file(lib);
  dlerror();
  h = dlopen(file, lib->dlflags ? lib->dlflags : RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  if (!h) {
    const char *e = dlerror();
    lazylib_fail_(lib, "%s", e ? e : "dlopen failed");
    goto fail;
  }
  for (i = 0; lib->symbols[i]; i++) {
    dlerror();
    lib->addrs[i] = dlsym(h, lib->symbols[i]);
    if (!lib->addrs[i]) {
      const char *e = dlerror();
      lazylib_fail_(lib, "it lacks the function %s (%s)", lib->symbols[i],
                    e ? e : "no such symbol");
      goto fail;
    }
  }
  lib->handle = h;
  if (lib->opened) {
    char why[512] = "";
    ran = 1;
    lib->opener = pthread_self();
    atomic_store_explicit(&lib->state, 2, memory_order_release);
    if (lib->opened(lib, why, sizeof why)) {
      lazylib_fail_(lib, "%s", why[0] ? why : "refused after opening");
      lib->handle = NULL;
      goto fail;
    }
  }
  atomic_store_explicit(&lib->state, 1, memory_order_release);
  pthread_mutex_unlock(&lib->mu);
  return 0;

fail:
  if (h && !ran) /* once its code ran, the library stays mapped */
    dlclose(h);
  atomic_store_explicit(&lib->state, -1, memory_order_release);
  pthread_mutex_unlock(&lib->mu);
  return -1;
}

/* 1 once lib is open (without trying to open it). */
static inline int lazylib_is_open(lazylib *lib) {
  return atomic_load_explicit(&lib->state, memory_order_acquire) == 1;
}

/* Why lib could not be opened ("" while it was not tried or is open). */
static inline const char *lazylib_error(lazylib *lib) {
  return atomic_load_explicit(&lib->state, memory_order_acquire) < 0
             ? lib->error
             : "";
}

/* Stringifies after macro expansion (cublasCreate -> "cublasCreate_v2"). */
#define LAZYLIB_STR_(x) #x
#define LAZYLIB_STR(x) LAZYLIB_STR_(x)

#endif
