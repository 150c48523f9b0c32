#!/usr/bin/env bash
# Builds kubectl for the runbook tests from the Go module proxy, into a
# per-version cache folder outside the repository (as kube-binaries.sh does for
# kube-apiserver), and prints the binary's path. Debian's kubectl is too old for
# the API servers the tests run.
#
# Usage: hack/kubectl.sh      # builds when missing, prints the path
#
# tools/kubectl/go.mod pins k8s.io/kubernetes and maps its staging modules to
# their published versions.
set -euo pipefail
cd "$(dirname "$0")/.."

KUBE_VERSION="$(awk '$1 == "k8s.io/kubernetes" {print $2; exit}' tools/kubectl/go.mod)"
CACHE_ROOT="${SITERECOVERY_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/siterecovery}"
DEST="$CACHE_ROOT/kubectl-${KUBE_VERSION}"

if [[ ! -x "$DEST/kubectl" ]]; then
  echo "kubectl: building kubectl $KUBE_VERSION (about 4 minutes on 2 cores)" >&2
  mkdir -p "$DEST"
  (cd tools/kubectl && GOTOOLCHAIN="${GOTOOLCHAIN:-local}" CGO_ENABLED=0 \
    go build -trimpath -o "$DEST/kubectl.tmp" k8s.io/kubernetes/cmd/kubectl)
  mv "$DEST/kubectl.tmp" "$DEST/kubectl"
fi
echo "$DEST/kubectl"
