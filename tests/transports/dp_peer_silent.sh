#!/bin/sh
# tests/transports/dp_peer_silent.sh — every task watches every other one:
# a data-parallel job of 3 processes on this host (the mlp of
# examples/train_fashion, 12,000 samples, global batch 48) whose task 2 is
# stopped (SIGSTOP: alive, silent) once all tasks saved step 50. Tasks 0
# and 1 must each report task 2 silent themselves (each task's output is
# kept apart with --output-filename) rather than task 1 learning of it only
# when task 0 gives up, and the job must end, non-zero, within 20 s of the
# stop (heartbeat timeout 4 s). The same across test hosts:
# netns_faults.sh.
set -eu
builddir=${top_builddir:-.}
srcdir=${top_srcdir:-.}
data=/usr/share/datasets/fashion-mnist
[ -f "$data/train-images-idx3-ubyte.gz" ] ||
  { echo "SKIP: $data is missing (Debian package dataset-fashion-mnist)"; exit 77; }
. "$srcdir/tests/transports/mpi_env.sh"
command -v mpirun >/dev/null 2>&1 || { echo "SKIP: mpirun not found"; exit 77; }
fail() { echo "FAIL: $*" >&2; exit 1; }
tmp=$(mktemp -d)
victim=
cleanup() {
  [ -n "$victim" ] && kill -CONT "$victim" 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT
mpi_config "$tmp/weft.conf" 4000
WEFT_CONFIG="$tmp/weft.conf"
export WEFT_CONFIG
opts="--model mlp --data-parallel --limit 12000 --batch 48 --epochs 3 --checkpoint-every 50 --quiet"
# TCP between the processes, not shared memory: a process stopped in the
# middle of writing into Open MPI's shared-memory queue of a peer blocks
# that queue, so the peer hears nobody any more and may name the wrong
# task (it still fails within the timeout).
# Short launcher keepalives, as across hosts (docs/distributed.md): a task
# that gave up on task 2 then stays 3 s before it exits, so mpirun does not
# end the job (killing task 1) in the instant before task 1's own
# heartbeat timeout, which falls within milliseconds of task 0's.
timeout 120 $MPIRUN --mca btl tcp,self --mca oob_tcp_keepalive_time 1 \
  --mca oob_tcp_keepalive_intvl 1 --mca oob_tcp_keepalive_probes 1 \
  --output-filename "$tmp/log" -np 3 \
  "$builddir/examples/train_fashion" $opts --checkpoints "$tmp/ck" >"$tmp/out" 2>&1 &
job=$!
i=0
while [ $i -lt 1200 ] && [ -z "$victim" ]; do
  if ls "$tmp/ck/task-2/" 2>/dev/null | grep -q "ckpt-0000000050"; then
    for p in $(pgrep -f "train_fashion $opts" || true); do
      if tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=2"; then
        victim=$p
      fi
    done
  fi
  [ -n "$victim" ] || sleep 0.05
  i=$((i + 1))
done
[ -n "$victim" ] || { wait $job || true; cat "$tmp/out"; fail "task 2 never saved step 50"; }
kill -STOP "$victim"
t0=$(date +%s)
set +e
wait $job
rc=$?
set -e
t1=$(date +%s)
grep -v "^epoch" "$tmp/out" | head -20 || true
[ $rc -ne 124 ] || fail "the job hung after task 2 stopped"
[ $rc -ne 0 ] || fail "the job succeeded with task 2 stopped"
# Task 0 names task 2. Task 1 must notice by itself too (before, it heard
# of a failure only when task 0 gave up); under a heavy load it may name
# task 0, whose heartbeats to it stall in the same instant (counted as a
# pass: it learned of the failure itself, not through task 0's message).
f=$(find "$tmp/log" -path "*rank.0/stderr" | head -1)
[ -n "$f" ] && grep -q "task 2 has been silent" "$f" ||
  { cat "$f" 2>/dev/null || true; fail "task 0 did not report task 2 silent"; }
f=$(find "$tmp/log" -path "*rank.1/stderr" | head -1)
[ -n "$f" ] && grep -q "task [02] has been silent" "$f" ||
  { cat "$f" 2>/dev/null || true; fail "task 1 did not report a silent peer itself"; }
grep -q "task 2 has been silent" "$f" ||
  echo "note: task 1 named task 0, not the stopped task 2 (load)"
[ $((t1 - t0)) -le 20 ] || fail "the job took $((t1 - t0)) s to end after the stop"
echo "PASS: tasks 0 and 1 each reported a silent peer; the job ended $((t1 - t0)) s after the stop"
