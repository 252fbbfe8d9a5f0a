#!/usr/bin/env bash
# Validation of smddp-model (docs/model.md) on network-namespace clusters
# with shaped links: measures allreduce (every multi-host algorithm) on 2, 3
# and 4 hosts x 1 rank and on 2 hosts x 2 ranks, and reduce-scatter and
# allgather on 2 hosts x 1 rank; fits on 2 hosts x 1 rank allreduce and
# checks the model on what it was not fitted on. Prints markdown (the
# tables of docs/model.md); the raw results stay in DIR.
#
#   scripts/model-validate.sh [--rate R|none] [--burst BYTES] [--hosts "3 4"] [--transport T] [-n ITERS] [-b MIN] [-e MAX]
#                             [-o DIR] [--bench PATH] [--model PATH] [--no-measure]
#
# --rate none leaves the links unshaped. --burst is the shaper's bucket
# (131072 unless named): a real link has none, and a link idle for a few
# milliseconds would otherwise send the next 500 KB at once (the default
# bucket of netns-cluster.sh at 1 Gbit/s), so the model would be checked
# against free bursts, not the link; 128 KiB still holds the rate.
# --hosts lists the held-out host counts (x 1 rank; 2 hosts is always
# measured: the fit's own). --transport is smddp-bench's network transport
# (fabric unless named).
# --no-measure fits and checks the results already in DIR (-o) again, e.g.
# after a change to the model.
# Needs root (namespaces). The load average is printed before and after:
# other work on the same cores shows up in every number.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
rate=400mbit burst=131072 iters=5 min=64K max=64M dir="" measure=1 held_out="3 4" transport=fabric
bench=${SMDDP_BENCH:-$ROOT/build/bench/smddp-bench}
model=${SMDDP_MODEL:-$ROOT/build/model/smddp-model}
while [ $# -gt 0 ]; do
  case $1 in
    --rate) rate=${2:?--rate needs a value}; shift 2 ;;
    --burst) burst=${2:?--burst needs a value}; shift 2 ;;
    --hosts) held_out=${2:?--hosts needs a value}; shift 2 ;;
    --transport) transport=${2:?--transport needs a value}; shift 2 ;;
    -n) iters=${2:?-n needs a value}; shift 2 ;;
    -b) min=${2:?-b needs a value}; shift 2 ;;
    -e) max=${2:?-e needs a value}; shift 2 ;;
    -o) dir=${2:?-o needs a value}; shift 2 ;;
    --bench) bench=${2:?--bench needs a value}; shift 2 ;;
    --model) model=${2:?--model needs a value}; shift 2 ;;
    --no-measure) measure=0; shift ;;
    *) echo "model-validate.sh: unknown argument $1" >&2; exit 64 ;;
  esac
done
[ "$measure" = 0 ] || [ -x "$bench" ] || { echo "model-validate.sh: no smddp-bench at $bench (--bench PATH)" >&2; exit 64; }
[ -x "$model" ] || { echo "model-validate.sh: no smddp-model at $model (--model PATH)" >&2; exit 64; }
[ "$measure" = 1 ] || [ -n "$dir" ] || { echo "model-validate.sh: --no-measure needs -o DIR" >&2; exit 64; }
for h in $held_out; do
  [[ $h =~ ^([3-9]|1[0-6])$ ]] || { echo "model-validate.sh: --hosts '$held_out': host counts 3-16" >&2; exit 64; }
done
case $transport in fabric | mpi | socket | auto) ;; *) echo "model-validate.sh: --transport $transport: expected fabric, mpi, socket or auto" >&2; exit 64 ;; esac
[[ $rate == none || $rate =~ ^[1-9][0-9]{0,5}[kmg]?bit$ ]] || { echo "model-validate.sh: --rate $rate: expected none or a rate like 1gbit" >&2; exit 64; }
if ! [[ $burst =~ ^[1-9][0-9]{4,8}$ ]] || ((burst < 65536)); then
  echo "model-validate.sh: --burst $burst: expected bytes, 65536 to 999999999" >&2
  exit 64
fi
shaping=()
[ "$rate" = none ] || shaping=(--rate "$rate" --burst "$burst")
[ -n "$dir" ] || dir=$(mktemp -d)
mkdir -p "$dir"

export SMDDP_NETNS_NAME=smodel SMDDP_NETNS_NET=241
cluster=$ROOT/scripts/netns-cluster.sh
load_before=$(cut -d' ' -f1-3 /proc/loadavg)

# sweep HOSTS PER_HOST COLLECTIVE ALGORITHM: one smddp-bench -J file.
sweep() {
  local hosts=$1 per_host=$2 coll=$3 alg=$4
  local out=$dir/${coll}_${alg}_${hosts}x${per_host}.json
  echo "model-validate.sh: $coll $alg on ${hosts}x${per_host}" >&2
  "$cluster" run -np $((hosts * per_host)) --npernode "$per_host" "$bench" "$coll" -b "$min" -e "$max" -f 4 \
    -n "$iters" -w 1 --out-of-place --per-iteration -q -T 900 --transport "$transport" --algorithm "$alg" \
    -J "$out" >"$out.log" 2>&1 || echo "model-validate.sh: $coll $alg ${hosts}x${per_host} failed ($out.log)" >&2
}
allreduce_algs=(ring halving_doubling tree sharded hierarchical)

if [ "$measure" = 1 ]; then
trap '"$cluster" down >/dev/null 2>&1 || true' EXIT
for hosts in 2 $held_out; do
  "$cluster" up "$hosts" "${shaping[@]}" >&2
  for alg in "${allreduce_algs[@]}"; do sweep "$hosts" 1 allreduce "$alg"; done
  if [ "$hosts" = 2 ]; then
    for alg in "${allreduce_algs[@]}"; do sweep 2 2 allreduce "$alg"; done
    sweep 2 1 reduce_scatter ring
    for alg in ring direct recursive_doubling; do sweep 2 1 allgather "$alg"; done
  fi
  "$cluster" down >&2
done
fi
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

files() { # PATTERN...: the result files that exist
  local f
  for f in "$@"; do [ -s "$f" ] && echo "$f"; done
}
mapfile -t fit_files < <(files "$dir"/allreduce_*_2x1.json)
"$model" fit "${fit_files[@]}" -o "$dir/model.json" >"$dir/fit.txt"

median() { "$model" check "$dir/model.json" "$@" -b "$min" -e "$max" | tail -n 1 | sed 's/median abs error: //'; }
echo "### Validation, --rate $rate, $(nproc) CPUs, load average $load_before -> $load_after"
echo
echo "\`scripts/model-validate.sh --rate $rate --burst $burst --hosts \"$held_out\" --transport $transport -n $iters -b $min -e $max\`; fitted on 2 hosts x 1 rank allreduce."
echo
echo "| checked on | $(printf '%s | ' "${allreduce_algs[@]}")all |"
echo "| --- | $(printf -- '--- | %.0s' "${allreduce_algs[@]}")--- |"
for shape in 2x1 $(for h in $held_out; do echo "${h}x1"; done) 2x2; do
  line="| allreduce ${shape/x/ hosts x } rank(s)"
  all=()
  for alg in "${allreduce_algs[@]}"; do
    f=$dir/allreduce_${alg}_${shape}.json
    if [ -s "$f" ]; then line+=" | $(median "$f")"; all+=("$f"); else line+=" | -"; fi
  done
  if [ ${#all[@]} -gt 0 ]; then line+=" | $(median "${all[@]}") |"; else line+=" | - |"; fi
  echo "$line"
done
echo
echo "| checked on (2 hosts x 1 rank) | median abs error |"
echo "| --- | --- |"
for f in "$dir"/reduce_scatter_*_2x1.json "$dir"/allgather_*_2x1.json; do
  [ -s "$f" ] || continue
  name=$(basename "$f" .json)
  echo "| ${name%_2x1} | $(median "$f") |"
done
echo
echo "Fit (\`smddp-model fit $dir/allreduce_*_2x1.json -o model.json\`):"
echo
echo '```'
tail -n 8 "$dir/fit.txt"
echo '```'
