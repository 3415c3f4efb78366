/* lib/serve/server.c — the HTTP side of the model server (serve.h): routes
 * TensorFlow Serving's REST API (/v1/models/...), KServe v2's
 * (/v2/health/..., /v2/models/...) and /metrics; reads bodies within the
 * size limit; maps statuses to HTTP codes as TensorFlow Serving does; logs a
 * line per request; polls the model directories; stops gracefully.
 *
 * Why libmicrohttpd (and not libevent's evhttp): it is a complete HTTP/1.1
 * server in one small C library that runs its own threads — one per
 * connection here — so a request's handler may simply block while its
 * session run (or its batch) completes, with no callback plumbing between
 * an event loop and worker threads; it enforces the connection limit and
 * the idle timeout (slow clients) itself, and can stop accepting while
 * requests in flight finish (MHD_quiesce_daemon). evhttp would need one
 * event base per thread and our own hand-off of every blocking run.
 *
 * Decoding and encoding bodies is codec.c's job, versions and batching
 * model.c's; this file only glues them to HTTP. */
#include <config.h>

#include "serve.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "codec.h"
#include "metrics.h"
#include "mhd_lazy.h"
#include "model.h"

#define MAX_MODELS 256

struct wf_server {
  wf_server_options o;
  char *address;
  srv_model_env env;
  srv_model *models[MAX_MODELS];
  int nmodels;
  srv_metrics *metrics;
  struct MHD_Daemon *daemon;
  int port;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int stopping, stopped, inflight;
  pthread_t poller;
  int poller_started;
  pthread_mutex_t log_mu;
};

/* One request, from its first byte to its answer. */
typedef struct request {
  int64_t t0;
  srv_buf body;
  int too_large;
} request;

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* ---- logging ----------------------------------------------------------- */

static void vlog_line(wf_server *srv, int level, const char *fmt, va_list ap) {
  static const char *names[] = {"error", "warn", "info", "debug"};
  if (level > srv->o.log_level)
    return;
  char ts[32];
  struct timespec now;
  struct tm tm;
  clock_gettime(CLOCK_REALTIME, &now);
  gmtime_r(&now.tv_sec, &tm);
  strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%S", &tm);
  FILE *f = srv->o.log ? srv->o.log : stderr;
  pthread_mutex_lock(&srv->log_mu);
  fprintf(f, "%s.%03ldZ %s ", ts, now.tv_nsec / 1000000, names[level]);
  vfprintf(f, fmt, ap);
  fputc('\n', f);
  fflush(f);
  pthread_mutex_unlock(&srv->log_mu);
}

static void log_line(void *arg, int level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void log_line(void *arg, int level, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vlog_line(arg, level, fmt, ap);
  va_end(ap);
}

static void mhd_log(void *arg, const char *fmt, va_list ap) {
  char msg[512];
  vsnprintf(msg, sizeof msg, fmt, ap);
  size_t n = strlen(msg);
  while (n && (msg[n - 1] == '\n' || msg[n - 1] == '\r'))
    msg[--n] = '\0';
  log_line(arg, WF_SERVE_LOG_DEBUG, "http: %s", msg);
}

/* ---- options and setup ------------------------------------------------ */

void wf_server_options_init(wf_server_options *o) {
  memset(o, 0, sizeof *o);
  o->struct_size = sizeof *o;
  o->address = "127.0.0.1";
  o->port = 8501;
  o->threads = 64;
  o->max_body_bytes = 64 << 20;
  o->timeout_s = 30;
  o->log_level = WF_SERVE_LOG_INFO;
  o->poll_ms = 1000;
  o->max_batch_size = 0;
  o->batch_timeout_us = 1000;
  o->num_batch_threads = 2;
  o->max_enqueued_batches = 64;
}

wf_server *wf_server_new(wf_runtime *rt, const wf_server_options *o,
                         wf_status *st) {
  const char *bad = NULL;
  if (o->port < 0 || o->port > 65535)
    bad = "port must be 0..65535";
  else if (o->threads < 1)
    bad = "threads must be at least 1";
  else if (o->max_body_bytes < 1)
    bad = "the request size limit must be positive";
  else if (o->timeout_s < 1)
    bad = "the timeout must be at least 1 s";
  else if (o->log_level < WF_SERVE_LOG_ERROR ||
           o->log_level > WF_SERVE_LOG_DEBUG)
    bad = "unknown log level";
  else if (o->poll_ms < 0)
    bad = "the poll interval must not be negative";
  else if (o->max_batch_size < 0)
    bad = "max_batch_size must not be negative";
  else if (o->max_batch_size > 0 &&
           (o->batch_timeout_us < 0 || o->num_batch_threads < 1 ||
            o->num_batch_threads > 256 || o->max_enqueued_batches < 1))
    bad = "batching wants batch_timeout_micros >= 0, num_batch_threads "
          "1..256 and max_enqueued_batches >= 1";
  if (bad) {
    wf_status_set(st, WF_INVALID_ARGUMENT, "server options: %s", bad);
    return NULL;
  }
  wf_server *srv = calloc(1, sizeof *srv);
  if (!srv || !(srv->address = strdup(o->address ? o->address : "127.0.0.1")) ||
      !(srv->metrics = srv_metrics_new())) {
    if (srv)
      free(srv->address);
    free(srv);
    wf_status_set(st, WF_RESOURCE_EXHAUSTED, "out of memory");
    return NULL;
  }
  srv->o = *o;
  srv->o.address = srv->address;
  srv->env.rt = rt;
  srv->env.batching.max_batch_size = o->max_batch_size;
  srv->env.batching.batch_timeout_us = o->batch_timeout_us;
  srv->env.batching.num_batch_threads = o->num_batch_threads;
  srv->env.batching.max_enqueued_batches = o->max_enqueued_batches;
  srv->env.metrics = srv->metrics;
  srv->env.log = log_line;
  srv->env.log_arg = srv;
  pthread_mutex_init(&srv->mu, NULL);
  pthread_cond_init(&srv->cv, NULL);
  pthread_mutex_init(&srv->log_mu, NULL);
  return srv;
}

static int valid_name(const char *s) {
  if (!*s || strlen(s) > 128)
    return 0;
  for (; *s; s++)
    if (!isalnum((unsigned char)*s) && *s != '_' && *s != '-' && *s != '.')
      return 0;
  return 1;
}

static srv_model *find_model(wf_server *srv, const char *name) {
  for (int i = 0; i < srv->nmodels; i++)
    if (!strcmp(srv_model_name(srv->models[i]), name))
      return srv->models[i];
  return NULL;
}

int wf_server_add_model(wf_server *srv, const char *name, const char *dir,
                        wf_status *st) {
  if (!valid_name(name))
    return wf_status_set(st, WF_INVALID_ARGUMENT,
                         "model name '%s' must be 1 to 128 letters, digits, "
                         "'_', '-' or '.'",
                         name);
  if (find_model(srv, name))
    return wf_status_set(st, WF_INVALID_ARGUMENT, "model '%s' is given twice",
                         name);
  if (srv->nmodels == MAX_MODELS)
    return wf_status_set(st, WF_INVALID_ARGUMENT, "at most %d models",
                         MAX_MODELS);
  srv_model *m = srv_model_new(&srv->env, name, dir, st);
  if (!m)
    return -1;
  srv->models[srv->nmodels++] = m;
  return 0;
}

/* ---- status codes ---------------------------------------------------------
 */

/* TensorFlow Serving's mapping of status codes to HTTP codes. */
static int http_code(wf_code c) {
  switch (c) {
  case WF_OK:
    return 200;
  case WF_CANCELLED:
    return 499;
  case WF_INVALID_ARGUMENT:
  case WF_FAILED_PRECONDITION:
  case WF_OUT_OF_RANGE:
    return 400;
  case WF_DEADLINE_EXCEEDED:
    return 504;
  case WF_NOT_FOUND:
    return 404;
  case WF_ALREADY_EXISTS:
  case WF_ABORTED:
    return 409;
  case WF_PERMISSION_DENIED:
    return 403;
  case WF_RESOURCE_EXHAUSTED:
    return 429;
  case WF_UNIMPLEMENTED:
    return 501;
  case WF_UNAVAILABLE:
    return 503;
  case WF_UNAUTHENTICATED:
    return 401;
  default:
    return 500;
  }
}

/* ---- answers ----------------------------------------------------------- */

typedef struct answer {
  int code;
  srv_buf body;
  const char *content_type;
  const char *api;
  char model[160];
  char version[24];
} answer;

static void answer_error(answer *a, const wf_status *st) {
  srv_buf_free(&a->body);
  a->code = http_code(wf_status_code(st));
  srv_buf_puts(&a->body, "{\"error\":");
  srv_buf_json_string(&a->body, wf_status_message(st));
  srv_buf_puts(&a->body, "}");
}

static void answer_status(answer *a, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void answer_status(answer *a, int code, const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  srv_buf_free(&a->body);
  a->code = code;
  srv_buf_puts(&a->body, "{\"error\":");
  srv_buf_json_string(&a->body, msg);
  srv_buf_puts(&a->body, "}");
}

/* ---- handlers -------------------------------------------------------------
 */

static srv_model *lookup_model(wf_server *srv, const char *name, answer *a,
                               wf_status *st) {
  srv_model *m = find_model(srv, name);
  if (!m) {
    srv_buf names = {0};
    for (int i = 0; i < srv->nmodels; i++)
      srv_buf_printf(&names, "%s'%s'", i ? ", " : "",
                     srv_model_name(srv->models[i]));
    wf_status_set(st, WF_NOT_FOUND,
                  "Servable not found for request: model '%s' is not served "
                  "(served: %s)",
                  name, names.p ? names.p : "none");
    srv_buf_free(&names);
    return NULL;
  }
  snprintf(a->model, sizeof a->model, "%s", name);
  return m;
}

static void put_shape_tf(srv_buf *b, const wf_shape *s) {
  srv_buf_puts(b, "{\"dim\":[");
  for (int i = 0; i < s->rank; i++)
    srv_buf_printf(b, "%s{\"size\":\"%" PRId64 "\",\"name\":\"\"}",
                   i ? "," : "", s->dims[i]);
  srv_buf_printf(b, "],\"unknown_rank\":%s}", s->rank < 0 ? "true" : "false");
}

static void put_args_tf(srv_buf *b, const srv_arg *args, int n) {
  srv_buf_puts(b, "{");
  for (int j = 0; j < n; j++) {
    if (j)
      srv_buf_puts(b, ",");
    srv_buf_json_string(b, args[j].key);
    srv_buf_printf(b, ":{\"dtype\":\"%s\",\"tensor_shape\":",
                   srv_tf_dtype_name(args[j].dtype));
    put_shape_tf(b, &args[j].shape);
    srv_buf_puts(b, ",\"name\":");
    srv_buf_json_string(b, args[j].key);
    srv_buf_puts(b, "}");
  }
  srv_buf_puts(b, "}");
}

static void tf_metadata(srv_version *v, const char *model, srv_buf *b) {
  srv_buf_puts(b, "{\"model_spec\":{\"name\":");
  srv_buf_json_string(b, model);
  srv_buf_printf(b,
                 ",\"signature_name\":\"\",\"version\":\"%s\"},"
                 "\"metadata\":{\"signature_def\":{\"signature_def\":{",
                 srv_version_label(v));
  for (int i = 0; i < srv_version_num_signatures(v); i++) {
    const srv_sig_desc *d = srv_version_signature(v, i);
    if (i)
      srv_buf_puts(b, ",");
    srv_buf_json_string(b, srv_version_signature_name(v, i));
    srv_buf_puts(b, ":{\"inputs\":");
    put_args_tf(b, d->inputs, d->ninputs);
    srv_buf_puts(b, ",\"outputs\":");
    put_args_tf(b, d->outputs, d->noutputs);
    srv_buf_puts(b, ",\"method_name\":\"tensorflow/serving/predict\"}");
  }
  srv_buf_puts(b, "}}}}");
}

static void put_args_kserve(srv_buf *b, const srv_arg *args, int n) {
  srv_buf_puts(b, "[");
  for (int j = 0; j < n; j++) {
    srv_buf_puts(b, j ? ",{\"name\":" : "{\"name\":");
    srv_buf_json_string(b, args[j].key);
    srv_buf_printf(b, ",\"datatype\":\"%s\",\"shape\":[",
                   srv_kserve_dtype_name(args[j].dtype));
    for (int k = 0; k < args[j].shape.rank; k++)
      srv_buf_printf(b, "%s%" PRId64, k ? "," : "", args[j].shape.dims[k]);
    srv_buf_puts(b, "]}");
  }
  srv_buf_puts(b, "]");
}

/* Runs a predict (TF) or infer (KServe) request on version v. */
static void run_request(srv_version *v, const char *model, const char *body,
                        size_t len, int kserve, answer *a, wf_status *st) {
  srv_request r;
  wf_tensor **values = NULL;
  int *want = NULL;
  const srv_sig_desc *d = NULL;
  if (srv_request_parse(&r, body, len, kserve, st))
    goto fail;
  int sig = srv_version_find_signature(v, r.signature_name, st);
  if (sig < 0)
    goto fail;
  d = srv_version_signature(v, sig);
  values = calloc((size_t)(d->ninputs + d->noutputs) + 1, sizeof *values);
  want = calloc((size_t)d->noutputs + 1, sizeof *want);
  if (!values || !want) {
    wf_status_set(st, WF_RESOURCE_EXHAUSTED, "out of memory");
    goto fail;
  }
  if (kserve && srv_request_wanted(&r, d, want, st))
    goto fail;
  if (srv_request_decode(&r, d, values, st))
    goto fail;
  if (srv_version_run(v, sig, values, values + d->ninputs, st))
    goto fail;
  a->code = 200;
  if (kserve)
    srv_encode_kserve(&a->body, model, srv_version_label(v), r.id, d, want,
                      values + d->ninputs);
  else if (srv_encode_tf(&a->body, r.format, d, values + d->ninputs, st))
    goto fail;
  if (a->body.failed) {
    wf_status_set(st, WF_RESOURCE_EXHAUSTED,
                  "out of memory writing the "
                  "answer");
    goto fail;
  }
  goto done;
fail:
  answer_error(a, st);
done:
  if (values && d)
    for (int j = 0; j < d->ninputs + d->noutputs; j++)
      wf_tensor_release(values[j]);
  free(values);
  free(want);
  srv_request_deinit(&r);
}

/* Splits "NAME[/versions/V]REST" where REST starts at '/' or ':' or ends
 * the path. Returns 0, or -1 with st set. */
static int parse_model_path(const char *p, char *name, size_t nlen,
                            int64_t *version, const char **rest,
                            wf_status *st) {
  size_t n = strcspn(p, "/:");
  if (n == 0 || n >= nlen)
    return wf_status_set(st, WF_NOT_FOUND, "no model named in the path");
  memcpy(name, p, n);
  name[n] = '\0';
  p += n;
  *version = -1;
  if (!strncmp(p, "/versions/", 10)) {
    p += 10;
    size_t k = strspn(p, "0123456789");
    if (k == 0 || k > 18 || (p[k] && p[k] != '/' && p[k] != ':'))
      return wf_status_set(st, WF_INVALID_ARGUMENT,
                           "the version in the path must be a number");
    *version = strtoll(p, NULL, 10);
    p += k;
  }
  *rest = p;
  return 0;
}

static void handle_v1(wf_server *srv, const char *method, const char *path,
                      const char *body, size_t len, answer *a, wf_status *st) {
  char name[160];
  int64_t version;
  const char *rest;
  srv_version *v = NULL;
  a->api = "status";
  if (parse_model_path(path, name, sizeof name, &version, &rest, st))
    goto fail;
  if (*rest == ':')
    a->api = "predict";
  else if (!strcmp(rest, "/metadata"))
    a->api = "metadata";
  srv_model *m = lookup_model(srv, name, a, st);
  if (!m)
    goto fail;
  int is_get = !strcmp(method, "GET");
  if (*rest == '\0' || !strcmp(rest, "/")) {
    if (!is_get)
      goto method;
    a->code = 200;
    if (srv_model_write_status(m, version, &a->body, st))
      goto fail;
    return;
  }
  if (!strcmp(rest, "/metadata")) {
    a->api = "metadata";
    if (!is_get)
      goto method;
    if (!(v = srv_model_acquire(m, version, st)))
      goto fail;
    snprintf(a->version, sizeof a->version, "%s", srv_version_label(v));
    a->code = 200;
    tf_metadata(v, name, &a->body);
    srv_version_release(v);
    return;
  }
  if (!strcmp(rest, ":predict")) {
    a->api = "predict";
    if (strcmp(method, "POST"))
      goto method;
    if (!(v = srv_model_acquire(m, version, st)))
      goto fail;
    snprintf(a->version, sizeof a->version, "%s", srv_version_label(v));
    run_request(v, name, body, len, 0, a, st);
    srv_version_release(v);
    return;
  }
  if (!strcmp(rest, ":classify") || !strcmp(rest, ":regress")) {
    a->api = "predict";
    wf_status_set(st, WF_UNIMPLEMENTED,
                  "%s is not supported: weft's saved models have predict "
                  "signatures only",
                  rest + 1);
    goto fail;
  }
  wf_status_set(st, WF_NOT_FOUND, "no such endpoint: /v1/models/%s", path);
fail:
  answer_error(a, st);
  return;
method:
  answer_status(a, 405, "method %s is not allowed here", method);
}

static void handle_v2(wf_server *srv, const char *method, const char *path,
                      const char *body, size_t len, answer *a, wf_status *st) {
  int is_get = !strcmp(method, "GET");
  a->api = "health";
  if (!strcmp(path, "") || !strcmp(path, "/")) {
    if (!is_get)
      goto method;
    a->code = 200;
    srv_buf_printf(&a->body,
                   "{\"name\":\"weft\",\"version\":\"%s\",\"extensions\":[]}",
                   wf_version());
    return;
  }
  if (!strcmp(path, "/health/live")) {
    if (!is_get)
      goto method;
    a->code = 200;
    srv_buf_puts(&a->body, "{\"live\":true}");
    return;
  }
  if (!strcmp(path, "/health/ready")) {
    if (!is_get)
      goto method;
    int ready = 1;
    for (int i = 0; i < srv->nmodels; i++)
      ready &= srv_model_ready(srv->models[i]);
    pthread_mutex_lock(&srv->mu);
    ready &= !srv->stopping;
    pthread_mutex_unlock(&srv->mu);
    a->code = ready ? 200 : 503;
    srv_buf_printf(&a->body, "{\"ready\":%s}", ready ? "true" : "false");
    return;
  }
  if (strncmp(path, "/models/", 8)) {
    wf_status_set(st, WF_NOT_FOUND, "no such endpoint: /v2%s", path);
    goto fail;
  }
  char name[160];
  int64_t version;
  const char *rest;
  a->api = "metadata";
  if (parse_model_path(path + 8, name, sizeof name, &version, &rest, st))
    goto fail;
  srv_model *m = lookup_model(srv, name, a, st);
  if (!m)
    goto fail;
  if (!strcmp(rest, "/ready")) {
    a->api = "health";
    if (!is_get)
      goto method;
    srv_version *v = srv_model_acquire(m, version, st);
    a->code = v ? 200 : 503;
    srv_buf_puts(&a->body, "{\"name\":");
    srv_buf_json_string(&a->body, name);
    srv_buf_printf(&a->body, ",\"ready\":%s}", v ? "true" : "false");
    srv_version_release(v);
    return;
  }
  srv_version *v = NULL;
  if (*rest == '\0') {
    if (!is_get)
      goto method;
    if (!(v = srv_model_acquire(m, version, st)))
      goto fail;
    snprintf(a->version, sizeof a->version, "%s", srv_version_label(v));
    int sig = srv_version_find_signature(v, NULL, st);
    if (sig < 0) {
      srv_version_release(v);
      goto fail;
    }
    const srv_sig_desc *d = srv_version_signature(v, sig);
    a->code = 200;
    srv_buf_puts(&a->body, "{\"name\":");
    srv_buf_json_string(&a->body, name);
    srv_buf_printf(&a->body,
                   ",\"versions\":[\"%s\"],\"platform\":\"weft_saved_model\","
                   "\"inputs\":",
                   srv_version_label(v));
    put_args_kserve(&a->body, d->inputs, d->ninputs);
    srv_buf_puts(&a->body, ",\"outputs\":");
    put_args_kserve(&a->body, d->outputs, d->noutputs);
    srv_buf_puts(&a->body, "}");
    srv_version_release(v);
    return;
  }
  if (!strcmp(rest, "/infer")) {
    a->api = "infer";
    if (strcmp(method, "POST"))
      goto method;
    if (!(v = srv_model_acquire(m, version, st)))
      goto fail;
    snprintf(a->version, sizeof a->version, "%s", srv_version_label(v));
    run_request(v, name, body, len, 1, a, st);
    srv_version_release(v);
    return;
  }
  wf_status_set(st, WF_NOT_FOUND, "no such endpoint: /v2%s", path);
fail:
  answer_error(a, st);
  return;
method:
  answer_status(a, 405, "method %s is not allowed here", method);
}

static void handle_metrics(wf_server *srv, answer *a) {
  a->api = "metrics";
  a->code = 200;
  a->content_type = "text/plain; version=0.0.4";
  srv_metrics_write(srv->metrics, &a->body);
  srv_buf_puts(&a->body,
               "# HELP weft_serve_model_version_available 1 while the "
               "version is served.\n# TYPE weft_serve_model_version_available "
               "gauge\n# HELP weft_serve_model_version_load_failed 1 when "
               "the version failed to load.\n# TYPE "
               "weft_serve_model_version_load_failed gauge\n"
               "# HELP weft_serve_queue_depth_requests Requests waiting in "
               "the batch queue.\n# TYPE weft_serve_queue_depth_requests "
               "gauge\n# HELP weft_serve_queue_depth_rows Rows waiting in "
               "the batch queue.\n# TYPE weft_serve_queue_depth_rows gauge\n");
  for (int i = 0; i < srv->nmodels; i++)
    srv_model_write_gauges(srv->models[i], &a->body);
  pthread_mutex_lock(&srv->mu);
  int inflight = srv->inflight;
  pthread_mutex_unlock(&srv->mu);
  srv_buf_printf(&a->body,
                 "# HELP weft_serve_requests_in_flight Requests being "
                 "received or answered.\n# TYPE weft_serve_requests_in_flight "
                 "gauge\nweft_serve_requests_in_flight %d\n",
                 inflight);
}

static void route(wf_server *srv, const char *method, const char *url,
                  const char *body, size_t len, answer *a) {
  wf_status *st = wf_status_new();
  a->api = "other";
  if (!st) {
    answer_status(a, 500, "out of memory");
    return;
  }
  if (!strncmp(url, "/v1/models/", 11))
    handle_v1(srv, method, url + 11, body, len, a, st);
  else if (!strcmp(url, "/v2") || !strncmp(url, "/v2/", 4))
    handle_v2(srv, method, url + 3, body, len, a, st);
  else if (!strcmp(url, "/metrics")) {
    if (strcmp(method, "GET"))
      answer_status(a, 405, "method %s is not allowed here", method);
    else
      handle_metrics(srv, a);
  } else {
    wf_status_set(st, WF_NOT_FOUND, "no such endpoint: %s", url);
    answer_error(a, st);
  }
  wf_status_free(st);
}

/* ---- libmicrohttpd glue ---------------------------------------------------
 */

static void client_name(struct MHD_Connection *c, char *buf, size_t len) {
  const union MHD_ConnectionInfo *ci =
      MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
  snprintf(buf, len, "-");
  if (!ci || !ci->client_addr)
    return;
  const struct sockaddr *sa = ci->client_addr;
  if (sa->sa_family == AF_INET) {
    const struct sockaddr_in *in = (const void *)sa;
    char ip[INET_ADDRSTRLEN];
    inet_ntop(AF_INET, &in->sin_addr, ip, sizeof ip);
    snprintf(buf, len, "%s:%u", ip, ntohs(in->sin_port));
  } else if (sa->sa_family == AF_INET6) {
    const struct sockaddr_in6 *in = (const void *)sa;
    char ip[INET6_ADDRSTRLEN];
    inet_ntop(AF_INET6, &in->sin6_addr, ip, sizeof ip);
    snprintf(buf, len, "[%s]:%u", ip, ntohs(in->sin6_port));
  }
}

static enum MHD_Result respond(wf_server *srv, struct MHD_Connection *c,
                               const char *method, const char *url, request *r,
                               answer *a) {
  size_t len = 0;
  char *text = srv_buf_take(&a->body, &len);
  int code = a->code;
  if (!text) {
    text = strdup("{\"error\":\"out of memory\"}");
    len = text ? strlen(text) : 0;
    code = 500;
  }
  struct MHD_Response *resp =
      text ? MHD_create_response_from_buffer(len, text, MHD_RESPMEM_MUST_FREE)
           : NULL;
  if (!resp) {
    free(text);
    return MHD_NO;
  }
  MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE,
                          a->content_type ? a->content_type
                                          : "application/json");
  pthread_mutex_lock(&srv->mu);
  int stopping = srv->stopping;
  pthread_mutex_unlock(&srv->mu);
  if (stopping)
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close");
  enum MHD_Result ok = MHD_queue_response(c, (unsigned)code, resp);
  MHD_destroy_response(resp);
  double secs = (double)(now_ns() - r->t0) / 1e9;
  srv_metrics_request(srv->metrics, a->model, a->version, a->api, code, secs);
  int level = code >= 500 ? WF_SERVE_LOG_WARN : WF_SERVE_LOG_INFO;
  if (level <= srv->o.log_level) {
    char who[80];
    client_name(c, who, sizeof who);
    log_line(srv, level, "%s \"%s %s\" %d %zu %.3f ms", who, method, url, code,
             len, secs * 1e3);
  }
  return ok;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c,
                                  const char *url, const char *method,
                                  const char *version, const char *upload,
                                  size_t *upload_size, void **con_cls) {
  wf_server *srv = cls;
  request *r = *con_cls;
  answer a = {0};
  if (!r) {
    r = calloc(1, sizeof *r);
    if (!r)
      return MHD_NO;
    r->t0 = now_ns();
    *con_cls = r;
    pthread_mutex_lock(&srv->mu);
    srv->inflight++;
    pthread_mutex_unlock(&srv->mu);
    /* A declared body over the limit is refused before it is read. */
    const char *cl = MHD_lookup_connection_value(
        c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    if (cl && strtoll(cl, NULL, 10) > srv->o.max_body_bytes) {
      a.api = "other";
      answer_status(&a, 413,
                    "the request body of %s bytes is over the limit of "
                    "%" PRId64 " bytes",
                    cl, srv->o.max_body_bytes);
      return respond(srv, c, method, url, r, &a);
    }
    return MHD_YES;
  }
  if (*upload_size) {
    if (!r->too_large &&
        (int64_t)(r->body.len + *upload_size) > srv->o.max_body_bytes) {
      r->too_large = 1;
      srv_buf_free(&r->body);
    }
    if (!r->too_large)
      srv_buf_put(&r->body, upload, *upload_size);
    *upload_size = 0;
    return MHD_YES;
  }
  if (r->too_large) {
    a.api = "other";
    answer_status(&a, 413,
                  "the request body is over the limit of %" PRId64 " bytes",
                  srv->o.max_body_bytes);
  } else if (r->body.failed) {
    a.api = "other";
    answer_status(&a, 413, "out of memory reading the request body");
  } else {
    route(srv, method, url, r->body.p ? r->body.p : "", r->body.len, &a);
  }
  enum MHD_Result ok = respond(srv, c, method, url, r, &a);
  srv_buf_free(&a.body);
  return ok;
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode why) {
  wf_server *srv = cls;
  request *r = *con_cls;
  if (!r)
    return;
  if (why != MHD_REQUEST_TERMINATED_COMPLETED_OK)
    log_line(srv, WF_SERVE_LOG_DEBUG,
             "a request ended before its answer was sent (reason %d)",
             (int)why);
  srv_buf_free(&r->body);
  free(r);
  *con_cls = NULL;
  pthread_mutex_lock(&srv->mu);
  srv->inflight--;
  pthread_cond_broadcast(&srv->cv);
  pthread_mutex_unlock(&srv->mu);
}

static void *poll_models(void *arg) {
  wf_server *srv = arg;
  pthread_mutex_lock(&srv->mu);
  while (!srv->stopping) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    int64_t ns = ts.tv_nsec + srv->o.poll_ms * 1000000;
    ts.tv_sec += (time_t)(ns / 1000000000);
    ts.tv_nsec = (long)(ns % 1000000000);
    pthread_cond_timedwait(&srv->cv, &srv->mu, &ts);
    if (srv->stopping)
      break;
    pthread_mutex_unlock(&srv->mu);
    for (int i = 0; i < srv->nmodels; i++)
      srv_model_poll(srv->models[i]);
    pthread_mutex_lock(&srv->mu);
  }
  pthread_mutex_unlock(&srv->mu);
  return NULL;
}

int wf_server_start(wf_server *srv, wf_status *st) {
  struct sockaddr_in in4;
  struct sockaddr_in6 in6;
  const struct sockaddr *sa;
  unsigned flags = MHD_USE_THREAD_PER_CONNECTION |
                   MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ITC |
                   MHD_USE_ERROR_LOG;
  memset(&in4, 0, sizeof in4);
  memset(&in6, 0, sizeof in6);
  if (inet_pton(AF_INET, srv->address, &in4.sin_addr) == 1) {
    in4.sin_family = AF_INET;
    in4.sin_port = htons((uint16_t)srv->o.port);
    sa = (const struct sockaddr *)&in4;
  } else if (inet_pton(AF_INET6, srv->address, &in6.sin6_addr) == 1) {
    in6.sin6_family = AF_INET6;
    in6.sin6_port = htons((uint16_t)srv->o.port);
    sa = (const struct sockaddr *)&in6;
    flags |= MHD_USE_IPv6;
  } else {
    return wf_status_set(st, WF_INVALID_ARGUMENT,
                         "address '%s' is not a numeric IPv4 or IPv6 address",
                         srv->address);
  }
  if (srv_mhd_ready(st))
    return wf_status_code(st);
  srv->daemon = MHD_start_daemon(
      flags, (uint16_t)srv->o.port, NULL, NULL, on_request, srv,
      MHD_OPTION_SOCK_ADDR, sa, MHD_OPTION_CONNECTION_LIMIT,
      (unsigned)srv->o.threads, MHD_OPTION_CONNECTION_TIMEOUT,
      (unsigned)srv->o.timeout_s, MHD_OPTION_NOTIFY_COMPLETED, on_completed,
      srv, MHD_OPTION_EXTERNAL_LOGGER, mhd_log, srv,
      MHD_OPTION_LISTEN_BACKLOG_SIZE, 1024u, MHD_OPTION_END);
  if (!srv->daemon)
    return wf_status_set(st, WF_UNAVAILABLE,
                         "cannot listen on %s port %d (in use, or not an "
                         "address of this machine?)",
                         srv->address, srv->o.port);
  const union MHD_DaemonInfo *di =
      MHD_get_daemon_info(srv->daemon, MHD_DAEMON_INFO_BIND_PORT);
  srv->port = di ? di->port : srv->o.port;
  if (srv->o.poll_ms > 0) {
    if (pthread_create(&srv->poller, NULL, poll_models, srv) == 0)
      srv->poller_started = 1;
    else
      log_line(srv, WF_SERVE_LOG_WARN,
               "cannot start the version poller; new versions will not be "
               "loaded");
  }
  log_line(srv, WF_SERVE_LOG_INFO, "serving %d model%s on %s port %d",
           srv->nmodels, srv->nmodels == 1 ? "" : "s", srv->address, srv->port);
  return 0;
}

int wf_server_port(const wf_server *srv) { return srv->port; }

void wf_server_stop(wf_server *srv) {
  pthread_mutex_lock(&srv->mu);
  if (srv->stopped) {
    pthread_mutex_unlock(&srv->mu);
    return;
  }
  srv->stopping = 1;
  pthread_cond_broadcast(&srv->cv);
  pthread_mutex_unlock(&srv->mu);
  if (srv->poller_started)
    pthread_join(srv->poller, NULL);
  srv->poller_started = 0;
  if (srv->daemon) {
    MHD_socket fd = MHD_quiesce_daemon(srv->daemon);
    if (fd != MHD_INVALID_SOCKET)
      close(fd);
    /* Requests in flight finish (at most the timeout). */
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += srv->o.timeout_s;
    pthread_mutex_lock(&srv->mu);
    while (srv->inflight > 0)
      if (pthread_cond_timedwait(&srv->cv, &srv->mu, &ts) == ETIMEDOUT)
        break;
    int left = srv->inflight;
    pthread_mutex_unlock(&srv->mu);
    if (left)
      log_line(srv, WF_SERVE_LOG_WARN,
               "%d request%s still unanswered after %d s; closing them", left,
               left == 1 ? "" : "s", srv->o.timeout_s);
    MHD_stop_daemon(srv->daemon);
    srv->daemon = NULL;
    log_line(srv, WF_SERVE_LOG_INFO, "stopped");
  }
  pthread_mutex_lock(&srv->mu);
  srv->stopped = 1;
  pthread_mutex_unlock(&srv->mu);
}

void wf_server_free(wf_server *srv) {
  if (!srv)
    return;
  wf_server_stop(srv);
  for (int i = 0; i < srv->nmodels; i++)
    srv_model_free(srv->models[i]);
  srv_metrics_free(srv->metrics);
  pthread_mutex_destroy(&srv->mu);
  pthread_cond_destroy(&srv->cv);
  pthread_mutex_destroy(&srv->log_mu);
  free(srv->address);
  free(srv);
}
