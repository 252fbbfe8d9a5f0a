#!/usr/bin/env bash
# Device check: everything the GPU path needs checked, in one call of at most
# 5 minutes, on a machine with only the NVIDIA driver, from the device bundle
# (scripts/device-bundle.sh). No build, no mpirun: ranks start through the
# TCP store (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT).
#
#   device-check.sh [--bundle DIR] [--discover]
#
#   --bundle DIR  the bundle (default: the folder this script is in when it
#                 holds bin/smddp-bench, else build-bundle/device-bundle)
#   --discover    only list what this machine has
#
# Rows: the kernels against the host reference; smddp-micro-cuda (kernels
# against a copy kernel: the bandwidth table); the GPU e2e tests (copy-kernel
# smoke, the smddp engine on 2 ranks sharing a GPU, with 1 KiB staging
# chunks too, NCCL at 1 rank with every collective, NCCL on 2 GPUs and the
# killed-rank test when there are 2, the fork check); smddp-bench allreduce
# rows; torch.distributed over NCCL when PyTorch is there; smddp-diag topo
# and NVML health.
#
# Whether there is a GPU is `nvidia-smi -L`'s answer. Exit: 0 every row
# passed; 1 a row failed - and when a GPU is listed, a row that skipped is a
# failure (a broken GPU node must not pass); 77 no GPU listed (every row
# SKIP); 64 usage. "n/a" rows (2-GPU tests on one GPU, no PyTorch) are not
# required. Output: $DEVICE_CHECK_OUT, else $OUT, else /tmp/smddp-device-check:
# device-check.md (the table, for docs/performance-history.md), device-check.log,
# bench-*.json.
set -uo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
usage() { echo "usage: device-check.sh [--bundle DIR] [--discover]" >&2; exit 64; }
BUNDLE="" DISCOVER_ONLY=0
while [ $# -gt 0 ]; do
  case "$1" in
    --bundle) [ $# -ge 2 ] || usage; BUNDLE=$2; shift 2 ;;
    --discover) DISCOVER_ONLY=1; shift ;;
    *) usage ;;
  esac
done
if [ -z "$BUNDLE" ]; then
  if [ -x "$HERE/bin/smddp-bench" ]; then BUNDLE=$HERE; else BUNDLE=$HERE/../build-bundle/device-bundle; fi
fi
if [ ! -x "$BUNDLE/bin/smddp-bench" ]; then
  echo "device-check.sh: no bundle at $BUNDLE (build one with scripts/device-bundle.sh)" >&2
  exit 64
fi
BUNDLE=$(cd "$BUNDLE" && pwd)
OUT_DIR=${DEVICE_CHECK_OUT:-${OUT:-/tmp/smddp-device-check}}
BUDGET=${DEVICE_CHECK_SECONDS:-290}
mkdir -p "$OUT_DIR"
LOG=$OUT_DIR/device-check.log
: >"$LOG"
START=$SECONDS
ROWS=()  # "check|result|note"
BIN=$BUNDLE/bin

log() { echo "$*" | tee -a "$LOG" >&2; }
row() { ROWS+=("$1|$2|${3:-}"); }
left() { echo $((BUDGET - (SECONDS - START))); }
# bounded MOST CMD...: CMD with what is left of the budget, at most MOST s.
bounded() {
  local most=$1 t
  shift
  t=$(left)
  [ "$t" -gt "$most" ] && t=$most
  if [ "$t" -le 5 ]; then
    echo "SKIP: out of time budget"
    return 77
  fi
  timeout --kill-after=10 "$t" "$@"
}

# ---- discovery ---------------------------------------------------------------
PY=$(command -v python3 || true)
NGPUS=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ' || true)
NGPUS=${NGPUS:-0}
GPU=$(nvidia-smi --query-gpu=name,compute_cap,driver_version,memory.total --format=csv,noheader 2>/dev/null | head -1)
# NCCL: not in the bundle (too large) unless someone put it in lib/.
NCCL_DIR=""
if [ -e "$BUNDLE/lib/libnccl.so.2" ]; then
  NCCL_DIR=$BUNDLE/lib
else
  wheel=""
  [ -n "$PY" ] && wheel=$("$PY" -c 'import os, nvidia.nccl as n; print(os.path.join(list(n.__path__)[0], "lib"))' 2>/dev/null)
  for d in "$wheel" "${NCCL_HOME:+$NCCL_HOME/lib}" /usr/local/cuda/lib64 /usr/local/cuda/lib /usr/lib/x86_64-linux-gnu; do
    if [ -n "$d" ] && [ -e "$d/libnccl.so.2" ]; then NCCL_DIR=$d; break; fi
  done
fi
[ -n "$NCCL_DIR" ] && export LD_LIBRARY_PATH="$NCCL_DIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export SMDDP_PROFILE_DIR=$BUNDLE/share/smddp/profiles
TORCH=""
[ -n "$PY" ] && TORCH=$("$PY" -c 'import torch; print(torch.__version__)' 2>/dev/null)

log "== discovery"
for item in "bundle:$BUNDLE" "gpus:$NGPUS listed by nvidia-smi -L${GPU:+ ($GPU)}" "nccl:${NCCL_DIR:-missing}" \
            "python:${PY:-missing}" "torch:${TORCH:-missing}" "cores:$(nproc)"; do
  printf '  %-8s %s\n' "${item%%:*}" "${item#*:}" | tee -a "$LOG" >&2
done
[ "$DISCOVER_ONLY" = 1 ] && exit 0

# ---- checks --------------------------------------------------------------------
# result NAME RC OUTPUT: a PASS, SKIP or FAIL row from an exit code.
result() {
  local name=$1 rc=$2 out=$3 note
  note=$(echo "$out" | grep -m1 -E '^(FAIL|SKIP)' || echo "$out" | grep -v '^PASS' | tail -1)
  note=$(echo "$note" | cut -c1-140)
  case $rc in
    0) row "$name" PASS "$note" ;;
    77) row "$name" SKIP "$note" ;;
    *) row "$name" FAIL "exit $rc: $note" ;;
  esac
}
check() {  # check NAME MOST CMD...
  local name=$1 most=$2 out rc
  shift 2
  log "== $name"
  out=$(bounded "$most" "$@" 2>&1); rc=$?
  echo "$out" >>"$LOG"
  result "$name" "$rc" "$out"
}

check "reduction kernels = host, every dtype x op, guards" 90 "$BIN/cuda_kernels_test"

log "== smddp-micro-cuda (kernels against a copy kernel)"
out=$(bounded 60 "$BIN/smddp-micro-cuda" 2>&1); rc=$?
echo "$out" >>"$LOG"
if [ "$rc" -eq 0 ]; then
  while IFS= read -r line; do
    name=$(echo "$line" | cut -c1-40 | sed 's/ *$//')
    gbps=$(echo "$line" | awk '{print $(NF-1)}')
    frac=$(echo "$line" | awk '{print $NF}')
    note=""
    if [ "$frac" != "-" ]; then
      note="$frac of copy"
      case "$name" in
        reduce*|divide*) awk -v f="$frac" 'BEGIN{exit !(f < 0.80)}' && note="$note (below the 0.80 target)" ;;
      esac
    fi
    row "$name" "$gbps GB/s" "$note"
  done < <(echo "$out" | grep -v '^#' | grep -v '^$')
else
  result "device microbenchmark" "$rc" "$out"
fi

E2E=("$PY" "$BUNDLE/tests/gpu_e2e.py" --bench "$BIN/smddp-bench" --micro "$BIN/smddp-micro-cuda"
     --kernels "$BIN/cuda_kernels_test" --diag "$BIN/smddp-diag")
if [ -z "$PY" ]; then
  row "GPU e2e tests" FAIL "no python3"
else
  for t in micro_smoke smddp_collectives smddp_many_chunks nccl_collectives fork_maps; do
    check "e2e $t" 60 "${E2E[@]}" "$t"
  done
  if [ "$NGPUS" -ge 2 ]; then
    check "e2e nccl_collectives_multi" 60 "${E2E[@]}" nccl_collectives_multi
    check "e2e nccl_kill_rank" 90 "${E2E[@]}" nccl_kill_rank
  else
    row "e2e nccl_collectives_multi, nccl_kill_rank" "n/a" "need 2 GPUs, $NGPUS listed"
  fi
fi

# smddp-bench allreduce through the TCP store: PORT RANKS BACKEND [ENV...]
bench_row() {
  local backend=$1 np=$2 label json port r pids=() rc=0 out
  label="allreduce float32 64 MiB, $backend, $np rank(s)"
  json=$OUT_DIR/bench-$backend-np$np.json
  port=$((20000 + RANDOM % 20000))
  log "== $label"
  for ((r = 0; r < np; r++)); do
    RANK=$r WORLD_SIZE=$np LOCAL_RANK=$r LOCAL_WORLD_SIZE=$np MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
      bounded 60 "$BIN/smddp-bench" allreduce -b 1M -e 64M -f 8 -n 10 -w 3 -c 1 --mem cuda \
      --backend "$backend" -J "$json" >>"$LOG" 2>&1 &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || rc=$?; done
  if [ "$rc" -ne 0 ]; then
    out=$(grep 'smddp-bench:' "$LOG" | tail -1 | cut -c1-140)
    if [ "$rc" -eq 64 ] && [[ "$out" == *"no CUDA device"* ]]; then row "$label" SKIP "$out"; return; fi
    row "$label" FAIL "exit $rc: $out"
    return
  fi
  out=$("$PY" - "$json" <<'EOF'
import json, sys
doc = json.load(open(sys.argv[1]))
r = max((x for x in doc["rows"] if x["placement"] == "out-of-place"), key=lambda x: x["bytes"])
wrong = sum(x["wrong"] or 0 for x in doc["rows"])
print(f"busbw {r['busbw_gbps']:.1f} GB/s|{r['time_us']:.0f} us, {r['algorithm']}, #wrong {wrong}")
EOF
  ) || { row "$label" FAIL "unreadable $json"; return; }
  row "$label" "${out%%|*}" "${out#*|}"
}
bench_row nccl 1
bench_row smddp 2

if [ -z "$TORCH" ]; then
  row "torch.distributed NCCL allreduce" "n/a" "no PyTorch"
else
  check "torch.distributed NCCL allreduce, 1 rank" 90 "$PY" "$BUNDLE/tests/torch_nccl.py" 1
  [ "$NGPUS" -ge 2 ] && check "torch.distributed NCCL allreduce, 2 ranks" 90 "$PY" "$BUNDLE/tests/torch_nccl.py" 2
fi

check "smddp-diag topo" 30 "$BIN/smddp-diag" topo
# The GPU health checks of the preflight (NVML: ECC, retired pages, temperature,
# throttling); a check it skipped (NVML missing) is a SKIP row, not a pass.
name="smddp-diag preflight: NVML health"
log "== $name"
out=$(bounded 60 "$BIN/smddp-diag" preflight --profile local -v \
  --checks gpu_ecc,gpu_memory_retirement,gpu_temperature,gpu_throttle 2>&1); rc=$?
echo "$out" >>"$LOG"
skipped=$(echo "$out" | grep -m1 -E '^[[:space:]]*gpu_[a-z_]+[[:space:]]+skip' | sed 's/^[[:space:]]*//')
if [ "$rc" -eq 0 ] && [ -n "$skipped" ]; then row "$name" SKIP "$(echo "$skipped" | cut -c1-140)"; else result "$name" "$rc" "$out"; fi

# ---- verdict and table ---------------------------------------------------------
FAILED=0 SKIPPED=0
for r in "${ROWS[@]}"; do
  IFS='|' read -r _ res _ <<<"$r"
  case $res in FAIL) FAILED=1 ;; SKIP) SKIPPED=1 ;; esac
done
if [ "$NGPUS" -gt 0 ] && [ "$SKIPPED" = 1 ]; then
  # A GPU is listed: a check that skipped means the GPU could not be used.
  for i in "${!ROWS[@]}"; do
    IFS='|' read -r a res c <<<"${ROWS[$i]}"
    [ "$res" = SKIP ] && ROWS[i]="$a|FAIL|skipped although nvidia-smi lists $NGPUS GPU(s): $c"
  done
  FAILED=1
fi
{
  echo "Device check, $(date -u +%Y-%m-%d): ${GPU:-no GPU listed}; $NGPUS GPU(s); NCCL from ${NCCL_DIR:-nowhere}; $((SECONDS - START)) s"
  echo
  echo "| check | result | note |"
  echo "|---|---|---|"
  for r in "${ROWS[@]}"; do
    IFS='|' read -r a b c <<<"$r"
    echo "| $a | $b | $c |"
  done
} >"$OUT_DIR/device-check.md"
echo
printf '%-52s %-16s %s\n' "check" "result" "note"
for r in "${ROWS[@]}"; do
  IFS='|' read -r a b c <<<"$r"
  printf '%-52s %-16s %s\n' "$a" "$b" "$c"
done
echo "(table: $OUT_DIR/device-check.md, log: $LOG)"
if [ "$FAILED" = 1 ]; then exit 1; fi
if [ "$NGPUS" -eq 0 ]; then
  echo "SKIP: nvidia-smi lists no GPU"
  exit 77
fi
exit 0
