#!/bin/sh
# bench/cross_host.sh — collectives and data-parallel training between two
# test hosts on this machine: network namespaces joined by a bridge, Open
# MPI over TCP only (tests/transports/netns_hosts.sh; root and iproute2
# needed). Prints the JSON lines of
#  - bench/allreduce on 2 hosts x 1 process: the plugin's AllReduce and a
#    plain MPI_Allreduce in the same run, 1 to 64 MiB, bus bandwidth each
#    and their ratio;
#  - bench/data_parallel (the mlp, one epoch timed): 1 process alone, then
#    2 hosts x 1 process with gradients in one fused bucket (the default)
#    and with one AllReduce per gradient (--bucket 1).
# `make bench-cross-host` runs it from the build tree. The namespaces'
# links are veth pairs: no wire, so bandwidth is bounded by the copies of
# the TCP stack (docs/distributed.md compares with real networks).
set -eu
builddir=$(cd "${top_builddir:-.}" && pwd)
srcdir=${top_srcdir:-.}
. "$srcdir/tests/transports/netns_hosts.sh"
nh_setup 2
NH_TIMEOUT=600
printf '[threads]\ninter_op = 1\nintra_op = 1\npin = false\n' >"$NH_DIR/weft.conf"
WEFT_CONFIG="$NH_DIR/weft.conf"
export WEFT_CONFIG
echo "# allreduce, 2 hosts over TCP"
nh_mpirun -x WEFT_CONFIG -np 2 "$builddir/bench/allreduce" ||
  echo "# bench/allreduce exited with status $?"
echo "# data-parallel mlp: 1 process"
"$builddir/bench/data_parallel" --intra 1
echo "# data-parallel mlp: 2 hosts x 1 process, one bucket"
nh_mpirun -np 2 "$builddir/bench/data_parallel" --intra 1 || echo "# status $?"
echo "# data-parallel mlp: 2 hosts x 1 process, one AllReduce per gradient"
nh_mpirun -np 2 "$builddir/bench/data_parallel" --intra 1 --bucket 1 ||
  echo "# status $?"
