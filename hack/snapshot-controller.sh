#!/usr/bin/env bash
# Builds the snapshot-controller of kubernetes-csi/external-snapshotter, which
# binds VolumeSnapshots to VolumeSnapshotContents in the test clusters that take
# snapshots, from the Go module proxy into a per-version cache folder outside
# the repository, and prints the folder.
#
# Usage: hack/snapshot-controller.sh      # builds when missing, prints the folder
#
# tools/snapshot-controller/go.mod pins external-snapshotter.
set -euo pipefail
cd "$(dirname "$0")/.."

MODULE=github.com/kubernetes-csi/external-snapshotter/v8
VERSION="$(awk -v m="$MODULE" '{for (i = 1; i < NF; i++) if ($i == m) {print $(i + 1); exit}}' tools/snapshot-controller/go.mod)"
CACHE_ROOT="${SITERECOVERY_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/siterecovery}"
DEST="$CACHE_ROOT/snapshot-controller-${VERSION}"

if [[ ! -x "$DEST/snapshot-controller" ]]; then
  echo "snapshot-controller: building snapshot-controller $VERSION (about 5 minutes on 2 cores)" >&2
  mkdir -p "$DEST"
  (cd tools/snapshot-controller && GOTOOLCHAIN="${GOTOOLCHAIN:-local}" CGO_ENABLED=0 \
    go build -trimpath -ldflags "-X main.version=$VERSION" -o "$DEST/snapshot-controller.tmp" "$MODULE/cmd/snapshot-controller")
  mv "$DEST/snapshot-controller.tmp" "$DEST/snapshot-controller"
fi
echo "$DEST"
