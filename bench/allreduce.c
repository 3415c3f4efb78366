/* bench/allreduce.c — the MPI transport plugin's AllReduce against a plain
 * MPI_Allreduce: for 1, 4, 16 and 64 MiB of float32, a one-node AllReduce
 * graph run through a prepared callable, and MPI_Allreduce on the same data
 * in the same process. Task 0 prints one JSON line per size with the bus
 * bandwidth of each (2 (n - 1) / n * bytes / time, n tasks), the time per
 * call and their ratio (graph / MPI; the target is >= 0.9).
 *
 * Run as a job: `mpirun -np 2 bench/allreduce` (`make bench-allreduce`).
 * Each figure is the best of ROUNDS rounds, a round timing REPS calls
 * between barriers as the slowest task saw them; graph and MPI rounds
 * alternate so that both see the same machine. The program initialises MPI
 * itself (thread level MULTIPLE, which the plugin needs) and finalizes it
 * after freeing the runtime. */
#include <config.h>

#include <mpi.h>
#include <string.h>

#include "bench_util.h"

#define ROUNDS 5

/* Seconds per call of fn over reps calls, as the slowest task saw it. */
#define TIMED(secs, reps, call)                                                \
  do {                                                                         \
    MPI_Barrier(MPI_COMM_WORLD);                                               \
    double t0_ = bench_now();                                                  \
    for (int r_ = 0; r_ < (reps); r_++)                                        \
      call;                                                                    \
    double dt_ = (bench_now() - t0_) / (reps);                                 \
    MPI_Allreduce(&dt_, &(secs), 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);      \
  } while (0)

static void graph_run(wf_callable *c, wf_tensor *x, wf_status *st) {
  wf_tensor *y = NULL;
  bench_check(wf_callable_run(c, NULL, &x, &y, NULL, st), st, "run");
  wf_tensor_release(y);
}

static void mpi_run(const float *a, float *b, int n) {
  int err = MPI_Allreduce(a, b, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  if (err != MPI_SUCCESS) {
    fprintf(stderr, "bench: MPI_Allreduce failed (%d)\n", err);
    exit(1);
  }
}

int main(int argc, char **argv) {
  static const int mib[] = {1, 4, 16, 64};
  int provided = 0, rank = 0, tasks = 1;
  if (MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided) !=
          MPI_SUCCESS ||
      provided < MPI_THREAD_MULTIPLE) {
    fprintf(stderr, "bench: MPI without MPI_THREAD_MULTIPLE\n");
    return 1;
  }
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &tasks);
  wf_status *st = wf_status_new();
  wf_runtime *rt = bench_runtime(0, st);

  for (size_t s = 0; s < sizeof mib / sizeof mib[0]; s++) {
    int64_t n = (int64_t)mib[s] << 18; /* float32 elements */
    size_t bytes = (size_t)n * sizeof(float);
    int reps = mib[s] >= 16 ? 4 : 64 / mib[s];
    wf_graph *g = wf_graph_new(rt);
    wf_node *x = bench_placeholder(g, "x", WF_FLOAT32, &n, 1, st);
    wf_node_desc *d = wf_node_desc_new(g, "AllReduce", "allreduce");
    wf_node_desc_add_input_list(d, &(wf_output){x, 0}, 1);
    wf_output y = {bench_finish(d, st), 0};
    wf_session *sess = wf_session_new(g, st);
    bench_check(sess == NULL, st, "session");
    wf_callable *c =
        wf_session_prepare(sess, &(wf_output){x, 0}, 1, &y, 1, NULL, 0, st);
    bench_check(c == NULL, st, "prepare");
    wf_tensor *xt = wf_tensor_new(WF_FLOAT32, &n, 1, st);
    float *b = malloc(bytes);
    bench_check(!xt || !b, st, "buffers");
    float *a = wf_tensor_data(xt);
    for (int64_t i = 0; i < n; i++)
      a[i] = (float)(rank + 1);
    memset(b, 0, bytes);

    /* Warm up both, and check the graph's sum once. */
    wf_tensor *out = NULL;
    bench_check(wf_callable_run(c, NULL, &xt, &out, NULL, st), st, "run");
    float want = (float)tasks * (float)(tasks + 1) / 2;
    if (((float *)wf_tensor_data(out))[n - 1] != want) {
      fprintf(stderr, "bench: AllReduce gave %g, expected %g\n",
              ((float *)wf_tensor_data(out))[n - 1], want);
      return 1;
    }
    wf_tensor_release(out);
    for (int i = 0; i < 2; i++) {
      graph_run(c, xt, st);
      mpi_run(a, b, (int)n);
    }

    double graph = 1e30, mpi = 1e30;
    for (int round = 0; round < ROUNDS; round++) {
      double t;
      TIMED(t, reps, graph_run(c, xt, st));
      if (t < graph)
        graph = t;
      TIMED(t, reps, mpi_run(a, b, (int)n));
      if (t < mpi)
        mpi = t;
    }
    double factor = tasks > 1 ? 2.0 * (tasks - 1) / tasks : 1.0;
    double graph_bw = factor * (double)bytes / graph * 1e-9;
    double mpi_bw = factor * (double)bytes / mpi * 1e-9;
    if (rank == 0)
      printf("{\"bench\":\"allreduce\",\"mib\":%d,\"tasks\":%d,"
             "\"graph_ms\":%.3f,\"mpi_ms\":%.3f,"
             "\"graph_busbw_gbs\":%.3f,\"mpi_busbw_gbs\":%.3f,"
             "\"graph_vs_mpi\":%.3f}\n",
             mib[s], tasks, graph * 1e3, mpi * 1e3, graph_bw, mpi_bw,
             graph_bw / mpi_bw);
    fflush(stdout);
    free(b);
    wf_tensor_release(xt);
    wf_callable_free(c);
    wf_session_free(sess);
    wf_graph_free(g);
  }
  wf_runtime_free(rt);
  wf_status_free(st);
  MPI_Finalize();
  return 0;
}
