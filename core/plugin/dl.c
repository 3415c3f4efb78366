/* core/plugin/dl.c — libltdl behind one lock: open, look up, close, and open the
 * statically preloaded modules (the program's, and the plugins linked into
 * libweft). libltdl is initialised while any handle is open.
 *
 * It knows nothing about plugins: checking what a module exports is the
 * loader's job (core/plugin/loader.c). */
#include <config.h>

#include "plugin/dl.h"

#include <assert.h>
#include <dlfcn.h>
#include <ltdl.h>
#include <pthread.h>
#include <string.h>

#include "base/alloc.h"

struct wf__dl {
  lt_dlhandle handle;
};

static pthread_mutex_t dl_lock = PTHREAD_MUTEX_INITIALIZER;
static long dl_users; /* open handles (and calls in progress) holding libltdl */

/* The plugins linked into libweft are preloaded under this name, libtool's
 * for core/libweft.la. */
#define LIBWEFT_ORIGINATOR "libweft"

#ifdef WF_STATIC_PLUGINS
/* The table libtool writes when libweft is linked with -dlpreopen
 * (Makefile.am). Weak: the core's convenience library, which the tests
 * link, comes without it. */
extern const lt_dlsymlist lt_libweft_LTX_preloaded_symbols[]
    __attribute__((weak));
#endif

/* libweft's table of preloaded plugins, or NULL when it has none. */
static const lt_dlsymlist *libweft_table(void) {
#ifdef WF_STATIC_PLUGINS
  return lt_libweft_LTX_preloaded_symbols;
#else
  return NULL;
#endif
}

/* libltdl's last error as a new string (fallback when it has none).
 * Assumes dl_lock is held. */
static char *take_error(const char *fallback) {
  const char *e = lt_dlerror();
  return wf__strdup(e ? e : fallback);
}

/* Why path could not be opened. libltdl reports only its last loader's
 * complaint ("file not found" for a file that is there but is no shared
 * object); the system loader says what is wrong with the file, so its
 * reason is asked for and put first. Assumes dl_lock is held. */
static char *open_error(const char *path) {
  char *lt = take_error("cannot open module"), *msg;
  const char *sys = NULL;
  void *h;

  if (!lt)
    return NULL;
  dlerror(); /* forget any earlier error */
  h = dlopen(path, RTLD_LAZY | RTLD_LOCAL);
  if (h)
    dlclose(h); /* libltdl's own reason stands */
  else
    sys = dlerror();
  if (!sys)
    return lt;
  msg = wf__asprintf("%s (libltdl: %s)", sys, lt);
  wf__free(lt);
  return msg;
}

/* A module with an unresolved function must be refused when it is opened,
 * not kill the process at its first call: libltdl binds lazily, so the
 * file is first opened with immediate binding, which resolves every symbol
 * or fails naming the missing one. The handle stays open until libltdl has
 * its own, so the module is loaded once. NULL when path is no file that
 * opens this way (libltdl then tries its suffixes and gives the reason);
 * else the handle, or (void *)-1 with *err set. Assumes dl_lock is held. */
static void *open_bound(const char *path, char **err) {
  void *h;
  dlerror();
  h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (h)
    return h;
  const char *why = dlerror();
  if (why && strstr(why, "undefined symbol")) {
    *err = wf__asprintf("%s (a symbol it needs is not defined by it or by "
                        "the libraries it links)",
                        why);
    return (void *)-1;
  }
  return NULL;
}

/* Takes one reference on libltdl, initialising it for the first user.
 * Assumes dl_lock is held. */
static int users_add(char **err) {
  const lt_dlsymlist *table = libweft_table();

  if (dl_users == 0) {
    if (lt_dlinit() != 0) {
      *err = take_error("libltdl failed to initialise");
      return -1;
    }
    /* lt_dlexit forgets the tables added since lt_dlinit: libweft's is
     * added again each time (libltdl ignores a table it already has). */
    if (table && lt_dlpreload(table) != 0) {
      *err = take_error("cannot register the plugins linked into libweft");
      lt_dlexit();
      return -1;
    }
  }
  dl_users++;
  return 0;
}

/* Drops one reference; the last one shuts libltdl down. Assumes dl_lock. */
static void users_drop(void) {
  assert(dl_users > 0);
  if (--dl_users == 0)
    lt_dlexit();
}

wf__dl *wf__dl_open(const char *path, char **err) {
  wf__dl *dl = NULL;
  lt_dlhandle h;

  assert(path && err);
  *err = NULL;
  dl = wf__calloc(1, sizeof *dl);
  if (!dl)
    return NULL;
  pthread_mutex_lock(&dl_lock);
  if (users_add(err))
    goto fail;
  void *bound = open_bound(path, err);
  if (bound == (void *)-1) {
    users_drop();
    goto fail;
  }
  h = lt_dlopenext(path);
  if (bound)
    dlclose(bound);
  if (!h) {
    *err = open_error(path);
    users_drop();
    goto fail;
  }
  dl->handle = h;
  pthread_mutex_unlock(&dl_lock);
  return dl;

fail:
  pthread_mutex_unlock(&dl_lock);
  wf__free(dl);
  return NULL;
}

void *wf__dl_sym(wf__dl *dl, const char *name, char **err) {
  void *p;

  assert(dl && name && err);
  *err = NULL;
  pthread_mutex_lock(&dl_lock);
  lt_dlerror(); /* forget any earlier error */
  p = lt_dlsym(dl->handle, name);
  if (!p)
    *err = take_error("symbol not found");
  pthread_mutex_unlock(&dl_lock);
  return p;
}

const char *wf__dl_name(const wf__dl *dl) {
  const lt_dlinfo *info;
  const char *name;

  assert(dl);
  pthread_mutex_lock(&dl_lock);
  info = lt_dlgetinfo(dl->handle);
  name = info && info->name ? info->name : "";
  pthread_mutex_unlock(&dl_lock);
  return name;
}

void wf__dl_close(wf__dl *dl) {
  if (!dl)
    return;
  pthread_mutex_lock(&dl_lock);
  lt_dlclose(dl->handle);
  users_drop();
  pthread_mutex_unlock(&dl_lock);
  wf__free(dl);
}

/* ---- statically preloaded modules ---------------------------------------- */

/* lt_dlpreload_open's callback takes no argument of ours: the handles it
 * reports are collected here, under dl_lock. */
static lt_dlhandle *preload_handles;
static int preload_n, preload_cap, preload_oom;

static int collect_preloaded(lt_dlhandle h) {
  if (preload_n == preload_cap) {
    int cap = preload_cap ? 2 * preload_cap : 8;
    lt_dlhandle *grown =
        wf__realloc(preload_handles, (size_t)cap * sizeof *grown);
    if (!grown) {
      preload_oom = 1;
      lt_dlclose(h);
      return 1;
    }
    preload_handles = grown;
    preload_cap = cap;
  }
  preload_handles[preload_n++] = h;
  return 0;
}

int wf__dl_open_preloaded(const char *originator, wf__dl ***out, int *n,
                          char **err) {
  wf__dl **dls = NULL;
  int i, rc;

  assert(out && n && err);
  *out = NULL;
  *n = 0;
  *err = NULL;
  pthread_mutex_lock(&dl_lock);
  /* This reference keeps libltdl up during the call; each handle returned
   * takes its own below. */
  if (users_add(err)) {
    pthread_mutex_unlock(&dl_lock);
    return -1;
  }
  preload_handles = NULL;
  preload_n = preload_cap = preload_oom = 0;
  lt_dlerror();
  rc = lt_dlpreload_open(originator, collect_preloaded);
  if (preload_oom)
    goto fail;
  if (rc != 0) {
    *err = take_error("cannot open the preloaded modules");
    goto fail;
  }
  dls = wf__calloc(preload_n ? (size_t)preload_n : 1, sizeof *dls);
  if (!dls)
    goto fail;
  for (i = 0; i < preload_n; i++) {
    dls[i] = wf__calloc(1, sizeof **dls);
    if (!dls[i])
      goto fail;
    dls[i]->handle = preload_handles[i];
  }
  dl_users += preload_n;
  *out = dls;
  *n = preload_n;
  wf__free(preload_handles);
  preload_handles = NULL;
  users_drop();
  pthread_mutex_unlock(&dl_lock);
  return 0;

fail:
  for (i = 0; i < preload_n; i++) {
    lt_dlclose(preload_handles[i]);
    if (dls)
      wf__free(dls[i]);
  }
  wf__free(dls);
  wf__free(preload_handles);
  preload_handles = NULL;
  users_drop();
  pthread_mutex_unlock(&dl_lock);
  return -1;
}

int wf__dl_open_libweft_plugins(wf__dl ***out, int *n, char **err) {
  assert(out && n && err);
  if (!libweft_table()) {
    *out = NULL;
    *n = 0;
    *err = NULL;
    return 0;
  }
  return wf__dl_open_preloaded(LIBWEFT_ORIGINATOR, out, n, err);
}
