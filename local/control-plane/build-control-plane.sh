#!/usr/bin/env bash
# Builds kube-apiserver, kube-controller-manager, kubectl and etcd from the Go module
# proxy (wrapper modules in local/control-plane/go) into a cache folder, once per version.
# Prints the folder that holds the binaries. Honours KUBEBUILDER_ASSETS when it already
# holds kube-apiserver and etcd.
set -euo pipefail

K8S_VERSION=v1.34.4
ETCD_VERSION=v3.6.16
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cache="${TETHER_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/tether}"
out="$cache/control-plane/k8s-$K8S_VERSION-etcd-$ETCD_VERSION"

if [[ -n "${KUBEBUILDER_ASSETS:-}" && -x "$KUBEBUILDER_ASSETS/kube-apiserver" && -x "$KUBEBUILDER_ASSETS/etcd" ]]; then
  echo "$KUBEBUILDER_ASSETS"
  exit 0
fi

wanted=(kube-apiserver kube-controller-manager kubectl etcd)
missing=0
for b in "${wanted[@]}"; do [[ -x "$out/$b" ]] || missing=1; done
if [[ $missing == 0 ]]; then echo "$out"; exit 0; fi

if ! command -v go >/dev/null 2>&1; then
  echo "error: Go is needed to build the local control plane (kube-apiserver, etcd)." >&2
  echo "       Install Go 1.24 or newer (https://go.dev/doc/install, or 'apt-get install golang')," >&2
  echo "       or set KUBEBUILDER_ASSETS to a folder that holds kube-apiserver and etcd." >&2
  exit 1
fi

mkdir -p "$(dirname "$out")"
# One build at a time: a second caller waits, then finds the binaries.
exec 9>"$out.lock"
flock 9
missing=0
for b in "${wanted[@]}"; do [[ -x "$out/$b" ]] || missing=1; done
if [[ $missing == 0 ]]; then echo "$out"; exit 0; fi

rm -rf "$out.partial" && mkdir -p "$out.partial"
log() { echo "[control-plane] $*" >&2; }
export CGO_ENABLED=0 GOFLAGS=-mod=mod
ldk8s="-s -w -X k8s.io/component-base/version.gitVersion=$K8S_VERSION -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=34"

start=$(date +%s)
( cd "$here/go/k8s"
  for cmd in kube-apiserver kube-controller-manager kubectl; do
    [[ -x "$out/$cmd" ]] && { cp "$out/$cmd" "$out.partial/$cmd"; continue; }
    log "building $cmd $K8S_VERSION (first run only; several minutes)"
    go build -tags selinux,notest -ldflags "$ldk8s" -o "$out.partial/$cmd" "k8s.io/kubernetes/cmd/$cmd"
  done )
( cd "$here/go/etcd"
  if [[ -x "$out/etcd" ]]; then cp "$out/etcd" "$out.partial/etcd"; else
    log "building etcd $ETCD_VERSION"
    go build -ldflags "-s -w" -o "$out.partial/etcd" go.etcd.io/etcd/server/v3
  fi )
rm -rf "$out" && mv "$out.partial" "$out"
log "built in $(( $(date +%s) - start )) s → $out"
echo "$out"
