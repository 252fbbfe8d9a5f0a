#!/usr/bin/env bash
# Installs the dependencies, builds, and runs every test through CTest:
# the main build (warnings as errors, CUDA when the machine has it) and an
# AddressSanitizer + UndefinedBehaviorSanitizer build of the engine tests,
# then the fuzzers of fuzz/ for a bounded time (scripts/fuzz.sh).
set -euo pipefail
# shellcheck source=scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

# Each phase's wall time, printed as it ends and again at the close, so a
# slow suite shows where its time went (CI's budget: docs/testing.md).
phase_start=$SECONDS phase_name="" phase_times=()
phase() {
  if [ -n "$phase_name" ]; then
    phase_times+=("$phase_name: $((SECONDS - phase_start)) s")
    echo "== $phase_name took $((SECONDS - phase_start)) s"
  fi
  phase_name=$1 phase_start=$SECONDS
}
finish() {
  phase ""
  echo "== phase times (total $SECONDS s)"
  printf '   %s\n' "${phase_times[@]}"
}
trap finish EXIT

phase "install dependencies"
"$SMDDP_ROOT/scripts/install-deps.sh"

# The same script the container image builds with, so CI exercises it, in
# the device bundle's configuration: the bundle is assembled from this
# build's binaries (device-bundle.sh --from-build), not from a second build,
# so CUDA code for sm_90 alone (the H100/H200 it runs on; the bundle stays
# under its size limit) and DT_RPATH (--disable-new-dtags).
phase "main build"
"$SMDDP_ROOT/scripts/build.sh" --build-dir "$SMDDP_BUILD_DIR" -- -DCMAKE_CUDA_ARCHITECTURES=90 \
  -DCMAKE_EXE_LINKER_FLAGS=-Wl,--disable-new-dtags
phase "tests"
echo "== tests"
# Most tests wait more than they compute: three at a time on two cores.
# Those that time or shape things are RUN_SERIAL and run alone.
ctest --test-dir "$SMDDP_BUILD_DIR" --output-on-failure --timeout 900 -j 3

# ---- device bundle (CUDA builds only; docs/gpu.md, "The device check") ----
# Assembled from the main build (sm_90 among its architectures), then its
# tests (tests/e2e/gpu/bundle_test.py).
if [ -x /usr/local/cuda/bin/nvcc ] && grep -q '^SMDDP_NCCL_LIBRARY:FILEPATH=/' "$SMDDP_BUILD_DIR/CMakeCache.txt" 2>/dev/null; then
  phase "device bundle"
  echo "== device bundle"
  timeout 900 "$SMDDP_ROOT/scripts/device-bundle.sh" --from-build "$SMDDP_BUILD_DIR" --out "$SMDDP_BUILD_DIR-bundle" --test
else
  echo "== device bundle: skipped (the main build has no CUDA)"
fi

asan_dir="$SMDDP_BUILD_DIR-asan"
phase "sanitizer build"
echo "== sanitizer build ($asan_dir)"
configure_and_build "$asan_dir" -DSMDDP_WERROR=ON -DSMDDP_SANITIZE=ON -DSMDDP_BUILD_TOOLS=OFF \
  -DSMDDP_WITH_CUDA=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo
phase "sanitizer tests"
echo "== sanitizer tests"
# Open MPI's own allocations are not ours to chase: leaks off, errors on.
ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir "$asan_dir" --output-on-failure --timeout 900 -j 3 -L 'unit|mpi'

# ---- fuzzing (docs/testing.md, "Fuzzing") ----
# A clang-16 build of the libFuzzer targets only (fuzz/, ASan + UBSan; the
# replay-only command lines are not built), then each target for 8 s over a
# copy of its seed corpus, one per core at a time; any finding fails the suite.
phase "fuzzing"
echo "== fuzzing"
timeout 1800 "$SMDDP_ROOT/scripts/fuzz.sh" --seconds 8 --build-dir "$SMDDP_BUILD_DIR-fuzz"
