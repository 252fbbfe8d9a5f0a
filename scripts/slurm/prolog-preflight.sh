#!/bin/bash
# Slurm Prolog: runs `smddp-diag preflight` on this node before a job starts.
# The recipe (slurm.conf, settings, what lands where) is docs/diag.md,
# "Preflight as a Slurm prolog"; docs/deploy.md links there.
#
# Slurm drains a node whose Prolog exits non-zero, so this exits non-zero
# only when draining is enabled (SMDDP_PREFLIGHT_DRAIN=1) and the node is
# unhealthy (preflight exit 1): it first drains the node with the failed
# checks as the reason, and Slurm requeues the job elsewhere. Anything that
# is our problem, not the node's (no log directory, no smddp-diag, a bad
# profile 64, lost peer 3, missing device 69, runtime error 70, time out 124,
# a failed scontrol) is logged and exits 0: it never drains a node.
#
# Settings come from the environment or from
# ${SMDDP_PREFLIGHT_CONFIG:-/etc/smddp/preflight.env} (KEY=VALUE lines):
#   SMDDP_PREFLIGHT_DRAIN=1     drain unhealthy nodes (default 0: log only)
#   SMDDP_PREFLIGHT_PROFILE     smddp-diag profile (default local)
#   SMDDP_PREFLIGHT_TIMEOUT     seconds (default 120)
#   SMDDP_PREFLIGHT_LOG_DIR     preflight.json, older ones, preflight.log (default /var/log/smddp)
#   SMDDP_PREFLIGHT_PROM_DIR    where preflight.prom goes: node_exporter's textfile directory
#                               (default: the log directory)
#   SMDDP_PREFLIGHT_KEEP        older reports kept as preflight.json.1 .. .N (default 10)
#   SMDDP_BIN_DIR               where smddp-diag is (default: PATH)
#   SMDDP_SCONTROL              scontrol to drain with (default: scontrol from PATH)
set -uo pipefail

# Slurm starts prologs with an empty environment: no PATH at all.
PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin${PATH:+:$PATH}
export PATH

config=${SMDDP_PREFLIGHT_CONFIG:-/etc/smddp/preflight.env}
# A regular file only: sourcing a FIFO would wait forever.
if [ -f "$config" ] && [ -r "$config" ]; then
  # shellcheck source=/dev/null
  . "$config"
fi

node=${SLURMD_NODENAME:-$(hostname -s 2>/dev/null || uname -n)}
job=${SLURM_JOB_ID:-none}
log_dir=${SMDDP_PREFLIGHT_LOG_DIR:-/var/log/smddp}
prom_dir=${SMDDP_PREFLIGHT_PROM_DIR:-$log_dir}
keep=${SMDDP_PREFLIGHT_KEEP:-10}
diag=${SMDDP_BIN_DIR:+$SMDDP_BIN_DIR/}smddp-diag
scontrol=${SMDDP_SCONTROL:-scontrol}
log_file=

# One line to the log file, else to syslog, else to stderr.
log() {
  local line
  line="$(date -u +%Y-%m-%dT%H:%M:%SZ) job=$job node=$node $*"
  if [ -n "$log_file" ] && printf '%s\n' "$line" 2>/dev/null >>"$log_file"; then
    return 0
  fi
  logger -t smddp-prolog -- "$line" 2>/dev/null || printf 'prolog-preflight: %s\n' "$line" >&2
}

if ! mkdir -p "$log_dir" 2>/dev/null || [ ! -w "$log_dir" ]; then
  log "cannot create or write $log_dir: no preflight run; not draining"
  exit 0
fi
log_file=$log_dir/preflight.log
# Decimal and bounded: the rotation below counts down from it.
case $keep in
  '' | *[!0-9]* | ?????*) log "SMDDP_PREFLIGHT_KEEP='$keep' is not a number 0..9999; keeping 10"; keep=10 ;;
  *) keep=$((10#$keep)) ;;
esac
timeout_s=${SMDDP_PREFLIGHT_TIMEOUT:-120}
case $timeout_s in
  '' | *[!0-9]* | ???????*) log "SMDDP_PREFLIGHT_TIMEOUT='$timeout_s' is not whole seconds 1..999999; using 120"; timeout_s=120 ;;
esac
[ "$((10#$timeout_s))" -gt 0 ] || { log "SMDDP_PREFLIGHT_TIMEOUT=0: using 120"; timeout_s=120; }
if ! mkdir -p "$prom_dir" 2>/dev/null; then
  log "cannot create $prom_dir: no preflight.prom"
  prom_dir=
fi

# The newest report is always preflight.json; older ones shift to .1 .. .N.
report=$log_dir/preflight.json
i=$keep
while [ "$i" -gt 1 ]; do
  [ -e "$report.$((i - 1))" ] && mv -f "$report.$((i - 1))" "$report.$i"
  i=$((i - 1))
done
if [ "$keep" -gt 0 ] && [ -e "$report" ]; then mv -f "$report" "$report.1"; else rm -f "$report"; fi

args=(preflight -p "${SMDDP_PREFLIGHT_PROFILE:-local}" --json "$report" --print-drain)
[ -n "$prom_dir" ] && args+=(--prom-textfile "$prom_dir/preflight.prom")
rc=0
output=$(timeout "$((10#$timeout_s))" "$diag" "${args[@]}" 2>&1) || rc=$?
# The node's line ("HOST | ERROR: ...") or the error of a run that failed.
summary=$(printf '%s\n' "$output" | grep -v -e '^[[:space:]]*$' -e '^scontrol update ' -e '^# smddp:' | tail -n 1)
log "exit=$rc $summary"

if [ "$rc" = 0 ]; then
  exit 0
fi
if [ "$rc" != 1 ]; then
  log "preflight could not run (exit $rc); not draining"
  exit 0
fi
# Unhealthy, but the action class of its failures drains nothing (none,
# docs/diag.md "Failure codes"): smddp-diag prints a "# smddp:CODE NODE: not
# drained" comment instead of a drain line, and the job runs.
if ! printf '%s\n' "$output" | grep -q '^scontrol update nodename='; then
  note=$(printf '%s\n' "$output" | grep -m 1 '^# smddp:[A-Z0-9-]* .*: not drained (action ' || true)
  if [ -n "$note" ]; then
    log "unhealthy, not drained: ${note#\# }"
    exit 0
  fi
fi
if [ "${SMDDP_PREFLIGHT_DRAIN:-0}" != 1 ]; then
  log "unhealthy; SMDDP_PREFLIGHT_DRAIN=1 would drain it"
  exit 0
fi
# smddp-diag wrote the reason: whole items within Slurm's limit, shell-safe.
reason=$(printf '%s\n' "$output" | sed -n 's/^scontrol update nodename=.* state=drain reason="\(.*\)"$/\1/p' | head -n 1)
if [ -z "$reason" ]; then
  # No drain line (an older smddp-diag): the summary, cut at a word within 255
  # bytes, after the code of a failure without one of its own (docs/diag.md,
  # "Failure codes": every reason starts smddp:CODE).
  reason="smddp:SMDDP-UNCLASSIFIED ${summary:-unhealthy}"
  if [ "${#reason}" -gt 255 ]; then
    reason=${reason:0:252}
    reason="${reason% *}..."
  fi
fi
if "$scontrol" update nodename="$node" state=drain reason="$reason" 2>/dev/null; then
  log "drained: $reason"
else
  log "scontrol could not drain (exit $?); Slurm drains on the prolog's exit"
fi
exit 1
