/* lib/serve/model.h — served models: the versions of a model directory,
 * loaded as saved models with one prepared callable per signature, swapped
 * when a newer version appears, and run directly or through a dynamic
 * batcher that joins concurrent requests along the first dimension.
 *
 * Knows nothing of HTTP or JSON (the codec's srv_sig_desc describes each
 * signature). */
#ifndef WEFT_LIB_SERVE_MODEL_H
#define WEFT_LIB_SERVE_MODEL_H

#include <stdint.h>
#include <stdio.h>

#include <weft/weft.h>

#include "codec.h"
#include "metrics.h"

typedef struct srv_model srv_model;
typedef struct srv_version srv_version;

typedef struct srv_batching {
  int max_batch_size; /* 0: batching off */
  int64_t batch_timeout_us;
  int num_batch_threads;
  int max_enqueued_batches;
} srv_batching;

/* Where the models log (load, swap and failure messages). */
typedef void srv_log_fn(void *arg, int level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

typedef struct srv_model_env {
  wf_runtime *rt;
  srv_batching batching;
  srv_metrics *metrics;
  srv_log_fn *log;
  void *log_arg;
} srv_model_env;

/* A model called name served from dir (model.h's layout rules: a saved
 * model itself is version 1; otherwise its numbered subdirectories), with
 * its newest version loaded. env is borrowed for the model's life. */
srv_model *srv_model_new(const srv_model_env *env, const char *name,
                         const char *dir, wf_status *st);
void srv_model_free(srv_model *m);
const char *srv_model_name(const srv_model *m);

/* Looks for a newer version and swaps to it when it loads; a version that
 * fails is recorded with its error and not tried again. Requests in flight
 * finish on the version they started with. */
void srv_model_poll(srv_model *m);
/* 1 when a version is being served. */
int srv_model_ready(srv_model *m);

/* The version served (version < 0: the newest), with a reference held:
 * release with srv_version_release. NOT_FOUND naming model and version
 * when it is not being served. */
srv_version *srv_model_acquire(srv_model *m, int64_t version, wf_status *st);
void srv_version_release(srv_version *v);

/* Writes TensorFlow Serving's model status body for all versions or one
 * (version >= 0). NOT_FOUND when that version was never seen. */
int srv_model_write_status(srv_model *m, int64_t version, srv_buf *b,
                           wf_status *st);
/* Writes Prometheus gauges (version state, queue depth) for this model. */
void srv_model_write_gauges(srv_model *m, srv_buf *b);

int64_t srv_version_number(const srv_version *v);
const char *srv_version_label(const srv_version *v); /* "3" */
int srv_version_num_signatures(const srv_version *v);
const char *srv_version_signature_name(const srv_version *v, int i);
const srv_sig_desc *srv_version_signature(const srv_version *v, int i);
/* The signature called name, or the default one for NULL/"" (the only one,
 * or "serving_default"); -1 with NOT_FOUND set when there is none. */
int srv_version_find_signature(const srv_version *v, const char *name,
                               wf_status *st);

/* Runs signature sig on inputs (one per signature input, borrowed),
 * through the batcher when batching is on and the signature allows it.
 * outputs receives one new tensor per signature output. RESOURCE_EXHAUSTED
 * when the batch queue is full; the run's error otherwise. Thread-safe. */
int srv_version_run(srv_version *v, int sig, wf_tensor *const *inputs,
                    wf_tensor **outputs, wf_status *st);

#endif
