#!/usr/bin/env bash
# Entry point of the smddp-bench container on a SageMaker training job.
# SageMaker starts the image on every host (as `ENTRYPOINT train`) and
# describes the cluster in /opt/ml/input/config/resourceconfig.json. As
# SageMaker's own MPI launch does, the first host of that list is the leader:
# it waits for the other hosts' sshd, runs `smddp-diag preflight` and then
# `smddp-bench` over every host with mpirun (EFA provider, interface chosen
# from the config), writes results and metrics to /opt/ml/output/data, and
# releases the other hosts, which only serve the ranks mpirun starts there.
#
#   sagemaker-entry.sh [train] [--dry-run] [--ml-root DIR] [-- BENCH_ARGS...]
#
# --dry-run     print the hostfile and the exact mpirun command lines, run nothing
# --ml-root DIR read DIR/input/config, write DIR/output (default /opt/ml;
#               SMDDP_ML_ROOT)
# Cluster: resourceconfig.json (current_host, hosts, network_interface_name,
# current_instance_type), else SM_HOSTS (a JSON list) and SM_CURRENT_HOST.
# Slots per host: the GPUs `nvidia-smi -L` lists, else SM_NUM_GPUS, else 1.
# Benchmark arguments: after `--`, else SMDDP_BENCH_ARGS, else the
# hyperparameter "bench-args", else "all -b 8 -e 256M -f 4 -c 1".
# Preflight profile: SMDDP_PREFLIGHT_PROFILE, else the hyperparameter
# "preflight-profile", else the instance type when a profile exists for it,
# else its GPU family's (p3, g4dn, g5, g6, g6e), else "local"; SMDDP_PREFLIGHT=0 (or hyperparameter "preflight": "false")
# skips it. Exit 64 (EX_USAGE) for a missing or malformed configuration.
# SMDDP_SM_TORCH_ARGS (the extended PyTorch image sets it): after preflight,
# smddp-bench-torch runs with these arguments over every host (under
# smddprun when a --backend names smddp), results in torch-results.json.
set -euo pipefail

SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ML_ROOT=${SMDDP_ML_ROOT:-/opt/ml}
WORK_DIR=${SMDDP_SM_WORK_DIR:-${TMPDIR:-/tmp}/smddp-sagemaker}
DRY_RUN=0
# Instance types with a profile of their own (diag/profiles), and GPU families
# whose other sizes fall back to the family's profile (model and health, no counts).
KNOWN_PROFILES=" p3dn.24xlarge p4d.24xlarge p4de.24xlarge p5.48xlarge p5e.48xlarge p5en.48xlarge p6-b200.48xlarge g5.48xlarge g6.48xlarge g6e.48xlarge "
KNOWN_FAMILIES=" p3 g4dn g5 g6 g6e "
DEFAULT_BENCH_ARGS=(all -b 8 -e 256M -f 4 -c 1)

# The preflight profile of an instance type (ml. prefix or not): its own,
# else its family's, else local.
profile_for_instance() {
  local type=${1#ml.}
  if [[ $KNOWN_PROFILES == *" $type "* ]]; then
    echo "$type"
  elif [[ -n $type && $KNOWN_FAMILIES == *" ${type%%.*} "* ]]; then
    echo "${type%%.*}"
  else
    echo local
  fi
}

die_usage() {
  echo "sagemaker-entry: $*" >&2
  exit 64
}

# die MESSAGE [CODE]: also tells SageMaker why the job failed.
die() {
  echo "sagemaker-entry: $1" >&2
  if [ "$DRY_RUN" = 0 ] && mkdir -p "$ML_ROOT/output" 2>/dev/null; then
    printf '%s\n' "$1" >"$ML_ROOT/output/failure" 2>/dev/null || true
  fi
  exit "${2:-1}"
}

parse_args() {
  BENCH_ARGS=()
  local have_bench_args=0
  [ "${1:-}" = train ] && shift  # what SageMaker passes to the entrypoint
  while [ $# -gt 0 ]; do
    case $1 in
      --dry-run) DRY_RUN=1 ;;
      --ml-root)
        [ $# -ge 2 ] || die_usage "--ml-root needs a directory"
        ML_ROOT=$2
        shift
        ;;
      --) shift; BENCH_ARGS=("$@"); have_bench_args=1; break ;;
      -h | --help) sed -n '2,27p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
      *) die_usage "unknown argument '$1' (see --help)" ;;
    esac
    shift
  done
  HAVE_BENCH_ARGS=$have_bench_args
}

# Sets current_host, interface, instance_type, hosts and hp_* from the
# configuration (python3: jq is not in every image). Exits 64 on bad input.
read_cluster() {
  current_host="" interface="" instance_type="" hp_profile="" hp_preflight=1
  hosts=() hp_bench_args=()
  local assignments
  assignments=$(python3 "$SCRIPT_DIR/sagemaker/read_config.py" "$ML_ROOT/input/config") || exit 64
  eval "$assignments"
}

gpus_per_host() {
  local n
  if command -v nvidia-smi >/dev/null 2>&1 && n=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU '); then
    echo "$n"
    return
  fi
  n=${SM_NUM_GPUS:-0}
  [[ $n =~ ^[0-9]+$ ]] || die_usage "SM_NUM_GPUS='$n': expected a whole number"
  echo "$n"
}

# Prints words so that a shell reads them back unchanged.
quote_words() {
  local out="" w
  for w in "$@"; do
    if [[ $w =~ ^[A-Za-z0-9_./:=,@%+^-]+$ ]]; then
      out+="$w "
    else
      out+="'${w//\'/\'\\\'\'}' "
    fi
  done
  echo "${out% }"
}

tool() {
  local dir=${SMDDP_BIN_DIR:-}
  if [ -n "$dir" ]; then echo "$dir/$1"; else command -v "$1" || echo "$1"; fi
}

# launcher NP PER_HOST: sets LAUNCH to the mpirun words every launch shares.
launcher() {
  LAUNCH=(mpirun --allow-run-as-root)
  if [ "${#hosts[@]}" -gt 1 ]; then
    LAUNCH+=(--hostfile "$HOSTFILE" --mca plm_rsh_no_tree_spawn 1)
  fi
  LAUNCH+=(-np "$1" --npernode "$2" --bind-to none --map-by slot --tag-output
    --mca btl_tcp_if_include "$interface" --mca oob_tcp_if_include "$interface"
    --mca pml ob1 --mca btl ^openib --mca orte_abort_on_non_zero_status 1
    -x "FI_PROVIDER=${FI_PROVIDER:-efa}" -x "NCCL_SOCKET_IFNAME=${NCCL_SOCKET_IFNAME:-$interface}" -x PATH -x LD_LIBRARY_PATH)
  # Not FI_EFA_USE_DEVICE_RDMA (not needed with libfabric >= 1.18) nor
  # RDMAV_FORK_SAFE (never: rdma-core's, can break things on newer kernels):
  # https://github.com/aws/aws-ofi-nccl/blob/master/doc/efa-env-var.md
  # Settings the job was given (hyperparameters become environment too).
  local name
  while IFS= read -r name; do
    case $name in
      FI_PROVIDER | NCCL_SOCKET_IFNAME | SMDDP_ML_ROOT | SMDDP_SM_* | SMDDP_BIN_DIR) ;;
      SMDDP_BENCH_ARGS | SMDDP_PREFLIGHT | SMDDP_PREFLIGHT_PROFILE) ;;
      *) LAUNCH+=(-x "$name") ;;
    esac
  done < <(compgen -e | grep -E '^(SMDDP_|NCCL_|FI_)' | sort)
}

# True when smddp-bench-torch's arguments pick the smddp backend (its default).
torch_uses_smddp() {
  local w next=0 backend=smddp
  for w in "$@"; do
    if [ "$next" = 1 ]; then backend=$w; next=0; fi
    case $w in
      --backend) next=1 ;;
      --backend=*) backend=${w#--backend=} ;;
    esac
  done
  [[ ,$backend, == *,smddp,* ]]
}

# torch_command OUT: sets TORCH, smddp-bench-torch over every host. Its ranks
# meet at the leader (MASTER_ADDR); SMDDP's own launcher, smddprun, sets up
# the library as SageMaker's smdistributed launcher does.
torch_command() {
  local targs
  read -r -a targs <<<"$SMDDP_SM_TORCH_ARGS"
  TORCH=("${LAUNCH[@]}" -x "MASTER_ADDR=${hosts[0]}" -x "MASTER_PORT=${SMDDP_SM_TORCH_PORT:-29500}")
  if torch_uses_smddp "${targs[@]}"; then
    if [ "${#hosts[@]}" -gt 1 ]; then
      TORCH+=(-x SMDATAPARALLEL_USE_HOMOGENEOUS=1 -x "SMDATAPARALLEL_SERVER_ADDR=${hosts[0]}"
        -x SMDATAPARALLEL_SERVER_PORT=7592 -x "SAGEMAKER_INSTANCE_TYPE=$instance_type")
    else
      TORCH+=(-x SMDATAPARALLEL_USE_SINGLENODE=1)
    fi
    if command -v smddprun >/dev/null 2>&1; then TORCH+=(smddprun); fi
  fi
  TORCH+=("$(tool smddp-bench-torch)" "${targs[@]}" -J "$1/torch-results.json")
}

build_commands() {
  local gpus slots out name
  gpus=$(gpus_per_host)
  slots=$((gpus > 0 ? gpus : 1))
  out=$ML_ROOT/output/data
  HOSTFILE=$WORK_DIR/hostfile
  HOSTFILE_TEXT=""
  for name in "${hosts[@]}"; do HOSTFILE_TEXT+="$name slots=$slots"$'\n'; done

  local profile=${SMDDP_PREFLIGHT_PROFILE:-$hp_profile}
  if [ -z "$profile" ]; then
    profile=$(profile_for_instance "$instance_type")
  fi
  local args=("${DEFAULT_BENCH_ARGS[@]}")
  if [ "$HAVE_BENCH_ARGS" = 1 ]; then
    args=("${BENCH_ARGS[@]}")
  elif [ -n "${SMDDP_BENCH_ARGS:-}" ]; then
    read -r -a args <<<"$SMDDP_BENCH_ARGS"
  elif [ "${#hp_bench_args[@]}" -gt 0 ]; then
    args=("${hp_bench_args[@]}")
  fi

  launcher "$((slots * ${#hosts[@]}))" "$slots"
  PREFLIGHT=()
  if [ "${SMDDP_PREFLIGHT:-$hp_preflight}" != 0 ]; then
    PREFLIGHT=("${LAUNCH[@]}" "$(tool smddp-diag)" preflight -p "$profile"
      --json "$out/preflight.json" --prom-textfile "$out/preflight.prom")
  fi
  BENCH=("${LAUNCH[@]}" "$(tool smddp-bench)" "${args[@]}"
    -J "$out/results.json" --csv "$out/results.csv" --emf "$out/metrics.emf.jsonl")
  TORCH=()
  if [ -n "${SMDDP_SM_TORCH_ARGS:-}" ]; then
    torch_command "$out"
  fi
  # One process per host drops the marker the other hosts wait for.
  launcher "${#hosts[@]}" 1
  RELEASE=("${LAUNCH[@]}" touch "$WORK_DIR/leader-done")
}

start_sshd() {
  [ "${SMDDP_SM_START_SSHD:-1}" = 1 ] || return 0
  local sshd
  sshd=$(command -v sshd || echo /usr/sbin/sshd)
  [ -x "$sshd" ] || return 0
  mkdir -p /run/sshd
  "$sshd" 2>/dev/null || true  # already running is fine
}

# The leader can start ranks only once every host's sshd answers.
wait_for_sshd() {
  local limit=${SMDDP_SM_SSH_WAIT:-300} host start=$SECONDS
  for host in "${hosts[@]:1}"; do
    until timeout 2 bash -c ": </dev/tcp/$host/22" 2>/dev/null; do
      ((SECONDS - start < limit)) || die "host $host: sshd not reachable on port 22 after $limit s"
      sleep 2
    done
  done
}

orted_running() {
  local comm name
  for comm in /proc/[0-9]*/comm; do
    read -r name <"$comm" 2>/dev/null || continue
    [ "$name" = orted ] || [ "$name" = prted ] && return 0
  done
  return 1
}

# Other hosts: serve mpirun's daemons until the leader drops its marker (or,
# should the leader die, until no daemon has run here for a grace period).
follow() {
  local limit=${SMDDP_SM_LEADER_WAIT:-1800} grace=${SMDDP_SM_FOLLOWER_GRACE:-600}
  local seen=0 idle_since=$SECONDS start=$SECONDS
  rm -f "$WORK_DIR/leader-done"
  echo "sagemaker-entry: $current_host waits for the leader ${hosts[0]}"
  while [ ! -e "$WORK_DIR/leader-done" ]; do
    if orted_running; then
      seen=1
      idle_since=$SECONDS
    elif [ "$seen" = 1 ] && ((SECONDS - idle_since >= grace)); then
      echo "sagemaker-entry: no ranks from the leader for $grace s; done"
      return 0
    elif [ "$seen" = 0 ] && ((SECONDS - start >= limit)); then
      die "the leader ${hosts[0]} started no ranks on $current_host within $limit s"
    fi
    sleep 2
  done
  echo "sagemaker-entry: the leader finished; done"
}

lead() {
  mkdir -p "$ML_ROOT/output/data" "$WORK_DIR"
  printf '%s' "$HOSTFILE_TEXT" >"$HOSTFILE"
  if [ "${#hosts[@]}" -gt 1 ]; then
    wait_for_sshd
    trap '"${RELEASE[@]}" >/dev/null 2>&1 || true' EXIT
  fi
  local rc=0
  if [ "${#PREFLIGHT[@]}" -gt 0 ]; then
    echo "sagemaker-entry: preflight on ${#hosts[@]} hosts"
    "${PREFLIGHT[@]}" || rc=$?
    [ "$rc" = 0 ] || die "preflight failed (exit $rc): see $ML_ROOT/output/data/preflight.json" "$rc"
  fi
  if [ "${#TORCH[@]}" -gt 0 ]; then
    echo "sagemaker-entry: smddp-bench-torch on ${#hosts[@]} hosts"
    "${TORCH[@]}" || rc=$?
    [ "$rc" = 0 ] || die "smddp-bench-torch failed (exit $rc)" "$rc"
  fi
  echo "sagemaker-entry: benchmark on ${#hosts[@]} hosts"
  "${BENCH[@]}" || rc=$?
  [ "$rc" = 0 ] || die "smddp-bench failed (exit $rc)" "$rc"
}

main() {
  parse_args "$@"
  read_cluster
  [ -e "/sys/class/net/$interface" ] ||
    die_usage "network_interface_name '$interface' is not a network interface of this host"
  build_commands
  if [ "$DRY_RUN" = 1 ]; then
    echo "# hostfile $HOSTFILE"
    printf '%s' "$HOSTFILE_TEXT"
    if [ "$current_host" != "${hosts[0]}" ]; then
      echo "# $current_host follows the leader ${hosts[0]}: serves its ranks, exits after $WORK_DIR/leader-done"
      return 0
    fi
    if [ "${#PREFLIGHT[@]}" -gt 0 ]; then
      echo "# preflight"
      quote_words "${PREFLIGHT[@]}"
    fi
    if [ "${#TORCH[@]}" -gt 0 ]; then
      echo "# torch benchmark"
      quote_words "${TORCH[@]}"
    fi
    echo "# benchmark"
    quote_words "${BENCH[@]}"
    if [ "${#hosts[@]}" -gt 1 ]; then
      echo "# release the other hosts"
      quote_words "${RELEASE[@]}"
    fi
    return 0
  fi
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  mkdir -p "$WORK_DIR"
  if [ "$current_host" = "${hosts[0]}" ]; then
    lead
  else
    start_sshd
    follow
  fi
}

main "$@"
