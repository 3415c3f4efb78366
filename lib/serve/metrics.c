/* lib/serve/metrics.c — counters and histograms for /metrics (metrics.h):
 * requests by model, version, API and HTTP code; request latency and batch
 * size histograms by model and version (and signature). A short list under
 * one lock: the series are few (models x versions x codes) and an update is
 * a few additions. */
#include <config.h>

#include "metrics.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { KIND_REQUESTS, KIND_LATENCY, KIND_BATCH, KIND_BATCHED_REQUESTS };

static const double latency_bounds[] = {
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
    0.05,   0.1,     0.25,   0.5,   1,      2.5,   5,    10};
static const double batch_bounds[] = {1, 2, 4, 8, 16, 32, 64, 128, 256, 512};
#define NLAT (sizeof latency_bounds / sizeof *latency_bounds)
#define NBATCH (sizeof batch_bounds / sizeof *batch_bounds)
#define MAXB 16

typedef struct series {
  struct series *next;
  int kind;
  char *labels; /* model="m",version="1",... */
  uint64_t count;
  double sum;
  uint64_t buckets[MAXB];
} series;

struct srv_metrics {
  pthread_mutex_t mu;
  series *head, **tail;
};

srv_metrics *srv_metrics_new(void) {
  srv_metrics *m = calloc(1, sizeof *m);
  if (!m)
    return NULL;
  pthread_mutex_init(&m->mu, NULL);
  m->tail = &m->head;
  return m;
}

void srv_metrics_free(srv_metrics *m) {
  if (!m)
    return;
  for (series *s = m->head, *n; s; s = n) {
    n = s->next;
    free(s->labels);
    free(s);
  }
  pthread_mutex_destroy(&m->mu);
  free(m);
}

/* Label values are escaped as Prometheus wants (\\, \", \n). */
static void put_label(srv_buf *b, const char *name, const char *value,
                      int first) {
  srv_buf_printf(b, "%s%s=\"", first ? "" : ",", name);
  for (const char *p = value; *p; p++) {
    if (*p == '\\' || *p == '"')
      srv_buf_printf(b, "\\%c", *p);
    else if (*p == '\n')
      srv_buf_puts(b, "\\n");
    else
      srv_buf_put(b, p, 1);
  }
  srv_buf_put(b, "\"", 1);
}

/* The series of kind with these labels, created if new; under m->mu. */
static series *find(srv_metrics *m, int kind, const char *labels) {
  for (series *s = m->head; s; s = s->next)
    if (s->kind == kind && !strcmp(s->labels, labels))
      return s;
  series *s = calloc(1, sizeof *s);
  if (!s || !(s->labels = strdup(labels))) {
    free(s);
    return NULL;
  }
  s->kind = kind;
  *m->tail = s;
  m->tail = &s->next;
  return s;
}

static void observe(series *s, const double *bounds, size_t n, double v) {
  s->count++;
  s->sum += v;
  for (size_t i = 0; i < n; i++)
    if (v <= bounds[i])
      s->buckets[i]++;
}

void srv_metrics_request(srv_metrics *m, const char *model, const char *version,
                         const char *api, int code, double seconds) {
  srv_buf b = {0}, c = {0};
  char scode[16];
  snprintf(scode, sizeof scode, "%d", code);
  put_label(&b, "model", model, 1);
  put_label(&b, "version", version, 0);
  srv_buf_put(&c, b.p ? b.p : "", b.len);
  put_label(&b, "api", api, 0);
  put_label(&b, "code", scode, 0);
  if (!b.failed && !c.failed) {
    pthread_mutex_lock(&m->mu);
    series *s = find(m, KIND_REQUESTS, b.p);
    if (s)
      s->count++;
    s = find(m, KIND_LATENCY, c.p);
    if (s)
      observe(s, latency_bounds, NLAT, seconds);
    pthread_mutex_unlock(&m->mu);
  }
  srv_buf_free(&b);
  srv_buf_free(&c);
}

void srv_metrics_batch(srv_metrics *m, const char *model, const char *version,
                       const char *signature, int64_t rows, int requests) {
  srv_buf b = {0};
  put_label(&b, "model", model, 1);
  put_label(&b, "version", version, 0);
  put_label(&b, "signature", signature, 0);
  if (!b.failed) {
    pthread_mutex_lock(&m->mu);
    series *s = find(m, KIND_BATCH, b.p);
    if (s)
      observe(s, batch_bounds, NBATCH, (double)rows);
    s = find(m, KIND_BATCHED_REQUESTS, b.p);
    if (s)
      observe(s, batch_bounds, NBATCH, (double)requests);
    pthread_mutex_unlock(&m->mu);
  }
  srv_buf_free(&b);
}

static void write_histogram(srv_buf *b, const char *name, const series *s,
                            const double *bounds, size_t n) {
  for (size_t i = 0; i < n; i++)
    srv_buf_printf(b, "%s_bucket{%s,le=\"%g\"} %llu\n", name, s->labels,
                   bounds[i], (unsigned long long)s->buckets[i]);
  srv_buf_printf(b, "%s_bucket{%s,le=\"+Inf\"} %llu\n", name, s->labels,
                 (unsigned long long)s->count);
  srv_buf_printf(b, "%s_sum{%s} %.9g\n", name, s->labels, s->sum);
  srv_buf_printf(b, "%s_count{%s} %llu\n", name, s->labels,
                 (unsigned long long)s->count);
}

void srv_metrics_write(srv_metrics *m, srv_buf *b) {
  static const struct {
    int kind;
    const char *name, *type, *help;
  } families[] = {
      {KIND_REQUESTS, "weft_serve_requests_total", "counter",
       "Requests answered, by model, version, API and HTTP status code."},
      {KIND_LATENCY, "weft_serve_request_duration_seconds", "histogram",
       "Time from a request's arrival to its answer."},
      {KIND_BATCH, "weft_serve_batch_size", "histogram",
       "Rows per session run of the dynamic batcher."},
      {KIND_BATCHED_REQUESTS, "weft_serve_batch_requests", "histogram",
       "Requests joined into one session run by the dynamic batcher."},
  };
  pthread_mutex_lock(&m->mu);
  for (size_t f = 0; f < sizeof families / sizeof *families; f++) {
    srv_buf_printf(b, "# HELP %s %s\n# TYPE %s %s\n", families[f].name,
                   families[f].help, families[f].name, families[f].type);
    for (const series *s = m->head; s; s = s->next) {
      if (s->kind != families[f].kind)
        continue;
      if (s->kind == KIND_REQUESTS)
        srv_buf_printf(b, "%s{%s} %llu\n", families[f].name, s->labels,
                       (unsigned long long)s->count);
      else if (s->kind == KIND_LATENCY)
        write_histogram(b, families[f].name, s, latency_bounds, NLAT);
      else
        write_histogram(b, families[f].name, s, batch_bounds, NBATCH);
    }
  }
  pthread_mutex_unlock(&m->mu);
}
