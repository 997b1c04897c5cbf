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
cache="${TETHER_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/tether}"
dir="$cache/bin"
bin="$dir/registry-$REGISTRY_VERSION"

binary() {
  if [[ -n "${REGISTRY_BIN:-}" ]]; then
    [[ -x "$REGISTRY_BIN" ]] || { echo "error: REGISTRY_BIN=$REGISTRY_BIN is not an executable" >&2; exit 1; }
    echo "$REGISTRY_BIN"; return
  fi
  if [[ -x "$bin" ]]; then echo "$bin"; return; fi
  if ! command -v go >/dev/null 2>&1; then
    echo "error: Go is needed to build the registry $REGISTRY_VERSION" >&2
    echo "       (go install github.com/distribution/distribution/v3/cmd/registry)." >&2
    echo "       Install Go 1.24 or newer, or set REGISTRY_BIN to a registry binary." >&2
    exit 1
  fi
  mkdir -p "$dir"
  # One build at a time: a second caller waits, then finds the binary.
  exec 9>"$bin.lock"
  flock 9
  if [[ -x "$bin" ]]; then echo "$bin"; return; fi
  echo "[registry] building the distribution registry $REGISTRY_VERSION with go install (first run only)" >&2
  gobin="$(mktemp -d "$dir/.registry-build.XXXXXX")"
  trap 'rm -rf "$gobin"' EXIT
  CGO_ENABLED=0 GOBIN="$gobin" GOFLAGS=-mod=mod \
    go install -ldflags "-s -w -X github.com/distribution/distribution/v3/version.version=$REGISTRY_VERSION" \
    "github.com/distribution/distribution/v3/cmd/registry@$REGISTRY_VERSION" >&2
  mv "$gobin/registry" "$bin"
  echo "$bin"
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
