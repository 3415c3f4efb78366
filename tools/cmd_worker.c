/* tools/cmd_worker.c — `weft worker`: serve as a worker task of a job
 * (weft/cluster.h). Started by the launcher next to the client program:
 *   mpirun -np 1 ./client : -np 2 weft worker */
#include <config.h>

#include <stdio.h>
#include <string.h>

#include "commands.h"

const char weft_worker_summary[] =
    "serve as a worker task of a job (under mpirun, beside the client)";
const char weft_worker_help[] =
    "usage: weft [--config FILE] worker\n"
    "\n"
    "Joins the job the launcher started (the transport named by [cluster]\n"
    "transport, by default the first loaded one: MPI) as one of tasks\n"
    "1 .. N-1, then runs whatever task 0 ships to it: the shares of graphs\n"
    "whose nodes ask for this task (\"/task:K/cpu:0\") and their steps.\n"
    "Returns when the client ends the job (exit status 0), or with status 1\n"
    "when it cannot serve (no transport, it is task 0) or the client went\n"
    "silent for longer than [cluster] heartbeat_timeout_ms.\n"
    "\n"
    "Example (one client, two workers, all on this machine):\n"
    "  mpirun -np 1 ./client : -np 2 weft worker\n";

int weft_cmd_worker(int argc, char **argv, const char *config) {
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
      fputs(weft_worker_help, stdout);
      return 0;
    }
    fprintf(stderr, "weft worker: unexpected argument '%s'\n%s", argv[i],
            weft_worker_help);
    return 2;
  }
  wf_runtime *rt = weft_open_runtime(config);
  if (!rt)
    return 1;
  wf_status *st = wf_status_new();
  int rc = wf_worker_serve(rt, st);
  if (rc)
    fprintf(stderr, "weft worker: %s\n", wf_status_message(st));
  wf_status_free(st);
  wf_runtime_free(rt);
  return rc ? 1 : 0;
}
