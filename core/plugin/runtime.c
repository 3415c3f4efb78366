/* core/plugin/runtime.c — the runtime: creating and freeing it, taking one plugin
 * description in (ABI check, init, registration), enumerating device
 * instances, and everything runtime.h lets a tool ask about it.
 *
 * Finding plugin files is core/plugin/loader.c's job; what plugins register is
 * kept by core/plugin/registry.c. */
#include <config.h>

#include "plugin/runtime_internal.h"
#include "base/threadpool.h"
#include <stdatomic.h>

#include <assert.h>
#include <stdio.h>
#include <string.h>

#include "base/alloc.h"
#include "graph/graph_internal.h"
#include "plugin/dl.h"
#include "base/log.h"
#include "base/status_internal.h"

/* A description must at least hold its header and its name to be read. */
#define DESC_MIN_SIZE                                                          \
  (offsetof(wf_plugin_desc, name) + sizeof(((wf_plugin_desc *)0)->name))

/* Device instances asked of one device type at most. */
#define MAX_DEVICES_PER_TYPE 64

/* ---- plugin records ----------------------------------------------------- */

/* The file name of path without directory and ".so"/".la": the name shown
 * for a plugin whose own name could not be read. */
static char *name_from_path(const char *path) {
  const char *base = strrchr(path, '/');
  size_t n;
  base = base ? base + 1 : path;
  n = strlen(base);
  if (n > 3 &&
      (strcmp(base + n - 3, ".so") == 0 || strcmp(base + n - 3, ".la") == 0))
    n -= 3;
  return wf__strndup(base, n);
}

static void record_free(wf__plugin *p) {
  if (!p)
    return;
  wf__dl_close(p->dl);
  wf__free(p->name);
  wf__free(p->path);
  wf__free(p->reason);
  wf__free(p);
}

/* Appends a record for the plugin at path (name NULL: from the path).
 * Returns it, or NULL when out of memory (rt unchanged). */
static wf__plugin *record_add(wf_runtime *rt, const char *name,
                              const char *path) {
  wf__plugin *p = wf__calloc(1, sizeof *p), **grown;
  if (!p)
    return NULL;
  p->name = name ? wf__strdup(name) : name_from_path(path);
  p->path = wf__strdup(path);
  p->abi_major = p->abi_minor = -1;
  if (!p->name || !p->path)
    goto fail;
  grown =
      wf__realloc(rt->plugins, (size_t)(rt->num_plugins + 1) * sizeof *grown);
  if (!grown)
    goto fail;
  rt->plugins = grown;
  rt->plugins[rt->num_plugins++] = p;
  return p;

fail:
  record_free(p);
  return NULL;
}

int wf__runtime_record(wf_runtime *rt, const char *name, const char *path,
                       int abi_major, int abi_minor, wf_plugin_state state,
                       const char *reason, wf_status *st) {
  wf__plugin *p;

  assert(rt && path && reason && state != WF_PLUGIN_LOADED);
  p = record_add(rt, name, path);
  if (!p || !(p->reason = wf__strdup(reason))) {
    if (p) {
      rt->num_plugins--;
      record_free(p);
    }
    return wf_status_set(st, WF_RESOURCE_EXHAUSTED,
                         "out of memory recording plugin %s", path);
  }
  p->abi_major = abi_major;
  p->abi_minor = abi_minor;
  p->load_state = state;
  wf__log(state == WF_PLUGIN_DENIED ? WF_LOG_INFO : WF_LOG_WARNING, "loader",
          "plugin '%s' %s: %s", p->name,
          state == WF_PLUGIN_DENIED ? "skipped" : "refused", reason);
  return WF_OK;
}

const wf__plugin *wf__runtime_find_loaded(const wf_runtime *rt,
                                          const char *name) {
  for (int i = 0; i < rt->num_plugins; i++)
    if (rt->plugins[i]->load_state == WF_PLUGIN_LOADED &&
        strcmp(rt->plugins[i]->name, name) == 0)
      return rt->plugins[i];
  return NULL;
}

/* Latest record of a plugin called name in any state, or NULL. */
static const wf__plugin *find_record(const wf_runtime *rt, const char *name) {
  for (int i = rt->num_plugins - 1; i >= 0; i--)
    if (strcmp(rt->plugins[i]->name, name) == 0)
      return rt->plugins[i];
  return NULL;
}

static int count_ptrs(const void *const *p) {
  int n = 0;
  if (p)
    while (p[n])
      n++;
  return n;
}

/* Checks that every plugin desc requires is loaded; *why gets a new
 * message when one is not (NULL when out of memory). */
static int requires_loaded(const wf_runtime *rt, const wf_plugin_desc *desc,
                           char **why) {
  for (int i = 0; desc->requires && desc->requires[i]; i++) {
    const char *dep = desc->requires[i];
    const wf__plugin *rec;
    if (wf__runtime_find_loaded(rt, dep))
      continue;
    rec = find_record(rt, dep);
    if (!rec)
      *why = wf__asprintf("requires plugin '%s', which was not found", dep);
    else if (rec->load_state == WF_PLUGIN_DENIED)
      *why = wf__asprintf("requires plugin '%s', which is not loaded (%s)", dep,
                          rec->reason);
    else
      *why = wf__asprintf("requires plugin '%s', which was refused", dep);
    return -1;
  }
  return 0;
}

/* Refuses plugin p: records the reason "PATH: why", releases what it holds
 * and sets st. Returns code. */
static int refuse(wf__plugin *p, int code, const char *why, wf_status *st) {
  char *reason = wf__asprintf("%s: %s", p->path, why ? why : "out of memory");
  if (p->initialised && p->desc.fini)
    p->desc.fini(p->state);
  p->initialised = 0;
  p->state = NULL;
  wf__dl_close(p->dl);
  p->dl = NULL;
  /* Nothing of the module may be read once it is closed. */
  p->raw = NULL;
  memset(&p->desc, 0, sizeof p->desc);
  p->load_state = WF_PLUGIN_REFUSED;
  wf__free(p->reason);
  p->reason = reason;
  wf__log(WF_LOG_WARNING, "loader", "plugin '%s' refused: %s", p->name,
          reason ? reason : why);
  if (!reason)
    return wf_status_set(st, WF_RESOURCE_EXHAUSTED,
                         "out of memory refusing plugin %s", p->path);
  return wf_status_set(st, code, "%s", reason);
}

/* Records the transports p provides. Their structs are read only as far
 * as their size says; a transport without the functions the core calls is
 * refused with the plugin. */
static int add_transports(wf_runtime *rt, const wf__plugin *p, wf_status *st) {
  int n = count_ptrs((const void *const *)p->desc.transports);
  if (n == 0)
    return 0;
  wf__transport *grown = wf__realloc(
      rt->transports, (size_t)(rt->num_transports + n) * sizeof *grown);
  if (!grown)
    return wf_status_set(st, WF_RESOURCE_EXHAUSTED,
                         "out of memory adding the transports of plugin '%s'",
                         p->name);
  rt->transports = grown;
  for (int i = 0; i < n; i++) {
    const wf_transport_def *d = p->desc.transports[i];
    wf__transport *t = &rt->transports[rt->num_transports];
    memset(t, 0, sizeof *t);
    size_t size = d->struct_size < sizeof t->def ? d->struct_size
                                                 : sizeof t->def;
    memcpy(&t->def, d, size);
    t->def.struct_size = (uint32_t)sizeof t->def;
    if (!t->def.name || !t->def.open || !t->def.rank || !t->def.size ||
        !t->def.send || !t->def.recv || !t->def.cancel ||
        !t->def.silent_ms || !t->def.close)
      return wf_status_set(st, WF_INVALID_ARGUMENT,
                           "plugin '%s': transport %d lacks its name or one "
                           "of open, rank, size, send, recv, cancel, "
                           "silent_ms, close",
                           p->name, i);
    for (int j = 0; j < rt->num_transports; j++)
      if (strcmp(rt->transports[j].def.name, t->def.name) == 0)
        return wf_status_set(st, WF_ALREADY_EXISTS,
                             "transport '%s' is registered by plugin '%s' "
                             "and again by plugin '%s'",
                             t->def.name, rt->transports[j].plugin, p->name);
    t->plugin = p->name;
    t->plugin_state = p->state;
    rt->num_transports++;
  }
  return 0;
}

/* Records the importers p provides (as add_transports does). */
static int add_importers(wf_runtime *rt, const wf__plugin *p, wf_status *st) {
  int n = count_ptrs((const void *const *)p->desc.importers);
  if (n == 0)
    return 0;
  wf__importer *grown = wf__realloc(
      rt->importers, (size_t)(rt->num_importers + n) * sizeof *grown);
  if (!grown)
    return wf_status_set(st, WF_RESOURCE_EXHAUSTED,
                         "out of memory adding the importers of plugin '%s'",
                         p->name);
  rt->importers = grown;
  int had = rt->num_importers;
  for (int i = 0; i < n; i++) {
    const wf_importer_def *d = p->desc.importers[i];
    wf__importer *im = &rt->importers[rt->num_importers];
    memset(im, 0, sizeof *im);
    size_t size = d->struct_size < sizeof im->def ? d->struct_size
                                                  : sizeof im->def;
    memcpy(&im->def, d, size);
    im->def.struct_size = (uint32_t)sizeof im->def;
    int bad = !im->def.name || !im->def.import;
    for (int j = 0; j < rt->num_importers && !bad; j++)
      if (strcmp(rt->importers[j].def.name, im->def.name) == 0) {
        rt->num_importers = had;
        return wf_status_set(st, WF_ALREADY_EXISTS,
                             "importer '%s' is registered by plugin '%s' and "
                             "again by plugin '%s'",
                             im->def.name, rt->importers[j].plugin, p->name);
      }
    if (bad) {
      rt->num_importers = had;
      return wf_status_set(st, WF_INVALID_ARGUMENT,
                           "plugin '%s': importer %d lacks its name or its "
                           "import function",
                           p->name, i);
    }
    im->plugin = p->name;
    rt->num_importers++;
  }
  return 0;
}

int wf__runtime_add_plugin(wf_runtime *rt, const wf_plugin_desc *desc,
                           const char *path, struct wf__dl *dl, wf_status *st) {
  wf_status ist = {WF_OK, NULL};
  const char *name = NULL;
  wf__plugin *p;
  char *why = NULL;
  uint32_t size = 0;
  int code;

  assert(rt);
  if (!path)
    path = "(preloaded)";
  /* The name is read only from a description whose ABI we can read. */
  if (desc) {
    size = desc->struct_size;
    if (size >= DESC_MIN_SIZE && desc->abi_major == WF_ABI_MAJOR &&
        desc->name && *desc->name)
      name = desc->name;
  }
  p = record_add(rt, name, path);
  if (!p) {
    wf__dl_close(dl);
    return wf_status_set(st, WF_RESOURCE_EXHAUSTED,
                         "out of memory adding plugin %s", path);
  }
  p->dl = dl;
  p->raw = desc;
  if (!desc)
    return refuse(p, WF_FAILED_PRECONDITION,
                  "the entry point returned no plugin description", st);
  if (size >= offsetof(wf_plugin_desc, abi_minor) + sizeof desc->abi_minor) {
    p->abi_major = desc->abi_major;
    p->abi_minor = desc->abi_minor;
  }
  if (size < DESC_MIN_SIZE) {
    why = wf__asprintf("plugin description struct_size %u is too small (at "
                       "least %zu)",
                       (unsigned)size, (size_t)DESC_MIN_SIZE);
    code = refuse(p, WF_FAILED_PRECONDITION, why, st);
    goto out;
  }
  if (desc->abi_major != WF_ABI_MAJOR) {
    why = wf__asprintf("built for plugin ABI %u.%u, this weft has %d.%d",
                       (unsigned)desc->abi_major, (unsigned)desc->abi_minor,
                       WF_ABI_MAJOR, WF_ABI_MINOR);
    code = refuse(p, WF_FAILED_PRECONDITION, why, st);
    goto out;
  }
  /* Normalise: members a smaller (older) description lacks read as zero;
   * members of a newer minor are ignored. */
  memset(&p->desc, 0, sizeof p->desc);
  memcpy(&p->desc, desc, size < sizeof p->desc ? size : sizeof p->desc);
  p->desc.struct_size = (uint32_t)sizeof p->desc;
  p->desc.abi_major = WF_ABI_MAJOR;
  p->desc.abi_minor = WF_ABI_MINOR;
  p->abi_capped = desc->abi_minor > WF_ABI_MINOR;
  if (!name) {
    code = refuse(p, WF_FAILED_PRECONDITION,
                  "the plugin description has no name", st);
    goto out;
  }
  {
    const wf__plugin *other = NULL;
    for (int i = 0; i < rt->num_plugins - 1 && !other; i++)
      if (rt->plugins[i]->load_state == WF_PLUGIN_LOADED &&
          strcmp(rt->plugins[i]->name, name) == 0)
        other = rt->plugins[i];
    if (other) {
      why = wf__asprintf("a plugin named '%s' is already loaded from %s", name,
                         other->path);
      code = refuse(p, WF_ALREADY_EXISTS, why, st);
      goto out;
    }
  }
  if (requires_loaded(rt, &p->desc, &why)) {
    code = refuse(p, WF_FAILED_PRECONDITION, why, st);
    goto out;
  }

  if (p->desc.init) {
    if (p->desc.init(rt->host, &p->state, &ist)) {
      /* A failed init cleaned up after itself: no fini is owed. */
      p->state = NULL;
      if (ist.code != WF_OK)
        why = wf__asprintf("init failed: %s", wf_status_message(&ist));
      else
        why = wf__asprintf("init failed without a message");
      code = refuse(p, ist.code != WF_OK ? ist.code : WF_FAILED_PRECONDITION,
                    why, st);
      goto out;
    }
    p->initialised = 1;
  }
  int had_transports = rt->num_transports;
  int had_importers = rt->num_importers;
  if (add_transports(rt, p, &ist) || add_importers(rt, p, &ist) ||
      wf__registry_add(rt->reg, p->name, p->state, &p->desc, &ist)) {
    rt->num_transports = had_transports;
    rt->num_importers = had_importers;
    why = wf__strdup(wf_status_message(&ist));
    code = refuse(p, ist.code, why, st);
    goto out;
  }
  p->num_ops = count_ptrs((const void *const *)p->desc.ops);
  p->num_kernels = count_ptrs((const void *const *)p->desc.kernels);
  p->num_gradients = count_ptrs((const void *const *)p->desc.gradients);
  p->num_devices = count_ptrs((const void *const *)p->desc.devices);
  p->num_readers = count_ptrs((const void *const *)p->desc.readers);
  p->num_passes = count_ptrs((const void *const *)p->desc.passes);
  p->num_transports = rt->num_transports - had_transports;
  p->num_importers = rt->num_importers - had_importers;
  p->load_state = WF_PLUGIN_LOADED;
  wf__log(WF_LOG_INFO, "loader", "loaded plugin '%s' %s from %s%s", p->name,
          p->desc.version ? p->desc.version : "", p->path,
          p->abi_capped ? " (built for a newer ABI minor: capped)" : "");
  code = WF_OK;

out:
  wf__free(why);
  wf_status_reset(&ist);
  return code;
}

/* ---- creating and freeing ----------------------------------------------- */

wf_runtime *wf__runtime_alloc(const wf_config *cfg, const wf_host *host,
                              wf_status *st) {
  wf_runtime *rt = wf__calloc(1, sizeof *rt);
  if (!rt)
    goto oom;
  rt->host = host;
  rt->cfg = cfg ? wf__config_copy(cfg) : wf_config_new();
  rt->reg = wf__registry_new();
  if (!rt->cfg || !rt->reg)
    goto oom;
  return rt;

oom:
  wf_runtime_free(rt);
  wf_status_set(st, WF_RESOURCE_EXHAUSTED, "out of memory creating a runtime");
  return NULL;
}

/* The config plugins read through host->config_int while this thread
 * creates a runtime (their init and device enumeration run inside it). */
static _Thread_local const wf_config *creating;

void wf__runtime_set_creating(const wf_runtime *rt) {
  creating = rt ? rt->cfg : NULL;
}

int64_t wf__host_config_int(const char *section, const char *key) {
  int64_t v;
  if (!creating || wf__config_int(creating, section, key, &v))
    return -1;
  return v;
}

void wf_runtime_free(wf_runtime *rt) {
  if (!rt)
    return;
  /* A client tells its workers the job is over while plugins (the
   * transport) are still loaded. */
  if (rt->job)
    rt->job->leave(rt);
  wf__free(rt->transports);
  wf__free(rt->importers);
  wf__free(rt->devices);
  /* The registry borrows from the plugins: it goes first, then each plugin
   * is finalised (in reverse load order) and its module closed. */
  if (rt->reg)
    wf__registry_free(rt->reg);
  for (int i = rt->num_plugins - 1; i >= 0; i--) {
    wf__plugin *p = rt->plugins[i];
    if (p->initialised && p->desc.fini)
      p->desc.fini(p->state);
  }
  for (int i = rt->num_plugins - 1; i >= 0; i--)
    record_free(rt->plugins[i]);
  wf__free(rt->plugins);
  wf_config_free(rt->cfg);
  wf__free(rt);
}

const char *wf_version(void) { return PACKAGE_VERSION; }

static const wf__op *find_registered_op(const void *reg, const char *name) {
  return wf__registry_find_op(reg, name);
}

wf_graph *wf_graph_new(wf_runtime *rt) {
  assert(rt);
  return wf__graph_new(rt, find_registered_op, rt->reg);
}

/* ---- devices ------------------------------------------------------------ */

/* Appends the instances of device type t to rt->devices. A type whose
 * enumerate fails is reported and skipped, unless the config is strict. */
static int enumerate_type(wf_runtime *rt, const wf__device_type *t,
                          wf_device_desc *buf, wf_status *st) {
  wf_status est = {WF_OK, NULL};
  wf__device *grown;
  int n, i, code = WF_OK;
  const char *problem = NULL;

  for (i = 0; i < MAX_DEVICES_PER_TYPE; i++) {
    memset(&buf[i], 0, sizeof buf[i]);
    buf[i].struct_size = (uint32_t)sizeof buf[i];
    buf[i].abi_major = WF_ABI_MAJOR;
    buf[i].abi_minor = WF_ABI_MINOR;
  }
  n = t->def.enumerate(t->plugin_state, buf, MAX_DEVICES_PER_TYPE, &est);
  if (n < 0)
    problem = est.code != WF_OK ? wf_status_message(&est)
                                : "it failed without a message";
  else if (n > MAX_DEVICES_PER_TYPE)
    problem = "it reported more instances than it was given room for";
  if (problem) {
    /* Out of memory fails the runtime: a device type is not silently
     * left out because memory was short for a moment. */
    if (n < 0 && est.code == WF_RESOURCE_EXHAUSTED)
      code = wf_status_set(st, WF_RESOURCE_EXHAUSTED,
                           "device type '%s' of plugin '%s': listing its "
                           "devices: %s",
                           t->def.type, t->plugin, problem);
    else if (rt->cfg->plugin_strict)
      code = wf_status_set(st, WF_FAILED_PRECONDITION,
                           "device type '%s' of plugin '%s': listing its "
                           "devices failed: %s",
                           t->def.type, t->plugin, problem);
    else
      wf__log(WF_LOG_WARNING, "runtime",
              "device type '%s' of plugin '%s': listing its devices failed: "
              "%s; it has no devices",
              t->def.type, t->plugin, problem);
    wf_status_reset(&est);
    return code;
  }
  wf_status_reset(&est);
  if (n == 0)
    return WF_OK;
  grown =
      wf__realloc(rt->devices, (size_t)(rt->num_devices + n) * sizeof *grown);
  if (!grown)
    return wf_status_set(st, WF_RESOURCE_EXHAUSTED,
                         "out of memory listing devices of type '%s'",
                         t->def.type);
  rt->devices = grown;
  for (i = 0; i < n; i++) {
    wf__device *d = &rt->devices[rt->num_devices++];
    d->desc = buf[i];
    /* The plugin's strings are used as C strings: make sure they end. */
    d->desc.name[sizeof d->desc.name - 1] = '\0';
    d->desc.description[sizeof d->desc.description - 1] = '\0';
    d->desc.reason[sizeof d->desc.reason - 1] = '\0';
    d->type = t;
    d->plugin = t->plugin;
  }
  return WF_OK;
}

int wf__runtime_enumerate_devices(wf_runtime *rt, wf_status *st) {
  const wf__registry *r = rt->reg;
  int ntypes = wf__registry_device_type_count(r), code = WF_OK;
  wf_device_desc *buf = NULL;
  char *done = NULL;

  wf__free(rt->devices);
  rt->devices = NULL;
  rt->num_devices = 0;
  if (ntypes == 0)
    return WF_OK;
  buf = wf__calloc(MAX_DEVICES_PER_TYPE, sizeof *buf);
  done = wf__calloc((size_t)ntypes, 1);
  if (!buf || !done) {
    code = wf_status_set(st, WF_RESOURCE_EXHAUSTED,
                         "out of memory listing devices");
    goto out;
  }
  /* The config's preferred types first, in its order; then the rest in
   * registration order. */
  for (int o = 0; o <= rt->cfg->device_order.n; o++) {
    for (int i = 0; i < ntypes; i++) {
      const wf__device_type *t = wf__registry_device_type_at(r, i);
      if (done[i])
        continue;
      if (o < rt->cfg->device_order.n &&
          strcmp(t->def.type, rt->cfg->device_order.items[o]) != 0)
        continue;
      done[i] = 1;
      code = enumerate_type(rt, t, buf, st);
      if (code)
        goto out;
    }
  }

out:
  wf__free(buf);
  wf__free(done);
  return code;
}

/* ---- introspection ------------------------------------------------------ */

int wf_runtime_plugin_count(const wf_runtime *rt) { return rt->num_plugins; }

void wf_runtime_plugin_get(const wf_runtime *rt, int i,
                           wf_plugin_info *caller) {
  const wf__plugin *p;
  wf_plugin_info full, *out = &full;
  size_t size;
  int loaded;

  assert(i >= 0 && i < rt->num_plugins && caller);
  size = caller->struct_size;
  /* The first layout with struct_size ends with `requires`. */
  assert(size >= offsetof(wf_plugin_info, requires) + sizeof caller->requires);
  if (size > sizeof full)
    size = sizeof full;
  p = rt->plugins[i];
  loaded = p->load_state == WF_PLUGIN_LOADED;
  memset(out, 0, sizeof *out);
  out->struct_size = caller->struct_size;
  out->name = p->name;
  out->path = p->path;
  out->version = loaded ? p->desc.version : NULL;
  out->license = loaded ? p->desc.license : NULL;
  out->description = loaded ? p->desc.description : NULL;
  out->abi_major = p->abi_major;
  out->abi_minor = p->abi_minor;
  out->abi_capped = p->abi_capped;
  out->state = p->load_state;
  out->reason = loaded ? NULL : p->reason;
  out->num_ops = p->num_ops;
  out->num_kernels = p->num_kernels;
  out->num_gradients = p->num_gradients;
  out->num_devices = p->num_devices;
  out->num_readers = p->num_readers;
  out->num_passes = p->num_passes;
  out->requires = loaded ? p->desc.requires : NULL;
  out->num_transports = p->num_transports;
  out->num_importers = p->num_importers;
  memcpy(caller, out, size);
}

int wf_runtime_op_count(const wf_runtime *rt) {
  return wf__registry_op_count(rt->reg);
}

const wf_op_def *wf_runtime_op_get(const wf_runtime *rt, int i) {
  assert(i >= 0 && i < wf__registry_op_count(rt->reg));
  return &wf__registry_op_at(rt->reg, i)->def;
}

const wf_op_def *wf_runtime_op_find(const wf_runtime *rt, const char *name) {
  const wf__op *op = wf__registry_find_op(rt->reg, name);
  return op ? &op->def : NULL;
}

const char *wf_runtime_op_plugin(const wf_runtime *rt, int i) {
  assert(i >= 0 && i < wf__registry_op_count(rt->reg));
  return wf__registry_op_at(rt->reg, i)->plugin;
}

int wf_runtime_op_gradient(const wf_runtime *rt, const char *op) {
  const wf__gradient *g = wf__registry_find_gradient(rt->reg, op);
  if (!g)
    return -1;
  return (g->def.flags & WF_GRAD_NOT_DIFFERENTIABLE) ? 0 : 1;
}

int wf_runtime_kernel_count(const wf_runtime *rt) {
  return wf__registry_kernel_count(rt->reg);
}

void wf_runtime_kernel_get(const wf_runtime *rt, int i, wf_kernel_info *out) {
  const wf__kernel *k;
  assert(i >= 0 && i < wf__registry_kernel_count(rt->reg) && out);
  k = wf__registry_kernel_at(rt->reg, i);
  out->op = k->def.op;
  out->device_type = k->def.device_type;
  out->label = k->def.label;
  out->plugin = k->plugin;
  out->type_attr = k->def.type_attr;
  out->dtypes = k->def.dtypes;
  out->priority = k->def.priority;
  out->flags = k->def.flags;
  if (k->def.supports)
    out->flags |= WF_KERNEL_SELECTIVE;
}

int wf_runtime_device_count(const wf_runtime *rt) { return rt->num_devices; }

void wf_runtime_device_get(const wf_runtime *rt, int i, wf_device_info *out) {
  const wf__device *d;
  assert(i >= 0 && i < rt->num_devices && out);
  d = &rt->devices[i];
  out->name = d->desc.name;
  out->type = d->type->def.type;
  out->plugin = d->plugin;
  out->description = d->desc.description;
  out->available = d->desc.available != 0;
  out->reason = d->desc.available ? NULL : d->desc.reason;
}

/* The split plugins see through the host table: set by the last runtime
 * created (plugins keep one process-wide library configuration). */
static _Atomic int32_t host_inter, host_intra;

void wf__threads(const wf_config *cfg, int32_t *inter_op, int32_t *intra_op) {
  int32_t cores = wf__num_cores();
  int32_t intra = cfg && cfg->intra_op > 0 ? cfg->intra_op : 0;
  int32_t inter = cfg && cfg->inter_op > 0 ? cfg->inter_op : 0;
  if (!intra)
    intra = inter ? (cores / inter > 0 ? cores / inter : 1) : cores;
  if (!inter)
    inter = cores / intra > 0 ? cores / intra : 1;
  *inter_op = inter;
  *intra_op = intra;
}

void wf__host_threads(int32_t *inter_op, int32_t *intra_op) {
  int32_t inter = atomic_load(&host_inter), intra = atomic_load(&host_intra);
  if (!inter || !intra)
    wf__threads(NULL, &inter, &intra);
  *inter_op = inter;
  *intra_op = intra;
}

void wf__runtime_publish_threads(const wf_config *cfg) {
  int32_t inter, intra;
  wf__threads(cfg, &inter, &intra);
  atomic_store(&host_inter, inter);
  atomic_store(&host_intra, intra);
}
