#!/usr/bin/env bash
# Prints the DOCKER_HOST of a Docker engine that answers, starting a private one when none does.
#
#   export DOCKER_HOST="$(scripts/ensure-docker.sh)"   # then any docker client talks to it
#   scripts/ensure-docker.sh stop                      # stops the private engine, if this script started one
#
# An engine already answering (DOCKER_HOST, or the default socket) is used as it is. Otherwise this
# starts Debian's dockerd (package docker.io) for this project alone, with everything under
# ${TETHER_CACHE_DIR:-~/.cache/tether}/docker: no bridge, no iptables rules, no IP forwarding or
# masquerading — containers run with `--network host` only, so no private address range is ever
# created or used. Idempotent: a second call finds the running engine and prints the same address.
# One line on stderr when it starts an engine; the engine's log is docker/dockerd.log. Like any
# dockerd 20.10, it uses a containerd listening at /run/containerd/containerd.sock, else its own.
set -euo pipefail
cache="${TETHER_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/tether}"
root="$cache/docker"
socket="$root/sock"
pidfile="$root/dockerd.pid"
private_host="unix://$socket"

fail() { echo "error: $*" >&2; exit 1; }
# True when an engine answers at the given DOCKER_HOST ("" = the client's default).
client=docker
command -v docker >/dev/null 2>&1 || client=/usr/bin/docker
answers() { DOCKER_HOST="$1" timeout 10 "$client" version --format '{{.Server.Version}}' >/dev/null 2>&1; }
private_pid() { [[ -f $pidfile ]] && kill -0 "$(cat "$pidfile")" 2>/dev/null && cat "$pidfile"; }

if [[ ${1:-} == stop ]]; then
  if pid="$(private_pid)"; then
    kill "$pid"
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || exit 0; sleep 0.1; done
    fail "dockerd ($pid) did not stop within 10 s"
  fi
  exit 0
fi

if [[ -n ${DOCKER_HOST:-} ]] && answers "$DOCKER_HOST"; then echo "$DOCKER_HOST"; exit 0; fi
if private_pid >/dev/null && answers "$private_host"; then echo "$private_host"; exit 0; fi
if [[ -z ${DOCKER_HOST:-} ]] && answers ""; then
  endpoint="$("$client" context inspect --format '{{.Endpoints.docker.Host}}' 2>/dev/null || true)"
  echo "${endpoint:-unix:///var/run/docker.sock}"
  exit 0
fi

dockerd="$(command -v dockerd || true)"
[[ -n $dockerd ]] || fail "no Docker engine answers and dockerd is not installed (Debian: apt-get install docker.io)"
[[ $(id -u) == 0 ]] || fail "no Docker engine answers; starting a private dockerd needs root (or start Docker and set DOCKER_HOST)"
# sun_path holds 107 bytes; containerd's sockets sit deeper under the exec root than ours.
((${#root} <= 60)) || fail "$root is too long for the engine's unix sockets; set TETHER_CACHE_DIR to a shorter folder"

mkdir -p "$root/data" "$root/run"
if pid="$(private_pid)"; then kill "$pid"; sleep 1; fi # alive but not answering: start afresh
rm -f "$socket" "$pidfile"
echo "[docker] starting a private dockerd (no bridge, host networking only) at $private_host; log: $root/dockerd.log" >&2
# The engine outlives this script: it must not keep open what the caller had open (a `flock` lock
# held around `make test-node` would stay held by dockerd and its containerd for their lifetime).
close_inherited() { local fd; for fd in /proc/self/fd/*; do fd=${fd##*/}; ((fd > 2)) && eval "exec $fd>&-"; done; exec "$@"; }
setsid bash -c "$(declare -f close_inherited); close_inherited \"\$@\"" close-inherited "$dockerd" \
  --host "$private_host" --data-root "$root/data" --exec-root "$root/run" --pidfile "$pidfile" \
  --storage-driver overlay2 --exec-opt native.cgroupdriver=cgroupfs \
  --iptables=false --ip-forward=false --ip-masq=false --bridge=none \
  --userland-proxy=false --log-level warn \
  </dev/null >>"$root/dockerd.log" 2>&1 &
for _ in $(seq 1 120); do
  if answers "$private_host"; then echo "$private_host"; exit 0; fi
  kill -0 $! 2>/dev/null || break
  sleep 0.5
done
tail -n 20 "$root/dockerd.log" >&2
fail "the private dockerd did not answer at $private_host (log above)"
