#!/bin/sh
# tests/transports/dp_equivalence.sh — data-parallel training matches
# training alone: the mlp (784-256-128-10, Adam) trained 20 steps of global
# batch 48 on fixed data by one process without data parallelism (the
# reference) and by jobs of 1, 2 and 3 processes (48, 24 and 16 samples per
# task, input sharded by task, model seeds that differ per task) ends with
# the same weights and goes through the same losses, within the tolerances
# that dp_train.c states and explains (loss 1e-5 relative; weights 1e-4
# each and 1e-5 of their RMS overall); the job of 1 bit for bit (a mean
# over one task divides by 1). In each job every task starts from task 0's
# initial weights (the broadcast) and the replicas end equal, bit for bit.
# Bucket sizes: 1 and 3 tasks run with 1-byte buckets (one AllReduce per
# gradient), 2 tasks with the default (one bucket for all).
#
# Then the same with plain gradient descent on 2 tasks (Adam would not tell
# a sum across tasks from the mean). A control shows the comparison can
# fail: a reference with another seed must not match.
set -eu
: "${top_builddir:=.}"
prog="$top_builddir/tests/transports/dp_train"
fail() { echo "FAIL: $*" >&2; exit 1; }
# Leak checking off for MPI processes under the sanitizers (mpi_env.sh).
. "${top_srcdir:-.}/tests/transports/mpi_env.sh"
command -v mpirun >/dev/null 2>&1 || { echo "mpirun not found: skipping"; exit 77; }
# As root, more processes than cores, and shared memory without the
# ptrace-based single copy that containers forbid.
run_job() {
  np=$1
  shift
  timeout 300 mpirun --allow-run-as-root --oversubscribe --bind-to none \
    --mca btl_vader_single_copy_mechanism none -np "$np" "$@"
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$prog" data "$tmp/data.bin" 960 || fail "writing the data"

"$prog" train --plain "$tmp/data.bin" "$tmp/ref" || fail "the reference run"
"$prog" train --plain --seed 43 "$tmp/data.bin" "$tmp/other" || fail "the control run"
if "$prog" compare "$tmp/ref.task0" "$tmp/other.task0"; then
  fail "a run with another seed matched the reference: the comparison cannot tell"
fi

for np in 1 2 3; do
  bucket=1
  [ "$np" -eq 2 ] && bucket=0
  exact=
  [ "$np" -eq 1 ] && exact=--exact
  run_job "$np" "$prog" train --seed-per-task --bucket "$bucket" \
    "$tmp/data.bin" "$tmp/dp$np" || fail "the job of $np task(s)"
  "$prog" compare $exact "$tmp/ref.task0" "$tmp/dp$np.task0" ||
    fail "$np task(s) do not match training alone"
  t=1
  while [ "$t" -lt "$np" ]; do
    "$prog" compare --exact "$tmp/dp$np.task0" "$tmp/dp$np.task$t" ||
      fail "task $t of $np is not a replica of task 0"
    t=$((t + 1))
  done
done
# Adam barely notices gradients scaled alike; plain gradient descent would
# show a sum across tasks where the mean belongs.
"$prog" train --plain --sgd "$tmp/data.bin" "$tmp/sgd" || fail "the SGD reference"
run_job 2 "$prog" train --sgd "$tmp/data.bin" "$tmp/sgd2" || fail "the SGD job"
"$prog" compare "$tmp/sgd.task0" "$tmp/sgd2.task0" ||
  fail "2 tasks with SGD do not match SGD alone"
echo "PASS: 1, 2 and 3 tasks match training alone"
