/* tools/cmd_serve.c — `weft serve`: serves saved models over HTTP with
 * TensorFlow Serving's REST API and the KServe v2 protocol (the server
 * itself is lib/serve). This file parses the options and the model config
 * file, and waits for SIGINT or SIGTERM to stop the server gracefully. It
 * does not build without libmicrohttpd: then the command says so. */
#include <config.h>

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"

const char weft_serve_summary[] =
    "serve saved models over HTTP (TensorFlow Serving REST, KServe v2)";
const char weft_serve_help[] =
    "usage: weft serve --model NAME=DIR ... [options]\n"
    "       weft serve --model-config FILE [options]\n\n"
    "Serves each model NAME from DIR: a saved model (served as version 1) or\n"
    "a directory of numbered version subdirectories, each a saved model; the\n"
    "highest is served and newer ones are picked up while serving. Endpoints\n"
    "(on one port):\n"
    "  GET  /v1/models/NAME[/versions/V]            version status\n"
    "  GET  /v1/models/NAME[/versions/V]/metadata   signatures\n"
    "  POST /v1/models/NAME[/versions/V]:predict    {\"instances\": ...} or\n"
    "                                               {\"inputs\": ...}\n"
    "  GET  /v2/health/live, /v2/health/ready       KServe v2 health\n"
    "  GET  /v2/models/NAME[/versions/V][/ready]    KServe v2 metadata\n"
    "  POST /v2/models/NAME[/versions/V]/infer      KServe v2 inference\n"
    "  GET  /metrics                                Prometheus metrics\n"
    "SIGINT or SIGTERM stops it after the requests in flight are answered.\n\n"
    "  --model NAME=DIR          a model to serve (repeat for more)\n"
    "  --model-config FILE       models from FILE: a section per model,\n"
    "                            [model NAME] with path = DIR; a [serve]\n"
    "                            section may set any option below by its\n"
    "                            long name (port = 8501)\n"
    "  --address ADDR            numeric address to listen on (127.0.0.1)\n"
    "  --port N                  port (8501; 0 picks a free one)\n"
    "  --threads N               connections served at once (64)\n"
    "  --max-body-bytes N        larger request bodies get 413 (67108864)\n"
    "  --timeout S               idle connections are closed after S s (30)\n"
    "  --log-level L             error, warn, info (a line per request) or\n"
    "                            debug (info)\n"
    "  --poll-ms N               look for new versions every N ms; 0: never\n"
    "                            (1000)\n"
    "  --enable-batching         join concurrent requests into one run\n"
    "  --max-batch-size N        rows per batch (64; implies batching)\n"
    "  --batch-timeout-micros N  longest wait for a batch to fill (1000)\n"
    "  --num-batch-threads N     batches run at once per model (2)\n"
    "  --max-enqueued-batches N  queue limit in batches; more gets 429 (64)\n"
    "  --config FILE             the runtime's config (before `serve`)\n";

#ifndef HAVE_MICROHTTPD

int weft_cmd_serve(int argc, char **argv, const char *config) {
  (void)argc, (void)argv, (void)config;
  fprintf(stderr, "weft serve: this weft was built without libmicrohttpd "
                  "(Debian package libmicrohttpd-dev); install it and "
                  "configure again\n");
  return 1;
}

#else

#include <ini.h>

#include "serve/serve.h"

#define MAX_MODELS 256

typedef struct serve_cli {
  wf_server_options o;
  int batching;
  char *names[MAX_MODELS], *dirs[MAX_MODELS];
  int nmodels;
  const char *config_file;
  char *address; /* the last --address or address = */
} serve_cli;

static int parse_int(const char *what, const char *s, int64_t lo, int64_t hi,
                     int64_t *out) {
  char *end;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (errno || end == s || *end || v < lo || v > hi) {
    fprintf(stderr,
            "weft serve: %s wants a whole number from %" PRId64 " to %" PRId64
            ", not '%s'\n",
            what, lo, hi, s);
    return -1;
  }
  *out = v;
  return 0;
}

static int add_model(serve_cli *c, const char *name, size_t nlen,
                     const char *dir) {
  if (c->nmodels == MAX_MODELS) {
    fprintf(stderr, "weft serve: at most %d models\n", MAX_MODELS);
    return -1;
  }
  c->names[c->nmodels] = strndup(name, nlen);
  c->dirs[c->nmodels] = strdup(dir);
  if (!c->names[c->nmodels] || !c->dirs[c->nmodels]) {
    free(c->names[c->nmodels]);
    free(c->dirs[c->nmodels]);
    fprintf(stderr, "weft serve: out of memory\n");
    return -1;
  }
  c->nmodels++;
  return 0;
}

static int parse_level(const char *s) {
  static const char *names[] = {"error", "warn", "info", "debug"};
  for (int i = 0; i < 4; i++)
    if (!strcmp(s, names[i]))
      return i;
  return -1;
}

/* Sets option `name` (a long option's name) to value. */
static int set_option(serve_cli *c, const char *name, const char *value) {
  wf_server_options *o = &c->o;
  int64_t v;
  if (!strcmp(name, "address")) {
    char *a = strdup(value);
    if (!a)
      return -1;
    free(c->address);
    o->address = c->address = a;
    return 0;
  }
  if (!strcmp(name, "log-level")) {
    if ((o->log_level = parse_level(value)) < 0) {
      fprintf(stderr,
              "weft serve: --log-level wants error, warn, info or "
              "debug, not '%s'\n",
              value);
      return -1;
    }
    return 0;
  }
  if (!strcmp(name, "enable-batching")) {
    c->batching = !value || !strcmp(value, "true") || !strcmp(value, "1");
    return 0;
  }
  static const struct {
    const char *name;
    int64_t lo, hi;
  } ints[] = {{"port", 0, 65535},
              {"threads", 1, 100000},
              {"max-body-bytes", 1, INT64_MAX / 2},
              {"timeout", 1, 86400},
              {"poll-ms", 0, 86400000},
              {"max-batch-size", 1, 1 << 20},
              {"batch-timeout-micros", 0, 60000000},
              {"num-batch-threads", 1, 256},
              {"max-enqueued-batches", 1, 1 << 20}};
  for (size_t i = 0; i < sizeof ints / sizeof *ints; i++) {
    if (strcmp(name, ints[i].name))
      continue;
    char what[64];
    snprintf(what, sizeof what, "--%s", name);
    if (parse_int(what, value, ints[i].lo, ints[i].hi, &v))
      return -1;
    switch (i) {
    case 0:
      o->port = (int)v;
      break;
    case 1:
      o->threads = (int)v;
      break;
    case 2:
      o->max_body_bytes = v;
      break;
    case 3:
      o->timeout_s = (int)v;
      break;
    case 4:
      o->poll_ms = v;
      break;
    case 5:
      o->max_batch_size = (int)v;
      c->batching = 1;
      break;
    case 6:
      o->batch_timeout_us = v;
      break;
    case 7:
      o->num_batch_threads = (int)v;
      break;
    case 8:
      o->max_enqueued_batches = (int)v;
      break;
    }
    return 0;
  }
  fprintf(stderr, "weft serve: unknown option '%s'\n", name);
  return -1;
}

static int on_ini(void *arg, const char *section, const char *key,
                  const char *value) {
  serve_cli *c = arg;
  if (!strncmp(section, "model ", 6)) {
    if (strcmp(key, "path")) {
      fprintf(stderr, "weft serve: %s: [%s] knows only 'path', not '%s'\n",
              c->config_file, section, key);
      return 0;
    }
    const char *name = section + 6;
    return add_model(c, name, strlen(name), value) == 0;
  }
  if (!strcmp(section, "serve")) {
    if (set_option(c, key, value)) {
      fprintf(stderr, "weft serve: in %s [serve]\n", c->config_file);
      return 0;
    }
    return 1;
  }
  fprintf(stderr,
          "weft serve: %s: unknown section [%s] (use [serve] and "
          "[model NAME])\n",
          c->config_file, section);
  return 0;
}

int weft_cmd_serve(int argc, char **argv, const char *config) {
  static const struct option longopts[] = {
      {"model", required_argument, NULL, 'm'},
      {"model-config", required_argument, NULL, 'f'},
      {"address", required_argument, NULL, 'o'},
      {"port", required_argument, NULL, 'o'},
      {"threads", required_argument, NULL, 'o'},
      {"max-body-bytes", required_argument, NULL, 'o'},
      {"timeout", required_argument, NULL, 'o'},
      {"log-level", required_argument, NULL, 'o'},
      {"poll-ms", required_argument, NULL, 'o'},
      {"enable-batching", no_argument, NULL, 'o'},
      {"max-batch-size", required_argument, NULL, 'o'},
      {"batch-timeout-micros", required_argument, NULL, 'o'},
      {"num-batch-threads", required_argument, NULL, 'o'},
      {"max-enqueued-batches", required_argument, NULL, 'o'},
      {NULL, 0, NULL, 0}};
  serve_cli c;
  memset(&c, 0, sizeof c);
  wf_server_options_init(&c.o);
  int ch, idx, rc = 2;
  wf_runtime *rt = NULL;
  wf_server *srv = NULL;
  wf_status *st = NULL;
  optind = 1;
  opterr = 0;
  while ((ch = getopt_long(argc, argv, "", longopts, &idx)) != -1) {
    switch (ch) {
    case 'm': {
      const char *eq = strchr(optarg, '=');
      if (!eq || eq == optarg || !eq[1]) {
        fprintf(stderr, "weft serve: --model wants NAME=DIR, not '%s'\n",
                optarg);
        goto done;
      }
      if (add_model(&c, optarg, (size_t)(eq - optarg), eq + 1))
        goto done;
      break;
    }
    case 'f':
      c.config_file = optarg;
      {
        int line = ini_parse(optarg, on_ini, &c);
        if (line < 0) {
          fprintf(stderr, "weft serve: cannot read model config %s\n", optarg);
          goto done;
        }
        if (line > 0) {
          fprintf(stderr, "weft serve: %s:%d: bad line\n", optarg, line);
          goto done;
        }
      }
      break;
    case 'o':
      if (set_option(&c, longopts[idx].name, optarg))
        goto done;
      break;
    default:
      fprintf(stderr,
              "weft serve: unknown option '%s' (see weft serve "
              "--help)\n",
              argv[optind - 1]);
      goto done;
    }
  }
  if (optind < argc) {
    fprintf(stderr,
            "weft serve: unexpected argument '%s' (models are given "
            "with --model NAME=DIR)\n",
            argv[optind]);
    goto done;
  }
  if (c.nmodels == 0) {
    fprintf(stderr, "weft serve: give at least one --model NAME=DIR (see "
                    "weft serve --help)\n");
    goto done;
  }
  if (c.batching && c.o.max_batch_size == 0)
    c.o.max_batch_size = 64;
  if (!c.batching)
    c.o.max_batch_size = 0;

  rc = 1;
  /* Signals go to the waiting main thread only: block them before any
   * thread starts, so every thread inherits the mask. */
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGINT);
  sigaddset(&stop, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop, NULL);
  signal(SIGPIPE, SIG_IGN);

  st = wf_status_new();
  rt = weft_open_runtime(config);
  if (!st || !rt)
    goto done;
  srv = wf_server_new(rt, &c.o, st);
  if (!srv)
    goto fail;
  for (int i = 0; i < c.nmodels; i++)
    if (wf_server_add_model(srv, c.names[i], c.dirs[i], st))
      goto fail;
  if (wf_server_start(srv, st))
    goto fail;
  printf("weft serve: listening on http://%s%s%s:%d\n",
         strchr(c.o.address, ':') ? "[" : "", c.o.address,
         strchr(c.o.address, ':') ? "]" : "", wf_server_port(srv));
  fflush(stdout);
  int sig = 0;
  while (sigwait(&stop, &sig) != 0)
    ;
  fprintf(stderr, "weft serve: %s received, stopping\n",
          sig == SIGINT ? "SIGINT" : "SIGTERM");
  wf_server_stop(srv);
  rc = 0;
  goto done;
fail:
  fprintf(stderr, "weft serve: %s\n", wf_status_message(st));
done:
  wf_server_free(srv);
  wf_runtime_free(rt);
  wf_status_free(st);
  for (int i = 0; i < c.nmodels; i++) {
    free(c.names[i]);
    free(c.dirs[i]);
  }
  free(c.address);
  return rc;
}

#endif
