#!/bin/sh
# tests/transports/coll_ops.sh — coll_ops as a job of 1 (no mpirun), then
# of 2 and 3 processes. Each run has a timeout: a collective that never
# completes fails the test instead of hanging it. Skips (77) without
# mpirun.
set -eu
builddir=${top_builddir:-.}
prog="$builddir/tests/transports/coll_ops"
# Leak checking off for MPI processes under the sanitizers (mpi_env.sh).
. "${top_srcdir:-.}/tests/transports/mpi_env.sh"
command -v mpirun >/dev/null 2>&1 || { echo "mpirun not found"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# Two executor threads per process (steps and nodes overlap), no pinning:
# the jobs put more processes than cores on this machine.
cat > "$tmp/weft.conf" <<CONF
[threads]
inter_op = 2
intra_op = 1
pin = false
CONF
export WEFT_CONFIG="$tmp/weft.conf"
echo "== 1 process (no mpirun)"
timeout 120 "$prog"
for n in 2 3; do
  echo "== $n processes"
  # Shared memory without the ptrace-based single copy, which containers
  # usually forbid.
  timeout 120 mpirun --allow-run-as-root --oversubscribe --bind-to none \
    --mca btl_vader_single_copy_mechanism none -np $n "$prog"
done
