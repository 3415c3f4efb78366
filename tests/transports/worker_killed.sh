#!/bin/sh
# tests/transports/worker_killed.sh — a worker killed in the middle of a
# step: the client's step fails with UNAVAILABLE naming the task within the
# heartbeat timeout (plus slack), and the client exits instead of hanging.
set -eu
builddir=${top_builddir:-.}
srcdir=${top_srcdir:-.}
. "$srcdir/tests/transports/mpi_env.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mpi_config "$tmp/weft.conf" 2000
# Recovery on: the launcher keeps the job alive when a process dies, so
# the client sees the failure itself.
set +e
WEFT_CONFIG="$tmp/weft.conf" timeout 120 $MPIRUN --mca orte_enable_recovery 1 \
  -np 2 "$builddir/tests/transports/test_worker_killed" > "$tmp/out" 2>&1
rc=$?
set -e
cat "$tmp/out"
if [ $rc -eq 124 ]; then
  echo "worker_killed: the job hung" >&2
  exit 1
fi
grep -q "^worker_killed: ok" "$tmp/out"
