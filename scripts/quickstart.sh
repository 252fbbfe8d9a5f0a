#!/usr/bin/env bash
# Installs the dependencies, builds, and runs the main job on this machine:
# an allreduce size sweep, 8 B to 64 MiB, on 4 local ranks over shared
# memory, compared with Open MPI's MPI_Allreduce in the same run.
set -euo pipefail
# shellcheck source=scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

"$SMDDP_ROOT/scripts/install-deps.sh"
echo "== build ($SMDDP_BUILD_DIR)"
configure_and_build "$SMDDP_BUILD_DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo
ranks=${SMDDP_QUICKSTART_RANKS:-4}
echo "== mpirun -np $ranks smddp-bench allreduce -b 8 -e 64M -f 2 -c 1 --backend smddp,mpi"
mpirun --oversubscribe --bind-to none -np "$ranks" \
  "$SMDDP_BUILD_DIR/bench/smddp-bench" allreduce -b 8 -e 64M -f 2 -c 1 --backend smddp,mpi
