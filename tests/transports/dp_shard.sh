#!/bin/sh
# tests/transports/dp_shard.sh — the input of a data-parallel job: jobs of
# 1, 2 and 3 tasks each read a disjoint part of every global batch, and
# together all of it (dp_shard.c says how that is checked), over 100
# records in global batches of 12 (the last 4 records of a pass are left
# out so that every task runs the same steps).
set -eu
: "${top_builddir:=.}"
prog="$top_builddir/tests/transports/dp_shard"
fail() { echo "FAIL: $*" >&2; exit 1; }
# Leak checking off for MPI processes under the sanitizers (mpi_env.sh).
. "${top_srcdir:-.}/tests/transports/mpi_env.sh"
command -v mpirun >/dev/null 2>&1 || { echo "mpirun not found: skipping"; exit 77; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$prog" data "$tmp/ids.bin" 100 || fail "writing the records"
for np in 1 2 3; do
  timeout 300 mpirun --allow-run-as-root --oversubscribe --bind-to none \
    --mca btl_vader_single_copy_mechanism none -np "$np" \
    "$prog" check "$tmp/ids.bin" 12 || fail "the job of $np task(s)"
done
echo "PASS: shards are disjoint and cover each global batch"
