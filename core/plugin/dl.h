/* core/plugin/dl.h — the one internal interface over libltdl: open a module, look
 * up a symbol, close it, and open the modules linked in statically (into
 * the program, or into libweft by --enable-static-plugins).
 *
 * Every call holds one process-wide lock (libltdl keeps global state and a
 * global error string). libltdl is initialised on the first open and shut
 * down when the last handle is closed. Errors come back as new strings
 * (wf__alloc'd; the caller frees them with wf__free). */
#ifndef WF_CORE_DL_H
#define WF_CORE_DL_H

typedef struct wf__dl wf__dl;

/* Opens the module at path (a shared object; libltdl also accepts a libtool
 * .la file). Returns the handle, or NULL with *err set to libltdl's reason
 * (*err NULL as well when out of memory). */
wf__dl *wf__dl_open(const char *path, char **err);

/* The address of symbol name in dl. libltdl looks for <module>_LTX_<name>
 * first, then name. NULL with *err set when absent. */
void *wf__dl_sym(wf__dl *dl, const char *name, char **err);

/* The module's name as libltdl derived it from the file name ("good" for
 * ".../good.so"); "" when libltdl has none. Valid until dl is closed. */
const char *wf__dl_name(const wf__dl *dl);

/* Closes dl (NULL is ignored). The module is unmapped when no other handle
 * refers to it; nothing from it may be used afterwards. */
void wf__dl_close(wf__dl *dl);

/* Opens every module that a static build preloaded for `originator` (the
 * program or library name given to libtool's -dlpreopen; NULL: the
 * program's own list). On success *out holds *n new handles (an array the
 * caller frees with wf__free after closing each). Returns 0, or -1 with
 * *err set. */
int wf__dl_open_preloaded(const char *originator, wf__dl ***out, int *n,
                          char **err);

/* Opens the plugins linked into libweft itself (configure
 * --enable-static-plugins: libtool's -dlpreopen table of libweft), as
 * wf__dl_open_preloaded does. *n is 0 and 0 is returned when there are
 * none: a build without static plugins, or the core linked without
 * libweft's table (as the tests link it). */
int wf__dl_open_libweft_plugins(wf__dl ***out, int *n, char **err);

#endif
