#!/usr/bin/env bash
# failback.sh: move a protection group back to its zone's primary-role cluster.
#
# When to use: after a failover, once the primary site works again and
#   `kubectl siterecovery status GROUP` shows replication back in sync.
# What it does: runs `kubectl siterecovery validate group GROUP` and stops on
#   any problem; then `kubectl siterecovery failback GROUP --wait`, a planned
#   failover to the primary-role cluster, printing the phases and timeline.
# How to undo: planned-failover.sh GROUP DR-CLUSTER.
#
# Usage: failback.sh [-n DR-NAMESPACE] [-r REASON] GROUP
set -euo pipefail
# shellcheck source=scripts/lib/common.sh
source "$(dirname "$0")/lib/common.sh"

reason="failback (failback.sh)"
while getopts "n:r:h" opt; do
  case "$opt" in
    n) NAMESPACE="$OPTARG" ;;
    r) reason="$OPTARG" ;;
    *) sed -n '2,13p' "$0"; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
[[ $# -eq 1 ]] || { sed -n '2,13p' "$0"; exit 2; }
group="$1"

preflight "$group"
say "failing $group back to its primary-role cluster"
sr failback "$group" --wait --reason "$reason"
say "done; check with: kubectl siterecovery status $group"
