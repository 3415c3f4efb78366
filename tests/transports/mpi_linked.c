/* tests/transports/mpi_linked.c — a program that links Open MPI itself,
 * starts MPI itself and then runs the MPI transport plugin's collectives:
 * the plugin opens the library on first use and must then use the
 * process's MPI objects (MPI_COMM_WORLD, MPI_FLOAT, ...), which such a
 * program holds as copies of the library's (copy relocations). Before
 * that was handled, the plugin passed the library's unused originals and
 * the first collective's setup crashed inside MPI_Comm_set_errhandler.
 *
 * Run as a job of 2 by mpi_linked.sh. Each task feeds rank + 1 and checks
 * the AllReduce sum, then compares it with MPI_Allreduce called by the
 * program on the same data. It also reads, through MPI's tool interface,
 * the algorithm of Open MPI's nonblocking allreduce that the plugin chose
 * (the ring, 1) or kept (the value of
 * OMPI_MCA_coll_libnbc_iallreduce_algorithm when set). Exit 0 on success;
 * each failure names the task and what differed. */
#include <config.h>

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#include <weft/weft.h>

/* Open MPI's coll_libnbc_iallreduce_algorithm, or -1 where the library
 * has no such variable. */
static int nbc_algorithm(void) {
  int provided, index, count, value = -1;
  MPI_T_cvar_handle h;
  if (MPI_T_init_thread(MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS)
    return -1;
  if (MPI_T_cvar_get_index("coll_libnbc_iallreduce_algorithm", &index) ==
          MPI_SUCCESS &&
      MPI_T_cvar_handle_alloc(index, NULL, &h, &count) == MPI_SUCCESS) {
    if (count != 1 || MPI_T_cvar_read(h, &value) != MPI_SUCCESS)
      value = -1;
    MPI_T_cvar_handle_free(&h);
  }
  MPI_T_finalize();
  return value;
}

#define N 4099 /* float32 elements: not a multiple of a bucket's chunking */

static int fail(int rank, const char *what, wf_status *st) {
  fprintf(stderr, "mpi_linked: task %d: %s%s%s\n", rank, what,
          st ? ": " : "", st ? wf_status_message(st) : "");
  return 1;
}

int main(int argc, char **argv) {
  int provided = 0, rank = 0, tasks = 1, rc = 1;
  if (MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided) !=
      MPI_SUCCESS) {
    fprintf(stderr, "mpi_linked: MPI_Init_thread failed\n");
    return 1;
  }
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &tasks);
  wf_status *st = wf_status_new();
  wf_config *cfg = wf_config_new();
  const char *path = wf_config_default_path();
  if (path && wf_config_load(cfg, path, st))
    return fail(rank, "config", st);
  wf_runtime *rt = wf_runtime_new(cfg, st);
  wf_config_free(cfg);
  if (!rt)
    return fail(rank, "runtime", st);

  int64_t n = N;
  wf_graph *g = wf_graph_new(rt);
  wf_node_desc *d = wf_node_desc_new(g, "Placeholder", "x");
  wf_node_desc_set_attr_dtype(d, "dtype", WF_FLOAT32);
  wf_node_desc_set_attr_shape(d, "shape", &n, 1);
  wf_node *x = wf_node_desc_finish(d, st);
  d = wf_node_desc_new(g, "AllReduce", "sum");
  wf_node_desc_add_input_list(d, &(wf_output){x, 0}, 1);
  wf_node *y = x ? wf_node_desc_finish(d, st) : NULL;
  if (!y)
    return fail(rank, "graph", st);
  wf_session *s = wf_session_new(g, st);
  wf_callable *c = s ? wf_session_prepare(s, &(wf_output){x, 0}, 1,
                                          &(wf_output){y, 0}, 1, NULL, 0, st)
                     : NULL;
  if (!c)
    return fail(rank, "prepare", st);
  wf_tensor *in = wf_tensor_new(WF_FLOAT32, &n, 1, st), *out = NULL;
  float *a = wf_tensor_data(in), *ref = malloc(sizeof(float) * N);
  for (int i = 0; i < N; i++)
    a[i] = (float)(rank + 1) + (float)(i % 7);
  if (wf_callable_run(c, NULL, &in, &out, NULL, st))
    return fail(rank, "run", st);
  if (MPI_Allreduce(a, ref, N, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD) !=
      MPI_SUCCESS)
    return fail(rank, "MPI_Allreduce of the program", NULL);
  const float *got = wf_tensor_data(out);
  rc = 0;
  const char *chosen = getenv("OMPI_MCA_coll_libnbc_iallreduce_algorithm");
  int alg = nbc_algorithm(), want_alg = chosen ? atoi(chosen) : 1;
  if (alg >= 0 && alg != want_alg) {
    fprintf(stderr,
            "mpi_linked: task %d: coll_libnbc_iallreduce_algorithm is %d, "
            "expected %d\n",
            rank, alg, want_alg);
    rc = 1;
  }
  for (int i = 0; i < N && !rc; i++) {
    float want = (float)tasks * (float)(tasks + 1) / 2 +
                 (float)tasks * (float)(i % 7);
    if (got[i] != want || ref[i] != want) {
      fprintf(stderr,
              "mpi_linked: task %d: element %d: AllReduce %g, "
              "MPI_Allreduce %g, expected %g\n",
              rank, i, got[i], ref[i], want);
      rc = 1;
    }
  }
  wf_tensor_release(out);
  wf_tensor_release(in);
  free(ref);
  wf_callable_free(c);
  wf_session_free(s);
  wf_graph_free(g);
  wf_runtime_free(rt);
  wf_status_free(st);
  MPI_Finalize();
  if (!rc && rank == 0)
    printf("mpi_linked: %d tasks agree on %d sums\n", tasks, N);
  return rc;
}
