#!/usr/bin/env bash
# Builds helm for the test of docs/install.md and the charts' renders in tests
# and the sandbox (test/chartrender) from the Go module proxy, into a
# per-version cache folder outside the repository (as kubectl.sh does), and
# prints the binary's path.
#
# Usage: hack/helm.sh      # builds when missing, prints the path
#
# tools/helm/go.mod pins helm.sh/helm/v3.
set -euo pipefail
cd "$(dirname "$0")/.."

HELM_VERSION="$(awk '$1 == "helm.sh/helm/v3" {print $2; exit}' tools/helm/go.mod)"
CACHE_ROOT="${SITERECOVERY_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/siterecovery}"
DEST="$CACHE_ROOT/helm-${HELM_VERSION}"

if [[ ! -x "$DEST/helm" ]]; then
  echo "helm: building helm $HELM_VERSION (about 2 minutes on 2 cores)" >&2
  mkdir -p "$DEST"
  (cd tools/helm && GOTOOLCHAIN="${GOTOOLCHAIN:-local}" CGO_ENABLED=0 \
    go build -trimpath -o "$DEST/helm.tmp" helm.sh/helm/v3/cmd/helm)
  mv "$DEST/helm.tmp" "$DEST/helm"
fi
echo "$DEST/helm"
