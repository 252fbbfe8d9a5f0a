#!/usr/bin/env bash
# A cluster of N "hosts" on one machine, for multi-node runs without
# multi-node hardware: each host is a network namespace with its own
# hostname, joined to the others by a veth pair into one bridge. Traffic
# between hosts crosses a real (virtual) link that tc can shape, and Open
# MPI sees N separate nodes, so the engine's network transport carries all
# inter-host traffic.
#
#   netns-cluster.sh up N [--rate R] [--burst BYTES] [--delay D] [--loss P] [--no-pin]
#   netns-cluster.sh run [mpirun arguments...]     e.g. run -np 4 --npernode 2 smddp-bench ...
#   netns-cluster.sh status
#   netns-cluster.sh down
#
# Addresses come from the benchmarking range 198.18.0.0/15: host i is
# 198.18.NET.(i+1)/24, the bridge 198.18.NET.254 (mpirun talks to the hosts'
# daemons from there). No default route exists inside a namespace and
# nothing forwards out of the subnet. --rate shapes each link in both
# directions (tbf; netem when --delay or --loss is given too); --delay and
# --loss need the kernel's sch_netem and fail clearly without it.
#
# Environment: SMDDP_NETNS_NAME (default smddp, at most 8 characters) names
# namespaces NAME-hI, links NAME-vI and the bridge NAME-br; SMDDP_NETNS_NET
# (0-255, default 0) picks the /24, so two clusters can coexist.
# Each host runs on its share of the machine's CPUs (taskset; round-robin
# when hosts outnumber CPUs), as a real host has its own cores; --no-pin
# lets every host use all CPUs.
#
# `run` launches mpirun through scripts/netns/rsh-agent.sh; when mpirun
# ends, any process it started that is still in the namespaces is killed.
# Hosts usually share cores here, so Open MPI is told to yield when idle
# (OMPI_MCA_mpi_yield_when_idle=1 unless set, what it does itself on
# oversubscribed nodes); without it MPI's busy polling starves the ranks
# it waits for.
set -euo pipefail

SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
NAME=${SMDDP_NETNS_NAME:-smddp}
NET=${SMDDP_NETNS_NET:-0}
# Checked before any name or address is made from them, for every command.
# NET: at most 3 digits, read as decimal (bash arithmetic would wrap a long
# number and read a leading 0 as octal).
if ! [[ $NAME =~ ^[a-z][a-z0-9]{0,7}$ ]]; then
  echo "netns-cluster: SMDDP_NETNS_NAME='$NAME': 1-8 lowercase letters/digits" >&2
  exit 64
fi
if ! [[ $NET =~ ^[0-9]{1,3}$ ]] || ((10#$NET > 255)); then
  echo "netns-cluster: SMDDP_NETNS_NET='$NET': expected 0-255" >&2
  exit 64
fi
NET=$((10#$NET))
STATE=/run/smddp-netns/$NAME
BRIDGE=$NAME-br
SUBNET=198.18.$NET.0/24
BRIDGE_ADDR=198.18.$NET.254

die() {
  echo "netns-cluster: $*" >&2
  exit 1
}

bad_setting() {
  echo "netns-cluster: $*" >&2
  exit 64
}

usage() {
  sed -n '9,13p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
  exit 64
}

check_settings() {
  [ "$(id -u)" -eq 0 ] || die "needs root (CAP_NET_ADMIN) to create namespaces"
}

# Bytes per second of a tc rate such as 1gbit, 100mbit, 10mbps.
rate_bytes() {
  local re='^([0-9]{1,9})([kmg]?)(bit|bps)$' v mult=1
  [[ ${1,,} =~ $re ]] || bad_setting "--rate '$1': expected e.g. 1gbit, 100mbit, 50mbps"
  v=$((10#${BASH_REMATCH[1]}))
  case ${BASH_REMATCH[2]} in k) mult=1000 ;; m) mult=1000000 ;; g) mult=1000000000 ;; esac
  if [ "${BASH_REMATCH[3]}" = bit ]; then echo $((v * mult / 8)); else echo $((v * mult)); fi
}

# shape DEV RUNNER...: puts the configured qdisc on DEV (RUNNER: "" or ip netns exec NS).
shape() {
  local dev=$1
  shift
  if [ -n "$DELAY$LOSS" ]; then
    local args=(netem limit 100000)
    [ -n "$DELAY" ] && args+=(delay "$DELAY")
    [ -n "$LOSS" ] && args+=(loss "$LOSS")
    [ -n "$RATE" ] && args+=(rate "$RATE")
    if ! "$@" tc qdisc replace dev "$dev" root "${args[@]}" 2>"$STATE/tc.err"; then
      if grep -q "qdisc kind is unknown" "$STATE/tc.err"; then
        die "this kernel has no sch_netem (tc qdisc netem): --delay and --loss are unavailable; --rate alone works (tbf)"
      fi
      die "tc netem on $dev failed: $(cat "$STATE/tc.err")"
    fi
  elif [ -n "$RATE" ]; then
    # Burst: 4 ms at the rate, at least 64 KiB (one GSO packet), unless
    # --burst names it. A link idle for the burst's time sends that much at
    # once; 131072 keeps a 1 Gbit/s link near a real one and still holds
    # its rate, 65536 no longer does (scripts/model-validate.sh).
    local burst=${BURST:-$(($(rate_bytes "$RATE") / 250))}
    ((burst < 65536)) && burst=65536
    "$@" tc qdisc replace dev "$dev" root tbf rate "$RATE" burst "$burst" latency 50ms
  fi
}

# The CPUs host I runs on: a share of the machine's, like a real host's own
# cores (round-robin when hosts outnumber CPUs); "all" with --no-pin.
host_cpus() {
  local ncpu
  ncpu=$(nproc)
  if [ "$PIN" != 1 ]; then echo all; return; fi
  if ((HOSTS >= ncpu)); then echo $(($1 % ncpu)); return; fi
  local per=$((ncpu / HOSTS))
  echo "$(($1 * per))-$(($1 * per + per - 1))"
}

cmd_up() {
  local n=${1:-}
  if ! [[ $n =~ ^[0-9]{1,3}$ ]] || ((10#$n < 1 || 10#$n > 250)); then usage; fi
  n=$((10#$n))
  shift
  RATE="" BURST="" DELAY="" LOSS="" PIN=1 HOSTS=$n
  while [ $# -gt 0 ]; do
    case $1 in
      --no-pin) PIN=0; shift ;;
      --rate) RATE=${2:?--rate needs a value}; rate_bytes "$RATE" >/dev/null; shift 2 ;;
      --burst)
        BURST=${2:?--burst needs a value}
        if ! [[ $BURST =~ ^[1-9][0-9]{4,8}$ ]] || ((BURST < 65536)); then
          bad_setting "--burst '$BURST': expected bytes, 65536 to 999999999"
        fi
        shift 2 ;;
      --delay) DELAY=${2:?--delay needs a value}; shift 2 ;;
      --loss) LOSS=${2:?--loss needs a value}; shift 2 ;;
      *) usage ;;
    esac
  done
  cmd_down quiet
  mkdir -p "$STATE"
  # Any failure (or signal) from here on leaves nothing behind.
  UP_COMPLETE=0
  trap 'if [ "$UP_COMPLETE" != 1 ]; then echo "netns-cluster: up failed; cleaning up" >&2; cmd_down quiet; fi' EXIT
  trap 'exit 1' INT TERM
  ip link add "$BRIDGE" type bridge
  ip addr add "$BRIDGE_ADDR/24" dev "$BRIDGE"
  ip link set "$BRIDGE" up
  : >"$STATE/hosts"
  local i ns veth addr
  for ((i = 0; i < n; i++)); do
    ns=$NAME-h$i
    veth=$NAME-v$i
    addr=198.18.$NET.$((i + 1))
    ip netns add "$ns"
    ip -n "$ns" link set lo up
    ip netns exec "$ns" sysctl -q -w net.ipv6.conf.all.disable_ipv6=1 || true
    ip link add "$veth" type veth peer name eth0 netns "$ns"
    ip link set "$veth" master "$BRIDGE" up
    ip -n "$ns" addr add "$addr/24" dev eth0
    ip -n "$ns" link set eth0 up
    shape "$veth"
    shape eth0 ip netns exec "$ns"
    echo "$addr $ns $ns $veth $(host_cpus "$i")" >>"$STATE/hosts"
  done
  awk '{ print $1 " slots=64" }' "$STATE/hosts" >"$STATE/hostfile"
  printf 'rate=%s delay=%s loss=%s\n' "$RATE" "$DELAY" "$LOSS" >"$STATE/shaping"
  UP_COMPLETE=1
  trap - EXIT INT TERM
  echo "netns-cluster: $n hosts up on $SUBNET (${RATE:-unshaped}${DELAY:+, delay $DELAY}${LOSS:+, loss $LOSS})"
}

# Kills the processes in one namespace; with a token, only those carrying it.
kill_in_namespace() {
  local ns=$1 token=${2:-} pid
  for pid in $(ip netns pids "$ns" 2>/dev/null); do
    if [ -n "$token" ] && ! tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null | grep -qx "SMDDP_NETNS_RUN=$token"; then
      continue
    fi
    kill -9 "$pid" 2>/dev/null || true
  done
}

cmd_down() {
  local quiet=${1:-} ns link
  for ns in $(ip netns list | awk -v p="^$NAME-h[0-9]+$" '$1 ~ p { print $1 }'); do
    kill_in_namespace "$ns"
    ip netns del "$ns" 2>/dev/null || true
  done
  for link in $(ip -o link show | awk -F': ' -v p="^$NAME-(v[0-9]+|br)(@|$)" '$2 ~ p { sub(/@.*/, "", $2); print $2 }'); do
    ip link del "$link" 2>/dev/null || true
  done
  rm -rf "$STATE"
  [ -n "$quiet" ] || echo "netns-cluster: $NAME down"
}

cmd_status() {
  [ -f "$STATE/hosts" ] || die "no cluster named $NAME is up"
  echo "cluster $NAME on $SUBNET, bridge $BRIDGE_ADDR, $(cat "$STATE/shaping")"
  cat "$STATE/hosts"
}

cmd_run() {
  [ -f "$STATE/hostfile" ] || die "no cluster named $NAME is up (run '$0 up N' first)"
  local token
  token=$(od -An -N8 -tx8 /dev/urandom | tr -d ' ')
  export SMDDP_NETNS_STATE=$STATE SMDDP_NETNS_RUN=$token
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  export OMPI_MCA_mpi_yield_when_idle=${OMPI_MCA_mpi_yield_when_idle:-1}
  local pid rc=0
  mpirun --hostfile "$STATE/hostfile" \
    --mca plm_rsh_agent "$SCRIPT_DIR/netns/rsh-agent.sh" --mca plm_rsh_no_tree_spawn 1 \
    --mca oob_tcp_if_include "$SUBNET" --mca btl_tcp_if_include "$SUBNET" \
    --mca btl self,vader,tcp --bind-to none "$@" &
  pid=$!
  # Ctrl-C / TERM go to mpirun, which ends the job; leftovers are killed below.
  trap 'kill -TERM "$pid" 2>/dev/null || true' INT TERM
  wait "$pid" || rc=$?
  # A signal interrupts the first wait: wait for mpirun itself to finish.
  while kill -0 "$pid" 2>/dev/null; do wait "$pid" || rc=$?; done
  trap - INT TERM
  local ns
  while read -r _ ns _; do kill_in_namespace "$ns" "$token"; done <"$STATE/hosts"
  return "$rc"
}

main() {
  local cmd=${1:-}
  [ $# -gt 0 ] && shift
  case $cmd in
    up) check_settings; cmd_up "$@" ;;
    down) check_settings; cmd_down ;;
    status) cmd_status ;;
    run) cmd_run "$@" ;;
    *) usage ;;
  esac
}

main "$@"
