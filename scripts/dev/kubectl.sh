#!/usr/bin/env bash
# Builds kubectl from the Go module proxy (the wrapper module tools/kubectl, at
# the harness's Kubernetes version) into a per-version cache folder outside the
# repository, and prints the binary's path. The distribution's kubectl may be
# too old for the API servers the tests start; scripts that the tests run use
# this one.
#
# Usage: scripts/dev/kubectl.sh        # builds when missing, prints the path
set -euo pipefail
cd "$(dirname "$0")/../.."

version="$(sed -n 's/^[[:space:]]*k8s.io\/kubectl v\(.*\)$/\1/p' tools/kubectl/go.mod)"
cache_root="${SITERECOVERY_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/siterecovery}"
dest="$cache_root/kubectl-v${version}/kubectl"

if [[ ! -x "$dest" ]]; then
  echo "kubectl: building kubectl ${version} from tools/kubectl (about 3 minutes on 2 cores)" >&2
  mkdir -p "$(dirname "$dest")"
  # The staging version v0.X.Y is Kubernetes v1.X.Y.
  (cd tools/kubectl && GOTOOLCHAIN="${GOTOOLCHAIN:-local}" CGO_ENABLED=0 go build -trimpath \
    -ldflags "-X k8s.io/component-base/version.gitVersion=v1.${version#0.} -X k8s.io/component-base/version.gitMajor=1" \
    -o "$dest.tmp" .)
  mv "$dest.tmp" "$dest"
fi
echo "$dest"
