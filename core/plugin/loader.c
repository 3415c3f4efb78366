/* core/plugin/loader.c — finding plugins and loading them: the search order (the
 * plugins linked into libweft, config paths, $WEFT_PLUGIN_PATH, the build
 * tree's plugins when libweft runs from it, the installed directory), the
 * checks made before a module is opened, shadowing, the config's deny and
 * load lists, and the load order: the plugins shipped with weft first (so
 * that a third-party plugin defining one of their ops is the one refused,
 * whatever the search order), each after what it requires.
 *
 * Checking and registering one description is wf__runtime_add_plugin's job
 * (core/plugin/runtime.c); opening modules goes through core/plugin/dl.c. */
#include <config.h>

#include <assert.h>
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/alloc.h"
#include "plugin/dl.h"
#include "base/log.h"
#include "plugin/runtime_internal.h"
#include "plugin/uninstalled.h"
#include "base/status_internal.h"

/* Same bound as core/plugin/runtime.c: a description holds at least its header
 * and its name before its name is read. */
#define DESC_MIN_SIZE                                                          \
  (offsetof(wf_plugin_desc, name) + sizeof(((wf_plugin_desc *)0)->name))

/* The path shown for a plugin linked into libweft. */
#define PRELOADED "(preloaded)"

typedef enum mark { UNSEEN, VISITING, DONE } mark;

/* A module that was opened and described itself, waiting to be registered. */
typedef struct candidate {
  char *path;
  wf__dl *dl;                 /* NULL once handed over or closed */
  const wf_plugin_desc *desc; /* ABI major and name checked; valid while dl
                                 is open */
  char *name;                 /* copy of desc->name: outlives the module */
  int skipped;                /* denied: not to be loaded */
  int shipped;                /* one of weft's own plugins: loaded first */
  mark mark;
  char *cycle; /* reason when part of a dependency cycle */
} candidate;

typedef struct loader {
  wf_runtime *rt;
  const wf_config *cfg;
  candidate *cands;
  int num_cands, cap_cands;
  wf__strlist seen; /* real paths of files already looked at */
  int in_tree;      /* searching the build tree's plugins */
  int *stack;       /* candidates being visited, for cycle messages */
  int depth;
  wf_status *st;
} loader;

static int oom(loader *L, const char *what) {
  return wf_status_set(L->st, WF_RESOURCE_EXHAUSTED,
                       "loading plugins: out of memory (%s)", what);
}

/* After a plugin was refused: in strict mode that ends loading with the
 * refusal's message. Returns the code to stop with, or 0 to go on. */
static int after_refusal(loader *L, const char *reason) {
  if (!L->cfg->plugin_strict)
    return WF_OK;
  return wf_status_set(L->st, WF_FAILED_PRECONDITION, "%s", reason);
}

/* Records a refusal "PATH: why" (or a denial) and applies strict mode. */
static int refuse(loader *L, const char *name, const char *path, int major,
                  int minor, wf_plugin_state state, const char *why) {
  char *reason = wf__asprintf("%s: %s", path, why);
  int code;
  if (!reason)
    return oom(L, path);
  code =
      wf__runtime_record(L->rt, name, path, major, minor, state, reason, L->st);
  if (!code && state == WF_PLUGIN_REFUSED)
    code = after_refusal(L, reason);
  wf__free(reason);
  return code;
}

/* ---- where libweft runs from -------------------------------------------- */

/* 1 when this libweft is the one in the build tree (so the in-tree plugins
 * are searched too); an installed copy never looks there. */
static int in_build_tree(void) {
  Dl_info info;
  char *self = NULL, *build = NULL;
  size_t n;
  int inside = 0;

  if (!dladdr((void *)wf__loader_load_all, &info) || !info.dli_fname)
    return 0;
  /* Linked into the program itself, dladdr names the program as it was
   * invoked (argv[0]), which need not be a path from here: ask the kernel. */
  if (strcmp(info.dli_fname, program_invocation_name) == 0)
    self = realpath("/proc/self/exe", NULL);
  else
    self = realpath(info.dli_fname, NULL);
  build = realpath(WF_BUILD_DIR, NULL);
  if (self && build) {
    n = strlen(build);
    inside = strncmp(self, build, n) == 0 && self[n] == '/';
  }
  free(self);
  free(build);
  return inside;
}

/* ---- looking at one file ------------------------------------------------ */

/* Whether st's owner is one a plugin may come from: root or this user. */
static int trusted_owner(const struct stat *sb) {
  return sb->st_uid == 0 || sb->st_uid == geteuid();
}

/* Whether others than root and this user may write the object behind sb:
 * world-writable, or group-writable for a group other than root's and the
 * process's own. A directory that is sticky and owned by root or this user
 * (like /tmp) is safe to pass through: others cannot rename or remove what
 * they do not own in it. */
static int writable_by_others(const struct stat *sb) {
  int w = (sb->st_mode & S_IWOTH) ||
          ((sb->st_mode & S_IWGRP) && sb->st_gid != 0 &&
           sb->st_gid != getegid());
  if (w && S_ISDIR(sb->st_mode) && (sb->st_mode & S_ISVTX) &&
      trusted_owner(sb))
    return 0;
  return w;
}

/* Judges the absolute path p and every directory above it the way sudo
 * and OpenSSH judge a file they are about to trust: each must be owned by
 * root or this user and not be writable by others. Returns the reason for
 * the first one that fails (a new string), or NULL with *no_mem set when
 * out of memory or clear when all pass. */
static char *unsafe_chain(const char *p, int *no_mem) {
  struct stat sb;
  char *buf = wf__strdup(p), *why = NULL;
  const char *what;
  int bad = 1;
  size_t n;

  *no_mem = buf == NULL;
  if (!buf)
    return NULL;
  for (;;) {
    if (stat(buf, &sb) != 0) {
      why = wf__asprintf("refused: cannot check %s: %s", buf, strerror(errno));
      break;
    }
    what = S_ISDIR(sb.st_mode) ? "directory" : "file";
    if (!trusted_owner(&sb)) {
      why = wf__asprintf("refused: the %s %s is owned by uid %u, neither "
                         "root nor this user",
                         what, buf, (unsigned)sb.st_uid);
      break;
    }
    if (writable_by_others(&sb)) {
      why = wf__asprintf("refused: the %s %s is writable by others "
                         "(mode %04o)",
                         what, buf, (unsigned)(sb.st_mode & 07777));
      break;
    }
    n = strlen(buf);
    if (n == 1) { /* "/" passed too */
      bad = 0;
      break;
    }
    while (n > 1 && buf[n - 1] != '/')
      n--;
    buf[n > 1 ? n - 1 : 1] = 0; /* the parent; "/" for "/x" */
  }
  wf__free(buf);
  *no_mem = bad && why == NULL;
  return why;
}

/* The reason a plugin at path may not be opened because others could have
 * put it there or could replace it, or NULL (*no_mem set when out of
 * memory). Both the path as given (its directories may hold links) and the
 * resolved path real are judged, the file and every directory above it. */
static char *unsafe_plugin_path(const char *path, const char *real,
                                int *no_mem) {
  char *given = NULL, *why = NULL;

  if (path[0] != '/') {
    char *cwd = getcwd(NULL, 0);
    if (!cwd) {
      why = wf__asprintf("refused: cannot resolve the current directory: %s",
                         strerror(errno));
      *no_mem = why == NULL;
      return why;
    }
    given = wf__asprintf("%s/%s", cwd, path);
    free(cwd);
    if (!given) {
      *no_mem = 1;
      return NULL;
    }
    path = given;
  }
  why = unsafe_chain(path, no_mem);
  if (!why && !*no_mem && strcmp(path, real) != 0)
    why = unsafe_chain(real, no_mem);
  wf__free(given);
  return why;
}

/* Hands a description to wf__runtime_add_plugin (which takes dl) and
 * applies strict mode to a refusal. */
static int add(loader *L, const wf_plugin_desc *desc, const char *path,
               wf__dl *dl) {
  wf_status ast = {WF_OK, NULL};
  int code = wf__runtime_add_plugin(L->rt, desc, path, dl, &ast);
  if (code == WF_RESOURCE_EXHAUSTED)
    wf_status_set(L->st, code, "%s", wf_status_message(&ast));
  else if (code)
    code = after_refusal(L, wf_status_message(&ast));
  wf_status_reset(&ast);
  return code;
}

/* 1 when the module at path is one of the plugins shipped with weft: one
 * linked into libweft, or a module with the file name of one of weft's own
 * (ops_math.so, ...), wherever it was found (the installed directory, the
 * build tree, or a path that lists them). */
static int is_shipped(const char *path) {
  const char *base = strrchr(path, '/'), *hit;
  size_t n;

  if (strcmp(path, PRELOADED) == 0)
    return 1;
  base = base ? base + 1 : path;
  n = strlen(base);
  if (n == 0)
    return 0;
  for (hit = strstr(WF_SHIPPED_MODULES, base); hit;
       hit = strstr(hit + 1, base))
    if (hit[-1] == ':' && hit[n] == ':')
      return 1;
  return 0;
}

static candidate *find_candidate(loader *L, const char *name) {
  for (int i = 0; i < L->num_cands; i++)
    if (!L->cands[i].skipped && strcmp(L->cands[i].name, name) == 0)
      return &L->cands[i];
  return NULL;
}

/* Asks the open module dl (from path) for its description and keeps it as
 * a candidate, or records why not. Takes dl. */
static int consider(loader *L, const char *path, wf__dl *dl) {
  char *why = NULL, *err = NULL;
  wf_plugin_entry_fn *entry;
  const wf_plugin_desc *desc;
  candidate *c;
  int code = WF_OK;
  void *sym;

  sym = wf__dl_sym(dl, WF_PLUGIN_ENTRY_NAME, &err);
  if (!sym) {
    why = wf__asprintf("no entry point '%s' (%s)", WF_PLUGIN_ENTRY_NAME,
                       err ? err : "symbol not found");
    code = why ? refuse(L, NULL, path, -1, -1, WF_PLUGIN_REFUSED, why)
               : oom(L, path);
    goto out;
  }
  entry = (wf_plugin_entry_fn *)sym;
  desc = entry();

  /* A description that cannot be read as ours is refused by the same code
   * that refuses in-process ones. */
  if (!desc || desc->struct_size < DESC_MIN_SIZE ||
      desc->abi_major != WF_ABI_MAJOR || !desc->name || !*desc->name) {
    code = add(L, desc, path, dl);
    dl = NULL;
    goto out;
  }

  /* The first plugin of a name wins; later ones are shadowed. The build
   * tree's module of a plugin linked into this libweft is that plugin, not
   * worth a record. */
  c = find_candidate(L, desc->name);
  if (c && L->in_tree && strcmp(c->path, PRELOADED) == 0)
    goto out;
  if (c || wf__runtime_find_loaded(L->rt, desc->name)) {
    why = wf__asprintf("shadowed by %s",
                       c ? c->path
                         : wf__runtime_find_loaded(L->rt, desc->name)->path);
    /* Recorded, but not a failure even when strict: the plugin of that name
     * is loaded (from the earlier path). */
    char *reason = why ? wf__asprintf("%s: %s", path, why) : NULL;
    code = reason ? wf__runtime_record(L->rt, desc->name, path,
                                       desc->abi_major, desc->abi_minor,
                                       WF_PLUGIN_REFUSED, reason, L->st)
                  : oom(L, path);
    wf__free(reason);
    goto out;
  }

  if (L->num_cands == L->cap_cands) {
    int cap = L->cap_cands ? 2 * L->cap_cands : 16;
    candidate *grown = wf__realloc(L->cands, (size_t)cap * sizeof *grown);
    if (!grown) {
      code = oom(L, path);
      goto out;
    }
    L->cands = grown;
    L->cap_cands = cap;
  }
  c = &L->cands[L->num_cands];
  memset(c, 0, sizeof *c);
  c->path = wf__strdup(path);
  c->name = wf__strdup(desc->name);
  if (!c->path || !c->name) {
    wf__free(c->path);
    wf__free(c->name);
    code = oom(L, path);
    goto out;
  }
  c->dl = dl;
  dl = NULL;
  c->desc = desc;
  c->shipped = is_shipped(path);
  L->num_cands++;

out:
  wf__dl_close(dl);
  wf__free(err);
  wf__free(why);
  return code;
}

/* Opens the module at path, asks it for its description and keeps it as a
 * candidate, or records why not. */
static int probe(loader *L, const char *path) {
  char *real = NULL, *why = NULL, *err = NULL;
  wf__dl *dl = NULL;
  int code = WF_OK, no_mem;

  real = realpath(path, NULL);
  if (!real) {
    why = wf__asprintf("cannot resolve the path: %s", strerror(errno));
    code = why ? refuse(L, NULL, path, -1, -1, WF_PLUGIN_REFUSED, why)
               : oom(L, path);
    goto out;
  }
  /* The same file reached twice (a directory listed twice, a link) is
   * looked at once. */
  if (wf__strlist_has(&L->seen, real))
    goto out;
  {
    char **grown =
        wf__realloc(L->seen.items, (size_t)(L->seen.n + 1) * sizeof *grown);
    char *copy = wf__strdup(real);
    if (grown)
      L->seen.items = grown;
    if (!grown || !copy) {
      wf__free(copy);
      code = oom(L, path);
      goto out;
    }
    L->seen.items[L->seen.n++] = copy;
  }

  why = unsafe_plugin_path(path, real, &no_mem);
  if (no_mem) {
    code = oom(L, path);
    goto out;
  }
  if (why) {
    code = refuse(L, NULL, path, -1, -1, WF_PLUGIN_REFUSED, why);
    goto out;
  }

  dl = wf__dl_open(path, &err);
  if (!dl) {
    /* No reason means out of memory: that fails the runtime, it does not
     * refuse a good plugin. */
    why = err ? wf__asprintf("not a loadable object: %s", err) : NULL;
    code = why ? refuse(L, NULL, path, -1, -1, WF_PLUGIN_REFUSED, why)
               : oom(L, path);
    goto out;
  }
  code = consider(L, path, dl);

out:
  wf__free(err);
  wf__free(why);
  free(real);
  return code;
}

/* Takes the plugins linked into libweft (--enable-static-plugins) as
 * candidates, ahead of every file: a file of the same name is shadowed. */
static int collect_linked_in(loader *L) {
  wf__dl **dls = NULL;
  char *err = NULL;
  int n = 0, code = WF_OK;

  if (wf__dl_open_libweft_plugins(&dls, &n, &err)) {
    if (!err)
      return oom(L, PRELOADED);
    code = refuse(L, NULL, PRELOADED, -1, -1, WF_PLUGIN_REFUSED, err);
    wf__free(err);
    return code;
  }
  for (int i = 0; i < n; i++) {
    if (code)
      wf__dl_close(dls[i]);
    else
      code = consider(L, PRELOADED, dls[i]);
  }
  wf__free(dls);
  return code;
}

/* ---- directories -------------------------------------------------------- */

static int name_cmp(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static int ends_with_so(const char *name) {
  size_t n = strlen(name);
  return n > 3 && name[0] != '.' && strcmp(name + n - 3, ".so") == 0;
}

/* Probes every "*.so" file in dir, in name order. */
static int scan_dir(loader *L, const char *dir) {
  DIR *d = opendir(dir);
  struct dirent *e;
  char **names = NULL;
  int n = 0, cap = 0, code = WF_OK, i;

  if (!d) {
    wf__log(WF_LOG_WARNING, "loader", "cannot read plugin directory %s: %s",
            dir, strerror(errno));
    return WF_OK;
  }
  while ((e = readdir(d)) != NULL) {
    if (!ends_with_so(e->d_name))
      continue;
    if (n == cap) {
      char **grown;
      cap = cap ? 2 * cap : 32;
      grown = wf__realloc(names, (size_t)cap * sizeof *grown);
      if (!grown) {
        code = oom(L, dir);
        goto out;
      }
      names = grown;
    }
    names[n] = wf__asprintf("%s/%s", dir, e->d_name);
    if (!names[n]) {
      code = oom(L, dir);
      goto out;
    }
    n++;
  }
  if (n > 1)
    qsort(names, (size_t)n, sizeof *names, name_cmp);
  for (i = 0; i < n && !code; i++) {
    struct stat sb;
    if (stat(names[i], &sb) != 0 || !S_ISREG(sb.st_mode))
      continue;
    code = probe(L, names[i]);
  }

out:
  for (i = 0; i < n; i++)
    wf__free(names[i]);
  wf__free(names);
  closedir(d);
  return code;
}

/* Searches one entry of the search path: a plugin file or a directory of
 * them. from: where the entry came from, for messages; must_exist: a
 * missing entry is worth a warning (strict: an error). */
static int search(loader *L, const char *path, const char *from,
                  int must_exist) {
  struct stat sb;

  if (stat(path, &sb) != 0) {
    if (!must_exist) {
      wf__log(WF_LOG_DEBUG, "loader", "plugin path %s (%s): %s", path, from,
              strerror(errno));
      return WF_OK;
    }
    if (L->cfg->plugin_strict)
      return wf_status_set(L->st, WF_NOT_FOUND,
                           "plugin path %s (%s) does not exist", path, from);
    wf__log(WF_LOG_WARNING, "loader", "plugin path %s (%s): %s", path, from,
            strerror(errno));
    return WF_OK;
  }
  if (S_ISDIR(sb.st_mode))
    return scan_dir(L, path);
  return probe(L, path);
}

/* Searches each entry of a colon-separated list. */
static int search_list(loader *L, const char *list, const char *from) {
  const char *p = list;
  int code = WF_OK;
  while (*p && !code) {
    const char *end = strchr(p, ':');
    size_t n = end ? (size_t)(end - p) : strlen(p);
    if (n > 0) {
      char *entry = wf__strndup(p, n);
      if (!entry)
        return oom(L, from);
      code = search(L, entry, from, 0);
      wf__free(entry);
    }
    p += n;
    if (*p == ':')
      p++;
  }
  return code;
}

static int collect(loader *L) {
  const char *env;
  int code = collect_linked_in(L);

  for (int i = 0; i < L->cfg->plugin_paths.n && !code; i++)
    code = search(L, L->cfg->plugin_paths.items[i], "from the config", 1);
  if (!code && L->cfg->plugin_env_path && (env = getenv("WEFT_PLUGIN_PATH")))
    code = search_list(L, env, "from WEFT_PLUGIN_PATH");
  if (!code && L->cfg->plugin_default_dir) {
    if (in_build_tree()) {
      L->in_tree = 1;
      code = search_list(L, WF_UNINSTALLED_PLUGIN_PATH,
                         "in-tree plugins of the build tree");
      L->in_tree = 0;
    }
    if (!code)
      code = search(L, WF_PLUGIN_DIR, "installed plugin directory", 0);
  }
  return code;
}

/* ---- the config's lists ------------------------------------------------- */

static int apply_lists(loader *L) {
  const wf_config *cfg = L->cfg;
  int code = WF_OK;

  for (int i = 0; i < L->num_cands && !code; i++) {
    candidate *c = &L->cands[i];
    char *why = NULL;
    if (wf__strlist_has(&cfg->plugin_deny, c->name))
      why = cfg->plugin_deny_from
                ? wf__asprintf("denied by config %s", cfg->plugin_deny_from)
                : wf__strdup("denied by config (set by the program)");
    else if (cfg->plugin_load.n > 0 &&
             !wf__strlist_has(&cfg->plugin_load, c->name))
      why = cfg->plugin_load_from
                ? wf__asprintf("not in the load list of config %s",
                               cfg->plugin_load_from)
                : wf__strdup("not in the config's load list (set by the "
                             "program)");
    else
      continue;
    if (!why)
      return oom(L, c->path);
    c->skipped = 1;
    /* The record keeps the reason without the path: the path is listed
     * beside it and a denial is no error in the file. */
    code = wf__runtime_record(L->rt, c->name, c->path, c->desc->abi_major,
                              c->desc->abi_minor, WF_PLUGIN_DENIED, why, L->st);
    wf__free(why);
    wf__dl_close(c->dl);
    c->dl = NULL;
  }
  return code;
}

/* ---- dependency order --------------------------------------------------- */

/* Marks the candidates on the stack from `from` to the top as one cycle. */
static int mark_cycle(loader *L, int from, const char *closing) {
  size_t len = strlen(closing) + 32;
  char *msg, *p;
  for (int i = from; i < L->depth; i++)
    len += strlen(L->cands[L->stack[i]].name) + 4;
  msg = wf__alloc(len, 0);
  if (!msg)
    return oom(L, "dependency cycle");
  p = msg + sprintf(msg, "dependency cycle: ");
  for (int i = from; i < L->depth; i++)
    p += sprintf(p, "%s -> ", L->cands[L->stack[i]].name);
  sprintf(p, "%s", closing);
  for (int i = from; i < L->depth; i++) {
    candidate *c = &L->cands[L->stack[i]];
    if (!c->cycle && !(c->cycle = wf__strdup(msg))) {
      wf__free(msg);
      return oom(L, "dependency cycle");
    }
  }
  wf__free(msg);
  return WF_OK;
}

/* Registers candidate i after what it requires. */
static int visit(loader *L, int i) {
  candidate *c = &L->cands[i];
  int code = WF_OK;

  if (c->mark != UNSEEN)
    return WF_OK;
  c->mark = VISITING;
  L->stack[L->depth++] = i;
  for (int r = 0; c->desc->requires && c->desc->requires[r] && !code; r++) {
    const char *dep = c->desc->requires[r];
    candidate *d;
    if (wf__runtime_find_loaded(L->rt, dep) || !(d = find_candidate(L, dep)))
      continue; /* loaded already, or wf__runtime_add_plugin says why not */
    if (d->mark == VISITING) {
      int from = 0;
      while (L->stack[from] != (int)(d - L->cands))
        from++;
      code = mark_cycle(L, from, dep);
    } else {
      code = visit(L, (int)(d - L->cands));
    }
  }
  L->depth--;
  c->mark = DONE;
  if (code)
    return code;
  if (c->cycle) {
    code = refuse(L, c->name, c->path, c->desc->abi_major, c->desc->abi_minor,
                  WF_PLUGIN_REFUSED, c->cycle);
    wf__dl_close(c->dl);
    c->dl = NULL;
    return code;
  }
  code = add(L, c->desc, c->path, c->dl);
  c->dl = NULL;
  return code;
}

static int load_in_order(loader *L) {
  int code = WF_OK;
  if (L->num_cands == 0)
    return WF_OK;
  L->stack = wf__calloc((size_t)L->num_cands, sizeof *L->stack);
  if (!L->stack)
    return oom(L, "dependency order");
  /* weft's own plugins first: an op one of them defines is theirs, and a
   * third-party plugin that defines it differently is refused. */
  for (int pass = 0; pass < 2; pass++)
    for (int i = 0; i < L->num_cands && !code; i++)
      if (!L->cands[i].skipped && L->cands[i].shipped == !pass)
        code = visit(L, i);
  return code;
}

/* Names in the load list that no file provided are worth a warning. */
static void warn_unfound(const loader *L) {
  const wf_config *cfg = L->cfg;
  for (int i = 0; i < cfg->plugin_load.n; i++) {
    int found = 0;
    for (int j = 0; j < L->rt->num_plugins && !found; j++)
      found = strcmp(L->rt->plugins[j]->name, cfg->plugin_load.items[i]) == 0;
    if (!found)
      wf__log(WF_LOG_WARNING, "loader",
              "plugin '%s' is in the load list of config %s but no plugin "
              "file provides it",
              cfg->plugin_load.items[i],
              cfg->plugin_load_from ? cfg->plugin_load_from : "(program)");
  }
}

int wf__loader_load_all(wf_runtime *rt, wf_status *st) {
  loader L;
  int code;

  assert(rt && rt->cfg);
  memset(&L, 0, sizeof L);
  L.rt = rt;
  L.cfg = rt->cfg;
  L.st = st;
  code = collect(&L);
  if (!code)
    code = apply_lists(&L);
  if (!code)
    code = load_in_order(&L);
  if (!code)
    warn_unfound(&L);

  for (int i = 0; i < L.num_cands; i++) {
    wf__dl_close(L.cands[i].dl);
    wf__free(L.cands[i].path);
    wf__free(L.cands[i].name);
    wf__free(L.cands[i].cycle);
  }
  wf__free(L.cands);
  wf__free(L.stack);
  for (int i = 0; i < L.seen.n; i++)
    wf__free(L.seen.items[i]);
  wf__free(L.seen.items);
  return code;
}
