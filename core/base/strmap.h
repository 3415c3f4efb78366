/* core/base/strmap.h — an open-addressing hash map from strings to pointers.
 * Keys are borrowed (the caller keeps them alive while they are in the map);
 * used for node names and registry look-ups. Not thread-safe. */
#ifndef WF_CORE_STRMAP_H
#define WF_CORE_STRMAP_H

#include <stddef.h>

typedef struct wf__strmap {
  const char **keys;
  void **vals;
  size_t cap;  /* power of two, or 0 */
  size_t n;    /* live entries */
  size_t used; /* live + deleted slots */
} wf__strmap;

void wf__strmap_init(wf__strmap *m);
void wf__strmap_deinit(wf__strmap *m);
/* Value for key, or NULL. */
void *wf__strmap_get(const wf__strmap *m, const char *key);
/* Inserts or replaces; returns 0, or -1 when out of memory (map unchanged). */
int wf__strmap_put(wf__strmap *m, const char *key, void *val);
/* Removes key if present. */
void wf__strmap_del(wf__strmap *m, const char *key);

#endif
