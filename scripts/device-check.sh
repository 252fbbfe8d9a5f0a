#!/usr/bin/env bash
# Device check: on a machine with an NVIDIA GPU, builds what it can and runs
# the GPU tests and GPU benchmark rows, then prints a short table (also
# written as Markdown for docs/performance.md). Meant to finish within
# 5 minutes on one GPU.
#
#   scripts/device-check.sh              discover, build, run, table
#   scripts/device-check.sh --discover   only list what this machine has (seconds)
#   scripts/device-check.sh --build-only build, run nothing (works without a GPU)
#   scripts/device-check.sh --standalone skip the CMake build, use nvcc and g++ alone
#
# What it needs and how it degrades:
#  - nvcc and g++ (C++20): required. nvcc from PATH, /usr/local/cuda*/bin, or
#    the nvidia-cuda-nvcc wheel.
#  - NCCL: $NCCL_HOME, the CUDA tree, /usr, or the nvidia-nccl-cu12 wheel
#    (site-packages/nvidia/nccl/{include,lib}, libnccl.so.2 only).
#  - CMake + Ninja + MPI + the project's libraries (fmt, libfabric, hwloc,
#    CLI11, nlohmann_json, prometheus-cpp, GTest, benchmark): the full build,
#    smddp-bench rows for the nccl and smddp backends, and `ctest -L gpu`.
#    When any is missing the configure step says which, and the check falls
#    back to a standalone nvcc/g++ build of the kernel test and the device
#    microbenchmark (kernels vs copy, staging bandwidth); the backend rows
#    are then reported as skipped, with the reason.
#
# Output: $OUT (the device runner's folder) or $DEVICE_CHECK_OUT, default
# /tmp/smddp-device-check: device-check.md (the table), device-check.log
# (everything), *.json (bench rows). Exit 0 when every check that ran passed.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUT_DIR=${DEVICE_CHECK_OUT:-${OUT:-/tmp/smddp-device-check}}
BUILD=${DEVICE_CHECK_BUILD:-$ROOT/build-device}
BUDGET=${DEVICE_CHECK_SECONDS:-290}
DISCOVER_ONLY=0 BUILD_ONLY=0 STANDALONE=0
for arg in "$@"; do
  case "$arg" in
    --discover) DISCOVER_ONLY=1 ;;
    --build-only) BUILD_ONLY=1 ;;
    --standalone) STANDALONE=1 ;;
    *) echo "usage: $0 [--discover] [--build-only] [--standalone]" >&2; exit 64 ;;
  esac
done
mkdir -p "$OUT_DIR" "$BUILD"
LOG=$OUT_DIR/device-check.log
: >"$LOG"
START=$SECONDS
ROWS=()     # "name|result|note" lines of the table
FAILED=0
if [ "$(id -u)" -eq 0 ]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi

log() { echo "$*" | tee -a "$LOG" >&2; }
row() { ROWS+=("$1|$2|${3:-}"); }
fail_row() { row "$1" "FAIL" "$2"; FAILED=1; }
left() { echo $((BUDGET - (SECONDS - START))); }
# bounded CMD...: runs with what is left of the budget (at most $1 seconds).
bounded() {
  local most=$1
  shift
  local t
  t=$(left)
  [ "$t" -gt "$most" ] && t=$most
  if [ "$t" -le 5 ]; then
    log "out of time budget: skipping: $*"
    return 124
  fi
  timeout --kill-after=10 "$t" "$@"
}

# ---- discovery -------------------------------------------------------------
python=$(command -v python3 || command -v python || true)
site_dirs() {
  [ -n "$python" ] && "$python" - <<'EOF' 2>/dev/null
import site, sys
for d in site.getsitepackages() + [site.getusersitepackages()] + sys.path:
    print(d)
EOF
}
first_existing() {
  local p
  for p in "$@"; do [ -e "$p" ] && { echo "$p"; return 0; }; done
  return 1
}

NVCC=$(command -v nvcc || first_existing /usr/local/cuda/bin/nvcc /usr/local/cuda-*/bin/nvcc || true)
SITES=$(site_dirs | sort -u)
if [ -z "$NVCC" ]; then
  for d in $SITES; do
    [ -x "$d/nvidia/cuda_nvcc/bin/nvcc" ] && NVCC=$d/nvidia/cuda_nvcc/bin/nvcc && break
  done
fi
CUDA_HOME=${CUDA_HOME:-}
[ -z "$CUDA_HOME" ] && [ -n "$NVCC" ] && CUDA_HOME=$(cd "$(dirname "$NVCC")/.." && pwd)
NCCL_INC="" NCCL_LIB=""
for d in ${NCCL_HOME:-} "$CUDA_HOME" /usr /usr/local; do
  [ -n "$d" ] || continue
  inc=$(first_existing "$d/include/nccl.h" "$d/lib/nccl.h" || true)
  lib=$(first_existing "$d/lib64/libnccl.so" "$d/lib/libnccl.so" "$d/lib/x86_64-linux-gnu/libnccl.so" \
        "$d/lib64/libnccl.so.2" "$d/lib/libnccl.so.2" "$d/lib/x86_64-linux-gnu/libnccl.so.2" || true)
  if [ -n "$inc" ] && [ -n "$lib" ]; then NCCL_INC=$(dirname "$inc"); NCCL_LIB=$lib; break; fi
done
if [ -z "$NCCL_LIB" ]; then
  for d in $SITES; do
    if [ -f "$d/nvidia/nccl/include/nccl.h" ]; then
      NCCL_INC=$d/nvidia/nccl/include
      NCCL_LIB=$(first_existing "$d/nvidia/nccl/lib/libnccl.so" "$d/nvidia/nccl/lib/libnccl.so.2" || true)
      break
    fi
  done
fi
CXX=${CXX:-$(command -v g++ || command -v c++ || true)}
CMAKE=$(command -v cmake || true)
NINJA=$(command -v ninja || command -v ninja-build || true)
MPIRUN=$(command -v mpirun || command -v mpiexec || true)
GPU=$(nvidia-smi --query-gpu=name,compute_cap,driver_version,memory.total --format=csv,noheader 2>/dev/null | head -1)
NGPUS=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ' || true)
ARCH=$(echo "$GPU" | awk -F', ' '{gsub(/\./, "", $2); print $2}')
[ -z "$ARCH" ] && ARCH=${DEVICE_CHECK_ARCH:-90}
NVCC_VERSION=$([ -n "$NVCC" ] && "$NVCC" --version 2>/dev/null | sed -n 's/.*release \([0-9.]*\).*/\1/p')
NCCL_VERSION=$([ -n "$NCCL_INC" ] && awk '/define NCCL_(MAJOR|MINOR|PATCH) /{v=v (v?".":"") $3} END{print v}' "$NCCL_INC/nccl.h")

log "== discovery"
for item in "gpu:${GPU:-none} (${NGPUS:-0} visible)" "nvcc:${NVCC:-missing} ${NVCC_VERSION:-}" \
            "cuda home:${CUDA_HOME:-?}" "nccl:${NCCL_LIB:-missing} ${NCCL_VERSION:-}" "nccl.h:${NCCL_INC:-missing}" \
            "c++:${CXX:-missing} $([ -n "$CXX" ] && "$CXX" -dumpfullversion 2>/dev/null)" \
            "cmake:${CMAKE:-missing} $([ -n "$CMAKE" ] && "$CMAKE" --version | head -1 | awk '{print $3}')" \
            "ninja:${NINJA:-missing}" "mpirun:${MPIRUN:-missing}" "python:${python:-missing}" \
            "cores:$(nproc)" "memory:$(awk '/MemTotal/{printf "%.0f GiB", $2/1048576}' /proc/meminfo)"; do
  printf '  %-10s %s\n' "${item%%:*}" "${item#*:}" | tee -a "$LOG" >&2
done
[ "$DISCOVER_ONLY" = 1 ] && exit 0
if [ -z "$NVCC" ] || [ -z "$CXX" ]; then
  log "nvcc and a C++ compiler are required"
  exit 1
fi
if [ -z "$GPU" ] && [ "$BUILD_ONLY" = 0 ]; then log "warning: nvidia-smi shows no GPU; the checks will report skips"; fi
JOBS=$(nproc)
PATH="$(dirname "$NVCC"):$PATH"
export PATH
if [ -n "$NCCL_LIB" ]; then
  LD_LIBRARY_PATH="$(dirname "$NCCL_LIB")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  export LD_LIBRARY_PATH
fi

# ---- build -----------------------------------------------------------------
KERNEL_TEST="" MICRO="" BENCH=""
cmake_build() {
  [ "$STANDALONE" = 1 ] && { log "--standalone: CMake build skipped"; CMAKE_WHY="--standalone"; return 1; }
  local why=""
  [ -z "$CMAKE" ] && why="no cmake"
  [ -z "$NINJA" ] && why="${why:+$why, }no ninja"
  [ -z "$MPIRUN" ] && why="${why:+$why, }no mpirun"
  [ -z "$NCCL_LIB" ] && why="${why:+$why, }no NCCL"
  if [ -n "$why" ]; then
    log "CMake build skipped: $why"
    CMAKE_WHY=$why
    return 1
  fi
  log "== cmake build ($BUILD, sm_$ARCH)"
  if ! bounded 120 "$CMAKE" -S "$ROOT" -B "$BUILD" -G Ninja -DSMDDP_WITH_CUDA=ON -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_CUDA_COMPILER="$NVCC" -DCMAKE_CUDA_ARCHITECTURES="$ARCH" \
      -DSMDDP_NCCL_INCLUDE_DIR="$NCCL_INC" -DSMDDP_NCCL_LIBRARY="$NCCL_LIB" >>"$LOG" 2>&1; then
    CMAKE_WHY="configure failed: $(grep -m1 -E 'Could NOT find|not found|CMake Error' "$LOG" | cut -c1-100)"
    log "CMake $CMAKE_WHY"
    return 1
  fi
  if ! bounded 200 "$CMAKE" --build "$BUILD" --target smddp-bench cuda_kernels_test smddp-micro-cuda \
      -- -j "$JOBS" >>"$LOG" 2>&1; then
    CMAKE_WHY="build failed (see device-check.log)"
    log "CMake $CMAKE_WHY"
    return 1
  fi
  KERNEL_TEST=$BUILD/tests/e2e/gpu/cuda_kernels_test
  MICRO=$BUILD/bench/smddp-micro-cuda
  BENCH=$BUILD/bench/smddp-bench
}

# The kernel test and the microbenchmark need only the CUDA kernels and the
# engine's host kernels: nvcc for the one .cu file, g++ for the rest.
standalone_build() {
  local dir=$BUILD/standalone
  mkdir -p "$dir"
  rm -f "$dir"/*.o "$dir/cuda_kernels_test" "$dir/smddp-micro-cuda"
  log "== standalone build ($dir, sm_$ARCH)"
  local src=$ROOT/collectives/src
  local inc=(-I"$ROOT/collectives/include" -I"$src" -I"$CUDA_HOME/include")
  local cxx=("$CXX" -std=c++20 -O2 "${inc[@]}")
  local objs=() f
  (
    set -e
    "$NVCC" -std=c++20 -O2 -ccbin "$CXX" -arch="sm_$ARCH" "${inc[@]}" -c "$src/cuda/kernels.cu" -o "$dir/kernels_cu.o" &
    for f in cuda/runtime core/wait core/check core/types kernels/dispatch kernels/kernels_generic; do
      "${cxx[@]}" -c "$src/$f.cc" -o "$dir/$(echo "$f" | tr / _).o" &
    done
    "${cxx[@]}" -fvect-cost-model=dynamic -mavx2 -mfma -mf16c -c "$src/kernels/kernels_avx2.cc" -o "$dir/kernels_avx2.o" &
    "${cxx[@]}" -fvect-cost-model=dynamic -mavx512f -mavx512bw -mavx512vl -mavx512dq -mavx512bf16 -mavx2 -mfma -mf16c \
      -c "$src/kernels/kernels_avx512.cc" -o "$dir/kernels_avx512.o" &
    "${cxx[@]}" -c "$ROOT/tests/e2e/gpu/cuda_kernels_test.cc" -o "$dir/cuda_kernels_test.o" &
    "${cxx[@]}" -c "$ROOT/bench/micro/cuda_bench.cc" -o "$dir/cuda_bench.o" &
    wait
  ) >>"$LOG" 2>&1 || true
  for f in kernels_cu cuda_runtime core_wait core_check core_types kernels_dispatch kernels_kernels_generic \
           kernels_avx2 kernels_avx512; do
    [ -f "$dir/$f.o" ] || { log "standalone build: $f.o failed (see device-check.log)"; return 1; }
    objs+=("$dir/$f.o")
  done
  # nvcc links: it adds the static CUDA runtime wherever the toolkit keeps it.
  if "$NVCC" -ccbin "$CXX" -arch="sm_$ARCH" "$dir/cuda_kernels_test.o" "${objs[@]}" -o "$dir/cuda_kernels_test" \
       >>"$LOG" 2>&1; then
    KERNEL_TEST=$dir/cuda_kernels_test
  fi
  if "$NVCC" -ccbin "$CXX" -arch="sm_$ARCH" "$dir/cuda_bench.o" "${objs[@]}" -o "$dir/smddp-micro-cuda" >>"$LOG" 2>&1; then
    MICRO=$dir/smddp-micro-cuda
  fi
  [ -n "$KERNEL_TEST" ] && [ -n "$MICRO" ]
}

CMAKE_WHY=""
if ! cmake_build; then
  standalone_build || { fail_row "build" "neither the CMake nor the standalone build succeeded"; }
fi
log "build done after $((SECONDS - START)) s"
if [ "$BUILD_ONLY" = 1 ]; then
  [ -n "$KERNEL_TEST" ] && [ -n "$MICRO" ] && exit 0
  exit 1
fi

# ---- runs ------------------------------------------------------------------
if [ -n "$KERNEL_TEST" ]; then
  log "== reduction kernels against the host reference"
  out=$(bounded 90 "$KERNEL_TEST" 2>&1); rc=$?
  echo "$out" >>"$LOG"
  summary=$(echo "$out" | tail -1)
  case $rc in
    0) row "reduction kernels = host, every dtype x op" "PASS" "$summary" ;;
    77) row "reduction kernels = host, every dtype x op" "SKIP" "$summary" ;;
    *) fail_row "reduction kernels = host, every dtype x op" "$(echo "$out" | grep -m1 FAIL) $summary" ;;
  esac
fi

if [ -n "$MICRO" ]; then
  log "== device microbenchmark"
  out=$(bounded 90 "$MICRO" 2>&1); rc=$?
  echo "$out" >>"$LOG"
  if [ $rc -eq 0 ]; then
    echo "$out" | grep '^#' | head -1 | tee -a "$LOG" >&2
    while IFS= read -r line; do
      name=$(echo "$line" | cut -c1-40 | sed 's/ *$//')
      gbps=$(echo "$line" | awk '{print $(NF-1)}')
      frac=$(echo "$line" | awk '{print $NF}')
      note=""
      if [ "$frac" != "-" ]; then
        note="$frac of copy"
        case "$name" in
          reduce*|divide*)
            if awk -v f="$frac" 'BEGIN{exit !(f < 0.80)}'; then note="$note (below the 0.80 target)"; fi ;;
        esac
      fi
      row "$name" "$gbps GB/s" "$note"
    done < <(echo "$out" | grep -v '^#')
  elif [ $rc -eq 77 ]; then
    row "device microbenchmark" "SKIP" "$(echo "$out" | tail -1)"
  else
    fail_row "device microbenchmark" "exit $rc: $(echo "$out" | tail -1)"
  fi
fi

# smddp-bench rows: 64 MiB allreduce (plus a size sweep in the JSON).
bench_rows() {
  local backend=$1 np=$2 json=$OUT_DIR/bench-$1-np$2.json
  local label="allreduce float32 64 MiB, $backend, $np rank(s)"
  out=$(bounded 120 "$MPIRUN" --oversubscribe --bind-to none -np "$np" "$BENCH" allreduce -b 1M -e 64M -f 8 \
          -n 10 -w 3 -c 1 --mem cuda --backend "$backend" -J "$json" 2>&1); rc=$?
  echo "$out" >>"$LOG"
  if [ $rc -ne 0 ]; then
    if echo "$out" | grep -q "Duplicate GPU\|does not take device buffers\|no CUDA device"; then
      row "$label" "SKIP" "$(echo "$out" | grep -m1 -o 'Duplicate GPU.*\|does not take device buffers[^;]*\|no CUDA device.*')"
    else
      fail_row "$label" "exit $rc: $(echo "$out" | grep -m1 'smddp-bench:' | cut -c1-120)"
    fi
    return
  fi
  if [ -n "$python" ]; then
    "$python" - "$json" "$label" >>"$OUT_DIR/rows.txt" <<'EOF'
import json, sys
doc = json.load(open(sys.argv[1]))
big = [r for r in doc["rows"] if r["placement"] == "out-of-place"]
r = max(big, key=lambda r: r["bytes"])
wrong = sum(x["wrong"] or 0 for x in doc["rows"])
print(f"{sys.argv[2]}|busbw {r['busbw_gbps']:.1f} GB/s|{r['time_us']:.0f} us, algorithm {r['algorithm']}, #wrong {wrong}")
EOF
    while IFS= read -r l; do ROWS+=("$l"); done <"$OUT_DIR/rows.txt"
    : >"$OUT_DIR/rows.txt"
  else
    row "$label" "ran" "see $json"
  fi
}

if [ -n "$BENCH" ]; then
  log "== smddp-bench rows"
  bench_rows nccl 1
  [ "${NGPUS:-1}" -ge 2 ] && bench_rows nccl 2
  bench_rows smddp 2
  log "== ctest -L gpu"
  out=$(cd "$BUILD" && bounded 240 ctest -L gpu --output-on-failure 2>&1); rc=$?
  echo "$out" >>"$LOG"
  summary=$(echo "$out" | grep -m1 'tests passed')
  skipped=$(echo "$out" | grep -c '(Skipped)' || true)
  if [ $rc -eq 0 ]; then row "ctest -L gpu" "PASS" "$summary; $skipped skipped"; else fail_row "ctest -L gpu" "$summary"; fi
else
  row "smddp-bench rows (nccl, smddp), ctest -L gpu" "SKIP" "${CMAKE_WHY:-not built}"
fi

# ---- table -----------------------------------------------------------------
{
  echo "Device check, $(date -u +%Y-%m-%d): ${GPU:-no GPU}; CUDA ${NVCC_VERSION:-?}, NCCL ${NCCL_VERSION:-?}; $((SECONDS - START)) s"
  echo
  echo "| check | result | note |"
  echo "|---|---|---|"
  for r in "${ROWS[@]}"; do
    IFS='|' read -r a b c <<<"$r"
    echo "| $a | $b | $c |"
  done
} >"$OUT_DIR/device-check.md"
echo
printf '%-46s %-16s %s\n' "check" "result" "note"
for r in "${ROWS[@]}"; do
  IFS='|' read -r a b c <<<"$r"
  printf '%-46s %-16s %s\n' "$a" "$b" "$c"
done
echo "(table: $OUT_DIR/device-check.md, log: $LOG)"
exit $FAILED
