#!/usr/bin/env bash
# Two jobs: the page of where performance stands, and the in-node sweeps.
#   scripts/perf-report.sh --print | --write | --check
# renders docs/performance.md from docs/perf/scenarios.json (the latest
# measurement of each scenario, copied from the journal,
# docs/performance-history.md); --check exits 1 when the committed page is
# stale or 300 lines or longer (scripts/perf_report.py; --data, --doc and
# --history name other files).
#   scripts/perf-report.sh [BUILD_DIR] > perf.md
# runs smddp against Open MPI on the same buffers, one run per collective
# and rank count, and prints markdown tables. Not a test: numbers, no
# assertions.
# Each run compares smddp with Open MPI's default decision (`mpi`) and with
# every coll/tuned algorithm of the collective forced in turn (`mpi:NAME`,
# the names this Open MPI offers); the table shows the best of those per
# size, since users who tune Open MPI compare with that.
# Environment: SMDDP_PERF_MAXBYTES (256M), SMDDP_PERF_ITERS (20),
# SMDDP_PERF_BIND (mpirun --bind-to value, default none; "default" leaves
# mpirun's own binding), SMDDP_PERF_TUNED=0 skips the forced algorithms,
# SMDDP_PERF_RANKS (rank counts, default "2 4"), SMDDP_PERF_COLLECTIVES
# (default "allreduce allgather reducescatter broadcast alltoall").
set -euo pipefail
# A build directory never starts with "--": options go to the page's renderer.
if [[ ${1:-} == --* ]]; then
  exec python3 "$(dirname "${BASH_SOURCE[0]}")/perf_report.py" "$@"
fi
# shellcheck source=scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
build=${1:-$SMDDP_BUILD_DIR}
bench="$build/bench/smddp-bench"
maxbytes=${SMDDP_PERF_MAXBYTES:-256M}
iters=${SMDDP_PERF_ITERS:-20}
bind=${SMDDP_PERF_BIND:-none}
tuned=${SMDDP_PERF_TUNED:-1}
read -r -a rank_counts <<<"${SMDDP_PERF_RANKS:-2 4}"
read -r -a collectives <<<"${SMDDP_PERF_COLLECTIVES:-allreduce allgather reducescatter broadcast alltoall}"

# launcher NP: the mpirun words for NP ranks.
launcher() {
  local words=(mpirun --oversubscribe -np "$1")
  [[ $bind == default ]] || words+=(--bind-to "$bind")
  printf '%s\n' "${words[@]}"
}

# tuned_backends NP COLLECTIVE: "mpi:a,mpi:b,..." for the tuned algorithms
# Open MPI offers for the collective (asked by naming one that does not
# exist: smddp-bench lists the offered names and exits 64), or nothing.
tuned_backends() {
  local np=$1 coll=$2 out
  [[ $tuned == 1 ]] || return 0
  local run
  mapfile -t run < <(launcher "$np")
  out=$("${run[@]}" "$bench" "$coll" -b 8 -e 8 -n 1 -w 0 --backend mpi:none-such 2>&1 || true)
  sed -n 's/.*; offered: //p' <<<"$out" | head -n 1 | tr -d ' ' | tr ',' '\n' | sed 's/^/mpi:/' | paste -sd, -
}

# table NP COLLECTIVE [extra smddp-bench args...]
table() {
  local np=$1 coll=$2
  shift 2
  local run extra
  mapfile -t run < <(launcher "$np")
  extra=$(tuned_backends "$np" "$coll")
  local cmd=("${run[@]}" "$bench" "$coll" -b 8 -e "$maxbytes" -f 4
    -n "$iters" -w 3 -c 1 --out-of-place --backend "smddp,mpi${extra:+,$extra}" "$@")
  echo
  echo "### $coll, $np ranks"
  echo
  echo "\`${cmd[*]}\` (load average before: $(cut -d' ' -f1-3 /proc/loadavg))"
  echo
  echo "Times in us; each ratio is the other's time over smddp's (above 1: smddp is faster)."
  echo
  echo "| size (B) | smddp algorithm | smddp | mpi default | best mpi tuned | smddp vs default | smddp vs best tuned |"
  echo "| ---: | --- | ---: | ---: | --- | ---: | ---: |"
  "${cmd[@]}" | awk '
    /^#/ || NF < 16 { next }
    !($1 in seen) { seen[$1] = 1; order[++n] = $1 }
    $14 == "smddp" { st[$1] = $6; algo[$1] = $15; next }
    $14 == "mpi" { mt[$1] = $6; next }
    $14 ~ /^mpi:/ && (!($1 in bt) || $6 + 0 < bt[$1] + 0) { bt[$1] = $6; bn[$1] = substr($14, 5) }
    END {
      for (i = 1; i <= n; ++i) {
        s = order[i]
        if (!(s in st) || !(s in mt)) continue
        best = (s in bt) ? sprintf("%s (%s)", bt[s], bn[s]) : "-"
        vs_best = (s in bt) ? sprintf("%.2fx", bt[s] / st[s]) : "-"
        printf "| %s | %s | %s | %s | %s | %.2fx | %s |\n", s, algo[s], st[s], mt[s], best, mt[s] / st[s], vs_best
      }
    }'
}

echo "## smddp vs Open MPI on $(hostname) ($(nproc) cores), $(date -u +%Y-%m-%d), --bind-to $bind"
for np in "${rank_counts[@]}"; do
  for coll in "${collectives[@]}"; do
    table "$np" "$coll"
  done
done
