/* core/exec/iterators.c — a session's table of attached iterators: names
 * to borrowed wf_iterator pointers under one mutex, which the
 * IteratorGetNext kernel (core/data/data_ops.c) reads through its step
 * context and checkpoints walk. Iteration itself is core/data's. */
#include <config.h>

#include <pthread.h>
#include <string.h>

#include "base/alloc.h"
#include "base/status_internal.h"
#include "exec/iterators.h"

typedef struct attached {
  char *name;
  wf_iterator *it;
} attached;

struct wf__iterators {
  pthread_mutex_t mu;
  attached *items;
  int n, cap;
};

wf__iterators *wf__iterators_new(void) {
  wf__iterators *t = wf__calloc(1, sizeof *t);
  if (t)
    pthread_mutex_init(&t->mu, NULL);
  return t;
}

void wf__iterators_free(wf__iterators *t) {
  if (!t)
    return;
  for (int i = 0; i < t->n; i++)
    wf__free(t->items[i].name);
  wf__free(t->items);
  pthread_mutex_destroy(&t->mu);
  wf__free(t);
}

int wf__iterators_attach(wf__iterators *t, const char *name, wf_iterator *it,
                         wf_status *st) {
  if (!name || !*name)
    return wf_status_set(st, WF_INVALID_ARGUMENT,
                         "attaching an iterator: the name is empty");
  int code = WF_OK;
  pthread_mutex_lock(&t->mu);
  int i;
  for (i = 0; i < t->n; i++)
    if (strcmp(t->items[i].name, name) == 0)
      break;
  if (i < t->n) {
    if (it) {
      t->items[i].it = it;
    } else {
      wf__free(t->items[i].name);
      t->items[i] = t->items[--t->n];
    }
  } else if (it) {
    char *copy = wf__strdup(name);
    if (copy && t->n == t->cap) {
      int cap = t->cap ? 2 * t->cap : 4;
      attached *grown = wf__realloc(t->items, (size_t)cap * sizeof *grown);
      if (grown) {
        t->items = grown;
        t->cap = cap;
      }
    }
    if (!copy || t->n == t->cap) {
      wf__free(copy);
      code = wf_status_set(st, WF_RESOURCE_EXHAUSTED,
                           "attaching iterator '%s': out of memory", name);
    } else {
      t->items[t->n].name = copy;
      t->items[t->n].it = it;
      t->n++;
    }
  }
  pthread_mutex_unlock(&t->mu);
  return code;
}

wf_iterator *wf__iterators_find(wf__iterators *t, const char *name) {
  wf_iterator *it = NULL;
  pthread_mutex_lock(&t->mu);
  for (int i = 0; i < t->n && !it; i++)
    if (strcmp(t->items[i].name, name) == 0)
      it = t->items[i].it;
  pthread_mutex_unlock(&t->mu);
  return it;
}

int wf__iterators_count(wf__iterators *t) {
  pthread_mutex_lock(&t->mu);
  int n = t->n;
  pthread_mutex_unlock(&t->mu);
  return n;
}

wf_iterator *wf__iterators_at(wf__iterators *t, int i, const char **name) {
  wf_iterator *it = NULL;
  pthread_mutex_lock(&t->mu);
  if (i >= 0 && i < t->n) {
    it = t->items[i].it;
    *name = t->items[i].name;
  }
  pthread_mutex_unlock(&t->mu);
  return it;
}

