#!/usr/bin/env bash
# Prints the path of the promlint helper (test/support/promlint: client_golang's promlint and
# Prometheus' PromQL parser), built once with the Go module proxy into the cache and rebuilt when
# its source changes, so a fresh CI machine builds it itself. Usage: bin="$(scripts/ensure-promlint.sh)".
set -euo pipefail

src="$(cd "$(dirname "$0")/../test/support/promlint" && pwd)"
. "$(dirname "$0")/lib/go-tool.sh"
hash="$(cat "$src/go.mod" "$src/go.sum" "$src/main.go" | sha256sum | cut -c1-12)"

build() {
  (cd "$src" && CGO_ENABLED=0 GOFLAGS="-mod=readonly -buildvcs=false" go build -trimpath -ldflags "-s -w" -o "$1/promlint" .)
}
ensure_go_tool promlint "$(go_tool_dir)/promlint-$hash" "" "Go 1.26.7 or newer: Prometheus' parser needs it" build
