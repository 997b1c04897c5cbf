#!/usr/bin/env bash
# Builds kubelet and kube-scheduler from the control plane's wrapper Go module (same
# Kubernetes version) into their own cache folder, once per version. Prints the folder.
set -euo pipefail

K8S_VERSION=v1.34.4
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
module="$here/../control-plane/go/k8s"
cache="${TETHER_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/tether}"
out="$cache/node/k8s-$K8S_VERSION"
wanted=(kubelet kube-scheduler)

complete() { for b in "${wanted[@]}"; do [[ -x "$out/$b" ]] || return 1; done; }
if complete; then echo "$out"; exit 0; fi

if ! command -v go >/dev/null 2>&1; then
  echo "error: Go 1.24 or newer is needed to build kubelet and kube-scheduler." >&2
  exit 1
fi

mkdir -p "$(dirname "$out")"
# One build at a time: a second caller waits, then finds the binaries.
exec 9>"$out.lock"
flock 9
if complete; then echo "$out"; exit 0; fi

log() { echo "[kubelet-node] $*" >&2; }
rm -rf "$out.partial" && mkdir -p "$out.partial"
export CGO_ENABLED=0 GOFLAGS=-mod=mod
ldk8s="-s -w -X k8s.io/component-base/version.gitVersion=$K8S_VERSION -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=34"
start=$(date +%s)
( cd "$module"
  for cmd in "${wanted[@]}"; do
    log "building $cmd $K8S_VERSION (first run only; several minutes)"
    go build -tags selinux,notest -ldflags "$ldk8s" -o "$out.partial/$cmd" "k8s.io/kubernetes/cmd/$cmd"
  done )
rm -rf "$out" && mv "$out.partial" "$out"
log "built in $(( $(date +%s) - start )) s → $out"
echo "$out"
