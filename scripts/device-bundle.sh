#!/usr/bin/env bash
# Builds the device bundle: one folder that runs on a bare GPU machine with
# only the NVIDIA driver (docs/gpu.md, "The device check in one call").
#
#   scripts/device-bundle.sh [--build-dir DIR | --from-build DIR] [--out DIR] [--test]
#
#   --build-dir DIR  the CMake build to use (default build-bundle beside
#                    build/); configured here with CUDA on, sm_90, and the
#                    bundle's run path, and only the bundle's targets built
#   --from-build DIR an existing build instead, left as configured (CI's main
#                    build): CUDA on, sm_90 among its architectures, linked
#                    with -Wl,--disable-new-dtags; the copies' run path is
#                    then rewritten to the bundle's
#   --out DIR        where the bundle goes (default DIR/device-bundle)
#   --test           then run tests/e2e/gpu/bundle_test.py on it
#
# Layout: device-check.sh; bin/ smddp-bench, smddp-diag, smddp-micro-cuda,
# cuda_kernels_test; lib/ every shared library they need but the driver's and
# glibc's; tests/gpu_e2e.py; share/smddp/profiles; MANIFEST. Binaries carry
# DT_RPATH $ORIGIN/../lib (linked with --disable-new-dtags, so it applies to
# the bundled libraries' own dependencies too).
#
# Not bundled, by design:
#  - libcuda, libnvidia-ml: the driver's, they must match the kernel module;
#  - glibc (libc, libm, libpthread, libdl, librt, libutil, libresolv,
#    ld-linux): the machine's; this build needs glibc >= the build host's;
#  - libnccl.so.2 (about 210 MiB, over the 48 MiB limit): device-check.sh
#    finds it at run time (the bundle's lib/, the nvidia-nccl wheel via
#    python3 -c 'import nvidia.nccl', $NCCL_HOME, the CUDA tree, /usr).
# libstdc++ and libgcc_s are bundled: the machine's may be older than GCC's
# here.
set -euo pipefail
# shellcheck source=scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

usage() { echo "usage: scripts/device-bundle.sh [--build-dir DIR | --from-build DIR] [--out DIR] [--test]" >&2; exit 64; }
build="$SMDDP_ROOT/build-bundle" out="" run_test=0 reuse=0
while [ $# -gt 0 ]; do
  case "$1" in
    --build-dir) [ $# -ge 2 ] || usage; build=$2; shift 2 ;;
    --from-build) [ $# -ge 2 ] || usage; build=$2; reuse=1; shift 2 ;;
    --out) [ $# -ge 2 ] || usage; out=$2; shift 2 ;;
    --test) run_test=1; shift ;;
    *) usage ;;
  esac
done
out=${out:-$build/device-bundle}
max_mib=48
targets=(smddp-bench smddp-diag smddp-micro-cuda cuda_kernels_test)

# The run path the bundle's binaries carry; '$ORIGIN' is literal, the loader expands it.
# shellcheck disable=SC2016
bundle_rpath='$ORIGIN/../lib'
if [ "$reuse" = 1 ]; then
  cache=$build/CMakeCache.txt
  if ! grep -q '^SMDDP_NCCL_LIBRARY:FILEPATH=/' "$cache" 2>/dev/null || ! grep -q -- '--disable-new-dtags' "$cache"; then
    echo "device-bundle.sh: --from-build $build: not a CUDA build linked with -Wl,--disable-new-dtags" >&2
    exit 64
  fi
  echo "== device bundle: the bundle's targets in $build"
  cmake --build "$build" --target "${targets[@]}" fake_cuda -- -j "$(nproc)"
  # nvcc's flags in the build: code for sm_90 among its architectures.
  if ! grep -q 'code=\[[a-z_0-9,]*sm_90' "$build/build.ninja"; then
    echo "device-bundle.sh: --from-build $build: the build makes no sm_90 code (CMAKE_CUDA_ARCHITECTURES)" >&2
    exit 64
  fi
else
  echo "== device bundle: build ($build, CUDA on, sm_90)"
  mkdir -p "$build"
  cmake -S "$SMDDP_ROOT" -B "$build" -G Ninja -DSMDDP_WERROR=ON -DSMDDP_WITH_CUDA=ON \
    -DCMAKE_CUDA_ARCHITECTURES=90 -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    '-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -DNDEBUG' '-DCMAKE_CUDA_FLAGS_RELWITHDEBINFO=-O2 -DNDEBUG' \
    -DCMAKE_BUILD_WITH_INSTALL_RPATH=ON "-DCMAKE_INSTALL_RPATH=$bundle_rpath" \
    -DCMAKE_EXE_LINKER_FLAGS=-Wl,--disable-new-dtags >"$build/bundle.configure.log" 2>&1 || {
    cat "$build/bundle.configure.log" >&2
    echo "device-bundle.sh: cmake configure failed (CUDA and NCCL are required)" >&2
    exit 1
  }
  cmake --build "$build" --target "${targets[@]}" fake_cuda -- -j "$(nproc)"
fi

echo "== device bundle: assemble ($out)"
rm -rf "$out"
mkdir -p "$out/bin" "$out/lib" "$out/tests" "$out/share/smddp/profiles"
cp "$build/bench/smddp-bench" "$build/diag/smddp-diag" "$build/collectives/micro/smddp-micro-cuda" \
  "$build/tests/e2e/gpu/cuda_kernels_test" "$out/bin/"
cp "$SMDDP_ROOT/scripts/device-check.sh" "$out/"
cp "$SMDDP_ROOT/tests/e2e/gpu/gpu_e2e.py" "$SMDDP_ROOT/tests/e2e/gpu/torch_nccl.py" "$out/tests/"
cp "$SMDDP_ROOT"/diag/profiles/*.yaml "$out/share/smddp/profiles/"

# The system set a bare machine has: the driver's libraries and glibc's.
system_lib() {
  case "$1" in
    linux-vdso.so.*|ld-linux*.so.*|libc.so.*|libm.so.*|libpthread.so.*|libdl.so.*|librt.so.*|libutil.so.*) return 0 ;;
    libresolv.so.*|libcuda.so.*|libnvidia-ml.so.*|libnccl.so.*) return 0 ;;
  esac
  return 1
}
for exe in "$out"/bin/*; do
  # ldd: "name => /path (addr)"; the build tree's own run path does not
  # matter, everything is searched the way the bundle will be.
  while read -r name _ path _; do
    if [ -z "$path" ] || [ "$path" = "not" ]; then continue; fi
    system_lib "$name" && continue
    [ -e "$out/lib/$name" ] || cp -L "$path" "$out/lib/$name"
  done < <(env -i ldd "$exe" | grep '=>')
done
# A reused build's binaries carry its own DT_RPATH (the build tree, the CUDA
# tree): replaced in place by the bundle's, which is shorter.
if [ "$reuse" = 1 ]; then
  change_script=$build/bundle-rpath-change.cmake
  # shellcheck disable=SC2016
  echo 'file(RPATH_CHANGE FILE "${F}" OLD_RPATH "${OLD}" NEW_RPATH "${NEW}")' >"$change_script"
  for exe in "$out"/bin/*; do
    old_rpath=$(readelf -d "$exe" | sed -n 's/.*(RPATH).*\[\(.*\)\]$/\1/p')
    if [ -z "$old_rpath" ]; then
      echo "device-bundle.sh: $exe has no DT_RPATH (linked without -Wl,--disable-new-dtags)" >&2
      exit 1
    fi
    cmake -DF="$exe" -DOLD="$old_rpath" -DNEW="$bundle_rpath" -P "$change_script"
  done
fi
strip --strip-unneeded "$out"/bin/* "$out"/lib/*.so* 2>/dev/null || true
# A bundled library with a run path of its own (Open MPI's point at
# /usr/lib/x86_64-linux-gnu/openmpi/lib) would look for its dependencies
# there, not through the binaries' DT_RPATH: point it at its own folder.
# CMake edits the ELF entry in place (no patchelf on these machines).
rpath_script=$build/bundle-rpath.cmake
# shellcheck disable=SC2016
echo 'file(RPATH_SET FILE "${F}" NEW_RPATH "$ORIGIN")' >"$rpath_script"
for lib in "$out"/lib/*; do
  if readelf -d "$lib" | grep -qE '\((RPATH|RUNPATH)\)'; then cmake -DF="$lib" -P "$rpath_script"; fi
done
chmod 0644 "$out"/lib/*
{
  echo "smddp device bundle, $(git -C "$SMDDP_ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown), built $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(uname -n)"
  echo "glibc $(ldd --version | head -1 | awk '{print $NF}') or newer; NVIDIA driver for CUDA 13; NCCL from lib/ or the nvidia-nccl wheel"
  (cd "$out" && find . -type f ! -name MANIFEST -printf '%s %p\n' | sort -k2)
} >"$out/MANIFEST"
size_kib=$(du -sk "$out" | awk '{print $1}')
echo "bundle: $out, $((size_kib / 1024)) MiB ($size_kib KiB), $(find "$out" -type f | wc -l) files"
if [ "$size_kib" -gt $((max_mib * 1024)) ]; then
  echo "device-bundle.sh: the bundle is $((size_kib / 1024)) MiB, over the $max_mib MiB limit" >&2
  exit 1
fi
if [ "$run_test" = 1 ]; then
  echo "== device bundle: tests"
  python3 "$SMDDP_ROOT/tests/e2e/gpu/bundle_test.py" --bundle "$out" --fake-cuda "$build/tests/e2e/gpu/libfake_cuda.so"
fi
