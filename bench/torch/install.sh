#!/usr/bin/env bash
# Installs smddp-bench-torch under PREFIX: the package in
# PREFIX/lib/smddp/python and the command in PREFIX/bin, which finds the
# package from there. No pip, so the image's own torch stays as it is.
# scripts/build.sh --install and scripts/sagemaker/build-pytorch-image.sh
# both call this.
#
#   bench/torch/install.sh PREFIX
set -euo pipefail
[ $# -eq 1 ] || { echo "install.sh: usage: install.sh PREFIX" >&2; exit 64; }
prefix=$1
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# The Python tools' shared input/output module sits beside the package.
install -D -m 0644 "$here/../../common/python/smddp_safeio.py" "$prefix/lib/smddp/python/smddp_safeio.py"
for f in "$here"/smddp_bench_torch/*.py; do
  install -D -m 0644 "$f" "$prefix/lib/smddp/python/smddp_bench_torch/$(basename "$f")"
done
install -D -m 0755 "$here/smddp-bench-torch" "$prefix/bin/smddp-bench-torch"
