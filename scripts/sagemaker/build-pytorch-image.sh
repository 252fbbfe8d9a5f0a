#!/usr/bin/env bash
# Builds smddp-bench and smddp-diag inside SageMaker's PyTorch training image
# (docker/sagemaker-pytorch.Dockerfile runs it), against that image's own
# Open MPI, libfabric, CUDA and NCCL, then installs smddp-bench-torch and the
# entry SageMaker runs (SAGEMAKER_PROGRAM). Every step is here, not in the
# Dockerfile, so CI runs this script too, as far as it can without the base
# image (--check, --dry-run, --skip-build).
#
#   build-pytorch-image.sh [--check | --dry-run | --skip-build] [--prefix DIR]
#                          [--build-dir DIR] [--toolchain DIR] [--code-dir DIR]
#
# --check       only look for the image's parts; exit 69 naming what is missing
# --dry-run     print what was found and the exact build command; build nothing
# --skip-build  no compile: install smddp-bench-torch and the entry, smoke-test them
# --prefix      install prefix (default /usr/local)
# --build-dir   default /opt/smddp/build (removed after a successful install)
# --toolchain   a conda-forge prefix with cmake, ninja, gcc 12 and the C++
#               libraries (the Dockerfile makes /opt/smddp/toolchain)
# --code-dir    where SAGEMAKER_PROGRAM lives (default /opt/ml/code)
# The image's parts: SMDDP_MPI_HOME (/opt/amazon/openmpi), SMDDP_EFA_HOME
# (/opt/amazon/efa), CUDA_HOME (/usr/local/cuda), NCCL_HOME (else nccl.h
# under /usr/local, CUDA_HOME or /usr), SMDDP_PYTHON (python3, with torch).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
mode=build prefix=/usr/local build_dir=/opt/smddp/build toolchain="" code_dir=/opt/ml/code
CUDA_ARCHITECTURES=${CUDA_ARCHITECTURES:-80;90}

die_usage() {
  echo "build-pytorch-image: $*" >&2
  exit 64
}

while [ $# -gt 0 ]; do
  case $1 in
    --check) mode=check ;;
    --dry-run) mode=dry-run ;;
    --skip-build) mode=skip-build ;;
    --prefix | --build-dir | --toolchain | --code-dir)
      if [ $# -lt 2 ] || [ -z "$2" ]; then die_usage "$1 needs a directory"; fi
      case $1 in
        --prefix) prefix=$2 ;;
        --build-dir) build_dir=$2 ;;
        --toolchain) toolchain=$2 ;;
        --code-dir) code_dir=$2 ;;
      esac
      shift
      ;;
    -h | --help) sed -n '2,24p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die_usage "unknown argument '$1' (see --help)" ;;
  esac
  shift
done

MPI_HOME=${SMDDP_MPI_HOME:-/opt/amazon/openmpi}
EFA_HOME=${SMDDP_EFA_HOME:-/opt/amazon/efa}
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
PYTHON=${SMDDP_PYTHON:-python3}

# Sets found (lines "part: where") and missing (words) for the image's parts.
probe() {
  found="" missing=()
  local pc="" dir nccl=""
  if [ -x "$MPI_HOME/bin/mpicc" ]; then found+="Open MPI: $MPI_HOME"$'\n'; else missing+=("Open MPI ($MPI_HOME/bin/mpicc)"); fi
  for dir in "$EFA_HOME/lib/pkgconfig" "$EFA_HOME/lib64/pkgconfig"; do
    [ -e "$dir/libfabric.pc" ] && pc=$dir
  done
  if [ -n "$pc" ]; then found+="libfabric: $pc/libfabric.pc"$'\n'; else missing+=("libfabric ($EFA_HOME/lib/pkgconfig/libfabric.pc)"); fi
  if [ -x "$CUDA_HOME/bin/nvcc" ]; then found+="CUDA: $CUDA_HOME"$'\n'; else missing+=("CUDA ($CUDA_HOME/bin/nvcc)"); fi
  for dir in ${NCCL_HOME:+"$NCCL_HOME"} /usr/local "$CUDA_HOME" /usr; do
    if [ -z "$nccl" ] && [ -e "$dir/include/nccl.h" ]; then nccl=$dir; fi
  done
  if [ -n "$nccl" ]; then found+="NCCL: $nccl"$'\n'; NCCL_DIR=$nccl; else missing+=("NCCL (nccl.h under NCCL_HOME, /usr/local, $CUDA_HOME or /usr)"); fi
  if "$PYTHON" -c 'import torch' >/dev/null 2>&1; then
    found+="torch: $("$PYTHON" -c 'import torch; print(torch.__version__)') ($(command -v "$PYTHON" || echo "$PYTHON"))"$'\n'
  else
    missing+=("torch ($PYTHON -c 'import torch' fails)")
  fi
  if "$PYTHON" -c 'import smdistributed.dataparallel' >/dev/null 2>&1; then
    found+="smdistributed.dataparallel: importable"$'\n'
  else
    # Not fatal: smddp-bench-torch says so (exit 64) when --backend smddp runs.
    found+="smdistributed.dataparallel: not importable (this tag has no SMDDP)"$'\n'
  fi
  PKG_DIR=$pc
}

# Sets BUILD (the command) and BUILD_ENV (NAME=VALUE words for env).
build_command() {
  local cmake_args=(-DMPI_HOME="$MPI_HOME" -DMPIEXEC_EXECUTABLE="$MPI_HOME/bin/mpirun"
    "-DCMAKE_CUDA_ARCHITECTURES=$CUDA_ARCHITECTURES" "-DCMAKE_CUDA_COMPILER=$CUDA_HOME/bin/nvcc")
  local rpath="$MPI_HOME/lib;$EFA_HOME/lib"
  local path=$PATH pkg=$PKG_DIR
  if [ -n "$toolchain" ]; then
    # The base image's compiler and cmake are too old for C++20 and CMake 3.25.
    cmake_args+=(-DCMAKE_PREFIX_PATH="$toolchain"
      -DCMAKE_C_COMPILER="$toolchain/bin/x86_64-conda-linux-gnu-gcc"
      -DCMAKE_CXX_COMPILER="$toolchain/bin/x86_64-conda-linux-gnu-g++"
      -DCMAKE_CUDA_HOST_COMPILER="$toolchain/bin/x86_64-conda-linux-gnu-g++")
    rpath="$toolchain/lib;$rpath"
    path=$toolchain/bin:$path
    pkg=$pkg:$toolchain/lib/pkgconfig:$toolchain/share/pkgconfig
  fi
  # build.sh installs the binaries from the build tree: its RPATH is what ships.
  cmake_args+=("-DCMAKE_BUILD_RPATH=$rpath")
  BUILD_ENV=("PATH=$path" "PKG_CONFIG_PATH=$pkg" "NCCL_HOME=$NCCL_DIR")
  BUILD=("$ROOT/scripts/build.sh" --build-dir "$build_dir" --cuda ON --no-tests --install "$prefix" -- "${cmake_args[@]}")
}

install_entry() {
  install -D -m 0755 "$ROOT/bench/torch/sagemaker_entry.py" "$code_dir/sagemaker_entry.py"
  # The framework estimator's source_dir layout: the package beside the entry.
  "$ROOT/bench/torch/install.sh" "$prefix"
  mkdir -p "$code_dir/smddp_bench_torch"
  cp "$ROOT"/bench/torch/smddp_bench_torch/*.py "$code_dir/smddp_bench_torch/"
}

smoke() {
  "$PYTHON" "$prefix/bin/smddp-bench-torch" --version
  # One gloo rank on the CPU: the installed copy imports, sweeps and checks.
  env -u RANK -u WORLD_SIZE -u MASTER_ADDR -u MASTER_PORT -u OMPI_COMM_WORLD_RANK \
    "$PYTHON" "$prefix/bin/smddp-bench-torch" allreduce -b 64 -e 64 -n 1 -w 0 --backend gloo --mem host -q >/dev/null
  if [ "$mode" = build ]; then
    "$prefix/bin/smddp-bench" --version
    local lib
    lib=$(ldd "$prefix/bin/smddp-bench" | awk '$1 ~ /^libmpi\.so/ {print $3}')
    case $(realpath "$lib") in
      "$(realpath "$MPI_HOME")"/*) echo "smddp-bench uses $lib" ;;
      *) echo "build-pytorch-image: smddp-bench links ${lib:-no libmpi}, not the image's Open MPI in $MPI_HOME" >&2; exit 1 ;;
    esac
  fi
}

probe
case $mode in
  check | build)
    printf '%s' "$found"
    if [ "${#missing[@]}" -gt 0 ]; then
      (IFS=','; echo "build-pytorch-image: not a SageMaker PyTorch training image here: missing ${missing[*]}" | sed 's/,/, /g' >&2)
      exit 69
    fi
    [ "$mode" = check ] && exit 0
    build_command
    env "${BUILD_ENV[@]}" "${BUILD[@]}"
    install_entry
    smoke
    rm -rf "$build_dir"
    ;;
  dry-run)
    printf '%s' "$found"
    for part in "${missing[@]}"; do echo "missing: $part"; done
    NCCL_DIR=${NCCL_DIR:-}
    build_command
    echo "# build"
    printf '%q ' env "${BUILD_ENV[@]}" "${BUILD[@]}"
    echo
    echo "# install $code_dir/sagemaker_entry.py and $prefix/bin/smddp-bench-torch"
    ;;
  skip-build)
    "$PYTHON" -c 'import torch' 2>/dev/null || { echo "build-pytorch-image: $PYTHON has no torch" >&2; exit 69; }
    install_entry
    smoke
    ;;
esac
