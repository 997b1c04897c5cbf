#!/usr/bin/env bash
# Prints the path of a helm v3 binary. Uses HELM_BIN when set, else builds the pinned version
# once with `go install` through the Go module proxy into the cache (never from GitHub
# releases), so a fresh CI machine gets the same helm. Usage: helm="$(scripts/ensure-helm.sh)".
set -euo pipefail

HELM_VERSION=v3.19.5
# helm's Makefile sets the Kubernetes version that `helm template`/`lint` assume from its
# client-go (v0.34 for helm 3.19); a plain `go install` would leave it at 1.20.
K8S_MAJOR=1 K8S_MINOR=34
cache="${TETHER_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/tether}"
dir="$cache/bin"
bin="$dir/helm-$HELM_VERSION-k8s$K8S_MAJOR.$K8S_MINOR"

if [[ -n "${HELM_BIN:-}" ]]; then
  [[ -x "$HELM_BIN" ]] || { echo "error: HELM_BIN=$HELM_BIN is not an executable" >&2; exit 1; }
  echo "$HELM_BIN"; exit 0
fi
if [[ -x "$bin" ]]; then echo "$bin"; exit 0; fi

if ! command -v go >/dev/null 2>&1; then
  echo "error: Go is needed to build helm $HELM_VERSION (go install helm.sh/helm/v3/cmd/helm)." >&2
  echo "       Install Go 1.24 or newer, or set HELM_BIN to a helm v3 binary." >&2
  exit 1
fi

mkdir -p "$dir"
# One build at a time: a second caller waits, then finds the binary.
exec 9>"$bin.lock"
flock 9
if [[ -x "$bin" ]]; then echo "$bin"; exit 0; fi

echo "[helm] building helm $HELM_VERSION with go install (first run only; a few minutes)" >&2
gobin="$(mktemp -d "$dir/.helm-build.XXXXXX")"
trap 'rm -rf "$gobin"' EXIT
CGO_ENABLED=0 GOBIN="$gobin" GOFLAGS=-mod=mod \
  go install -ldflags "-s -w -X helm.sh/helm/v3/internal/version.version=$HELM_VERSION \
    -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMajor=$K8S_MAJOR -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMinor=$K8S_MINOR \
    -X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMajor=$K8S_MAJOR -X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMinor=$K8S_MINOR" \
  "helm.sh/helm/v3/cmd/helm@$HELM_VERSION" >&2
mv "$gobin/helm" "$bin"
ln -sfn "$(basename "$bin")" "$dir/helm"
echo "$bin"
