#!/bin/sh
# tests/transports/dp_input_error.sh — one task's input error fails every
# task's step: a data-parallel job of 3 processes (dp_train) where task 2
# reads a shorter file, so that its input alone runs out after 2 steps;
# task 2 then stays alive (its heartbeats go on) without ever reaching the
# step's AllReduce. Tasks 0 and 1, already waiting in it, must fail that
# step with an error naming task 2 (at once: task 2's plugin hears that its
# step failed before the collective and says so through the collective's
# own agreement, well within the 10 s heartbeat timeout), and the job must
# end (mpirun non-zero; the check allows 20 s) long before task 2 would
# leave by itself (60 s). Before, they waited forever.
set -eu
builddir=${top_builddir:-.}
srcdir=${top_srcdir:-.}
. "$srcdir/tests/transports/mpi_env.sh"
command -v mpirun >/dev/null 2>&1 || { echo "SKIP: mpirun not found"; exit 77; }
fail() { echo "FAIL: $*" >&2; exit 1; }
prog="$builddir/tests/transports/dp_train"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$prog" data "$tmp/data.bin" 960 || fail "writing the data"
"$prog" data "$tmp/short.bin" 100 || fail "writing the short data"
t0=$(date +%s)
set +e
timeout 60 $MPIRUN -np 3 "$prog" train --short-task 2 --short-data "$tmp/short.bin" \
  --stay 60 "$tmp/data.bin" "$tmp/out" >"$tmp/log" 2>&1
rc=$?
set -e
t1=$(date +%s)
cat "$tmp/log"
[ $rc -ne 124 ] || fail "the job hung"
[ $rc -ne 0 ] || fail "the job succeeded"
grep -q "task 2: training step 2: .*end of data" "$tmp/log" || fail "task 2 did not fail"
for t in 0 1; do
  grep -q "training step: .*task $t of 3: task 2 failed this step before reaching" "$tmp/log" ||
    fail "task $t did not fail its step naming task 2"
done
[ $((t1 - t0)) -le 20 ] || fail "the job took $((t1 - t0)) s to end"
echo "PASS: the job ended $((t1 - t0)) s after it started, every task failed the step"
