#!/usr/bin/env bash
# apt-get with its arguments, waiting (up to 10 minutes) while another apt-get holds apt's locks: CI
# installs chromium beside the Redis 8 build, and both update apt's lists. apt-get update has no timeout
# of its own for its lists lock (DPkg::Lock::Timeout covers only dpkg's), so it is tried again.
set -uo pipefail
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
err="$(mktemp)"
trap 'rm -f "$err"' EXIT
for _ in $(seq 1 300); do
  if $SUDO apt-get -o DPkg::Lock::Timeout=600 "$@" 2>"$err"; then
    cat "$err" >&2
    exit 0
  fi
  status=$?
  grep -q "Could not get lock" "$err" || { cat "$err" >&2; exit "$status"; }
  sleep 2
done
cat "$err" >&2
exit 1
