#!/usr/bin/env bash
# Slurm Prolog snippet: runs `smddp-diag preflight` on this node before a
# job starts. Slurm drains a node whose Prolog exits non-zero, so this exits
# non-zero only when draining is enabled (SMDDP_PREFLIGHT_DRAIN=1) and the
# node is unhealthy (exit 1): it drains the node with the failed checks as
# the reason and the job is requeued elsewhere. Otherwise a failure is only
# logged. A preflight that cannot run (lost peer or transport failure 3, bad
# profile 64, missing device 69, runtime error 70, time out 124) never drains: that is our configuration,
# not the node's health.
#
# Install: in slurm.conf, `Prolog=/path/to/prolog-preflight.sh` (or call it
# from the existing prolog). Settings come from the environment or from
# ${SMDDP_PREFLIGHT_CONFIG:-/etc/smddp/preflight.env} (KEY=VALUE lines):
#   SMDDP_PREFLIGHT_DRAIN=1    drain unhealthy nodes (default 0: log only)
#   SMDDP_PREFLIGHT_PROFILE    smddp-diag profile (default local)
#   SMDDP_PREFLIGHT_TIMEOUT    seconds (default 120)
#   SMDDP_PREFLIGHT_LOG_DIR    JSON reports and log (default /var/log/smddp)
#   SMDDP_BIN_DIR              where smddp-diag is (default: PATH)
set -euo pipefail

config=${SMDDP_PREFLIGHT_CONFIG:-/etc/smddp/preflight.env}
if [ -r "$config" ]; then
  # shellcheck source=/dev/null
  source "$config"
fi

node=${SLURMD_NODENAME:-$(hostname -s)}
job=${SLURM_JOB_ID:-none}
log_dir=${SMDDP_PREFLIGHT_LOG_DIR:-/var/log/smddp}
diag=${SMDDP_BIN_DIR:+$SMDDP_BIN_DIR/}smddp-diag
mkdir -p "$log_dir"
report=$log_dir/preflight-$node-$job.json
log=$log_dir/preflight.log

rc=0
output=$(timeout "${SMDDP_PREFLIGHT_TIMEOUT:-120}" "$diag" preflight -p "${SMDDP_PREFLIGHT_PROFILE:-local}" \
  --json "$report" 2>&1) || rc=$?
summary=$(printf '%s\n' "$output" | { grep -v '^[[:space:]]*$' || true; } | tail -n 1 | cut -c1-200)
printf '%s job=%s node=%s exit=%s %s\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$job" "$node" "$rc" "$summary" >>"$log"

if [ "$rc" = 0 ]; then
  exit 0
fi
if [ "$rc" != 1 ]; then
  echo "prolog-preflight: preflight could not run on $node (exit $rc): $summary; not draining" >&2
  exit 0
fi
if [ "${SMDDP_PREFLIGHT_DRAIN:-0}" != 1 ]; then
  echo "prolog-preflight: $node is unhealthy: $summary (SMDDP_PREFLIGHT_DRAIN=1 would drain it)" >&2
  exit 0
fi
reason="smddp preflight: ${summary:-unhealthy}"
scontrol update nodename="$node" state=drain reason="${reason:0:120}"
echo "prolog-preflight: drained $node: $summary" >&2
exit 1
