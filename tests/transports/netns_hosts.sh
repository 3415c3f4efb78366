# tests/transports/netns_hosts.sh — sourced by the cross-host tests: test
# "hosts" on this machine as network namespaces, and an mpirun that starts
# a job across them over TCP.
#
#   nh_setup N        makes N host namespaces (h1 .. hN), each with one
#                     interface (eth0, 10.241.83.K/24 for host K), joined by
#                     veth pairs to a bridge in a switch namespace of their
#                     own; writes a hostfile (one slot per host by default,
#                     NH_SLOTS to change) and the launcher's agent script;
#                     sets NH_MPIRUN, to be run as `nh_mpirun ARGS...`.
#                     Exits 77 (skip) with the reason where namespaces
#                     cannot be made (not root, no iproute2, no permission)
#                     or mpirun is missing.
#   nh_mpirun ARGS    mpirun inside host 1's namespace (task 0 runs there),
#                     reaching the others through the agent; ended after
#                     NH_TIMEOUT seconds (default 120: status 124).
#   nh_link K up|down the link of host K (its port on the bridge); up also
#                     clears the hosts' neighbour tables.
#   nh_task_pids K    the pids of the job's tasks on host K (not its daemon).
#   nh_host_pids K    every process inside host K's namespace.
#   nh_netem_reason   prints why netem cannot be used, or nothing.
#   $NH_DIR/agent.log each start of a daemon by the agent, and its status.
#   nh_cleanup        kills what runs in the namespaces and deletes them;
#                     nh_setup installs it as the EXIT trap (callers that
#                     set their own trap must call it).
#
# Nothing here touches the root namespace's interfaces, addresses or
# routes: every address lives in a namespace made here, so traffic goes
# only between them (and to each namespace's own loopback). Names carry
# this shell's pid and a random number, so concurrent runs do not collide.
#
# The MPI settings are those of docs/distributed.md for real machines:
# pml ob1 with the TCP and self transports only (no shared memory between
# hosts), TCP for both the processes and the launcher's daemons named to
# the test subnet, and short keepalives on the launcher's connections so
# that mpirun notices a host that went away. plm_rsh_no_tree_spawn keeps
# every daemon a child of mpirun's agent (simpler to follow here).

NH_SUBNET=10.241.83
NH_MPIRUN_ARGS=
NH_NS=
NH_N=0

nh_skip() {
  echo "SKIP: $*"
  exit 77
}

nh_cleanup() {
  [ -n "$NH_NS" ] || return 0
  k=1
  while [ "$k" -le "$NH_N" ]; do
    for p in $(ip netns pids "$NH_NS-h$k" 2>/dev/null); do
      kill -CONT "$p" 2>/dev/null || true
      kill -9 "$p" 2>/dev/null || true
    done
    ip netns del "$NH_NS-h$k" 2>/dev/null || true
    k=$((k + 1))
  done
  ip netns del "$NH_NS-sw" 2>/dev/null || true
  [ -n "${NH_DIR:-}" ] && rm -rf "$NH_DIR"
  NH_NS=
}

nh_setup() {
  n=$1
  command -v mpirun >/dev/null 2>&1 || nh_skip "mpirun not found"
  command -v ip >/dev/null 2>&1 || nh_skip "ip (iproute2) not found"
  [ "$(id -u)" -eq 0 ] || nh_skip "network namespaces need root"
  NH_NS="wfnh$$r$(od -An -N2 -tu2 /dev/urandom | tr -d ' ')"
  NH_N=0
  NH_DIR=$(mktemp -d)
  trap nh_cleanup EXIT
  trap 'nh_cleanup; exit 1' INT TERM
  if ! ip netns add "$NH_NS-sw" 2>"$NH_DIR/err"; then
    err=$(cat "$NH_DIR/err")
    NH_NS=
    rm -rf "$NH_DIR"
    nh_skip "cannot make a network namespace: $err"
  fi
  ip -n "$NH_NS-sw" link set lo up &&
    ip -n "$NH_NS-sw" link add br0 type bridge &&
    ip -n "$NH_NS-sw" link set br0 up || {
    echo "netns_hosts: cannot make the bridge" >&2
    exit 1
  }
  : >"$NH_DIR/hosts"
  k=1
  while [ "$k" -le "$n" ]; do
    ns="$NH_NS-h$k"
    NH_N=$k
    ip netns add "$ns" &&
      ip -n "$ns" link set lo up &&
      ip link add eth0 netns "$ns" type veth peer name "p$k" netns "$NH_NS-sw" &&
      ip -n "$NH_NS-sw" link set "p$k" master br0 &&
      ip -n "$NH_NS-sw" link set "p$k" up &&
      ip -n "$ns" addr add "$NH_SUBNET.$k/24" dev eth0 &&
      ip -n "$ns" link set eth0 up || {
      echo "netns_hosts: cannot set up host $k ($ns)" >&2
      exit 1
    }
    echo "$NH_SUBNET.$k slots=${NH_SLOTS:-1}" >>"$NH_DIR/hosts"
    mkdir "$NH_DIR/tmp-h$k"
    k=$((k + 1))
  done
  # The launcher's "remote shell": `agent [options] HOST COMMAND...` runs
  # COMMAND in HOST's namespace, as ssh would run it on that machine.
  cat >"$NH_DIR/agent" <<AGENT
#!/bin/sh
while [ \$# -gt 0 ]; do
  case "\$1" in -*) shift ;; *) break ;; esac
done
host=\$1
shift
case "\$host" in
  $NH_SUBNET.*) ;;
  *) echo "agent: unknown test host '\$host'" >&2; exit 1 ;;
esac
k=\${host##*.}
TMPDIR=$NH_DIR/tmp-h\$k
export TMPDIR
echo "\$(date +%T.%N) host \$k: \$*" | cut -c1-160 >>"$NH_DIR/agent.log"
ip netns exec "$NH_NS-h\$k" unshare --uts sh -c "hostname $NH_NS-h\$k && \$*"
rc=\$?
echo "\$(date +%T.%N) host \$k: exit \$rc" >>"$NH_DIR/agent.log"
exit \$rc
AGENT
  chmod +x "$NH_DIR/agent"
  NH_MPIRUN_ARGS="--allow-run-as-root --hostfile $NH_DIR/hosts \
--mca plm_rsh_agent $NH_DIR/agent --mca plm_rsh_no_tree_spawn 1 \
--mca pml ob1 --mca btl tcp,self \
--mca btl_tcp_if_include $NH_SUBNET.0/24 --mca oob_tcp_if_include $NH_SUBNET.0/24 \
--mca oob_tcp_keepalive_time 2 --mca oob_tcp_keepalive_intvl 1 \
--mca oob_tcp_keepalive_probes 3 --bind-to none"
  # Wait (bounded) until every port of the bridge is up.
  i=0
  while [ $i -lt 50 ]; do
    up=1
    k=1
    while [ "$k" -le "$n" ]; do
      state=$(ip -n "$NH_NS-sw" -o link show "p$k" 2>/dev/null)
      case "$state" in *"state UP"*) ;; *) up=0 ;; esac
      k=$((k + 1))
    done
    [ $up -eq 1 ] && break
    sleep 0.1
    i=$((i + 1))
  done
}

nh_mpirun() {
  TMPDIR="$NH_DIR/tmp-h1" timeout -k 10 "${NH_TIMEOUT:-120}" \
    ip netns exec "$NH_NS-h1" mpirun $NH_MPIRUN_ARGS "$@"
}

nh_link() {
  ip -n "$NH_NS-sw" link set "p$1" "$2"
  [ "$2" = up ] || return 0
  # Addresses that went unanswered while the link was down stay FAILED in
  # the neighbour tables for a while, and a connect to them fails at once
  # with "no route to host": a launcher daemon starting then exits. A
  # machine that comes back (or is rebooted) starts with fresh tables.
  k=1
  while [ "$k" -le "$NH_N" ]; do
    ip -n "$NH_NS-h$k" neigh flush all 2>/dev/null || true
    k=$((k + 1))
  done
}

nh_host_pids() {
  ip netns pids "$NH_NS-h$1" 2>/dev/null
}

nh_task_pids() {
  for p in $(nh_host_pids "$1"); do
    case "$(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null)" in
      orted* | */orted* | sh\ -c* | "") ;;
      *) tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null |
        grep -q "^OMPI_COMM_WORLD_RANK=" && echo "$p" ;;
    esac
  done
}

nh_netem_reason() {
  command -v tc >/dev/null 2>&1 || { echo "tc (iproute2) not found"; return; }
  out=$(ip netns exec "$NH_NS-h1" tc qdisc add dev eth0 root netem delay 1ms 2>&1) || {
    echo "the kernel has no netem queueing discipline (tc: $out)"
    return
  }
  ip netns exec "$NH_NS-h1" tc qdisc del dev eth0 root 2>/dev/null || true
}
