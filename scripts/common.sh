# Shared by the scripts: repository root, build settings, Open MPI as root.
# shellcheck shell=bash
SMDDP_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export SMDDP_ROOT
SMDDP_BUILD_DIR=${SMDDP_BUILD_DIR:-"$SMDDP_ROOT/build"}
export SMDDP_BUILD_DIR
if [ "$(id -u)" -eq 0 ]; then
  # Open MPI refuses to run as root without both of these.
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi

# configure_and_build DIR [cmake options...]
configure_and_build() {
  local dir=$1
  shift
  cmake -S "$SMDDP_ROOT" -B "$dir" -G Ninja "$@" >"$dir.configure.log" 2>&1 || {
    cat "$dir.configure.log" >&2
    echo "cmake configure failed in $dir" >&2
    return 1
  }
  cmake --build "$dir" -- -j "$(nproc)"
}
