/* lib/serve/metrics.h — the server's counters and histograms, written in
 * Prometheus' text format for /metrics. Thread-safe; series are created on
 * first use and live as long as the registry. It does not know the models:
 * gauges of model state and queue depth are written by the server. */
#ifndef WEFT_LIB_SERVE_METRICS_H
#define WEFT_LIB_SERVE_METRICS_H

#include <stdint.h>

#include "codec.h"

typedef struct srv_metrics srv_metrics;

srv_metrics *srv_metrics_new(void);
void srv_metrics_free(srv_metrics *m);

/* One answered request: its model and version ("" when the request named
 * none that exists), the API ("predict", "infer", "status", "metadata",
 * "health", "metrics", "other"), the HTTP code and the time taken. */
void srv_metrics_request(srv_metrics *m, const char *model, const char *version,
                         const char *api, int code, double seconds);
/* One session run of a batch of `rows` rows made of `requests` requests. */
void srv_metrics_batch(srv_metrics *m, const char *model, const char *version,
                       const char *signature, int64_t rows, int requests);

/* Appends every series to b. */
void srv_metrics_write(srv_metrics *m, srv_buf *b);

#endif
