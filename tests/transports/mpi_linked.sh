#!/bin/sh
# tests/transports/mpi_linked.sh — mpi_linked (a program that links Open
# MPI itself) as a job of 2 processes, under a timeout: once as it is, once
# with an allreduce algorithm chosen in the environment. Skips (77)
# without mpirun.
set -eu
builddir=${top_builddir:-.}
. "${top_srcdir:-.}/tests/transports/mpi_env.sh"
command -v mpirun >/dev/null 2>&1 || { echo "mpirun not found"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf '[threads]\ninter_op = 2\nintra_op = 1\npin = false\n' >"$tmp/weft.conf"
export WEFT_CONFIG="$tmp/weft.conf"
run() {
  timeout 120 mpirun --allow-run-as-root --oversubscribe --bind-to none \
    --mca btl_vader_single_copy_mechanism none -x WEFT_CONFIG "$@" -np 2 \
    "$builddir/tests/transports/mpi_linked"
}
echo "== the plugin chooses the ring for MPI_Iallreduce"
run
echo "== a user's choice is kept"
OMPI_MCA_coll_libnbc_iallreduce_algorithm=2 run \
  -x OMPI_MCA_coll_libnbc_iallreduce_algorithm
