#!/usr/bin/env bash
# collect-diagnostics.sh: write a support bundle for a DR namespace.
#
# When to use: before opening a support case, or right after an incident,
#   before evidence (events, logs) ages out.
# What it does: `kubectl siterecovery gather`: a tar.gz with the DR namespace's
#   objects on the quorum cluster, the related objects, events and logs on each
#   workload cluster it can reach, the status and validate reports and a README.
#   Secret data and tokens are redacted. It only reads.
# How to undo: delete the bundle file.
#
# Usage: collect-diagnostics.sh [-n DR-NAMESPACE] [-s SINCE (default 24h)] [-d DIR]
set -euo pipefail
# shellcheck source=scripts/lib/common.sh
source "$(dirname "$0")/lib/common.sh"

since=24h dir=.
while getopts "n:s:d:h" opt; do
  case "$opt" in
    n) NAMESPACE="$OPTARG" ;;
    s) since="$OPTARG" ;;
    d) dir="$OPTARG" ;;
    *) sed -n '2,12p' "$0"; exit 2 ;;
  esac
done
say "kubectl $(kubectl version --client 2>/dev/null | head -1)"
sr gather --since "$since" --dir "$dir"
