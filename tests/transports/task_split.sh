#!/bin/sh
# tests/transports/task_split.sh — test_task_split as a job of 2 and of 3
# processes (task 0 the client, the others workers serving through
# wf_worker_serve), then with `weft worker` processes as the workers.
set -eu
builddir=${top_builddir:-.}
srcdir=${top_srcdir:-.}
. "$srcdir/tests/transports/mpi_env.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mpi_config "$tmp/weft.conf"
for n in 2 3; do
  echo "== $n processes"
  WEFT_CONFIG="$tmp/weft.conf" timeout 300 $MPIRUN -np $n \
    "$builddir/tests/transports/test_task_split"
done
echo "== 1 client + 2 x weft worker"
WEFT_CONFIG="$tmp/weft.conf" timeout 300 $MPIRUN \
  -np 1 "$builddir/tests/transports/test_task_split" : \
  -np 2 "$builddir/tools/weft" worker
