#!/usr/bin/env bash
# One command for one row of docs/performance-multinode.md: brings up a
# network-namespace cluster of HOSTS hosts (2 ranks each), measures the
# link's own capacity with iperf3 (one stream, then both directions at
# once), runs the allreduce sweep with the sharded, ring, halving_doubling
# and hierarchical algorithms, the selector's choice (auto), MPI_Allreduce's
# default decision and each of Open MPI's tuned algorithms forced in turn (--backend
# mpi:NAME; SMDDP_MEASURE_MPI_TUNED lists them, empty for none), and prints
# a markdown section (p50 time per size, bus bandwidth, best smddp against
# the best MPI).
# The cluster is torn down on exit, also on failure.
#
#   scripts/netns/measure.sh HOSTS [--rate R] [--delay D] [-e MAX] [-n ITERS] [--transport T] [--rounds K] [--bench PATH]
#
# --rounds K runs every column K times, in an order that turns each round
# (forward from another column on even rounds, backward on odd ones: back
# to back runs here alternate fast and slow, so a fixed order favours some
# columns); each cell is then the median of its K runs' p50s.
# --transport picks smddp's network transport between hosts: fabric (the
# default here: libfabric tcp;ofi_rxm), mpi (Open MPI's point to point),
# socket (plain TCP) or auto (what users get: socket where no EFA is
# present and every rank reaches its peers, as on these namespaces).
#
# The machine's load average is printed before and after: other work on the
# same cores shows up in every number here.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
hosts=${1:?usage: measure.sh HOSTS [--rate R] [--delay D] [-e MAX] [-n ITERS] [--transport T] [--rounds K] [--bench PATH]}
shift
shaping=() max=256M iters=10 transport=fabric rounds=1 bench=${SMDDP_BENCH:-$ROOT/build/bench/smddp-bench}
while [ $# -gt 0 ]; do
  case $1 in
    --rate | --delay | --loss) shaping+=("$1" "${2:?$1 needs a value}"); shift 2 ;;
    -e) max=${2:?}; shift 2 ;;
    -n) iters=${2:?}; shift 2 ;;
    --transport) transport=${2:?}; shift 2 ;;
    --rounds) rounds=${2:?}; shift 2 ;;
    --bench) bench=${2:?}; shift 2 ;;
    *) echo "measure.sh: unknown argument $1" >&2; exit 64 ;;
  esac
done
case $transport in fabric | mpi | socket | auto) ;; *) echo "measure.sh: --transport $transport: expected fabric, mpi, socket or auto" >&2; exit 64 ;; esac
[[ $rounds =~ ^[1-9][0-9]{0,2}$ ]] || { echo "measure.sh: --rounds $rounds: expected 1-999" >&2; exit 64; }
[ -x "$bench" ] || { echo "measure.sh: no smddp-bench at $bench (--bench PATH)" >&2; exit 64; }

export SMDDP_NETNS_NAME=smeas SMDDP_NETNS_NET=240
cluster=$ROOT/scripts/netns-cluster.sh
work=$(mktemp -d)
trap '"$cluster" down >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
"$cluster" up "$hosts" "${shaping[@]}" >&2
load_before=$(cut -d' ' -f1-3 /proc/loadavg)

# Link capacity between host 0 and host 1, each on its own CPUs.
cpus_of() { awk -v h="smeas-h$1" '$2 == h { print $5 }' /run/smddp-netns/smeas/hosts; }
iperf() {
  local out=$1
  shift
  ip netns exec smeas-h1 taskset -c "$(cpus_of 1)" iperf3 -s -1 -B 198.18.240.2 >/dev/null 2>&1 &
  sleep 0.5
  ip netns exec smeas-h0 taskset -c "$(cpus_of 0)" iperf3 -c 198.18.240.2 -t 3 -J "$@" >"$out" || true
  wait || true
}
iperf "$work/iperf_one.json"
iperf "$work/iperf_bidir.json" --bidir

np=$((2 * hosts))
common=(allreduce -b 8 -e "$max" -f 2 -n "$iters" -w 2 --out-of-place --per-iteration -q -T 600)
# Columns: file name, then the smddp-bench options that make it.
columns=()
for algo in sharded ring halving_doubling hierarchical auto; do
  columns+=("$algo --transport $transport --algorithm $algo")
done
columns+=("mpi --backend mpi")
read -r -a tuned <<<"${SMDDP_MEASURE_MPI_TUNED-ring segmented_ring recursive_doubling rabenseifner}"
for algo in "${tuned[@]}"; do columns+=("mpi-$algo --backend mpi:$algo"); done
n=${#columns[@]}
for ((r = 0; r < rounds; r++)); do
  for ((k = 0; k < n; k++)); do
    if ((r % 2 == 0)); then i=$(((r + k) % n)); else i=$((((r - k) % n + n) % n)); fi
    read -r -a job <<<"${columns[$i]}"
    name=${job[0]}
    ((rounds == 1)) || name+=".r$r"
    echo "measure.sh: $name: ${job[*]:1}" >&2
    "$cluster" run -np "$np" --npernode 2 "$bench" "${common[@]}" "${job[@]:1}" -J "$work/$name.json" \
      >"$work/$name.log" 2>&1 || echo "measure.sh: $name failed" >&2
  done
done
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

python3 "$HERE/perf_table.py" --dir "$work" --hosts "$hosts" --shaping "${shaping[*]:-none}" \
  --load "$load_before -> $load_after" --cpus "$(nproc)" \
  --command "scripts/netns/measure.sh $hosts${shaping[*]:+ ${shaping[*]}} -e $max -n $iters --transport $transport$( ((rounds == 1)) || echo " --rounds $rounds")"
