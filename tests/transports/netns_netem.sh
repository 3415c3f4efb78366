#!/bin/sh
# tests/transports/netns_netem.sh — a data-parallel job across two test
# hosts (netns_hosts.sh) on a bad link: host 2's interface gets 5 ms of
# added latency and 1% packet loss (tc netem). The job must slow down but
# not fail: it ends at exactly the test accuracy of the same job on a clean
# link (the mlp of examples/train_fashion, 12,000 samples, 1 epoch).
# Skips (77) saying why where the kernel has no netem queueing discipline
# (as on kernels built without CONFIG_NET_SCH_NETEM), or namespaces, mpirun
# or the data set are missing.
set -eu
builddir=$(cd "${top_builddir:-.}" && pwd)
srcdir=${top_srcdir:-.}
data=/usr/share/datasets/fashion-mnist
[ -f "$data/train-images-idx3-ubyte.gz" ] ||
  { echo "SKIP: $data is missing (Debian package dataset-fashion-mnist)"; exit 77; }
. "$srcdir/tests/transports/mpi_env.sh"
. "$srcdir/tests/transports/netns_hosts.sh"
fail() { echo "FAIL: $*" >&2; exit 1; }
nh_setup 2
why=$(nh_netem_reason)
[ -z "$why" ] || nh_skip "netem: $why"
tmp=$NH_DIR
mpi_config "$tmp/weft.conf" 10000
WEFT_CONFIG="$tmp/weft.conf"
export WEFT_CONFIG
run() {
  t0=$(date +%s.%N)
  nh_mpirun -x WEFT_CONFIG -np 2 "$builddir/examples/train_fashion" --model mlp \
    --data-parallel --limit 12000 --batch 48 --epochs 1 --quiet >"$tmp/$1.out" 2>&1 ||
    { cat "$tmp/$1.out"; fail "the job on the $1 link failed"; }
  echo "$1 link: $(echo "$(date +%s.%N) - $t0" | bc) s, $(grep -o "test accuracy [0-9.]*" "$tmp/$1.out")"
}
run clean
ip netns exec "$NH_NS-h2" tc qdisc add dev eth0 root netem delay 5ms loss 1% ||
  fail "cannot add netem to host 2's link"
run bad
a=$(grep -o "test accuracy [0-9.]*" "$tmp/clean.out")
b=$(grep -o "test accuracy [0-9.]*" "$tmp/bad.out")
[ "$a" = "$b" ] || fail "the bad link ended at '$b', the clean one at '$a'"
echo "PASS: latency and loss slowed the job but did not change its result"
