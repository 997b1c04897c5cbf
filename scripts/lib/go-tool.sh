# Sourced by the scripts/ensure-*.sh that build a Go tool once into the cache (~/.cache/tether/bin)
# through the Go module proxy, never from GitHub releases, so a fresh CI machine builds the same one.
#
#   ensure_go_tool NAME BIN OVERRIDE_VAR HINT BUILD
# prints BIN's path. OVERRIDE_VAR names an environment variable that may point at a prebuilt binary
# (empty: none). Otherwise BIN is built once — a second caller waits for the first, then finds it —
# by running `BUILD OUT`, which must leave the binary at OUT/NAME. HINT says how to get the tool
# without this machine's Go.

go_tool_dir() { echo "${TETHER_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/tether}/bin"; }

ensure_go_tool() {
  local name=$1 bin=$2 override=$3 hint=$4 build=$5
  local given=${override:+${!override:-}}
  if [[ -n $given ]]; then
    [[ -x $given ]] || { echo "error: $override=$given is not an executable" >&2; return 1; }
    echo "$given"
    return
  fi
  if [[ -x $bin ]]; then echo "$bin"; return; fi
  if ! command -v go >/dev/null 2>&1; then
    echo "error: Go is needed to build $name ($hint)." >&2
    return 1
  fi
  mkdir -p "$(dirname "$bin")"
  exec 9>"$bin.lock"
  flock 9
  if [[ -x $bin ]]; then echo "$bin"; return; fi
  echo "[$name] building $(basename "$bin") with Go (first run only; a minute or more)" >&2
  local out
  out="$(mktemp -d "$(dirname "$bin")/.$name-build.XXXXXX")"
  if ! "$build" "$out" >&2; then
    rm -rf "$out"
    return 1
  fi
  mv "$out/$name" "$bin"
  rm -rf "$out"
  echo "$bin"
}
