#!/usr/bin/env bash
# release.sh REGISTRY [VERSION] — publishes Tether to REGISTRY (`make release`):
#   1. builds REGISTRY/tether-{controller,relay,runner}:VERSION (scripts/build-images.sh) and pushes them;
#   2. packages the chart as VERSION (chart version and appVersion) with image.registry, image.tag and
#      the pushed images' digests (image.digests.*) set in its values.yaml, lints it, and pushes it
#      to oci://REGISTRY/tether:VERSION.
# VERSION defaults to charts/tether/Chart.yaml's version. A registry on loopback (127.x, localhost,
# [::1]) is spoken to over plain HTTP (docker treats 127.0.0.0/8 as insecure by itself; helm gets
# --plain-http); any other over HTTPS, logged in beforehand (`docker login`, `helm registry login`).
set -euo pipefail
cd "$(dirname "$0")/.."
registry="${1:?usage: release.sh REGISTRY [VERSION]}"
registry="${registry%/}"
version="${2:-}"
[[ -n $version ]] || version="$(sed -n 's/^version: *//p' charts/tether/Chart.yaml | tr -d '"')"
[[ $version =~ ^[0-9]+\.[0-9]+\.[0-9]+([-+][0-9A-Za-z.-]+)?$ ]] ||
  { echo "error: VERSION '$version' is not a semantic version (helm needs one, e.g. 0.1.0)" >&2; exit 1; }
host="${registry%%/*}"
plain_http=()
[[ $host =~ ^(127\.[0-9.]+|localhost|\[::1\])(:[0-9]+)?$ ]] && plain_http=(--plain-http)

scripts/build-images.sh "$registry" "$version"
DOCKER_HOST="$(scripts/ensure-docker.sh)"
export DOCKER_HOST
docker=docker
command -v docker >/dev/null 2>&1 || docker=/usr/bin/docker

pins=()
for component in controller relay runner; do
  image="$registry/tether-$component:$version"
  echo "[release] pushing $image"
  "$docker" push "$image" >"${TMPDIR:-/tmp}/tether-push-$component.log" 2>&1 ||
    { cat "${TMPDIR:-/tmp}/tether-push-$component.log" >&2; echo "error: pushing $image failed" >&2; exit 1; }
  digest="$("$docker" image inspect --format '{{range .RepoDigests}}{{println .}}{{end}}' "$image" |
    sed -n "s|^$registry/tether-$component@||p" | head -n 1)"
  [[ $digest == sha256:* ]] || { echo "error: no digest for $image after the push" >&2; exit 1; }
  echo "[release] $image@$digest"
  pins+=("$component=$digest")
done

helm="$(scripts/ensure-helm.sh)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cp -r charts/tether "$work/tether"
node scripts/pin-release-values.ts "$work/tether/values.yaml" "$registry" "$version" "${pins[@]}"
# The pinned values against the schema, with the README's example values (lint looks nothing up: an
# API server address stands in for the one `helm install` reads from the cluster).
"$helm" lint --strict "$work/tether" -f docs/examples/values-cloud.yaml \
  --set relay.publicUrl=https://tether.example.com --set relay.twilio.whatsappFrom=whatsapp:+14155238886 \
  --set 'networkPolicy.apiServer.cidrs={192.0.2.10/32}' \
  >"$work/lint.log" 2>&1 || { cat "$work/lint.log" >&2; exit 1; }
"$helm" package "$work/tether" --version "$version" --app-version "$version" -d "$work" >/dev/null
"$helm" push "$work/tether-$version.tgz" "oci://$registry" "${plain_http[@]}"
echo "[release] chart: oci://$registry/tether --version $version"
