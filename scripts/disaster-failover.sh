#!/usr/bin/env bash
# disaster-failover.sh: bring a protection group up on another cluster when its
# active cluster is lost (unplanned failover).
#
# When to use: the active cluster or its site is down and will not be back
#   soon enough. If it still works, use planned-failover.sh: it loses nothing.
# What it does: shows the group's replication lag, which bounds the writes an
#   unplanned failover may lose, and the RPO objective; asks you to type the
#   group's name to confirm and to say why; then creates an unplanned
#   FailoverRequest confirmed with the group's name (annotation
#   siterecovery.trilio.io/confirm), recording who ran it and why
#   (siterecovery.trilio.io/requested-by and /reason), and follows it to the end.
#   It never touches VMs, DRBD or taints itself: the failover controller does,
#   under its safety checks.
# How to undo: once the lost cluster is back and replication has resynced
#   (kubectl siterecovery status GROUP), failback.sh GROUP. Writes made on the
#   lost cluster after the last replicated one are not recovered.
#
# Usage: disaster-failover.sh [-n DR-NAMESPACE] [-r REASON] GROUP TARGET-CLUSTER
#   The confirmation (and the reason, without -r) is read from standard input.
set -euo pipefail
# shellcheck source=scripts/lib/common.sh
source "$(dirname "$0")/lib/common.sh"

reason=""
while getopts "n:r:h" opt; do
  case "$opt" in
    n) NAMESPACE="$OPTARG" ;;
    r) reason="$OPTARG" ;;
    *) sed -n '2,22p' "$0"; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
[[ $# -eq 2 ]] || { sed -n '2,22p' "$0"; exit 2; }
group="$1" target="$2"

say "current state of $group:"
sr status "$group" || say "status could not read everything (expected while a cluster is down)"

lag="$(k get replicationgroupstatus "$group" -o jsonpath='{.status.maxLagSeconds}' 2>/dev/null || true)"
rpo="$(k get replicationgroupstatus "$group" -o jsonpath='{.spec.rpoObjectiveSeconds}' 2>/dev/null || true)"
updated="$(k get replicationgroupstatus "$group" -o jsonpath='{.status.lastUpdateTime}' 2>/dev/null || true)"
cat >&2 <<MSG

DATA-LOSS WINDOW
  The DR copy lacks at most the writes of the last ${lag:-unknown} seconds before the
  replication monitor's last update (${updated:-never}); the RPO objective is ${rpo:-unknown} seconds.
  With protocol A, writes still in flight when the site failed are lost as well.
  An unplanned failover starts the VMs on $target from what it holds now.

MSG
printf 'Type the group name (%s) to confirm the unplanned failover: ' "$group" >&2
read -r typed || true
[[ "$typed" == "$group" ]] || die "confirmation did not match; nothing was changed"
if [[ -z "$reason" ]]; then
  printf 'Why (recorded on the request): ' >&2
  read -r reason || true
  [[ -n "$reason" ]] || die "a reason is required; nothing was changed"
fi
operator="${USER:-$(id -un)}@$(hostname)"
say "unplanned failover of $group to $target, run by $operator"
sr failover "$group" --to "$target" --unplanned --confirm "$group" --wait \
  --reason "disaster-failover.sh by $operator: $reason"
say "done; when the lost cluster is back: kubectl siterecovery status $group, then failback.sh $group"
