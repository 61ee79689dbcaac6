#!/usr/bin/env bash
# Builds etcd and kube-apiserver from source through the Go module proxy and caches the
# binaries under .cache/controlplane/<versions>/ (git-ignored). A second run with the binaries
# present does nothing. Prints the folder holding the binaries on stdout as its last line.
#
# Both modules carry replace directives, so `go install` cannot build them; each is built from
# a throwaway wrapper module instead.
set -euo pipefail

KUBE_VERSION=${KUBE_VERSION:-v1.37.1}
ETCD_VERSION=${ETCD_VERSION:-v3.6.16}
root=$(cd "$(dirname "$0")/../.." && pwd)
out="$root/.cache/controlplane/kube-${KUBE_VERSION}-etcd-${ETCD_VERSION}"
work="$root/.cache/controlplane/build"

step() { printf '[controlplane] %s\n' "$*" >&2; }

if [[ -x "$out/etcd" && -x "$out/kube-apiserver" ]]; then
  echo "$out"
  exit 0
fi
mkdir -p "$out" "$work"

if [[ ! -x "$out/etcd" ]]; then
  step "building etcd ${ETCD_VERSION} (cold: about a minute)"
  d="$work/etcd"; rm -rf "$d"; mkdir -p "$d"
  cat >"$d/main.go" <<'GO'
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
GO
  (cd "$d" && go mod init controlplane/etcd >/dev/null 2>&1 \
    && go get "go.etcd.io/etcd/server/v3@${ETCD_VERSION}" >&2 \
    && go mod tidy >&2 \
    && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$out/etcd.tmp" . >&2)
  mv "$out/etcd.tmp" "$out/etcd"
  step "etcd ready"
fi

if [[ ! -x "$out/kube-apiserver" ]]; then
  step "building kube-apiserver ${KUBE_VERSION} (cold: about eight minutes, ~3 GB RAM at link)"
  d="$work/apiserver"; rm -rf "$d"; mkdir -p "$d"
  step "reading the staging modules of k8s.io/kubernetes ${KUBE_VERSION}"
  gomod=$(go mod download -json "k8s.io/kubernetes@${KUBE_VERSION}" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')
  staging_version="v0${KUBE_VERSION#v1}"
  {
    echo "module controlplane/apiserver"
    echo
    echo "go 1.26"
    echo
    echo "tool k8s.io/kubernetes/cmd/kube-apiserver"
    echo
    echo "require k8s.io/kubernetes ${KUBE_VERSION}"
    echo
    echo "replace ("
    awk '/^replace \(/{on=1;next} on&&/^\)/{on=0} on{print $1}' "$gomod" | sort -u | while read -r m; do
      echo "	$m => $m ${staging_version}"
    done
    echo ")"
  } >"$d/go.mod"
  step "resolving modules ($(grep -c '=>' "$d/go.mod") staging replacements)"
  (cd "$d" && go mod tidy >&2)
  ver="${KUBE_VERSION#v}"; major=${ver%%.*}; rest=${ver#*.}; minor=${rest%%.*}
  ld="-s -w"
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ld+=" -X $pkg.gitVersion=${KUBE_VERSION} -X $pkg.gitMajor=${major} -X $pkg.gitMinor=${minor} -X $pkg.gitTreeState=clean"
  done
  step "compiling kube-apiserver"
  (cd "$d" && CGO_ENABLED=0 go build -trimpath -ldflags "$ld" -o "$out/kube-apiserver.tmp" k8s.io/kubernetes/cmd/kube-apiserver >&2)
  mv "$out/kube-apiserver.tmp" "$out/kube-apiserver"
  step "kube-apiserver ready"
fi
rm -rf "$work"
echo "$out"
