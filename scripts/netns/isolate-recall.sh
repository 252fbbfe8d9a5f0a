#!/usr/bin/env bash
# Issue 38's namespace check of smddp-diag isolate with its default limits
# (docs/diag.md, "Isolate"): on HOSTS namespace hosts (one rank each),
# RUNS runs of the unshaped cluster (a healthy fleet: how many name
# anyone), then one host's link shaped (tbf, both directions) so that its
# bidirectional stream gets half of the fleet's median stream rate, as
# measured by the healthy runs' first pairings, and RUNS runs more (how
# many name exactly that host). Too slow for CI; needs root.
#
#   scripts/netns/isolate-recall.sh [--hosts 8] [--runs 10] [--victim 5] [--diag PATH] [-- ISOLATE OPTIONS...]
#
# Options after -- go to every isolate run (the default is none: the
# probes' and the verdict's defaults). Each run's JSON is kept in
# $SMDDP_RECALL_DIR (default: a temporary directory, printed). The
# cluster is torn down on exit, also on failure.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
hosts=8 runs=10 victim=5 diag=${SMDDP_DIAG:-$ROOT/build/diag/smddp-diag} extra=()
while [ $# -gt 0 ]; do
  case $1 in
    --hosts) hosts=${2:?}; shift 2 ;;
    --runs) runs=${2:?}; shift 2 ;;
    --victim) victim=${2:?}; shift 2 ;;
    --diag) diag=${2:?}; shift 2 ;;
    --) shift; extra=("$@"); break ;;
    *) echo "isolate-recall: unknown argument '$1'" >&2; exit 64 ;;
  esac
done
for v in "$hosts" "$runs" "$victim"; do
  [[ $v =~ ^[0-9]{1,3}$ ]] || { echo "isolate-recall: '$v' is not a small number" >&2; exit 64; }
done
((hosts >= 4 && victim < hosts && runs >= 1)) || { echo "isolate-recall: want --hosts >= 4, --victim < hosts, --runs >= 1" >&2; exit 64; }

export SMDDP_NETNS_NAME=${SMDDP_NETNS_NAME:-isorecal} SMDDP_NETNS_NET=${SMDDP_NETNS_NET:-239}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
cluster=$ROOT/scripts/netns-cluster.sh
out=${SMDDP_RECALL_DIR:-$(mktemp -d /tmp/isolate-recall.XXXXXX)}
mkdir -p "$out"
trap '"$cluster" down >/dev/null 2>&1 || true' EXIT
"$cluster" up "$hosts" >/dev/null
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg); runs' JSON in $out"

# One isolate run; prints the hosts it named (space separated, or "-").
run_once() {
  local json=$1
  "$cluster" run -np "$hosts" --npernode 1 "$diag" isolate --json "$json" "${extra[@]}" >/dev/null 2>"$json.err" || true
  python3 - "$json" <<'EOF'
import json, sys
try:
    doc = json.load(open(sys.argv[1]))
except (OSError, ValueError):
    print("error")
    sys.exit()
print(" ".join(n["host"] for n in doc["nodes"] if not n["healthy"]) or "-")
EOF
}

healthy_named=0
for i in $(seq 1 "$runs"); do
  named=$(run_once "$out/healthy-$i.json")
  [ "$named" = "-" ] || healthy_named=$((healthy_named + 1))
  echo "healthy run $i: named $named"
done

# The fleet's median bidirectional stream of the first pairings, GB/s, and
# the tbf rate per direction that halves it: half the median, split over
# the two directions.
read -r median rate_mbit < <(python3 - "$out" "$runs" <<'EOF'
import json, statistics, sys
rates = []
for i in range(1, int(sys.argv[2]) + 1):
    try:
        doc = json.load(open(f"{sys.argv[1]}/healthy-{i}.json"))
    except (OSError, ValueError):
        continue
    rates += [t["stream_gbs"] for t in doc["isolate"]["tests"]
              if t["kind"] == "pair" and t["round"] <= 2 and t["error"] is None and not t["retest"]]
m = statistics.median(rates)
print(f"{m:.3f} {max(1, round(m / 2 / 2 * 8000))}")
EOF
)
victim_host=$SMDDP_NETNS_NAME-h$victim
for cmd in "tc qdisc replace dev $SMDDP_NETNS_NAME-v$victim" "ip netns exec $victim_host tc qdisc replace dev eth0"; do
  $cmd root tbf rate "${rate_mbit}mbit" burst 64kb latency 50ms
done
echo "fleet median stream ${median} GB/s; $victim_host shaped to ${rate_mbit} Mbit/s each way"

exact=0 found=0 others=0
for i in $(seq 1 "$runs"); do
  named=$(run_once "$out/throttled-$i.json")
  [ "$named" = "$victim_host" ] && exact=$((exact + 1))
  [[ " $named " == *" $victim_host "* ]] && found=$((found + 1))
  for h in $named; do
    [ "$h" = "$victim_host" ] || [ "$h" = "-" ] || others=$((others + 1))
  done
  echo "throttled run $i: named $named"
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "healthy: $healthy_named of $runs runs named a host"
echo "throttled: $victim_host named in $found of $runs runs (alone in $exact); other hosts named $others times"
