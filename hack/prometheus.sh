#!/usr/bin/env bash
# Builds Prometheus's prometheus and promtool commands from the Go module proxy
# into a per-version cache folder outside the repository, and prints the
# folder. promtool runs the alert rules' unit tests (test/alerts); prometheus
# is the sandbox's opt-in Prometheus (make sandbox PROMETHEUS=1) and the alert
# end-to-end test's (make test-alerts-e2e).
#
# Usage: hack/prometheus.sh            # both, when missing; prints the folder
#        hack/prometheus.sh promtool   # promtool only (what make test needs)
#
# tools/promtool/go.mod pins github.com/prometheus/prometheus. The build tag
# remove_all_sd leaves out every service discovery but file and HTTP (the
# plugins/plugin_*.go files of that module): static targets are all we scrape,
# and the cloud SDKs would triple the build.
set -euo pipefail
cd "$(dirname "$0")/.."

PROM_VERSION="$(awk '$1 == "github.com/prometheus/prometheus" {print $2; exit}' tools/promtool/go.mod)"
CACHE_ROOT="${SITERECOVERY_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/siterecovery}"
DEST="$CACHE_ROOT/prometheus-${PROM_VERSION}"

cmds=("$@")
[[ ${#cmds[@]} -gt 0 ]] || cmds=(promtool prometheus)
for cmd in "${cmds[@]}"; do
  case "$cmd" in
  promtool | prometheus) ;;
  *) echo "prometheus.sh: unknown command $cmd (promtool or prometheus)" >&2; exit 2 ;;
  esac
  if [[ ! -x "$DEST/$cmd" ]]; then
    echo "prometheus: building $cmd $PROM_VERSION (a few minutes on 2 cores)" >&2
    mkdir -p "$DEST"
    (cd tools/promtool && GOTOOLCHAIN="${GOTOOLCHAIN:-local}" CGO_ENABLED=0 \
      go build -trimpath -tags remove_all_sd -o "$DEST/$cmd.tmp" "github.com/prometheus/prometheus/cmd/$cmd")
    mv "$DEST/$cmd.tmp" "$DEST/$cmd"
  fi
done
echo "$DEST"
