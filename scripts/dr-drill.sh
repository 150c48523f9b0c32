#!/usr/bin/env bash
# dr-drill.sh: rehearse a failover without touching production.
#
# When to use: regularly (for example monthly) and after changes, to prove the
#   DR copies boot.
# What it does: runs `kubectl siterecovery validate group GROUP` (problems are
#   reported, not fatal: the drill shows their effect), then
#   `kubectl siterecovery test-failover GROUP --wait`: snapshots of the DR
#   replicas boot in an isolated namespace on the DR cluster and are checked;
#   the check results are printed; the controller removes the test VMs and
#   snapshots, and the finished TestFailover is deleted (-k keeps it).
#   Production VMs and replication are not touched.
# How to undo: nothing to undo. A drill interrupted with Ctrl-C goes on and
#   cleans up by itself; to stop it early: kubectl delete testfailover NAME.
#
# Usage: dr-drill.sh [-n DR-NAMESPACE] [-k] GROUP
set -euo pipefail
# shellcheck source=scripts/lib/common.sh
source "$(dirname "$0")/lib/common.sh"

keep=()
while getopts "n:kh" opt; do
  case "$opt" in
    n) NAMESPACE="$OPTARG" ;;
    k) keep=(--keep) ;;
    *) sed -n '2,17p' "$0"; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
[[ $# -eq 1 ]] || { sed -n '2,17p' "$0"; exit 2; }
group="$1"

say "validate group $group"
sr validate group "$group" || say "validate reported problems (above); the drill goes on"
say "test failover of $group"
sr test-failover "$group" --wait "${keep[@]}"
say "drill passed"
