#!/usr/bin/env bash
# Runs a command while a busy loop keeps every core busy (`make test-under-load`): the suite must hold on a
# loaded machine. HOG_NICE sets the loops' niceness (default 0: as busy as other work would be). The loops end
# with the command, also when it fails or is interrupted; the load average is printed then.
set -euo pipefail
(($# > 0)) || {
  echo "usage: $0 command [args...]" >&2
  exit 2
}
nice="${HOG_NICE:-0}"
cores="$(nproc)"
hogs=()
stop_hogs() {
  local status=$?
  ((${#hogs[@]} == 0)) || kill "${hogs[@]}" 2>/dev/null || true
  wait 2>/dev/null || true
  echo "under-load: stopped $cores busy loops; load average $(cut -d' ' -f1-3 /proc/loadavg)" >&2
  return "$status"
}
trap stop_hogs EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
for ((i = 0; i < cores; i++)); do
  nice -n "$nice" bash -c 'while :; do :; done' &
  hogs+=("$!")
done
echo "under-load: $cores busy loops (nice $nice) beside: $*" >&2
"$@"
