#!/bin/sh
# tests/transports/dp_restart.sh — data-parallel training survives losing a
# process: a 2-process job training the mlp for 2 epochs (checkpoints every
# 150 steps, each task in DIR/task-K) loses task 1 (SIGKILL) in the first
# epoch; task 0's step fails with UNAVAILABLE naming task 1 within the
# heartbeat timeout and the job ends instead of hanging; a new job resumed
# from the newest step both tasks saved ends with exactly the test accuracy
# of a job that was never interrupted.
set -eu
builddir=${top_builddir:-.}
srcdir=${top_srcdir:-.}
data=/usr/share/datasets/fashion-mnist
if [ ! -f "$data/train-images-idx3-ubyte.gz" ]; then
  echo "SKIP: $data is missing (Debian package dataset-fashion-mnist)"
  exit 77
fi
. "$srcdir/tests/transports/mpi_env.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mpi_config "$tmp/weft.conf" 2000
WEFT_CONFIG="$tmp/weft.conf"
export WEFT_CONFIG
ex="$builddir/examples/train_fashion"
common="--model mlp --data-parallel --epochs 2 --checkpoint-every 150 --quiet"

echo "== uninterrupted"
timeout 300 $MPIRUN -np 2 "$ex" $common --checkpoints "$tmp/a" >"$tmp/a.out" 2>&1 ||
  { cat "$tmp/a.out"; exit 1; }
acc_a=$(grep -o "test accuracy [0-9.]*" "$tmp/a.out")
echo "$acc_a"

echo "== task 1 killed after its checkpoint of step 300"
timeout 300 $MPIRUN --mca orte_enable_recovery 1 -np 2 "$ex" $common \
  --checkpoints "$tmp/b" >"$tmp/b.out" 2>&1 &
job=$!
victim=
i=0
while [ $i -lt 1200 ] && [ -z "$victim" ]; do
  if ls "$tmp/b/task-1/" 2>/dev/null | grep -q "ckpt-0000000300"; then
    for p in $(pgrep -f "train_fashion $common" || true); do
      if tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null |
        grep -qx "OMPI_COMM_WORLD_RANK=1"; then
        victim=$p
      fi
    done
  fi
  [ -n "$victim" ] || sleep 0.05
  i=$((i + 1))
done
if [ -z "$victim" ]; then
  wait $job || true
  cat "$tmp/b.out"
  echo "dp_restart: task 1 never saved step 300 (or finished first)" >&2
  exit 1
fi
kill -9 "$victim"
t0=$(date +%s)
set +e
wait $job
rc=$?
set -e
t1=$(date +%s)
cat "$tmp/b.out" | grep -v "^epoch" || true
# (With recovery on, the launcher's own status says little: task 0's
# message is what counts.)
if [ $rc -eq 124 ]; then
  echo "dp_restart: the job hung after losing a task" >&2
  exit 1
fi
grep -q "training step: .*task 1 has been silent" "$tmp/b.out" || {
  echo "dp_restart: task 0 did not report task 1 gone" >&2
  exit 1
}
# Heartbeat timeout 2 s, plus the 1 s scan and slack.
if [ $((t1 - t0)) -gt 20 ]; then
  echo "dp_restart: task 0 took $((t1 - t0)) s to give up" >&2
  exit 1
fi
echo "the job ended $((t1 - t0)) s after the kill"

echo "== resumed in a new job"
timeout 300 $MPIRUN -np 2 "$ex" $common --checkpoints "$tmp/b" --resume \
  >"$tmp/c.out" 2>&1 || { cat "$tmp/c.out"; exit 1; }
grep "resumed from" "$tmp/c.out"
acc_c=$(grep -o "test accuracy [0-9.]*" "$tmp/c.out")
echo "$acc_c"
[ "$acc_a" = "$acc_c" ] || {
  echo "dp_restart: resumed training ended at '$acc_c', uninterrupted at '$acc_a'" >&2
  exit 1
}
