#!/usr/bin/env bash
# Builds the control plane the integration tests run (etcd, kube-apiserver,
# kube-controller-manager and kube-scheduler), from the Go module proxy only, into
# a per-version cache folder outside the repository.
#
# Usage: hack/kube-binaries.sh        # builds what is missing, prints the folder
#
# kubernetes' own go.mod replaces its staging modules (k8s.io/api, ...) with local
# paths that do not exist in the module zip, so the three kube binaries are built
# through a throwaway wrapper module that maps each staging module to its published
# version. They are built in one go command, which compiles their shared packages
# once.
set -euo pipefail

KUBE_VERSION="${KUBE_VERSION:-v1.37.2}"
ETCD_VERSION="${ETCD_VERSION:-v3.6.16}"
STAGING_VERSION="v0${KUBE_VERSION#v1}"   # v1.37.2 -> v0.37.2
CACHE_ROOT="${SITERECOVERY_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/siterecovery}"
DEST="$CACHE_ROOT/kube-${KUBE_VERSION}-etcd-${ETCD_VERSION}"

log() { echo "kube-binaries: $*" >&2; }

KUBE_COMMANDS=(kube-apiserver kube-controller-manager kube-scheduler)

missing_kube() {
  local c
  for c in "${KUBE_COMMANDS[@]}"; do
    [[ -x "$DEST/$c" ]] || echo "$c"
  done
}

if [[ -x "$DEST/etcd" && -z "$(missing_kube)" ]]; then
  echo "$DEST"
  exit 0
fi
mkdir -p "$DEST"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
export GOFLAGS="${GOFLAGS:-} -mod=mod"
export GOTOOLCHAIN="${GOTOOLCHAIN:-local}"

build_etcd() {
  [[ -x "$DEST/etcd" ]] && return 0
  log "building etcd $ETCD_VERSION (about 2 minutes on 2 cores)"
  local dir="$work/etcd"
  mkdir -p "$dir"
  cat >"$dir/main.go" <<'GO'
// Command etcd is a wrapper around etcdmain so that etcd builds from the module proxy.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
GO
  (cd "$dir" && go mod init siterecovery.local/etcd-wrapper >/dev/null 2>&1 &&
    go get "go.etcd.io/etcd/server/v3@$ETCD_VERSION" >/dev/null &&
    go mod tidy >/dev/null &&
    CGO_ENABLED=0 go build -trimpath -o "$DEST/etcd.tmp" . &&
    mv "$DEST/etcd.tmp" "$DEST/etcd")
}

build_kube() {
  local missing
  mapfile -t missing < <(missing_kube)
  [[ ${#missing[@]} -eq 0 ]] && return 0
  log "building ${missing[*]} $KUBE_VERSION (about 8 minutes on 2 cores for the first, 3 for each more)"
  local dir="$work/kube"
  mkdir -p "$dir"
  local kmod
  kmod="$(go mod download -json "k8s.io/kubernetes@$KUBE_VERSION" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')"
  {
    echo "module siterecovery.local/kube-wrapper"
    echo
    echo "go 1.26"
    echo
    echo "require k8s.io/kubernetes $KUBE_VERSION"
    echo
    # Every "k8s.io/x => ./staging/src/k8s.io/x" becomes "k8s.io/x => k8s.io/x vN".
    grep -E '^\s*k8s\.io/[^ ]+ => \./staging/' "$kmod" |
      awk -v v="$STAGING_VERSION" '{print "replace " $1 " => " $1 " " v}'
  } >"$dir/go.mod"
  {
    echo "//go:build tools"
    echo
    echo "// Package tools pins the kube commands so that go mod tidy keeps their dependencies."
    echo "package tools"
    echo
    for c in "${KUBE_COMMANDS[@]}"; do echo "import _ \"k8s.io/kubernetes/cmd/$c\""; done
  } >"$dir/tools.go"
  local pkgs=() c
  for c in "${missing[@]}"; do pkgs+=("k8s.io/kubernetes/cmd/$c"); done
  mkdir -p "$dir/out"
  (cd "$dir" && go mod tidy >/dev/null &&
    CGO_ENABLED=0 go build -trimpath -o "$dir/out/" "${pkgs[@]}")
  for c in "${missing[@]}"; do mv "$dir/out/$c" "$DEST/$c"; done
}

build_etcd
build_kube
log "ready in $DEST"
echo "$DEST"
