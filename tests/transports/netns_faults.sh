#!/bin/sh
# tests/transports/netns_faults.sh — a data-parallel job across test hosts
# (network namespaces, netns_hosts.sh; TCP between them) survives network
# and host faults: the mlp of examples/train_fashion on 12,000 samples
# (global batch 48, which 2 and 3 tasks divide), 2 epochs, checkpoints every 50 steps in DIR/task-K. Once both tasks saved
# step 100, one fault:
#  - link: host 2's link is taken down (ip link set ... down) in the middle
#    of training;
#  - stop: the task on host 3 of a 3-host job is stopped (SIGSTOP: alive,
#    silent); tasks 0 and 1 must each name task 2 themselves (every task
#    watches every other one, not only task 0);
#  - power: host 2 goes away whole: its link down and every process in it
#    killed (SIGKILL), as when a machine loses power;
# After each failing fault, every surviving task has printed the heartbeat
# error naming the lost task, and mpirun has exited with a non-zero status
# within BOUND_S of the fault (heartbeat timeout 2 s, the launcher's
# keepalives 2 + 1 x 3 s, a second of slack, the daemon's 1 s between
# SIGTERM and SIGKILL, start-up noise), never hanging; then a new job of new
# processes resumes from the newest step all tasks saved and ends at
# exactly the uninterrupted job's test accuracy. Skips (77) with the reason
# where namespaces, mpirun or the data set are missing. Latency and loss:
# netns_netem.sh.
set -eu
builddir=$(cd "${top_builddir:-.}" && pwd)
srcdir=${top_srcdir:-.}
data=/usr/share/datasets/fashion-mnist
[ -f "$data/train-images-idx3-ubyte.gz" ] ||
  { echo "SKIP: $data is missing (Debian package dataset-fashion-mnist)"; exit 77; }
. "$srcdir/tests/transports/mpi_env.sh"
. "$srcdir/tests/transports/netns_hosts.sh"
BOUND_S=20
fail() { echo "FAIL: $*" >&2; exit 1; }
now() { date +%s.%N; }
elapsed() { echo "$2 - $1" | bc; }

nh_setup 3
tmp=$NH_DIR
mpi_config "$tmp/weft.conf" 2000
WEFT_CONFIG="$tmp/weft.conf"
export WEFT_CONFIG
ex="$builddir/examples/train_fashion"
common="--model mlp --data-parallel --limit 12000 --batch 48 --epochs 2 --checkpoint-every 50 --quiet"

accuracy() { grep -o "test accuracy [0-9.]*" "$1" || true; }

# A job of $1 tasks printing to $tmp/$2.out, with checkpoints in
# $tmp/$3.ckpt; $4: more options of the program, $5 of mpirun.
train() {
  nh_mpirun -x WEFT_CONFIG ${5:-} -np "$1" "$ex" $common \
    --checkpoints "$tmp/$3.ckpt" ${4:-} >"$tmp/$2.out" 2>&1
}

echo "== uninterrupted, 2 and 3 hosts"
train 2 ref2 ref2 || { cat "$tmp/ref2.out"; fail "the uninterrupted 2-host job"; }
train 3 ref3 ref3 || { cat "$tmp/ref3.out"; fail "the uninterrupted 3-host job"; }
acc2=$(accuracy "$tmp/ref2.out")
acc3=$(accuracy "$tmp/ref3.out")
echo "2 hosts: $acc2; 3 hosts: $acc3"

# fault NAME TASKS VICTIM_HOST ACTION: starts a job of TASKS tasks, waits
# until every task saved step 100, runs ACTION (a function taking the
# victim host), and checks the end of the job as above.
fault() {
  name=$1 np=$2 victim=$3 action=$4
  echo "== $name"
  nh_mpirun -x WEFT_CONFIG --output-filename "$tmp/$name.log" -np "$np" \
    "$ex" $common --checkpoints "$tmp/$name.ckpt" >"$tmp/$name.out" 2>&1 &
  job=$!
  i=0
  while [ $i -lt 600 ]; do
    saved=0
    t=0
    while [ $t -lt "$np" ]; do
      ls "$tmp/$name.ckpt/task-$t/" 2>/dev/null | grep -q "ckpt-0000000100" &&
        saved=$((saved + 1))
      t=$((t + 1))
    done
    [ $saved -eq "$np" ] && break
    sleep 0.05
    i=$((i + 1))
  done
  [ $i -lt 600 ] || { wait $job || true; cat "$tmp/$name.out"; fail "$name: step 100 never saved"; }
  t0=$(now)
  $action "$victim"
  set +e
  wait $job
  rc=$?
  set -e
  t1=$(now)
  secs=$(elapsed "$t0" "$t1")
  grep -v "^epoch" "$tmp/$name.out" | head -20 || true
  [ $rc -ne 0 ] || fail "$name: mpirun exited with status 0 after the fault"
  [ $rc -ne 124 ] && [ $rc -ne 137 ] || fail "$name: the job hung (killed after ${NH_TIMEOUT:-120} s)"
  [ "$(echo "$secs <= $BOUND_S" | bc)" -eq 1 ] ||
    fail "$name: mpirun took $secs s to end after the fault (bound $BOUND_S s)"
  echo "$name: mpirun exited with status $rc, $secs s after the fault"
}

# Every task in $2 (a list) printed the heartbeat error naming task $3.
reported() {
  name=$1
  for t in $2; do
    f=$(find "$tmp/$name.log" -path "*rank.$t/stderr" | head -1)
    [ -n "$f" ] && grep -q "task $3 has been silent" "$f" ||
      { cat "$f" 2>/dev/null || true; fail "$name: task $t did not report task $3 silent"; }
    grep -h "training step" "$f" | head -1
  done
}

# A new job resumes the checkpoints of job $1 with $2 tasks; it must end at
# accuracy $3. First the victim host must be reachable and quiet again:
# what is left of the old job there must end by itself (its daemon loses
# mpirun), else it is killed and said so.
resume() {
  name=$1 np=$2 want=$3
  nh_link 2 up
  nh_link 3 up
  for h in 2 3; do
    i=0
    while [ $i -lt 150 ] && [ -n "$(nh_host_pids $h)" ]; do
      sleep 0.1
      i=$((i + 1))
    done
    left=$(nh_host_pids $h)
    if [ -n "$left" ]; then
      echo "$name: processes of the old job still on host $h after 15 s: killing them"
      for p in $left; do kill -CONT "$p" 2>/dev/null || true; kill -9 "$p" 2>/dev/null || true; done
    fi
  done
  # A host that lost power restarts with an empty /tmp: so does each test
  # host's (Open MPI's session directories of the job that was killed).
  rm -rf "$tmp"/tmp-h*/ompi.*
  train "$np" "$name.resumed" "$name" "--resume" \
    "--output-filename $tmp/$name.resumed.log" || {
    rc=$?
    cat "$tmp/$name.resumed.out"
    for f in $(find "$tmp/$name.resumed.log" -type f 2>/dev/null); do
      echo "-- $f"
      tail -5 "$f"
    done
    ls -l "$tmp/$name.ckpt"/task-*
    tail -8 "$tmp/agent.log"
    fail "$name: the resumed job failed (status $rc)"
  }
  sed -i "s|$tmp/$name.ckpt|DIR|" "$tmp/$name.resumed.out"
  grep "resumed from" "$tmp/$name.resumed.out" ||
    fail "$name: the new job did not resume"
  got=$(accuracy "$tmp/$name.resumed.out")
  [ "$got" = "$want" ] || fail "$name: resumed to '$got', uninterrupted '$want'"
  echo "$name: resumed to $got"
}

cut_link() { nh_link "$1" down; }
stop_task() {
  p=$(nh_task_pids "$1")
  [ -n "$p" ] || fail "no task found on host $1"
  kill -STOP $p
}
power_off() {
  nh_link "$1" down
  for p in $(nh_host_pids "$1"); do kill -9 "$p" 2>/dev/null || true; done
}

fault link 2 2 cut_link
reported link 0 1
reported link 1 0
resume link 2 "$acc2"

fault stop 3 3 stop_task
reported stop "0 1" 2
resume stop 3 "$acc3"

fault power 2 2 power_off
reported power 0 1
resume power 2 "$acc2"

echo "PASS: link down, stopped task and lost host each ended the job with a clear error and resumed to the same accuracy"
