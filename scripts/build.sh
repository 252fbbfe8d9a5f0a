#!/usr/bin/env bash
# Configures and builds smddp-bench and smddp-diag with the settings CI uses
# (warnings as errors, RelWithDebInfo), optionally installs them with the
# launch scripts. The container image (Dockerfile) builds through this
# script, so every step of the image's build is one CI can run; it assumes
# the dependencies are installed (scripts/install-deps.sh on Debian, the
# Dockerfile's apt line on Ubuntu).
#
#   scripts/build.sh [--build-dir DIR] [--cuda AUTO|ON|OFF] [--no-tests]
#                    [--install PREFIX] [-- CMAKE_ARGS...]
#
# --build-dir  default $SMDDP_BUILD_DIR (build/ in the repository)
# --cuda       SMDDP_WITH_CUDA (default AUTO: CUDA and NCCL when found)
# --no-tests   skip the tests' targets (images need no gtest)
# --install    put smddp-bench, smddp-diag, smddp-model, smddp-report, the diag profiles, scripts/
#              (sagemaker-entry.sh, slurm/) and smddp-bench-torch under PREFIX
set -euo pipefail
# shellcheck source=scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

usage() {
  sed -n '9,16p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
  exit 64
}

dir=$SMDDP_BUILD_DIR cuda=AUTO tests=ON prefix=""
while [ $# -gt 0 ]; do
  case $1 in
    --build-dir) dir=${2:?--build-dir needs a directory}; shift 2 ;;
    --cuda) cuda=${2:?--cuda needs AUTO, ON or OFF}; shift 2 ;;
    --no-tests) tests=OFF; shift ;;
    --install) prefix=${2:?--install needs a prefix}; shift 2 ;;
    --) shift; break ;;
    *) usage ;;
  esac
done
case $cuda in AUTO | ON | OFF) ;; *) echo "build.sh: --cuda '$cuda': expected AUTO, ON or OFF" >&2; exit 64 ;; esac

echo "== build ($dir, CUDA $cuda)"
configure_and_build "$dir" -DSMDDP_WERROR=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DSMDDP_WITH_CUDA="$cuda" -DSMDDP_BUILD_TESTS="$tests" "$@"

if [ -n "$prefix" ]; then
  echo "== install ($prefix)"
  cmake --install "$dir" --prefix "$prefix" >/dev/null
  install -D -m 0755 "$dir/bench/smddp-bench" "$prefix/bin/smddp-bench"
  install -D -m 0755 "$dir/diag/smddp-diag" "$prefix/bin/smddp-diag"
  install -D -m 0755 "$dir/model/smddp-model" "$prefix/bin/smddp-model"
  share=$prefix/share/smddp/scripts
  install -D -m 0755 "$SMDDP_ROOT/scripts/sagemaker-entry.sh" "$share/sagemaker-entry.sh"
  install -D -m 0755 "$SMDDP_ROOT/scripts/sagemaker/read_config.py" "$share/sagemaker/read_config.py"
  install -D -m 0755 "$SMDDP_ROOT/scripts/slurm/smddp-bench.sbatch" "$share/slurm/smddp-bench.sbatch"
  install -D -m 0755 "$SMDDP_ROOT/scripts/slurm/prolog-preflight.sh" "$share/slurm/prolog-preflight.sh"
  # smddp-report: the entry finds its package under ../share/smddp/report.
  install -D -m 0755 "$SMDDP_ROOT/report/smddp-report" "$prefix/bin/smddp-report"
  for f in "$SMDDP_ROOT"/report/smddp_report/*.py "$SMDDP_ROOT"/report/smddp_report/*.js \
    "$SMDDP_ROOT"/report/smddp_report/*.css; do
    install -D -m 0644 "$f" "$prefix/share/smddp/report/smddp_report/$(basename "$f")"
  done
  # smddp-bench-torch, the torch.distributed companion (bench/torch), and
  # lib/smddp/python/smddp_safeio.py, the Python tools' shared module.
  "$SMDDP_ROOT/bench/torch/install.sh" "$prefix"
fi
