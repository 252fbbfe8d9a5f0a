#!/usr/bin/env bash
# Installs the dependencies, builds, and runs every test through CTest:
# the main build (warnings as errors, CUDA when the machine has it) and an
# AddressSanitizer + UndefinedBehaviorSanitizer build of the engine tests.
set -euo pipefail
# shellcheck source=scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

"$SMDDP_ROOT/scripts/install-deps.sh"

# The same script the container image builds with, so CI exercises it.
"$SMDDP_ROOT/scripts/build.sh" --build-dir "$SMDDP_BUILD_DIR"
echo "== tests"
ctest --test-dir "$SMDDP_BUILD_DIR" --output-on-failure --timeout 900

asan_dir="$SMDDP_BUILD_DIR-asan"
echo "== sanitizer build ($asan_dir)"
configure_and_build "$asan_dir" -DSMDDP_WERROR=ON -DSMDDP_SANITIZE=ON -DSMDDP_BUILD_TOOLS=OFF \
  -DSMDDP_WITH_CUDA=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo
echo "== sanitizer tests"
# Open MPI's own allocations are not ours to chase: leaks off, errors on.
ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir "$asan_dir" --output-on-failure --timeout 900 -L 'unit|mpi'
