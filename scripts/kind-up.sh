#!/usr/bin/env bash
# make kind-up: a kind cluster (Docker) with Tether installed from this checkout — builds the
# three images, loads them into the cluster, `helm upgrade --install`s the chart, and prints
# how to reach the relay. Settings: TETHER_KIND_CLUSTER (tether), TETHER_NAMESPACE (tether),
# TETHER_REPO_URL (the repository the agent works on), and the chart's secrets from
# ANTHROPIC_API_KEY / GITHUB_TOKEN when set.
set -euo pipefail
cd "$(dirname "$0")/.."

cluster="${TETHER_KIND_CLUSTER:-tether}"
namespace="${TETHER_NAMESPACE:-tether}"
registry="tether.local"
tag="dev"
cache="${TETHER_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/tether}"
KIND_VERSION=v0.31.0

fail() { echo "error: $*" >&2; exit 1; }
command -v docker >/dev/null 2>&1 || fail "docker is needed for make kind-up (https://docs.docker.com/get-docker/); without Docker use 'make dev'"
docker info >/dev/null 2>&1 || fail "no Docker engine answers ('docker info' failed); start Docker, or use 'make dev'"
command -v kubectl >/dev/null 2>&1 || fail "kubectl is needed (https://kubernetes.io/docs/tasks/tools/)"
kind="$(command -v kind || true)"
if [[ -z "$kind" ]]; then
  command -v go >/dev/null 2>&1 || fail "kind is needed: install it, or install Go so this script can ('go install sigs.k8s.io/kind@$KIND_VERSION')"
  GOBIN="$cache/bin" go install "sigs.k8s.io/kind@$KIND_VERSION"
  kind="$cache/bin/kind"
fi
helm="$(scripts/ensure-helm.sh)"

if ! "$kind" get clusters 2>/dev/null | grep -qx "$cluster"; then
  "$kind" create cluster --name "$cluster" --wait 120s
fi

scripts/build-images.sh "$registry" "$tag"
for component in controller relay runner; do
  "$kind" load docker-image --name "$cluster" "$registry/tether-$component:$tag"
done

secrets=()
[[ -n "${ANTHROPIC_API_KEY:-}" ]] && secrets+=(--set-string "secrets.runner.anthropicApiKey=$ANTHROPIC_API_KEY")
[[ -n "${GITHUB_TOKEN:-}" ]] && secrets+=(--set-string "secrets.runner.githubToken=$GITHUB_TOKEN")

"$helm" upgrade --install tether charts/tether --namespace "$namespace" --create-namespace \
  --kube-context "kind-$cluster" \
  --set-string image.registry="$registry" --set-string image.tag="$tag" --set-string image.pullPolicy=Never \
  --set relay.webChat.enabled=true --set-string relay.publicUrl=http://localhost:8080 \
  --set-string relay.repo.url="${TETHER_REPO_URL:-https://github.com/example/example.git}" \
  --set relay.media.persistence.enabled=false \
  "${secrets[@]}" --wait --timeout 5m

cat <<TXT

  Tether is installed in kind cluster "$cluster", namespace "$namespace".

  Reach the relay:   kubectl --context kind-$cluster -n $namespace port-forward svc/tether-relay 8080:80
  Web chat token:    kubectl --context kind-$cluster -n $namespace get secret tether-relay -o jsonpath='{.data.RELAY_WEB_CHAT_TOKEN}' | base64 -d
  Then open:         http://localhost:8080/chat?token=<token>
  Sessions:          kubectl --context kind-$cluster -n $namespace get sessions -w
  Remove:            kind delete cluster --name $cluster

TXT
