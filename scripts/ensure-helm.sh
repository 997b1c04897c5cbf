#!/usr/bin/env bash
# Prints the path of a helm v3 binary. Uses HELM_BIN when set, else builds the pinned version
# once with `go install` through the Go module proxy into the cache (never from GitHub
# releases), so a fresh CI machine gets the same helm. Usage: helm="$(scripts/ensure-helm.sh)".
set -euo pipefail

HELM_VERSION=v3.19.5
# helm's Makefile sets the Kubernetes version that `helm template`/`lint` assume from its
# client-go (v0.34 for helm 3.19); a plain `go install` would leave it at 1.20.
K8S_MAJOR=1 K8S_MINOR=34
. "$(dirname "$0")/lib/go-tool.sh"
bin="$(go_tool_dir)/helm-$HELM_VERSION-k8s$K8S_MAJOR.$K8S_MINOR"

build() {
  CGO_ENABLED=0 GOBIN="$1" GOFLAGS=-mod=mod \
    go install -ldflags "-s -w -X helm.sh/helm/v3/internal/version.version=$HELM_VERSION \
    -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMajor=$K8S_MAJOR -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMinor=$K8S_MINOR \
    -X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMajor=$K8S_MAJOR -X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMinor=$K8S_MINOR" \
    "helm.sh/helm/v3/cmd/helm@$HELM_VERSION"
}
ensure_go_tool helm "$bin" HELM_BIN "install Go 1.24 or newer, or set HELM_BIN to a helm v3 binary" build
