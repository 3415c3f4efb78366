/* weft/runtime.h — configuration, the runtime (registries plus loaded
 * plugins) and what it can tell about itself.
 *
 * A runtime is created from a config, loads the plugins the config allows and
 * owns everything they registered. Graphs and sessions are made from a
 * runtime and must be freed before it. */
#ifndef WEFT_RUNTIME_H
#define WEFT_RUNTIME_H

#include <weft/export.h>
#include <weft/plugin.h>
#include <weft/types.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct wf_config wf_config;
typedef struct wf_runtime wf_runtime;

/* ---- config ------------------------------------------------------------ */

/* A config holding the defaults. Owned by the caller. NULL when out of
 * memory. */
WF_API wf_config *wf_config_new(void);
WF_API void wf_config_free(wf_config *cfg);
/* Reads an INI file into cfg (later values override earlier ones). Unknown
 * sections or keys and bad values are INVALID_ARGUMENT naming file and line;
 * a missing file is NOT_FOUND. cfg is unchanged on error. */
WF_API int wf_config_load(wf_config *cfg, const char *path, wf_status *st);
/* Sets one key as if read from a file ("plugins", "strict", "true"). */
WF_API int wf_config_set(wf_config *cfg, const char *section, const char *key,
                         const char *value, wf_status *st);
/* The file a program should load when the user named none: $WEFT_CONFIG if
 * set, else the installed default if it exists, else NULL. Borrowed:
 * valid until the environment changes. */
WF_API const char *wf_config_default_path(void);
/* The directory of installed plugins compiled into libweft. */
WF_API const char *wf_config_plugin_dir(void);

/* ---- runtime ----------------------------------------------------------- */

/* Creates a runtime: finds plugins in the config's paths, then
 * $WEFT_PLUGIN_PATH (colon-separated), then the installed plugin directory,
 * and loads them. cfg may be NULL for the defaults; it is copied. A plugin
 * that cannot be loaded is skipped and listed with its reason, unless the
 * config says `strict`, in which case this fails naming the plugin. The
 * op sets built into the core (plugins "core", "core-data", ...; listed
 * with path "(built in)") are always loaded, whatever a load list says;
 * a config whose deny list names one is refused (INVALID_ARGUMENT naming
 * it and the config file). */
WF_API wf_runtime *wf_runtime_new(const wf_config *cfg, wf_status *st);
WF_API void wf_runtime_free(wf_runtime *rt);

/* libweft's version string ("0.1.0"). */
WF_API const char *wf_version(void);

/* ---- introspection (for tools; all strings borrowed from the runtime) --- */

typedef enum wf_plugin_state {
  WF_PLUGIN_LOADED = 0,
  WF_PLUGIN_REFUSED = 1, /* failed to load: see reason */
  WF_PLUGIN_DENIED = 2   /* skipped because the config says so */
} wf_plugin_state;

/* A plugin as the runtime found it. The caller sets struct_size (use
 * WF_PLUGIN_INFO_INIT); members the size does not cover are left alone,
 * so the struct can grow at its end. */
typedef struct wf_plugin_info {
  uint32_t struct_size; /* sizeof(wf_plugin_info) as the caller knows it */
  const char *name;    /* from the plugin, or the file name if unknown */
  const char *path;    /* the file it came from; "(preloaded)" if static */
  const char *version; /* NULL if unknown */
  const char *license;
  const char *description;
  int abi_major, abi_minor; /* as built; -1 if unknown */
  int abi_capped;           /* built for a newer minor; read as ours */
  wf_plugin_state state;
  const char *reason;       /* why refused or denied; NULL if loaded */
  int num_ops, num_kernels, num_gradients, num_devices, num_readers,
      num_passes;
  const char *const *requires; /* NULL-terminated, or NULL */
  int num_transports, num_importers; /* what else it registers */
} wf_plugin_info;

#define WF_PLUGIN_INFO_INIT                                                    \
  { .struct_size = (uint32_t)sizeof(wf_plugin_info) }

WF_API int wf_runtime_plugin_count(const wf_runtime *rt);
/* Fills *out for plugin i (0 <= i < count), as far as out->struct_size
 * reaches (it must cover at least the members up to `requires`). */
WF_API void wf_runtime_plugin_get(const wf_runtime *rt, int i,
                                  wf_plugin_info *out);

/* Registered ops, sorted by name. The definition is the core's normalised
 * copy in this header's layout; valid until the runtime is freed. */
WF_API int wf_runtime_op_count(const wf_runtime *rt);
WF_API const wf_op_def *wf_runtime_op_get(const wf_runtime *rt, int i);
WF_API const wf_op_def *wf_runtime_op_find(const wf_runtime *rt,
                                           const char *name);
/* Name of the plugin that registered op i. */
WF_API const char *wf_runtime_op_plugin(const wf_runtime *rt, int i);
/* Gradient state of an op: 1 has a gradient function, 0 registered as not
 * differentiable, -1 nothing registered. */
WF_API int wf_runtime_op_gradient(const wf_runtime *rt, const char *op);

typedef struct wf_kernel_info {
  const char *op;
  const char *device_type;
  const char *label;
  const char *plugin;
  const char *type_attr;
  uint32_t dtypes;
  int priority;
  uint32_t flags; /* the kernel's WF_KERNEL_* flags, and WF_KERNEL_SELECTIVE */
} wf_kernel_info;

/* Set in wf_kernel_info.flags for a kernel that may decline a node when
 * it is placed (it has a supports function, weft/plugin.h): the next
 * kernel in the registry's order runs the nodes it declines. */
#define WF_KERNEL_SELECTIVE UINT32_C(0x80000000)

/* Kernels, sorted by op, then device type, then priority (highest first). */
WF_API int wf_runtime_kernel_count(const wf_runtime *rt);
WF_API void wf_runtime_kernel_get(const wf_runtime *rt, int i,
                                  wf_kernel_info *out);

/* The config's [kernels] rules applied to kernel i (0 <= i < count; see
 * README.md "Configuration"). wf_runtime_kernel_denied: the deny item that
 * keeps kernel i from ever being chosen ("onednn", "Conv2D:onednn"), or
 * NULL. wf_runtime_kernel_preferred: the first prefer item that ranks it
 * above the kernels no item names, or NULL. Strings borrowed from the
 * runtime. The first call on a runtime logs the config items that match
 * nothing loaded (as the first session placement does). */
WF_API const char *wf_runtime_kernel_denied(const wf_runtime *rt, int i);
WF_API const char *wf_runtime_kernel_preferred(const wf_runtime *rt, int i);
/* The kernel that runs a node of op placed on device_type whose kernel type
 * attribute is dtype (WF_DTYPE_INVALID: a node without one): its index for
 * wf_runtime_kernel_get, or -1 when no kernel there accepts dtype, or the
 * config denies every one that does, or op is not registered. Among the
 * allowed kernels that accept dtype, the one named by the earliest prefer
 * item wins, else the highest priority. */
WF_API int wf_runtime_kernel_select(const wf_runtime *rt, const char *op,
                                    const char *device_type, wf_dtype dtype);

typedef struct wf_device_info {
  const char *name;        /* "cpu:0" */
  const char *type;        /* "cpu" */
  const char *plugin;
  const char *description;
  int available;
  const char *reason;      /* why unavailable; NULL when available */
} wf_device_info;

/* Device instances in the config's preference order. */
WF_API int wf_runtime_device_count(const wf_runtime *rt);
WF_API void wf_runtime_device_get(const wf_runtime *rt, int i,
                                  wf_device_info *out);

#ifdef __cplusplus
}
#endif
#endif /* WEFT_RUNTIME_H */
