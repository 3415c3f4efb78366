/* core/exec/rendezvous.c — numbered slots under one mutex; a receiver that comes
 * first leaves its kernel context and is completed by the sender. */
#include <config.h>

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "base/alloc.h"
#include "exec/kernel.h"
#include "exec/rendezvous.h"
#include "base/status_internal.h"
#include "graph/tensor_internal.h"

typedef struct slot {
  int sent;                   /* a value (or a control signal) arrived */
  wf_tensor *value;           /* NULL for a control signal */
  struct wf_kernel_ctx *wait; /* a receiver waiting for it */
} slot;

struct wf__rendezvous {
  pthread_mutex_t mu;
  slot *slots;
  int n;
  wf_code abort_code; /* WF_OK while the step goes on */
  char abort_msg[256];
};

wf__rendezvous *wf__rendezvous_new(int nslots) {
  wf__rendezvous *r = wf__calloc(1, sizeof *r);
  if (!r)
    return NULL;
  r->slots = wf__calloc((size_t)nslots + 1, sizeof *r->slots);
  if (!r->slots) {
    wf__free(r);
    return NULL;
  }
  r->n = nslots;
  pthread_mutex_init(&r->mu, NULL);
  return r;
}

void wf__rendezvous_reset(wf__rendezvous *r) {
  for (int i = 0; i < r->n; i++) {
    wf_tensor_release(r->slots[i].value);
    memset(&r->slots[i], 0, sizeof r->slots[i]);
  }
  r->abort_code = WF_OK;
  r->abort_msg[0] = '\0';
}

void wf__rendezvous_free(wf__rendezvous *r) {
  if (!r)
    return;
  wf__rendezvous_reset(r);
  pthread_mutex_destroy(&r->mu);
  wf__free(r->slots);
  wf__free(r);
}

/* Gives value to a receiving context and completes it. Called without the
 * lock: completion runs the rest of the receiver's partition. */
static void deliver(struct wf_kernel_ctx *ctx, wf_tensor *value) {
  wf_status st = {WF_OK, NULL};
  if (value && ctx->num_outputs > 0 &&
      wf__kernel_output_set(ctx, 0, value, &st)) {
    wf_tensor_release(value);
    wf__kernel_done(ctx, st.code, "%s", st.message ? st.message : "");
    wf_status_reset(&st);
    return;
  }
  wf_tensor_release(value);
  wf__kernel_done(ctx, WF_OK, NULL);
}

void wf__rendezvous_send(wf__rendezvous *r, int s, wf_tensor *t) {
  if (t)
    wf_tensor_retain(t);
  pthread_mutex_lock(&r->mu);
  slot *sl = &r->slots[s];
  struct wf_kernel_ctx *waiter = sl->wait;
  if (waiter) {
    sl->wait = NULL;
    sl->sent = 1;
  } else if (r->abort_code == WF_OK) {
    sl->sent = 1;
    sl->value = t;
    t = NULL;
  }
  pthread_mutex_unlock(&r->mu);
  if (waiter)
    deliver(waiter, t);
  else
    wf_tensor_release(t); /* aborted: nobody will take it */
}

void wf__rendezvous_recv(wf__rendezvous *r, int s,
                         struct wf_kernel_ctx *ctx) {
  pthread_mutex_lock(&r->mu);
  slot *sl = &r->slots[s];
  if (sl->sent) {
    wf_tensor *v = sl->value;
    sl->value = NULL;
    pthread_mutex_unlock(&r->mu);
    deliver(ctx, v);
    return;
  }
  if (r->abort_code != WF_OK) {
    wf_code code = r->abort_code;
    char msg[256];
    memcpy(msg, r->abort_msg, sizeof msg);
    pthread_mutex_unlock(&r->mu);
    wf__kernel_done(ctx, code, "%s", msg);
    return;
  }
  sl->wait = ctx;
  pthread_mutex_unlock(&r->mu);
}

void wf__rendezvous_abort(wf__rendezvous *r, wf_code code, const char *msg) {
  struct wf_kernel_ctx *woken[64];
  int nwoken;
  pthread_mutex_lock(&r->mu);
  if (r->abort_code == WF_OK) {
    r->abort_code = code;
    snprintf(r->abort_msg, sizeof r->abort_msg, "%s", msg);
  }
  do {
    /* Complete waiters in batches, outside the lock. */
    nwoken = 0;
    for (int i = 0; i < r->n && nwoken < 64; i++) {
      if (r->slots[i].wait) {
        woken[nwoken++] = r->slots[i].wait;
        r->slots[i].wait = NULL;
      }
    }
    pthread_mutex_unlock(&r->mu);
    for (int i = 0; i < nwoken; i++)
      wf__kernel_done(woken[i], code, "%s", msg);
    pthread_mutex_lock(&r->mu);
  } while (nwoken == 64);
  pthread_mutex_unlock(&r->mu);
}
