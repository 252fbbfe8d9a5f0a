#!/usr/bin/env bash
# The selection-regret table of docs/performance.md: how far smddp-bench's
# default (no flags, no SMDDP_* settings) is from the best algorithm it
# could have forced, and from Open MPI's best, per placement and size.
#
#   scripts/netns/regret.sh [--placements "2x1 2x2 4x1 4x2 8x1"] [--shapings "none 1gbit"]
#                           [--collectives "allreduce allgather reducescatter broadcast alltoall"]
#                           [-e MAX] [-n ITERS] [--small-iters N] [-w WARMUP] [--rounds K] [--burst BYTES]
#                           [--bench PATH] [--out DIR]
#
# For each shaping (none, or a tc rate such as 1gbit on every host's link)
# and placement (HOSTSxRANKS on a namespace cluster, scripts/netns-cluster.sh)
# and collective, from 8 B to MAX (16M), it runs these columns (a shaped
# link's bucket is --burst bytes, 131072 unless named: with netns-cluster's
# own, 500 KB at 1 Gbit/s, a run's rows up to about 64 KiB pass at once
# or at the rate depending on what the rows before them spent, a coin
# toss per column; scripts/model-validate.sh says more):
#   default           smddp-bench with no flags and no SMDDP_* setting
#   algo-NAME         each smddp algorithm that can run across hosts, forced
#   mpi               Open MPI's default decision (--backend mpi)
#   mpi-NAME          each of Open MPI's tuned algorithms for the
#                     collective forced (--backend mpi:NAME; the names
#                     smddp-bench --list-algorithms --backend mpi gives
#                     for the MPI call it makes: reduce-scatter is
#                     MPI_Reduce_scatter_block), one run each: one that
#                     cannot run this placement fails alone
# in K rounds, in an order that turns each round (forward from another
# column on even rounds, backward on odd ones), and renders the markdown
# with scripts/netns/regret_table.py: per size the default's p50, the best
# forced algorithm and Open MPI's best, regret (default over best forced)
# and the ratio against Open MPI's best. Raw JSON stays in DIR.
#
# Each column is two runs: 8 B-32 KiB with --small-iters N timed calls a
# row (100 unless named), 64 KiB-MAX with -n ITERS (10). On ranks that
# share cores a small call's time is two-valued (13 us, or 300 when a
# rank waits a scheduling round), so the p50 of a few calls is a coin
# toss: 5 calls of the same algorithm, forced and by default, differed 2-6x
# (docs/performance-history.md); large rows take seconds each at 1 Gbit/s.
#
# Each row has -w WARMUP untimed calls first, 16 unless named: a node's
# shared-memory channel reuses a cell only every 16 messages, and the first
# pass over its cells at a new size runs from cold cache (2-4x slower on
# this VM), so fewer would time some algorithms cold and others warm.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
placements="2x1 2x2 4x1 4x2 8x1" shapings="none 1gbit"
collectives="allreduce allgather reducescatter broadcast alltoall"
max=16M iters=10 small_iters=100 warmup=16 rounds=2 burst=131072 bench=${SMDDP_BENCH:-$ROOT/build/bench/smddp-bench} out=""
usage="usage: regret.sh [--placements LIST] [--shapings LIST] [--collectives LIST] [-e MAX] [-n ITERS] [--small-iters N] [-w WARMUP] [--rounds K] [--burst BYTES] [--bench PATH] [--out DIR]"
while [ $# -gt 0 ]; do
  case $1 in
    --placements) placements=${2:?$usage}; shift 2 ;;
    --shapings) shapings=${2:?$usage}; shift 2 ;;
    --collectives) collectives=${2:?$usage}; shift 2 ;;
    -e) max=${2:?$usage}; shift 2 ;;
    -n) iters=${2:?$usage}; shift 2 ;;
    --small-iters) small_iters=${2:?$usage}; shift 2 ;;
    -w) warmup=${2:?$usage}; shift 2 ;;
    --rounds) rounds=${2:?$usage}; shift 2 ;;
    --burst) burst=${2:?$usage}; shift 2 ;;
    --bench) bench=${2:?$usage}; shift 2 ;;
    --out) out=${2:?$usage}; shift 2 ;;
    *) echo "regret.sh: unknown argument $1; $usage" >&2; exit 64 ;;
  esac
done
for p in $placements; do
  [[ $p =~ ^([1-9])x([1-9])$ ]] || { echo "regret.sh: placement '$p': expected HOSTSxRANKS, 1-9 each" >&2; exit 64; }
done
for s in $shapings; do
  [[ $s == none || $s =~ ^[1-9][0-9]{0,3}[mg]bit$ ]] || { echo "regret.sh: shaping '$s': expected none or a rate like 1gbit" >&2; exit 64; }
done
[[ $rounds =~ ^[1-9][0-9]{0,2}$ ]] || { echo "regret.sh: --rounds $rounds: expected 1-999" >&2; exit 64; }
[[ $iters =~ ^[1-9][0-9]{0,5}$ ]] || { echo "regret.sh: -n $iters: expected 1-999999" >&2; exit 64; }
[[ $small_iters =~ ^[1-9][0-9]{0,5}$ ]] || { echo "regret.sh: --small-iters $small_iters: expected 1-999999" >&2; exit 64; }
# MAX in bytes (a count with an optional K, M or G, as smddp-bench reads it):
# the large sweep runs only when MAX reaches it.
if [[ $max =~ ^([1-9][0-9]{0,8})([KMGkmg]?)$ ]]; then
  case ${BASH_REMATCH[2]} in [Kk]) shift_by=10 ;; [Mm]) shift_by=20 ;; [Gg]) shift_by=30 ;; *) shift_by=0 ;; esac
  max_bytes=$((BASH_REMATCH[1] << shift_by))  # 9 digits << 30 stays under 2^63
else
  echo "regret.sh: -e $max: expected bytes, such as 16M or 65536" >&2
  exit 64
fi
if ((max_bytes < 8 || max_bytes > 1 << 40)); then
  echo "regret.sh: -e $max: expected 8 to 1024G bytes" >&2
  exit 64
fi
# The sweeps of every column, each "SUFFIX FIRST LAST ITERS": the large
# one from 64 KiB, where the table's bandwidth range starts.
large_from=65536
sweeps=("small 8 $((max_bytes < large_from / 2 ? max_bytes : large_from / 2)) $small_iters")
((max_bytes < large_from)) || sweeps+=("large $large_from $max_bytes $iters")
[[ $warmup =~ ^(0|[1-9][0-9]{0,3})$ ]] || { echo "regret.sh: -w $warmup: expected 0-9999" >&2; exit 64; }
if ! [[ $burst =~ ^[1-9][0-9]{4,8}$ ]] || ((burst < 65536)); then
  echo "regret.sh: --burst $burst: expected bytes, 65536 to 999999999" >&2
  exit 64
fi
if [ ! -f "$bench" ] || [ ! -x "$bench" ]; then
  echo "regret.sh: no smddp-bench program at $bench (--bench PATH)" >&2
  exit 64
fi
known=$("$bench" --list-algorithms 2>/dev/null | awk 'NR > 1 { print $1 }' | sort -u | tr '\n' ' ') || known=""
if [ -z "$known" ]; then
  echo "regret.sh: $bench --list-algorithms lists no collective: not smddp-bench (--bench PATH)" >&2
  exit 64
fi
for c in $collectives; do
  [[ " $known" == *" $c "* ]] || { echo "regret.sh: collective '$c': expected one of: $known" >&2; exit 64; }
done
[ -n "$out" ] || out=$(mktemp -d /tmp/smddp-regret.XXXXXX)
mkdir -p "$out"

# No SMDDP_* setting may reach the default column.
while IFS='=' read -r name _; do
  case $name in SMDDP_*) unset "$name" ;; esac
done < <(env)

export SMDDP_NETNS_NAME=sregret SMDDP_NETNS_NET=242
cluster=$ROOT/scripts/netns-cluster.sh
trap '"$cluster" down >/dev/null 2>&1 || true' EXIT

# smddp algorithms of a collective that can run across hosts, from the
# engine's own registry (--list-algorithms): host memory, and not limited
# to ranks on one node.
algorithms_of() {
  "$bench" --list-algorithms | awk -v c="$1" '$1 == c && $3 == "host" && !/all ranks on one node/ { print $2 }'
}
# Open MPI's tuned algorithms that smddp-bench's --backend mpi:NAME forces
# on a collective: smddp-bench names its MPI call's coll/tuned variable and
# reads the choices from the MPI library it runs on.
mpi_tuned_of() {
  "$bench" --list-algorithms --backend mpi | awk -v c="$1" '$1 == c { print $2 }'
}

load_before=$(cut -d' ' -f1-3 /proc/loadavg)
for shaping in $shapings; do
  hosts_list=$(for p in $placements; do echo "${p%x*}"; done | sort -un)
  for hosts in $hosts_list; do
    shape=()
    [ "$shaping" = none ] || shape=(--rate "$shaping" --burst "$burst")
    "$cluster" down >/dev/null 2>&1 || true
    "$cluster" up "$hosts" "${shape[@]}" >&2
    for p in $placements; do
      [ "${p%x*}" = "$hosts" ] || continue
      per_host=${p#*x}
      np=$((hosts * per_host))
      for coll in $collectives; do
        dir=$out/$shaping/$p/$coll
        mkdir -p "$dir"
        common=("$coll" -f 2 -w "$warmup" --out-of-place --per-iteration -q -T 600)
        columns=("default")
        for a in $(algorithms_of "$coll"); do columns+=("algo-$a --algorithm $a"); done
        columns+=("mpi --backend mpi")
        for a in $(mpi_tuned_of "$coll"); do columns+=("mpi-$a --backend mpi:$a"); done
        n=${#columns[@]}
        for ((r = 0; r < rounds; r++)); do
          for ((k = 0; k < n; k++)); do
            if ((r % 2 == 0)); then i=$(((r + k) % n)); else i=$((((r - k) % n + n) % n)); fi
            read -r -a job <<<"${columns[$i]}"
            name=${job[0]}.r$r
            echo "regret.sh: $shaping $p $coll $name: ${job[*]:1}" >&2
            for sweep in "${sweeps[@]}"; do
              read -r suffix first last count <<<"$sweep"
              file=$dir/$name.$suffix
              "$cluster" run -np "$np" --npernode "$per_host" "$bench" "${common[@]}" -b "$first" -e "$last" -n "$count" \
                "${job[@]:1}" -J "$file.json" >"$file.log" 2>&1 ||
                echo "regret.sh: $shaping $p $coll $name ($suffix) failed (see $file.log)" >&2
            done
          done
        done
      done
    done
  done
done
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

python3 "$HERE/regret_table.py" --dir "$out" --load "$load_before -> $load_after" --cpus "$(nproc)" \
  --command "scripts/netns/regret.sh --placements \"$placements\" --shapings \"$shapings\" --collectives \"$collectives\" -e $max -n $iters --small-iters $small_iters -w $warmup --rounds $rounds --burst $burst"
echo "regret.sh: raw results in $out" >&2
