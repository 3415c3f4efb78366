/* core/dist/cluster_internal.h — a runtime as a task of a job (weft/cluster.h): joining
 * through a transport plugin, splitting a working graph between tasks, the
 * client's side of a step that spans tasks, and the ops that carry tensors
 * between tasks (core/dist/cluster.c; the worker's loop is core/dist/worker.c). */
#ifndef WF_CORE_CLUSTER_H
#define WF_CORE_CLUSTER_H

#include <stdint.h>

#include "compile/optimize.h"
#include "compile/placement.h"
#include "plugin/runtime_internal.h"

typedef struct wf__cluster wf__cluster;
/* The part of one executor that runs on other tasks (client side). */
typedef struct wf__dist wf__dist;
typedef struct wf__dist_step wf__dist_step;

/* rt's job, joined on first use; a runtime without a transport (or with
 * [cluster] transport = none) is task 0 of 1 with no transport. NULL with
 * st set when joining fails. */
wf__cluster *wf__cluster_get(wf_runtime *rt, wf_status *st);
int32_t wf__cluster_task(const wf__cluster *c);
int32_t wf__cluster_size(const wf__cluster *c);
/* Tells the workers the job is over (task 0) and leaves it. */
void wf__cluster_free(wf_runtime *rt);


/* Splits w between tasks when some kept node asks for another task than
 * this one: every data or control edge that crosses tasks becomes a
 * _TaskSend/_TaskRecv pair, fetches made elsewhere come back through one,
 * and each other task's share is shipped to it (registered once; the
 * task answers when its executor is built). w's targets then hold this
 * task's share only. *out: NULL when everything runs here. */
int wf__cluster_split(wf_runtime *rt, wf__work *w, const unsigned char *keep,
                      wf__dist **out, wf_status *st);
/* Unregisters the shares on the other tasks. */
void wf__dist_free(wf__dist *d);

/* Starts d's shares of one step on their tasks (session is the client
 * session's id, step its step counter); *uid is the step's id in the job,
 * for the transfers. NULL with st set when a message cannot be sent. */
wf__dist_step *wf__dist_step_begin(wf__dist *d, uint64_t session, int64_t step,
                                   uint64_t *uid, wf_status *st);
/* Waits for every task's answer (aborting the step on the others when
 * code, the local result, is an error or a task failed; giving up on a
 * task that stays silent past the heartbeat timeout) and frees ds. Returns
 * the step's code: a task's own error wins over the cancellations it
 * caused; st gets its message ("task 1: node 'x' (op 'y') on cpu:0: ..."). */
int wf__dist_step_end(wf__dist_step *ds, int code, wf_status *st);

/* Completes this task's pending receives of step uid with code and msg. */
void wf__cluster_cancel_step(wf__cluster *c, uint64_t uid, int code,
                             const char *msg);
/* 0 while the tasks a step waits on are alive (d's for a client, task 0
 * for a worker: d NULL); else UNAVAILABLE with msg saying which task went
 * silent and for how long. */
int wf__cluster_watch(wf__cluster *c, const wf__dist *d, char *msg,
                      size_t len);
/* A client session is gone: the workers drop its variables. */
void wf__cluster_session_closed(wf_runtime *rt, uint64_t session);
/* The functions above as the runtime's job table (core/host installs it
 * in every runtime). */
extern const wf__job wf__cluster_job;

/* The built-in "core-cluster" plugin: _TaskSend, _TaskRecv,
 * _TaskSendControl, _TaskRecvControl. */
const wf_plugin_desc *wf__cluster_ops(void);

/* ---- shared with core/dist/worker.c ------------------------------------------ */

/* Message keys: hi says the kind, lo the sequence or the slot. */
#define WF__KEY_CONTROL UINT64_C(1)                     /* lo: sequence */
#define WF__KEY_STEP(uid) ((UINT64_C(1) << 62) | (uid))  /* lo: slot */
#define WF__KEY_REPLY(uid) ((UINT64_C(2) << 62) | (uid)) /* lo: task */
#define WF__KEY_REGISTERED(id) ((UINT64_C(3) << 62) | (id)) /* lo: task */

enum {
  WF__MSG_REGISTER = 1,   /* u64 exec, u32 n, n x str target, bytes graph */
  WF__MSG_UNREGISTER = 2, /* u64 exec */
  WF__MSG_RUN = 3,        /* u64 exec, u64 session, u64 uid, i64 step */
  WF__MSG_ABORT = 4,      /* u64 uid */
  WF__MSG_CLOSE_SESSION = 5, /* u64 session */
  WF__MSG_SHUTDOWN = 6
};

/* A growable message. */
typedef struct wf__msg {
  unsigned char *data;
  size_t len, cap;
  size_t pos; /* reading */
  int bad;    /* a write ran out of memory or a read ran past the end */
} wf__msg;

void wf__msg_free(wf__msg *m);
void wf__msg_u8(wf__msg *m, uint8_t v);
void wf__msg_u32(wf__msg *m, uint32_t v);
void wf__msg_u64(wf__msg *m, uint64_t v);
void wf__msg_str(wf__msg *m, const char *s);
void wf__msg_bytes(wf__msg *m, const void *p, size_t n);
uint8_t wf__msg_get_u8(wf__msg *m);
uint32_t wf__msg_get_u32(wf__msg *m);
uint64_t wf__msg_get_u64(wf__msg *m);
/* Borrowed from m; "" (and m->bad) past the end. */
const char *wf__msg_get_str(wf__msg *m);
const void *wf__msg_get_bytes(wf__msg *m, size_t *n);

/* Sends m to task under key. */
int wf__cluster_send(wf__cluster *c, int32_t task, uint64_t hi, uint64_t lo,
                     const wf__msg *m, wf_status *st);
/* Sends the next control message to task (control messages to one task
 * are numbered, and handled in that order). */
int wf__cluster_send_control(wf__cluster *c, int32_t task, const wf__msg *m,
                             wf_status *st);
/* Waits for the message from task under key into *m (a new buffer),
 * failing with UNAVAILABLE when task stays silent past the heartbeat
 * timeout (watch_task; -1: wait without limit). */
int wf__cluster_wait(wf__cluster *c, int32_t task, uint64_t hi, uint64_t lo,
                     int32_t watch_task, wf__msg *m, wf_status *st);
int64_t wf__cluster_heartbeat_ms(const wf__cluster *c);
const wf__transport *wf__cluster_transport(const wf__cluster *c);
void *wf__cluster_handle(const wf__cluster *c);

#endif
