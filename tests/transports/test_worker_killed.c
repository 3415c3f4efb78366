/* tests/transports/test_worker_killed.c — task 1 kills itself (SIGKILL)
 * while the client runs steps whose work is on task 1. The client's step
 * must fail with UNAVAILABLE naming task 1 within the heartbeat timeout
 * plus slack; it prints "worker_killed: ok" then. Run by worker_killed.sh. */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <weft/weft.h>

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void *die_soon(void *arg) {
  (void)arg;
  struct timespec ts = {1, 0};
  nanosleep(&ts, NULL);
  kill(getpid(), SIGKILL);
  return NULL;
}

static wf_node *add(wf_graph *g, const char *op, const char *name,
                    const char *device, wf_output *in, int nin, wf_status *st) {
  wf_node_desc *d = wf_node_desc_new(g, op, name);
  for (int i = 0; i < nin; i++)
    wf_node_desc_add_input(d, in[i]);
  if (device)
    wf_node_desc_set_device(d, device);
  if (!strcmp(op, "Placeholder")) {
    wf_shape s = {.rank = 2, .dims = {256, 256}};
    wf_node_desc_set_attr_dtype(d, "dtype", WF_FLOAT32);
    wf_node_desc_set_attr_shape(d, "shape", s.dims, s.rank);
  }
  return wf_node_desc_finish(d, st);
}

int main(void) {
  wf_status *st = wf_status_new();
  /* The config the job's script wrote ($WEFT_CONFIG): one thread per
   * process and a short heartbeat timeout. */
  wf_config *cfg = wf_config_new();
  const char *path = wf_config_default_path();
  if (path && wf_config_load(cfg, path, st)) {
    fprintf(stderr, "%s\n", wf_status_message(st));
    return 1;
  }
  wf_runtime *rt = wf_runtime_new(cfg, st);
  wf_config_free(cfg);
  int32_t task, size;
  if (!rt || wf_runtime_cluster(rt, &task, &size, st)) {
    fprintf(stderr, "worker_killed: %s\n", wf_status_message(st));
    return 1;
  }
  if (task != 0) {
    pthread_t th;
    pthread_create(&th, NULL, die_soon, NULL);
    wf_worker_serve(rt, st);
    return 0; /* not reached: killed */
  }
  /* Each step: 8 chained 256x256 MatMuls on task 1. */
  wf_graph *g = wf_graph_new(rt);
  wf_node *x = add(g, "Placeholder", "x", NULL, NULL, 0, st);
  wf_output cur = {x, 0};
  for (int i = 0; i < 8; i++) {
    char name[16];
    snprintf(name, sizeof name, "mm%d", i);
    wf_output in[2] = {cur, {x, 0}};
    wf_node *m = add(g, "MatMul", name, "/task:1/cpu:0", in, 2, st);
    if (!m) {
      fprintf(stderr, "worker_killed: %s\n", wf_status_message(st));
      return 1;
    }
    cur = (wf_output){m, 0};
  }
  wf_session *s = wf_session_new(g, st);
  int64_t dims[2] = {256, 256};
  wf_tensor *v = wf_tensor_new(WF_FLOAT32, dims, 2, st);
  float *f = wf_tensor_data(v);
  for (int i = 0; i < 256 * 256; i++)
    f[i] = (float)(i % 7) / 256.0f;
  wf_output fx = {x, 0};
  double t0 = now_s(), failed_at = 0;
  int steps = 0, code = 0;
  while (now_s() - t0 < 60) {
    wf_tensor *got = NULL;
    code = wf_session_run(s, NULL, &fx, &v, 1, &cur, &got, 1, NULL, 0, NULL,
                          st);
    wf_tensor_release(got);
    if (code) {
      failed_at = now_s() - t0;
      break;
    }
    steps++;
  }
  const char *msg = wf_status_message(st);
  printf("worker_killed: %d steps, then after %.2f s: code %d: %s\n", steps,
         failed_at, code, msg);
  /* Killed at ~1 s; the heartbeat timeout is 2 s. */
  int ok = code == WF_UNAVAILABLE && strstr(msg, "task 1") &&
           failed_at < 1.0 + 2.0 + 5.0 && steps > 0;
  if (ok)
    printf("worker_killed: ok\n");
  fflush(stdout);
  wf_tensor_release(v);
  wf_session_free(s);
  wf_graph_free(g);
  /* The job lost a process: leave without the collective shutdown MPI
   * would wait for. A program that wants to go on restarts from its last
   * checkpoint in a new job. */
  _exit(ok ? 0 : 1);
}
