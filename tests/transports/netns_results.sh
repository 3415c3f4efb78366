#!/bin/sh
# tests/transports/netns_results.sh — jobs across hosts give the results of
# one host: three test hosts in network namespaces (netns_hosts.sh), one
# process each, Open MPI over TCP between them (no shared memory).
#  - model parallel: test_task_split (a graph split between tasks gives the
#    bits of one process, errors name the task, ...) as a job on 2 and on 3
#    hosts, then a client with `weft worker` processes on two other hosts;
#  - data parallel: dp_train's mlp trained by jobs on 2 hosts (one gradient
#    bucket) and on 3 hosts (one AllReduce per gradient) ends with the
#    weights and losses of one process training alone within
#    dp_equivalence.sh's tolerances, and the replicas equal bit for bit.
# Skips (77) with the reason where namespaces cannot be made or mpirun is
# missing. Each job is bounded by timeout(1).
set -eu
builddir=$(cd "${top_builddir:-.}" && pwd)
srcdir=${top_srcdir:-.}
. "$srcdir/tests/transports/mpi_env.sh"
. "$srcdir/tests/transports/netns_hosts.sh"
fail() { echo "FAIL: $*" >&2; exit 1; }
nh_setup 3
tmp=$NH_DIR
mpi_config "$tmp/weft.conf" 3000
WEFT_CONFIG="$tmp/weft.conf"
export WEFT_CONFIG
job() {
  nh_mpirun -x WEFT_CONFIG "$@"
}

for n in 2 3; do
  echo "== model parallel on $n hosts"
  job -np $n "$builddir/tests/transports/test_task_split" ||
    fail "test_task_split on $n hosts"
done
echo "== a client and 2 x weft worker on 3 hosts"
job -np 1 "$builddir/tests/transports/test_task_split" : \
  -np 2 "$builddir/tools/weft" worker || fail "client and weft workers"

prog="$builddir/tests/transports/dp_train"
"$prog" data "$tmp/data.bin" 960 || fail "writing the data"
"$prog" train --plain "$tmp/data.bin" "$tmp/ref" || fail "the reference run"
for n in 2 3; do
  echo "== data parallel on $n hosts"
  bucket=1
  [ "$n" -eq 2 ] && bucket=0
  job -np $n "$prog" train --seed-per-task --bucket $bucket \
    "$tmp/data.bin" "$tmp/dp$n" || fail "the data-parallel job on $n hosts"
  "$prog" compare "$tmp/ref.task0" "$tmp/dp$n.task0" ||
    fail "$n hosts do not match training alone"
  t=1
  while [ "$t" -lt "$n" ]; do
    "$prog" compare --exact "$tmp/dp$n.task0" "$tmp/dp$n.task$t" ||
      fail "task $t of $n hosts is not a replica of task 0"
    t=$((t + 1))
  done
done
echo "PASS: model- and data-parallel jobs on 2 and 3 hosts match one host"
