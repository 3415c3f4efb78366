/* core/base/strmap.c — open addressing with linear probing and tombstones, keyed
 * by borrowed C strings.
 *
 * No iteration order is promised and nothing here is thread-safe. */
#include <config.h>

#include "base/strmap.h"

#include <assert.h>
#include <stdint.h>
#include <string.h>

#include "base/alloc.h"

/* Marks a slot whose entry was deleted; never a real key. */
static const char tombstone[1];

static uint64_t hash_str(const char *s) {
  uint64_t h = UINT64_C(14695981039346656037); /* FNV-1a */
  for (; *s; s++) {
    h ^= (unsigned char)*s;
    h *= UINT64_C(1099511628211);
  }
  return h ^ (h >> 29);
}

void wf__strmap_init(wf__strmap *m) { memset(m, 0, sizeof *m); }

void wf__strmap_deinit(wf__strmap *m) {
  wf__free(m->keys);
  wf__free(m->vals);
  memset(m, 0, sizeof *m);
}

/* Slot holding key, or -1. */
static long find_slot(const wf__strmap *m, const char *key) {
  size_t mask, i;
  if (m->cap == 0)
    return -1;
  mask = m->cap - 1;
  for (i = hash_str(key) & mask;; i = (i + 1) & mask) {
    const char *k = m->keys[i];
    if (!k)
      return -1;
    if (k != tombstone && strcmp(k, key) == 0)
      return (long)i;
  }
}

void *wf__strmap_get(const wf__strmap *m, const char *key) {
  long i = find_slot(m, key);
  return i < 0 ? NULL : m->vals[i];
}

/* Places key in a table known to have a free slot and not to hold key. */
static void place(const char **keys, void **vals, size_t cap, const char *key,
                  void *val) {
  size_t mask = cap - 1, i;
  for (i = hash_str(key) & mask; keys[i] && keys[i] != tombstone;
       i = (i + 1) & mask)
    ;
  keys[i] = key;
  vals[i] = val;
}

static int rehash(wf__strmap *m, size_t cap) {
  const char **keys = wf__calloc(cap, sizeof *keys);
  void **vals = wf__calloc(cap, sizeof *vals);
  if (!keys || !vals) {
    wf__free(keys);
    wf__free(vals);
    return -1;
  }
  for (size_t i = 0; i < m->cap; i++)
    if (m->keys[i] && m->keys[i] != tombstone)
      place(keys, vals, cap, m->keys[i], m->vals[i]);
  wf__free(m->keys);
  wf__free(m->vals);
  m->keys = keys;
  m->vals = vals;
  m->cap = cap;
  m->used = m->n;
  return 0;
}

int wf__strmap_put(wf__strmap *m, const char *key, void *val) {
  long i = find_slot(m, key);
  assert(key && key != tombstone);
  if (i >= 0) {
    m->vals[i] = val;
    return 0;
  }
  /* Keep live + deleted slots under 3/4 so probes stay short and end. */
  if ((m->used + 1) * 4 > m->cap * 3) {
    size_t cap = m->cap ? m->cap : 8;
    while ((m->n + 1) * 2 > cap)
      cap *= 2;
    if (rehash(m, cap))
      return -1;
  }
  {
    size_t mask = m->cap - 1, j;
    for (j = hash_str(key) & mask; m->keys[j] && m->keys[j] != tombstone;
         j = (j + 1) & mask)
      ;
    if (!m->keys[j])
      m->used++;
    m->keys[j] = key;
    m->vals[j] = val;
  }
  m->n++;
  return 0;
}

void wf__strmap_del(wf__strmap *m, const char *key) {
  long i = find_slot(m, key);
  if (i < 0)
    return;
  m->keys[i] = tombstone;
  m->vals[i] = NULL;
  m->n--;
}
