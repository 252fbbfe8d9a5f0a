#!/usr/bin/env bash
# Mutation check of the correctness suite (not run in CI): breaks each
# host-memory algorithm, the reduction kernels and the avg division on
# purpose, one mutation at a time, and shows that the suite fails for each.
#
# Per mutation: apply a perl substitution (perl -0pi) to one source file,
# check that it changed the file, rebuild only the test binary that needs it
# (in its own build directory), run the test under `timeout` and expect a
# non-zero exit whose failures name the mutated algorithm (for a file of
# collectives/src/<collective>/); then restore the file from its backup
# copy. The file is restored on every exit (trap on EXIT, INT and TERM),
# compared with cmp against the backup at the end, and the build directory
# is rebuilt from the restored tree.
#
# The multi-rank commands are the CTest ones (tests/mpi/CMakeLists.txt):
# the rank count, environment (SMDDP_RANKS_PER_NODE, ...) and
# --expect-declined list are read from `ctest -N -V` of the build directory,
# so the topology lists live in one place; only --counts is replaced (small
# counts, quick; a *_pipeline test keeps its large ones) and --collectives
# added. Before any mutation every command
# runs once on the unmutated tree and must pass (the baseline).
#
#   scripts/mutation-check.sh                         # all: 4-13 min on 2 shared cores
#   scripts/mutation-check.sh --only allreduce_ring_wrong_chunk,barrier_shm_noop
#   scripts/mutation-check.sh --list
#
# Options: --build-dir DIR (default build-mutation), --only NAME[,NAME],
# --list, --seed N (default: one per run, printed; SMDDP_TEST_SEED),
# --counts LIST (default 0,1,7,1003), --timeout SECONDS (per test, 300).
# Exit status: 0 when every selected mutation was caught, 1 otherwise, 2 on
# a bad baseline or build, 64 on bad usage.

# The perl substitutions are single-quoted on purpose: $1 is perl's.
# shellcheck disable=SC2016
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build_dir="$root/build-mutation"
only=""
list_only=0
seed=""
counts="0,1,7,1003"
limit=300

usage() {
  sed -n '2,/^$/p' "${BASH_SOURCE[0]}" | sed -e '$d' -e 's/^# \{0,1\}//'
}

while [ "$#" -gt 0 ]; do
  case "$1" in
    --build-dir) build_dir=$(realpath -m -- "${2:?--build-dir needs a directory}"); shift 2 ;;
    --only) only="${2:?--only needs a list}"; shift 2 ;;
    --list) list_only=1; shift ;;
    --seed) seed="${2:?--seed needs a number}"; shift 2 ;;
    --counts) counts="${2:?--counts needs a list}"; shift 2 ;;
    --timeout) limit="${2:?--timeout needs seconds}"; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "mutation-check: unknown argument '$1'" >&2; usage >&2; exit 64 ;;
  esac
done

if [ "$(id -u)" -eq 0 ]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi

# ---- The mutations ---------------------------------------------------------
# mutation NAME FILE TEST SELECT PERL
#   FILE    relative to the repository root
#   TEST    a CTest test of tests/mpi (its ranks, environment, declines), or
#           "unit" for BUILD/tests/reduce_test
#   SELECT  --collectives for mpi tests, --gtest_filter for unit
#   PERL    the substitution, applied with perl -0pi -e
names=() files=() tests=() selects=() exprs=()
mutation() {
  names+=("$1") files+=("$2") tests+=("$3") selects+=("$4") exprs+=("$5")
}

A=collectives/src
# allreduce
mutation allreduce_ring_wrong_chunk "$A/allreduce/ring.cc" mpi_collectives_np4 allreduce \
  's/ag\.send = rs\.recv;/ag.send = call.recv;/'
mutation allreduce_halving_doubling_wrong_slot "$A/allreduce/halving_doubling.cc" mpi_collectives_np4 allreduce \
  's/reduce_into\(at\(call\.recv, offset\(keep_lo\)\), tmp,/reduce_into(at(call.recv, offset(give_lo)), tmp,/'
mutation allreduce_halving_doubling_skip_fixup "$A/allreduce/halving_doubling.cc" mpi_collectives_np3 allreduce \
  's/reduce_into\(call\.recv, tmp, call\.count, call\.dtype, call\.op\);/(void)tmp;  \/\/ fix-up partner dropped/'
mutation allreduce_halving_doubling_width_as_mask "$A/allreduce/halving_doubling.cc" mpi_collectives_np4_vnodes2 allreduce \
  's/lo - \(hi - lo\) : hi;/lo - mask : hi;/'
mutation allreduce_recursive_doubling_wrong_partner "$A/allreduce/recursive_doubling.cc" mpi_collectives_np4 allreduce \
  's/hd\.real_rank\(v \^ mask\)/hd.real_rank(v ^ 1)/'
mutation allreduce_recursive_doubling_skip_fixup "$A/allreduce/recursive_doubling.cc" mpi_collectives_np3 allreduce \
  's/combine\(call, tmp, hd\.fixup_partner\(me\) > me\);/(void)tmp;  \/\/ fix-up partner dropped/'
mutation allreduce_tree_wrong_root "$A/allreduce/tree.cc" mpi_collectives_np4 allreduce \
  's/(step\.collective = Collective::Broadcast;)/$1\n  step.root = g.size() - 1;/'
mutation allreduce_shm_direct_skip_peer "$A/allreduce/shm_direct.cc" mpi_collectives_np4 allreduce \
  's/reduce\(out, srcs\.data\(\), n, c,/reduce(out, srcs.data(), n - 1, c,/'
mutation allreduce_shm_direct_slice_short "$A/allreduce/shm_direct.cc" mpi_collectives_np4 allreduce \
  's/n, slices\.length\(me\),/n, slices.length(me) - (slices.length(me) > 0),/'
mutation allreduce_cma_skip_peer "$A/allreduce/cma.cc" mpi_collectives_np4 allreduce \
  's/srcs\.data\(\), n, c,/srcs.data(), n - 1, c,/g'
mutation allreduce_hierarchical_short_count "$A/allreduce/hierarchical.cc" mpi_collectives_np4_vnodes2 allreduce \
  's/ar\.count = count;/ar.count = count > 0 ? count - 1 : 0;/'
mutation allreduce_sharded_skip_peer "$A/allreduce/sharded.cc" mpi_collectives_np4_vnodes2 allreduce \
  's/reduce\(mine, srcs_\.data\(\), x_\.size\(\), n,/reduce(mine, srcs_.data(), x_.size() - 1, n,/'
mutation allreduce_sharded_chunk_offset "$A/allreduce/sharded.cc" mpi_collectives_np4_vnodes2_pipeline allreduce \
  's/std::min\(sub_\.length\(k\), c \* chunk_\)/std::min(sub_.length(k), 0 * c * chunk_)/'
# allgather
mutation allgather_ring_wrong_chunk "$A/allgather/ring.cc" mpi_collectives_np4 allgather \
  's/const int sb = patterns::mod\(me - s, n\);/const int sb = patterns::mod(me - s - 1, n);/'
mutation allgather_recursive_doubling_wrong_slot "$A/allgather/recursive_doubling.cc" mpi_collectives_np4 allgather \
  's/const int theirs = partner & ~\(d - 1\);/const int theirs = mine;/'
mutation allgather_direct_wrong_slot "$A/allgather/direct.cc" mpi_collectives_np4 allgather \
  's/at\(call\.recv, blocks\.offset\(from\) \* es\)/at(call.recv, blocks.offset(patterns::mod(from + 1, n)) * es)/'
mutation allgather_shm_direct_short_count "$A/allgather/shm_direct.cc" mpi_collectives_np4 allgather \
  's/const size_t len = shm_direct::piece\(blocks\.length\(p\), off, chunk\);/const size_t len = shm_direct::piece(blocks.length(p), off, chunk) - (blocks.length(p) > off);/'
mutation allgather_cma_skip_peer "$A/allgather/cma.cc" mpi_collectives_np4 allgather \
  's/for \(int i = 1; i < n; \+\+i\)/for (int i = 1; i < n - 1; ++i)/'
# reduce-scatter
mutation reducescatter_ring_wrong_own_block "$A/reduce_scatter/ring.cc" mpi_collectives_np4 reducescatter \
  's/const void\* own = at\(call\.send, blocks\.offset\(rb\) \* es\);/const void* own = at(call.send, blocks.offset(sb) * es);/'
mutation reducescatter_recursive_halving_fixup_wrong_block "$A/reduce_scatter/recursive_halving.cc" mpi_collectives_np3 reducescatter \
  's/acc \+ blocks\.offset\(out_rank\) \* es/acc + blocks.offset(me) * es/'
mutation reducescatter_recursive_halving_unpacks_one_block "$A/reduce_scatter/recursive_halving.cc" mpi_collectives_np4_vnodes2 reducescatter \
  's/      pos \+= len;/      pos += 0;/'
mutation reducescatter_shm_direct_skip_peer "$A/reduce_scatter/shm_direct.cc" mpi_collectives_np4 reducescatter \
  's/\.data\(\), n, len,/.data(), n - 1, len,/'
# broadcast
mutation broadcast_tree_forwards_send_buffer "$A/broadcast/tree.cc" mpi_collectives_np4 broadcast \
  's/ctx\.send\(g, child, call\.recv, bytes\)/ctx.send(g, child, call.send, bytes)/'
mutation broadcast_chain_forwards_send_buffer "$A/broadcast/chain.cc" mpi_collectives_np4 broadcast \
  's/const void\* from = prev < 0 \? call\.send : call\.recv;/const void* from = call.send;/'
mutation broadcast_chain_chunk_in_wrong_slot "$A/broadcast/chain.cc" mpi_collectives_np4_vnodes2_pipeline broadcast \
  's/prev, at\(call\.recv, offset\(i\)\), bytes_of\(i\)\);/prev, at(call.recv, offset(i - 1)), bytes_of(i));/'
mutation broadcast_shm_direct_short_count "$A/broadcast/shm_direct.cc" mpi_collectives_np4 broadcast \
  's/copy_out\(at\(call\.recv, off \* es\), s\.stage\(root\), c \* es,/copy_out(at(call.recv, off * es), s.stage(root), (c - 1) * es,/'
mutation broadcast_cma_short_count "$A/broadcast/cma.cc" mpi_collectives_np4 broadcast \
  's/cma::read\(ctx, root, call\.recv, s\.exposed\(root\), bytes\);/cma::read(ctx, root, call.recv, s.exposed(root), bytes > 0 ? bytes - call.esize() : 0);/'
# reduce
mutation reduce_tree_skip_child "$A/reduce/tree.cc" mpi_collectives_np4 reduce \
  's/(\n    )(reduce_into\(acc, incoming,)/$1if (child != tree.children.rbegin()) $2/'
mutation reduce_shm_direct_skip_peer "$A/reduce/shm_direct.cc" mpi_collectives_np4 reduce \
  's/stage_pointers\(s, 0\)\.data\(\), n, c,/stage_pointers(s, 0).data(), n - 1, c,/'
# alltoall
mutation alltoall_pairwise_wrong_chunk "$A/alltoall/pairwise.cc" mpi_collectives_np4 alltoall \
  's/ctx\.exchange\(g, to, at\(send, to \* block\)/ctx.exchange(g, to, at(send, from * block)/'
mutation alltoall_shm_direct_wrong_slot "$A/alltoall/shm_direct.cc" mpi_collectives_np4 alltoall \
  's/s\.stage\(p\) \+ me \* chunk \* es/s.stage(p) + ((me + 1) % n) * chunk * es/'
mutation alltoall_cma_wrong_chunk "$A/alltoall/cma.cc" mpi_collectives_np4 alltoall \
  's/at\(output, me \* block\)/at(output, p * block)/'
# barrier
mutation barrier_dissemination_noop "$A/barrier/dissemination.cc" mpi_collectives_np4 barrier \
  's/(const Group& g, const Call&\) \{\n)/$1  if (g.size() > 0) return;  \/\/ no-op\n/'
mutation barrier_dissemination_round_short "$A/barrier/dissemination.cc" mpi_collectives_np4 barrier \
  's/for \(int d = 1; d < n; d <<= 1\)/for (int d = 1; 2 * d < n; d <<= 1)/'
mutation barrier_shm_noop "$A/barrier/shm.cc" mpi_collectives_np4 barrier \
  's/(  ShmSteps& s = \*ctx\.steps;\n)/  if (ctx.steps) return;  \/\/ no-op\n$1/'
# reduction kernels and the avg division
mutation kernel_skip_last_source collectives/core/src/kernels/kernels_impl.h unit 'AllTypesAndOps/*' \
  's/for \(; s < nsrc; \+\+s\) combine_into/for (; s < nsrc - 1; ++s) combine_into/'
mutation kernel_min_returns_max collectives/core/src/kernels/reduce_ops.h unit 'AllTypesAndOps/*' \
  's/(struct MinOp \{.*?return )a < b \? a : b;/$1a > b ? a : b;/s'
mutation kernel_int_divide_rounds collectives/core/src/kernels/reduce_ops.h unit 'AllTypes/DivideTest.*' \
  's/static_cast<Wide>\(x\) \/ static_cast<Wide>\(divisor\)/(static_cast<Wide>(x) + divisor \/ 2) \/ static_cast<Wide>(divisor)/'
mutation avg_divides_by_size_minus_one "$A/communicator.cc" mpi_collectives_np4 allreduce,reduce \
  's/divide\(a\.recv, a\.count, a\.dtype, topo_\.size\);/divide(a.recv, a.count, a.dtype, topo_.size - 1);/'

if [ "$list_only" -eq 1 ]; then
  printf '%-40s %-48s %-28s %s\n' mutation file test select
  for i in "${!names[@]}"; do
    printf '%-40s %-48s %-28s %s\n' "${names[$i]}" "${files[$i]}" "${tests[$i]}" "${selects[$i]}"
  done
  exit 0
fi

# The selection.
selected=()
if [ -n "$only" ]; then
  IFS=',' read -r -a wanted <<<"$only"
  for w in "${wanted[@]}"; do
    found=0
    for i in "${!names[@]}"; do
      if [ "${names[$i]}" = "$w" ]; then selected+=("$i"); found=1; fi
    done
    if [ "$found" -eq 0 ]; then
      echo "mutation-check: no mutation named '$w' (--list names them)" >&2
      exit 64
    fi
  done
else
  selected=("${!names[@]}")
fi

if [ -z "$seed" ]; then seed=$((0x5eed0000 + $(date +%s) % 100000)); fi
export SMDDP_TEST_SEED="$seed"

# ---- Restoring ----------------------------------------------------------------
backup_dir=$(mktemp -d "${TMPDIR:-/tmp}/mutation-check.XXXXXX")
current_file=""    # the file mutated right now (absolute), empty when none
current_backup=""
touched=()         # "file<TAB>backup" of every mutated file, for the final check
keep_backups=0     # set when a file could not be restored: the backups stay

restore() {
  if [ -n "$current_file" ]; then
    # A plain copy: the file gets a new mtime, so the next build recompiles it.
    cp -- "$current_backup" "$current_file"
    if ! cmp -s -- "$current_backup" "$current_file"; then
      echo "mutation-check: could not restore $current_file (backup: $current_backup)" >&2
      keep_backups=1
      return 1
    fi
    current_file=""
  fi
}
on_exit() {
  local rc=$?
  restore || rc=1
  if [ "$keep_backups" -eq 0 ]; then rm -rf -- "$backup_dir"; fi
  exit "$rc"
}
trap on_exit EXIT
trap 'echo "mutation-check: interrupted, restoring" >&2; exit 130' INT
trap 'echo "mutation-check: terminated, restoring" >&2; exit 143' TERM

# ---- Build --------------------------------------------------------------------
build() {  # build TARGET...: only those, two jobs at most (shared machine)
  cmake --build "$build_dir" -j2 --target "$@"
}

echo "== configure and build ($build_dir)"
cmake -S "$root" -B "$build_dir" -G Ninja -DSMDDP_WITH_CUDA=OFF -DSMDDP_BUILD_TOOLS=OFF \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo >"$build_dir.configure.log" 2>&1 || {
  cat "$build_dir.configure.log" >&2
  echo "mutation-check: configure failed" >&2
  exit 2
}
if ! build mpi_collectives_test reduce_test; then
  echo "mutation-check: the unmutated tree does not build" >&2
  exit 2
fi
unit_bin="$build_dir/tests/reduce_test"

# ---- Test commands -------------------------------------------------------------
# test_command TEST SELECT: fills the array `cmd` (environment via env(1)).
# For an mpi test: the CTest command and environment, with our --counts,
# --collectives SELECT and a shorter engine timeout (SMDDP_TIMEOUT=30).
declare -A ctest_cache=()
test_command() {
  local test=$1 select=$2
  if [ "$test" = unit ]; then
    cmd=(env "$unit_bin" "--gtest_filter=$select" --gtest_brief=1)
    return
  fi
  if [ -z "${ctest_cache[$test]+set}" ]; then
    ctest_cache[$test]=$(ctest --test-dir "$build_dir" -N -V -R "^${test}\$")
  fi
  local out=${ctest_cache[$test]}
  local line
  line=$(grep -m1 ' Test command: ' <<<"$out" || true)
  if [ -z "$line" ]; then
    echo "mutation-check: no CTest test named $test in $build_dir" >&2
    exit 2
  fi
  local -a argv env_vars
  # Tokens: the first unquoted, the others in double quotes.
  mapfile -d '' argv < <(perl -ne 's/^\d+: Test command: //; while (/"((?:[^"\\]|\\.)*)"|(\S+)/g) { print defined $1 ? $1 : $2, "\0" }' <<<"$line")
  mapfile -t env_vars < <(perl -ne 'print "$1\n" if /^\d+:  ([A-Za-z_][A-Za-z0-9_]*=.*)$/' <<<"$out")
  cmd=(env "${env_vars[@]}" SMDDP_TIMEOUT=30)
  local i
  for ((i = 0; i < ${#argv[@]}; i++)); do
    cmd+=("${argv[$i]}")
    # A *_pipeline test exists to reach large counts: its own stay.
    if [ "${argv[$i]}" = --counts ] && [[ $test != *_pipeline ]]; then
      cmd+=("$counts")
      i=$((i + 1))
    fi
  done
  cmd+=(--collectives "$select")
}

# algorithm_key FILE: "collective/algorithm" for an algorithm's source file
# (as the suite names it in its FAIL lines), empty for any other file.
algorithm_key() {
  local rel=${1#collectives/src/} dir algo
  dir=${rel%%/*}
  algo=${rel#*/}
  algo=${algo%.cc}
  case "$dir" in
    allreduce|allgather|broadcast|reduce|alltoall|barrier) echo "$dir/$algo" ;;
    reduce_scatter) echo "reducescatter/$algo" ;;
  esac
}

describe_test() {  # the short form for the table
  if [ "$1" = unit ]; then echo "reduce_test $2"; else echo "${1#mpi_collectives_} --collectives $2"; fi
}

log_dir="$build_dir/mutation-logs"
mkdir -p "$log_dir"

# run_test TEST SELECT LOG: sets `outcome` to pass, fail or timeout.
outcome=""
run_test() {
  local rc=0
  test_command "$1" "$2"
  {
    printf '$'
    printf ' %q' "${cmd[@]}"
    printf '\n'
  } >"$3"
  timeout -k 20 "$limit" "${cmd[@]}" >>"$3" 2>&1 </dev/null || rc=$?
  if [ "$rc" -eq 0 ]; then
    outcome=pass
  elif [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
    outcome=timeout
  else
    outcome=fail
  fi
}

start=$(date +%s)
echo "== seed $seed (SMDDP_TEST_SEED), counts $counts, limit ${limit}s per test, logs in $log_dir"

# ---- Baseline -------------------------------------------------------------------
echo "== baseline: every test command on the unmutated tree must pass"
declare -A baseline_done=()
baseline_ok=1
for i in "${selected[@]}"; do
  key="${tests[$i]}|${selects[$i]}"
  if [ -n "${baseline_done[$key]+set}" ]; then continue; fi
  baseline_done[$key]=1
  t0=$(date +%s)
  log="$log_dir/baseline-${tests[$i]}-${selects[$i]//[^A-Za-z0-9_]/_}.log"
  run_test "${tests[$i]}" "${selects[$i]}" "$log"
  if [ "$outcome" = pass ]; then
    echo "baseline: PASS $(describe_test "${tests[$i]}" "${selects[$i]}") ($(( $(date +%s) - t0 ))s)"
  else
    echo "baseline: FAIL ($outcome) $(describe_test "${tests[$i]}" "${selects[$i]}"): see $log"
    baseline_ok=0
  fi
done
if [ "$baseline_ok" -ne 1 ]; then
  echo "mutation-check: the baseline fails, so a failing mutated run would mean nothing" >&2
  exit 2
fi

# ---- Mutations --------------------------------------------------------------------
results=()
caught=0
for i in "${selected[@]}"; do
  name=${names[$i]} file=${files[$i]} test=${tests[$i]} select=${selects[$i]} expr=${exprs[$i]}
  abs="$root/$file"
  backup="$backup_dir/$name.orig"
  echo "== $name: $file"
  cp -- "$abs" "$backup"
  touched+=("$abs"$'\t'"$backup")
  current_backup=$backup
  current_file=$abs
  result=""
  if ! perl -0pi -e "$expr" "$abs" || cmp -s -- "$backup" "$abs"; then
    result="did not apply"
    echo "    did not apply: the substitution left the file unchanged"
  else
    diff -u -- "$backup" "$abs" | sed -n '3,$p' | grep '^[-+]' | sed 's/^/    /' || true
    target=mpi_collectives_test
    if [ "$test" = unit ]; then target=reduce_test; fi
    if ! build "$target" >"$log_dir/$name.build.log" 2>&1; then
      result="build failed"
      echo "    build failed: $log_dir/$name.build.log"
    else
      t0=$(date +%s)
      log="$log_dir/$name.log"
      run_test "$test" "$select" "$log"
      case "$outcome" in
        fail) result=caught ;;
        timeout) result="caught (timeout)" ;;
        pass) result=MISSED ;;
      esac
      # An algorithm's mutation must fail that algorithm's cases (a failure
      # elsewhere would show nothing about the check of this one).
      key=$(algorithm_key "$file")
      if [ "$outcome" = fail ] && [ -n "$key" ] && ! grep -q -E "^(FAIL: )?rank [0-9]+: ${key} " "$log"; then
        result="failed elsewhere (no FAIL line names $key)"
      fi
      echo "    $result ($(( $(date +%s) - t0 ))s): $log"
      first=$(grep -m1 -E '^FAIL|^rank [0-9]+: |\[  FAILED  \]' "$log" || true)
      if [ -n "$first" ]; then echo "    first failure: ${first:0:160}"; fi
    fi
  fi
  restore
  case "$result" in caught*) caught=$((caught + 1)) ;; esac
  results+=("| $name | $file | $(describe_test "$test" "$select") | $result |")
done

# The build directory back to the tree as it is (the last mutation's objects go).
if ! build mpi_collectives_test reduce_test >"$log_dir/final.build.log" 2>&1; then
  echo "mutation-check: the final rebuild of the unmutated tree failed: $log_dir/final.build.log" >&2
fi

# ---- Every touched file is back as it was --------------------------------------------
restored_ok=1
for entry in "${touched[@]}"; do
  f=${entry%%$'\t'*} b=${entry#*$'\t'}
  if ! cmp -s -- "$b" "$f"; then
    echo "mutation-check: $f differs from its backup $b" >&2
    restored_ok=0
    keep_backups=1
  fi
done

echo
echo "| mutation | file | test | result |"
echo "| --- | --- | --- | --- |"
printf '%s\n' "${results[@]}"
echo
echo "${caught} of ${#selected[@]} mutations caught (seed $seed, counts $counts, $(( $(date +%s) - start ))s)"
if [ "$restored_ok" -ne 1 ]; then exit 1; fi
[ "$caught" -eq "${#selected[@]}" ]
