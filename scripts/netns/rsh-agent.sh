#!/usr/bin/env bash
# Open MPI's remote-shell agent for scripts/netns-cluster.sh. mpirun calls
# `rsh-agent.sh HOST COMMAND...` as it would call ssh; we run COMMAND, the
# way a remote shell would (words joined, evaluated by sh), inside the
# network namespace that owns HOST and in a fresh UTS namespace carrying
# that host's name, so error messages and MPI see distinct hosts.
# SMDDP_NETNS_STATE (set by `netns-cluster.sh run`) names the cluster's state
# directory; its `hosts` file maps address -> namespace, hostname.
set -euo pipefail

state=${SMDDP_NETNS_STATE:?rsh-agent.sh runs under netns-cluster.sh run}
# ssh-style options before the host (Open MPI may pass some) are ignored.
while [ $# -gt 0 ] && [ "${1#-}" != "$1" ]; do shift; done
host=${1:?usage: rsh-agent.sh HOST COMMAND...}
shift

ns="" name="" cpus=all
while read -r addr n h _ c; do
  if [ "$addr" = "$host" ] || [ "$h" = "$host" ]; then
    ns=$n
    name=$h
    cpus=${c:-all}
    break
  fi
done <"$state/hosts"
[ -n "$ns" ] || { echo "rsh-agent.sh: $host is not a host of $state" >&2; exit 255; }

# The host's CPUs, when the cluster pins hosts (see netns-cluster.sh up).
pin=()
[ "$cpus" = all ] || pin=(taskset -c "$cpus")
# shellcheck disable=SC2016  # $1 and $* are expanded by the inner sh
exec "${pin[@]}" ip netns exec "$ns" unshare --uts -- /bin/sh -c 'hostname "$1" && shift && eval "$*"' sh "$name" "$@"
