#!/usr/bin/env bash
# Runs the performance comparisons quoted in docs/performance.md: smddp
# against Open MPI on the same buffers in one run per collective and rank
# count, and prints markdown tables. Not a test: numbers, no assertions.
#   scripts/perf-report.sh [BUILD_DIR] > perf.md
set -euo pipefail
# shellcheck source=scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
build=${1:-$SMDDP_BUILD_DIR}
bench="$build/bench/smddp-bench"
maxbytes=${SMDDP_PERF_MAXBYTES:-256M}
iters=${SMDDP_PERF_ITERS:-20}

# table NP COLLECTIVE [extra smddp-bench args...]
table() {
  local np=$1 coll=$2
  shift 2
  local cmd=(mpirun --oversubscribe --bind-to none -np "$np" "$bench" "$coll" -b 8 -e "$maxbytes" -f 4
    -n "$iters" -w 3 -c 1 --out-of-place --backend "smddp,mpi" "$@")
  echo
  echo "### $coll, $np ranks"
  echo
  echo "\`${cmd[*]}\` (load average before: $(cut -d' ' -f1 /proc/loadavg))"
  echo
  echo "| size (B) | smddp algorithm | smddp time (us) | smddp busbw (GB/s) | mpi time (us) | mpi busbw (GB/s) | smddp / mpi |"
  echo "| ---: | --- | ---: | ---: | ---: | ---: | ---: |"
  "${cmd[@]}" | awk '
    /^#/ || NF < 16 { next }
    $14 == "smddp" { size = $1; algo = $15; st = $6; sb = $8; next }
    $14 == "mpi" && $1 == size {
      printf "| %s | %s | %s | %s | %s | %s | %.2fx |\n", size, algo, st, sb, $6, $8, $6 / st
    }'
}

echo "## smddp vs Open MPI on $(hostname) ($(nproc) cores), $(date -u +%Y-%m-%d)"
for np in 2 4; do
  for coll in allreduce allgather reducescatter broadcast alltoall; do
    table "$np" "$coll"
  done
done
