#!/usr/bin/env bash
# Makes docs/report.png, the README's picture: a real 2-rank sweep (smddp
# against Open MPI, per-iteration timings, roofline), its report, and
# headless chromium's screenshot of the top of the page.
#
#   report/screenshot.sh [BUILD_DIR] [OUT.png]     (default build/, docs/report.png)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-$root/build}
out=${2:-$root/docs/report.png}
[ -x "$build/bench/smddp-bench" ] || { echo "screenshot.sh: no $build/bench/smddp-bench (build first)" >&2; exit 64; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
timeout 300 mpirun --oversubscribe --bind-to none -np 2 "$build/bench/smddp-bench" allreduce -b 4K -e 4M -f 4 \
  -n 10 -w 2 --backend smddp,mpi --per-iteration --roofline -q -J "$tmp/allreduce-np2.json" >/dev/null
"$root/report/smddp-report" "$tmp/allreduce-np2.json" -o "$tmp/report.html" --title "smddp report: allreduce, 2 ranks"
timeout 120 chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
  --disable-background-networking --disable-component-update --disable-sync --user-data-dir="$tmp/profile" \
  --hide-scrollbars --window-size=1000,820 --screenshot="$out" "file://$tmp/report.html" 2>/dev/null
echo "wrote $out ($(stat -c %s "$out") bytes)"
