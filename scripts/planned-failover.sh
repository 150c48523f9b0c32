#!/usr/bin/env bash
# planned-failover.sh: move a protection group to another cluster of its zone
# with no data loss.
#
# When to use: planned maintenance or a site move, while both clusters work.
#   If the source cluster is down, use disaster-failover.sh instead.
# What it does: runs `kubectl siterecovery validate group GROUP` and stops on
#   any problem; then creates a planned FailoverRequest and follows it to the
#   end (`failover --wait`): the VMs stop on the source, DRBD moves its primary,
#   the VMs start on the target, and the request's timeline is printed.
# How to undo: failback.sh GROUP (a planned failover back to the primary-role
#   cluster), or planned-failover.sh GROUP ORIGINAL-CLUSTER.
#
# Usage: planned-failover.sh [-n DR-NAMESPACE] [-r REASON] GROUP TARGET-CLUSTER
set -euo pipefail
# shellcheck source=scripts/lib/common.sh
source "$(dirname "$0")/lib/common.sh"

reason="planned failover (planned-failover.sh)"
while getopts "n:r:h" opt; do
  case "$opt" in
    n) NAMESPACE="$OPTARG" ;;
    r) reason="$OPTARG" ;;
    *) sed -n '2,15p' "$0"; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
[[ $# -eq 2 ]] || { sed -n '2,15p' "$0"; exit 2; }
group="$1" target="$2"

preflight "$group"
say "failing over $group to $target"
sr failover "$group" --to "$target" --wait --reason "$reason"
say "done; check with: kubectl siterecovery status $group"
