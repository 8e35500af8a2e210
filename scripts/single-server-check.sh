#!/usr/bin/env bash
# The test command on a machine without redis-server but with REDIS_URL: only the suites that need one
# server run, against it, and they leave nothing there that does not expire. Emulated here: redis-server
# is hidden from PATH, and REDIS_URL points at a server this script starts (never the one on 6379).
set -euo pipefail
cd "$(dirname "$0")/.."

work="$(mktemp -d)"
port=""
cleanup() {
  if [ -n "$port" ]; then redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

port="$(node -e "const s=require('net').createServer().listen(0,'127.0.0.1',()=>{console.log(s.address().port);s.close()})")"
redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --daemonize yes \
  --logfile "$work/redis.log" --dir "$work"
for _ in $(seq 50); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.1; done

# A PATH with every command of this one but redis-server and its tools.
# shellcheck source=path-without-redis.sh
source scripts/path-without-redis.sh
path_without_redis "$work/bin"

PATH="$work/bin" REDIS_URL="redis://127.0.0.1:$port" npm test

persistent=0
while read -r key; do
  [ -z "$key" ] && continue
  # -1: no expiry; -2: gone since the scan listed it (it expired meanwhile), which is fine.
  if [ "$(redis-cli -p "$port" pttl "$key")" -eq -1 ]; then
    echo "left without a TTL: $key"
    persistent=$((persistent + 1))
  fi
done < <(redis-cli -p "$port" --scan)
if [ "$persistent" -gt 0 ]; then
  echo "single-server suites left $persistent key(s) without a TTL on the REDIS_URL server" >&2
  exit 1
fi
echo "single-server suites: passed against REDIS_URL, $(redis-cli -p "$port" dbsize) keys left, all expiring"
