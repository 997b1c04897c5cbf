#!/usr/bin/env bash
# Prints the path of a CNCF distribution registry binary (the `registry` of
# github.com/distribution/distribution/v3). Uses REGISTRY_BIN when set, else builds the pinned
# version once with `go install` through the Go module proxy into the cache (never from GitHub
# releases or an image registry), as scripts/ensure-helm.sh does for helm.
#
#   registry="$(scripts/ensure-registry.sh)"
#   scripts/ensure-registry.sh serve DIR [ADDR]   # runs it in the foreground: a filesystem store
#                                                 # under DIR, plain HTTP on ADDR (127.0.0.1:5000)
set -euo pipefail

REGISTRY_VERSION=v3.1.2
. "$(dirname "$0")/lib/go-tool.sh"

build() {
  CGO_ENABLED=0 GOBIN="$1" GOFLAGS=-mod=mod \
    go install -ldflags "-s -w -X github.com/distribution/distribution/v3/version.version=$REGISTRY_VERSION" \
    "github.com/distribution/distribution/v3/cmd/registry@$REGISTRY_VERSION"
}
binary() {
  ensure_go_tool registry "$(go_tool_dir)/registry-$REGISTRY_VERSION" REGISTRY_BIN \
    "install Go 1.24 or newer, or set REGISTRY_BIN to a registry binary" build
}

if [[ ${1:-} == serve ]]; then
  store="${2:?usage: ensure-registry.sh serve DIR [ADDR]}"
  addr="${3:-127.0.0.1:5000}"
  registry="$(binary)"
  mkdir -p "$store"
  config="$store/config.yml"
  # Loopback only, plain HTTP, no auth: a registry for this machine's tests and releases.
  cat >"$config" <<YAML
version: 0.1
log:
  level: warn
  accesslog:
    disabled: true
storage:
  filesystem:
    rootdirectory: $store/data
  delete:
    enabled: true
http:
  addr: $addr
YAML
  exec "$registry" serve "$config"
fi
binary
