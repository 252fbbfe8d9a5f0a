#!/usr/bin/env bash
# Builds the libFuzzer targets of fuzz/ with clang-16 (AddressSanitizer and
# UndefinedBehaviorSanitizer on the whole build) and runs each for a bounded
# time over a scratch copy of its seed corpus (fuzz/corpus/<target>/); the
# targets are those the build lists in <build-dir>/fuzz/libfuzzer-targets.txt
# (fuzz/CMakeLists.txt: replay-only targets are not among them). Fails
# when any target finds a crash, a leak, undefined behaviour, a timeout or an
# out-of-memory; the input is kept under <build-dir>/findings/<target>/.
#
#   scripts/fuzz.sh [--seconds N] [--jobs N] [--build-dir DIR] [--only TARGET] [--build-only]
#
# --seconds    per target (default 20; -max_total_time)
# --jobs       targets fuzzed at once (default: the machine's cores)
# --build-dir  default $SMDDP_BUILD_DIR-fuzz
# --only       run this target alone (after building all)
# --build-only build, fuzz nothing
set -euo pipefail
# shellcheck source=scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

usage() {
  sed -n '10,16p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
  exit 64
}

seconds=20 dir="$SMDDP_BUILD_DIR-fuzz" only="" jobs=$(nproc) build_only=0
while [ $# -gt 0 ]; do
  case $1 in
    --seconds) seconds=${2:?--seconds needs a number}; shift 2 ;;
    --jobs) jobs=${2:?--jobs needs a number}; shift 2 ;;
    --build-only) build_only=1; shift ;;
    --build-dir) dir=${2:?--build-dir needs a directory}; shift 2 ;;
    --only) only=${2:?--only needs a target}; shift 2 ;;
    *) usage ;;
  esac
done
case $seconds in '' | *[!0-9]* | 0) echo "fuzz.sh: --seconds '$seconds': expected a whole number above 0" >&2; exit 64 ;; esac
case $jobs in '' | *[!0-9]* | 0) echo "fuzz.sh: --jobs '$jobs': expected a whole number above 0" >&2; exit 64 ;; esac
if [ -n "$only" ] && [ ! -d "$SMDDP_ROOT/fuzz/corpus/$only" ]; then
  echo "fuzz.sh: --only '$only': no such target (fuzz/corpus/$only)" >&2
  exit 64
fi

# ccache, when installed, makes a rebuild cheap; the build is small without it too.
launcher=()
if command -v ccache >/dev/null; then
  launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
echo "== fuzz build ($dir, clang-16)"
mkdir -p "$dir"
CC=clang-16 CXX=clang++-16 configure_and_build "$dir" -DSMDDP_FUZZ=ON -DSMDDP_WITH_CUDA=OFF \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only" "${launcher[@]}"

if [ "$build_only" = 1 ]; then exit 0; fi

# The targets this build made; a corpus folder alone is no target (replay-only ones have one).
mapfile -t targets <"$dir/fuzz/libfuzzer-targets.txt"
if [ -n "$only" ]; then
  case " ${targets[*]} " in
    *" $only "*) targets=("$only") ;;
    *) echo "fuzz.sh: --only '$only': replayed by ctest only, not built for libFuzzer (fuzz/CMakeLists.txt)" >&2; exit 64 ;;
  esac
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
findings="$dir/findings" logs="$dir/fuzz-logs"
mkdir -p "$findings" "$logs"
# fuzz_one TARGET: one target's bounded run; its verdict in $work/TARGET.verdict.
fuzz_one() {
  local target=$1 log="$logs/$1.log"
  # Leaks are findings too (those inside libraries we do not own: fuzz/lsan.supp); a run
  # that stops early (a crash) leaves its input in findings/.
  # IPATH_NO_BACKTRACE: libinfinipath (libfabric's psm provider, loaded with
  # the engine) otherwise replaces the sanitizers' fatal-signal handlers and
  # a crash ends with no report and no input.
  if (cd "$work" && IPATH_NO_BACKTRACE=1 LSAN_OPTIONS="suppressions=$SMDDP_ROOT/fuzz/lsan.supp" nice "$dir/fuzz/fuzz_$target" -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=20 \
    -print_final_stats=1 -artifact_prefix="$findings/$target/" "$work/$target") >"$log" 2>&1; then
    echo "fuzz $target: $(grep -m1 '^stat::number_of_executed_units' "$log" | awk '{print $2}') runs in ${seconds} s, nothing found"
  else
    {
      echo "fuzz $target: FAILED (log $log, input in $findings/$target/):"
      grep -m3 -E 'ERROR|FUZZ_CHECK|runtime error|Test unit written' "$log" || tail -5 "$log"
    } >&2
    touch "$work/$target.failed"
  fi
}
running=0
for target in "${targets[@]}"; do
  cp -r "$SMDDP_ROOT/fuzz/corpus/$target" "$work/$target"
  mkdir -p "$findings/$target"
  if [ "$running" -ge "$jobs" ]; then
    wait -n
    running=$((running - 1))
  fi
  fuzz_one "$target" &
  running=$((running + 1))
done
wait
failed=()
for f in "$work"/*.failed; do
  [ -e "$f" ] && failed+=("$(basename "$f" .failed)")
done
if [ "${#failed[@]}" -gt 0 ]; then
  echo "fuzz.sh: findings in ${failed[*]}: fix the parser, then keep the input in fuzz/corpus/<target>/" >&2
  exit 1
fi
