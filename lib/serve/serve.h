/* lib/serve/serve.h — the model server behind `weft serve`, as a library a
 * program or a test can embed: TensorFlow Serving's REST API and the KServe
 * v2 (Open Inference Protocol) REST endpoints over saved models, with
 * version polling and hot swap, dynamic batching and Prometheus metrics.
 *
 * Built on weft's public API only (sdk/include/weft). Not thread-safe to
 * configure: add models before wf_server_start; once started, the server serves
 * from its own threads until wf_server_stop. */
#ifndef WEFT_LIB_SERVE_H
#define WEFT_LIB_SERVE_H

#include <stdint.h>
#include <stdio.h>

#include <weft/weft.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct wf_server wf_server;

/* Log levels for wf_server_options.log_level: a message is written when its
 * level is at most the option's. One line per request is written at INFO
 * (errors answered with a 5xx code at WARN). */
#define WF_SERVE_LOG_ERROR 0
#define WF_SERVE_LOG_WARN 1
#define WF_SERVE_LOG_INFO 2
#define WF_SERVE_LOG_DEBUG 3

typedef struct wf_server_options {
  uint32_t struct_size;   /* sizeof(wf_server_options) */
  const char *address;    /* numeric IPv4 or IPv6 address to listen on */
  int port;               /* 0: any free port (see wf_server_port) */
  int threads;            /* connections served at once, one thread each */
  int64_t max_body_bytes; /* larger request bodies get 413 */
  int timeout_s;          /* a connection idle this long is closed */
  int log_level;          /* WF_SERVE_LOG_* */
  FILE *log;              /* where log lines go (NULL: stderr) */
  int64_t poll_ms;        /* version polling interval; 0: load once */
  /* Dynamic batching (TensorFlow Serving's knobs); max_batch_size 0: off. */
  int max_batch_size;
  int64_t batch_timeout_us;
  int num_batch_threads;
  int max_enqueued_batches;
} wf_server_options;

/* The defaults: 127.0.0.1, port 8501, 64 threads, 64 MiB bodies, 30 s
 * timeout, INFO, polling every 1000 ms, batching off (when switched on:
 * batch timeout 1000 us, 2 batch threads, 64 enqueued batches). */
void wf_server_options_init(wf_server_options *o);

/* A server with these options (copied; address too) whose models load with
 * rt's plugins (rt must outlive the server). Listens nowhere yet. Owned by
 * the caller: wf_server_free. NULL with st set on bad options. */
wf_server *wf_server_new(wf_runtime *rt, const wf_server_options *o,
                         wf_status *st);

/* Adds model name (letters, digits, '_', '-', '.') served from dir: either a
 * saved model itself (served as version 1) or a directory of numbered
 * version subdirectories, each a saved model, the highest number served.
 * Loads the newest version now; INVALID_ARGUMENT for a bad or repeated
 * name, NOT_FOUND when dir holds no saved model, or the load's error. */
int wf_server_add_model(wf_server *srv, const char *name, const char *dir,
                        wf_status *st);

/* Starts listening and serving (and polling for versions). UNAVAILABLE
 * naming the address when it cannot listen. */
int wf_server_start(wf_server *srv, wf_status *st);
/* The port listened on (after a successful start). */
int wf_server_port(const wf_server *srv);

/* Stops accepting connections, lets requests in flight finish (waiting at
 * most the timeout), then closes every connection and stops the threads.
 * Idempotent; also done by wf_server_free. */
void wf_server_stop(wf_server *srv);
void wf_server_free(wf_server *srv);

#ifdef __cplusplus
}
#endif
#endif /* WEFT_LIB_SERVE_H */
