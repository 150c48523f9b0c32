#!/usr/bin/env bash
# stuck-request.sh: show what an unfinished request waits for, and the safe
# ways out.
#
# When to use: a FailoverRequest, TestFailover or ProtectionRequest stays in
#   one phase longer than expected.
# What it does: only reads. Lists the unfinished requests of the DR namespace,
#   or for one FailoverRequest prints its phase history, conditions and
#   message, the holder of its group's failover lock, and the group's status;
#   then the safe ways out for its phase.
# How to undo: nothing to undo; it changes nothing.
#
# Usage: stuck-request.sh [-n DR-NAMESPACE] [FAILOVER-REQUEST]
set -euo pipefail
# shellcheck source=scripts/lib/common.sh
source "$(dirname "$0")/lib/common.sh"

while getopts "n:h" opt; do
  case "$opt" in
    n) NAMESPACE="$OPTARG" ;;
    *) sed -n '2,13p' "$0"; exit 2 ;;
  esac
done
shift $((OPTIND - 1))

if [[ $# -eq 0 ]]; then
  say "requests of the DR namespace (phase Completed, Succeeded, Protected and Failed are finished):"
  k get failoverrequests,testfailovers,protectionrequests
  say "run again with a FailoverRequest's name for details"
  exit 0
fi
name="$1"
group="$(k get failoverrequest "$name" -o jsonpath='{.spec.protectionGroupRef.name}')"
phase="$(k get failoverrequest "$name" -o jsonpath='{.status.phase}')"
say "FailoverRequest $name of group $group is in phase ${phase:-New}"
k get failoverrequest "$name" -o jsonpath='{range .status.phaseHistory[*]}{.time}{"  "}{.phase}{"  "}{.message}{"\n"}{end}'
say "conditions:"
k get failoverrequest "$name" -o jsonpath='{range .status.conditions[*]}{.type}={.status} {.reason}: {.message}{"\n"}{end}'
say "message: $(k get failoverrequest "$name" -o jsonpath='{.status.message}')"
say "failover lock of $group:"
k get lease "failover-lock-$group" -o jsonpath='{.spec.holderIdentity}{" renewed "}{.spec.renewTime}{"\n"}' 2>/dev/null || echo "(no lock)"
sr status "$group" || true

cat <<'WAYS'

Safe ways out:
  Pending           another request holds the group's lock: let it finish (the
                    lock expires 5 minutes after its holder stops renewing it).
  StoppingOnSource  the VMs do not stop on the source: see the VM's events on
                    the source cluster; the request fails after its
                    drainTimeoutSeconds. If the source cluster is lost, let it
                    fail, then disaster-failover.sh.
  WaitingForDRBD    DRBD cannot move its primary: kubectl siterecovery validate
                    (links, agents, lost-quorum taints). Fix the link or agent.
  StartingOnTarget  the VMs do not start on the target: see their events there;
                    the request fails after batchBootTimeoutSeconds.
  Never remove DRBD taints, edit DRBDResources or start VMs by hand: the
  failover controller does those under its safety checks.
  Gather everything for support: collect-diagnostics.sh
WAYS
