#!/usr/bin/env bash
# Prints the path of the promlint helper (test/support/promlint: client_golang's promlint and
# Prometheus' PromQL parser), built once with the Go module proxy into the cache and rebuilt when
# its source changes, so a fresh CI machine builds it itself. Usage: bin="$(scripts/ensure-promlint.sh)".
set -euo pipefail

src="$(cd "$(dirname "$0")/../test/support/promlint" && pwd)"
cache="${TETHER_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/tether}"
dir="$cache/bin"
hash="$(cat "$src/go.mod" "$src/go.sum" "$src/main.go" | sha256sum | cut -c1-12)"
bin="$dir/promlint-$hash"

if [[ -x "$bin" ]]; then echo "$bin"; exit 0; fi
if ! command -v go >/dev/null 2>&1; then
  echo "error: Go 1.26 or newer is needed to build the promlint helper ($src)." >&2
  exit 1
fi

mkdir -p "$dir"
# One build at a time: a second caller waits, then finds the binary.
exec 9>"$bin.lock"
flock 9
if [[ -x "$bin" ]]; then echo "$bin"; exit 0; fi

echo "[promlint] building the promlint helper with go build (first run only; about a minute)" >&2
out="$(mktemp "$dir/.promlint-build.XXXXXX")"
trap 'rm -f "$out"' EXIT
(cd "$src" && CGO_ENABLED=0 GOFLAGS="-mod=readonly -buildvcs=false" go build -trimpath -ldflags "-s -w" -o "$out" .) >&2
mv "$out" "$bin"
echo "$bin"
