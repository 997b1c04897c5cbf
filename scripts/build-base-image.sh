#!/usr/bin/env bash
# build-base-image.sh DOCKER IMAGE MIRROR NODE_PACKAGE NPM_PACKAGE — builds the stand-in for
# node:24-bookworm-slim (see ensure-base-image.sh) and imports it into the engine as IMAGE: Debian
# bookworm minbase slimmed the way Debian's slim images are, plus Node.js laid out in /usr/local as
# the official image does, with its entrypoint and CMD. Labelled dev.tether.stand-in=<hash of this
# file>: a change here builds a new stand-in. Needs root (debootstrap).
set -euo pipefail
docker="$1" image="$2" mirror="$3" node_package="$4" npm_package="$5"
recipe="$(sha256sum "$0" | cut -c1-12)"
work="$(mktemp -d)"
rootfs="$work/rootfs"
# A debootstrap that failed half-way may leave /proc, /sys or /dev mounted in the root: never follow them.
trap 'rm -rf --one-file-system "$work"' EXIT

debootstrap --variant=minbase bookworm "$rootfs" "$mirror" >"$work/debootstrap.log" 2>&1 \
  || { tail -n 30 "$work/debootstrap.log" >&2; exit 1; }

# Debian's slim images: no documentation, manual pages or translations, now or from later installs.
cat >"$rootfs/etc/dpkg/dpkg.cfg.d/docker" <<'CFG'
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/groff/*
path-exclude /usr/share/info/*
path-exclude /usr/share/linda/*
path-exclude /usr/share/lintian/overrides/*
path-exclude /usr/share/locale/*
path-include /usr/share/locale/locale.alias
path-exclude /usr/share/man/*
CFG
find "$rootfs/usr/share/doc" -mindepth 1 -not -name copyright -not -type d -delete
find "$rootfs/usr/share/doc" -mindepth 1 -type d -empty -delete
find "$rootfs/usr/share/locale" -mindepth 1 -maxdepth 1 -not -name locale.alias -exec rm -rf {} +
rm -rf "$rootfs"/usr/share/{man,info,groff,linda}/* "$rootfs/usr/share/lintian/overrides"
# …and their apt settings: no package caches or translations kept after apt runs.
cat >"$rootfs/etc/apt/apt.conf.d/docker-clean" <<'CFG'
DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
APT::Update::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
Dir::Cache::pkgcache "";
Dir::Cache::srcpkgcache "";
CFG
echo 'Acquire::Languages "none";' >"$rootfs/etc/apt/apt.conf.d/docker-no-languages"
echo 'Acquire::GzipIndexes "true";' >"$rootfs/etc/apt/apt.conf.d/docker-gzip-indexes"
echo 'Apt::AutoRemove::SuggestsImportant "false";' >"$rootfs/etc/apt/apt.conf.d/docker-autoremove-suggests"
# The official image's sources: the release, its updates and its security updates.
rm -f "$rootfs/etc/apt/sources.list"
cat >"$rootfs/etc/apt/sources.list.d/debian.sources" <<CFG
Types: deb
URIs: $mirror
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: ${mirror%/debian}/debian-security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
CFG
rm -rf "$rootfs"/var/cache/apt/* "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/log/* "$rootfs"/var/cache/debconf/*-old \
  "$rootfs/etc/hostname" "$rootfs/etc/resolv.conf"
: >"$rootfs/etc/machine-id"

# The official image's user for Node: node:node, 1000:1000.
chroot "$rootfs" groupadd --gid 1000 node
chroot "$rootfs" useradd --uid 1000 --gid node --shell /bin/bash --create-home node

# Node.js as the official tarball lays it out under /usr/local (bin, include, share), npm in
# /usr/local/lib/node_modules/npm with its two commands.
(cd "$work" && npm pack --silent "$node_package" "$npm_package" >/dev/null 2>&1) \
  || { echo "error: npm pack $node_package $npm_package failed" >&2; exit 1; }
mkdir -p "$work/node" "$rootfs/usr/local/lib/node_modules/npm"
tar -xzf "$work"/node-linux-*.tgz -C "$work/node" --strip-components=1 --no-same-owner
cp -a "$work/node/bin" "$work/node/include" "$work/node/share" "$rootfs/usr/local/"
tar -xzf "$work"/npm-*.tgz -C "$rootfs/usr/local/lib/node_modules/npm" --strip-components=1 --no-same-owner
ln -s ../lib/node_modules/npm/bin/npm-cli.js "$rootfs/usr/local/bin/npm"
ln -s ../lib/node_modules/npm/bin/npx-cli.js "$rootfs/usr/local/bin/npx"
ln -s node "$rootfs/usr/local/bin/nodejs"

# The official entrypoint: arguments that are no command run under node.
cat >"$rootfs/usr/local/bin/docker-entrypoint.sh" <<'SH'
#!/bin/sh
set -e
if [ "${1#-}" != "${1}" ] || [ -z "$(command -v "${1}")" ] || { [ -f "${1}" ] && ! [ -x "${1}" ]; }; then
  set -- node "$@"
fi
exec "$@"
SH
chmod 755 "$rootfs/usr/local/bin/docker-entrypoint.sh"

node_version="$("$rootfs/usr/local/bin/node" --version)"
tar -C "$rootfs" --numeric-owner -c . | "$docker" import \
  --change "ENV NODE_VERSION=${node_version#v}" \
  --change "LABEL dev.tether.stand-in=$recipe" \
  --change 'ENTRYPOINT ["docker-entrypoint.sh"]' \
  --change 'CMD ["node"]' \
  - "$image" >/dev/null
echo "$node_version"
