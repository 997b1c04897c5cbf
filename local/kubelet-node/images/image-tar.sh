#!/usr/bin/env bash
# Writes a one-layer image in `docker save` format (what `ctr images import` loads) from a
# folder: no registry, no Docker. Usage: image-tar.sh NAME ROOTFS ENTRYPOINT_JSON OUT
set -euo pipefail
name="$1" rootfs="$2" entrypoint="$3" out="$4"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
tar --numeric-owner --owner=0 --group=0 --mtime=@0 --sort=name -C "$rootfs" -cf "$work/layer.tar" .
layer=$(sha256sum "$work/layer.tar" | cut -d' ' -f1)
mkdir -p "$work/image/$layer" && mv "$work/layer.tar" "$work/image/$layer/layer.tar"
printf '{"architecture":"amd64","os":"linux","config":{"Entrypoint":%s},"rootfs":{"type":"layers","diff_ids":["sha256:%s"]}}' \
  "$entrypoint" "$layer" >"$work/config.json"
config=$(sha256sum "$work/config.json" | cut -d' ' -f1)
mv "$work/config.json" "$work/image/$config.json"
printf '[{"Config":"%s.json","RepoTags":["%s"],"Layers":["%s/layer.tar"]}]' "$config" "$name" "$layer" >"$work/image/manifest.json"
tar --numeric-owner --owner=0 --group=0 --mtime=@0 -C "$work/image" -cf "$out.partial" .
mv "$out.partial" "$out"
