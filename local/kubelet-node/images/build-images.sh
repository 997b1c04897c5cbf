#!/usr/bin/env bash
# The kubelet node tier's own images, built without a registry and cached by their inputs:
#   PAUSE_IMAGE: the Pod sandbox, a static pause binary built from pause.c (gcc, static libc);
#   TOOLS_IMAGE: busybox (Debian's busybox-static) for the tier's own test Pods.
# Usage: build-images.sh PAUSE_IMAGE TOOLS_IMAGE — prints the two tars' paths, one a line.
set -euo pipefail
pause_image="${1:?pause image name}" tools_image="${2:?tools image name}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cache="${TETHER_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/tether}/node"
mkdir -p "$cache"
busybox=/bin/busybox

need() { command -v "$1" >/dev/null || [[ -x "$1" ]] || { echo "error: $1 is needed ($2)" >&2; exit 1; }; }
need gcc "apt-get install gcc libc6-dev"
need "$busybox" "apt-get install busybox-static"

pause_tar="$cache/pause-$( (cat "$here/pause.c" "$here/image-tar.sh"; echo "$pause_image") | sha256sum | cut -c1-16).tar"
if [[ ! -f "$pause_tar" ]]; then
  rootfs=$(mktemp -d)
  gcc -static -Os -s -o "$rootfs/pause" "$here/pause.c"
  bash "$here/image-tar.sh" "$pause_image" "$rootfs" '["/pause"]' "$pause_tar"
  rm -rf "$rootfs"
fi

tools_tar="$cache/tools-$( (cat "$busybox" "$here/image-tar.sh"; echo "$tools_image") | sha256sum | cut -c1-16).tar"
if [[ ! -f "$tools_tar" ]]; then
  rootfs=$(mktemp -d)
  mkdir -p "$rootfs/bin" "$rootfs/tmp" && chmod 1777 "$rootfs/tmp"
  cp "$busybox" "$rootfs/bin/busybox"
  for tool in sh cat id ls httpd sleep mkdir echo stat wc; do ln -s busybox "$rootfs/bin/$tool"; done
  bash "$here/image-tar.sh" "$tools_image" "$rootfs" '["/bin/sh"]' "$tools_tar"
  rm -rf "$rootfs"
fi
echo "$pause_tar"
echo "$tools_tar"
