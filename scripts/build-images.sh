#!/usr/bin/env bash
# build-images.sh REGISTRY TAG [COMPONENT...] — builds REGISTRY/tether-<component>:TAG for each
# component (controller, relay, runner; all three by default) from the project's Dockerfiles, with
# BuildKit and host networking. `make images` and `make kind-up` use it.
#
# The engine: the one DOCKER_HOST names or the default one when it answers, else the private engine
# of scripts/ensure-docker.sh. The base image node:24-bookworm-slim comes from
# scripts/ensure-base-image.sh (pulled, or its stand-in when no registry is reachable).
# TLS-intercepting proxies: TETHER_BUILD_CA_BUNDLE (default: the machine's bundle,
# /etc/ssl/certs/ca-certificates.crt, when present; "" for none) goes to npm as the build secret
# ca_bundle — used for the build only, in no layer of the image.
set -euo pipefail
cd "$(dirname "$0")/.."
registry="${1:?usage: build-images.sh REGISTRY TAG [controller|relay|runner...]}"
tag="${2:?usage: build-images.sh REGISTRY TAG [controller|relay|runner...]}"
shift 2
components=("$@")
((${#components[@]})) || components=(controller relay runner)
ca_bundle="${TETHER_BUILD_CA_BUNDLE-/etc/ssl/certs/ca-certificates.crt}"

DOCKER_HOST="$(scripts/ensure-docker.sh)"
export DOCKER_HOST

# A client that builds with BuildKit: one with the buildx plugin, or a classic client (before
# Docker 23, e.g. Debian's /usr/bin/docker) that has BuildKit built in.
buildkit_client() {
  local client major
  for client in $(type -ap docker) /usr/bin/docker; do
    [[ -x $client ]] || continue
    "$client" buildx version >/dev/null 2>&1 && { echo "$client"; return; }
    major="$("$client" version --format '{{.Client.Version}}' 2>/dev/null | cut -d. -f1)"
    [[ $major =~ ^[0-9]+$ ]] && ((major < 23)) && { echo "$client"; return; }
  done
  echo "error: no docker client here builds with BuildKit (install the buildx plugin, or Debian's docker.io)" >&2
  return 1
}
docker="$(buildkit_client)"
export DOCKER_BUILDKIT=1

DOCKER_CLIENT="$docker" scripts/ensure-base-image.sh

secret=()
if [[ -n $ca_bundle && -r $ca_bundle ]]; then
  secret=(--secret "id=ca_bundle,src=$ca_bundle")
elif [[ -n ${TETHER_BUILD_CA_BUNDLE:-} ]]; then
  echo "error: TETHER_BUILD_CA_BUNDLE=$ca_bundle is not readable" >&2; exit 1
fi
for component in "${components[@]}"; do
  case "$component" in
    controller | relay) dockerfile="$component/Dockerfile" ;;
    runner) dockerfile="runner-image/Dockerfile" ;;
    *) echo "error: unknown component '$component' (controller, relay, runner)" >&2; exit 1 ;;
  esac
  image="$registry/tether-$component:$tag"
  echo "[images] building $image from $dockerfile"
  started=$SECONDS
  "$docker" build -f "$dockerfile" -t "$image" --network host "${secret[@]}" --progress plain . >"${TMPDIR:-/tmp}/tether-build-$component.log" 2>&1 \
    || { tail -n 40 "${TMPDIR:-/tmp}/tether-build-$component.log" >&2; echo "error: building $image failed (log above)" >&2; exit 1; }
  size="$("$docker" image inspect --format '{{.Size}}' "$image")"
  echo "[images] built $image: $((size / 1000000)) MB in $((SECONDS - started)) s"
done
