#!/usr/bin/env bash
# Builds kwok, which plays the test clusters' nodes and their pods' lifecycle,
# from the Go module proxy into a per-version cache folder outside the
# repository, writes the Stages it runs with beside it, and prints the folder.
#
# Usage: hack/kwok.sh      # builds when missing, prints the folder
#
# tools/kwok/go.mod pins sigs.k8s.io/kwok.
set -euo pipefail
cd "$(dirname "$0")/.."

KWOK_VERSION="$(awk '{for (i = 1; i < NF; i++) if ($i == "sigs.k8s.io/kwok") {print $(i + 1); exit}}' tools/kwok/go.mod)"
CACHE_ROOT="${SITERECOVERY_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/siterecovery}"
DEST="$CACHE_ROOT/kwok-${KWOK_VERSION}"

if [[ ! -x "$DEST/kwok" || ! -s "$DEST/stages.yaml" ]]; then
  echo "kwok: building kwok $KWOK_VERSION (about 3 minutes on 2 cores)" >&2
  mkdir -p "$DEST"
  (cd tools/kwok && export GOTOOLCHAIN="${GOTOOLCHAIN:-local}" CGO_ENABLED=0 &&
    go build -trimpath -o "$DEST/kwok.tmp" sigs.k8s.io/kwok/cmd/kwok &&
    go run ./stages >"$DEST/stages.yaml.tmp")
  mv "$DEST/kwok.tmp" "$DEST/kwok"
  mv "$DEST/stages.yaml.tmp" "$DEST/stages.yaml"
fi
echo "$DEST"
