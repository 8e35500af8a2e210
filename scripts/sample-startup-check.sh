#!/usr/bin/env bash
# Checks the sample's start-up paths that the demo does not take: a bad configuration, no REDIS_URL with
# nothing on 127.0.0.1:6379 (it starts its own redis-server and stops it on SIGINT), and no Redis at all.
# The last two run in a private network namespace (unshare, as root), so the machine's own Redis on
# 6379 is neither seen nor touched; without unshare they are reported as skipped.
set -euo pipefail
cd "$(dirname "$0")/.."
fail() { echo "FAIL: $*"; exit 1; }
[ -f dist/sample/main.js ] || fail "dist/sample/main.js is missing: run npm run build:sample first"

out=$(PORT=abc REDIS_URL=http://nope node dist/sample/main.js 2>&1) && fail "bad config started"
grep -q 'PORT must be an integer' <<<"$out" || fail "no PORT message in: $out"
grep -q 'REDIS_URL must look like' <<<"$out" || fail "no REDIS_URL message in: $out"
echo "ok: a bad configuration stops the sample with a message naming each variable"

if ! command -v curl >/dev/null || ! command -v ip >/dev/null; then
  echo "skipped: embedded-Redis and no-Redis start-up (they need curl and ip)"
  exit 0
fi
if ! unshare --net --fork --pid --mount-proc true 2>/dev/null; then
  echo "skipped: embedded-Redis and no-Redis start-up (unshare is not permitted here)"
  exit 0
fi

unshare --net --fork --pid --mount-proc bash -s <<'INNER'
set -euo pipefail
fail() { echo "FAIL: $*"; exit 1; }
ip link set lo up
log=$(mktemp)
PORT=3999 node dist/sample/main.js >"$log" 2>&1 &
app=$!
for _ in $(seq 1 100); do curl -sf localhost:3999/health >/dev/null && break; sleep 0.1; done
curl -sf -X POST localhost:3999/orders/1/pay | grep -q '"charged":true' || fail "payment failed: $(cat "$log")"
grep -q 'throwaway redis-server started by the sample' "$log" || fail "no embedded Redis: $(cat "$log")"
pgrep -x redis-server >/dev/null || fail "no redis-server child"
kill -INT "$app"
code=0; wait "$app" || code=$?
[ "$code" -eq 0 ] || fail "sample exited with $code after SIGINT"
if pgrep -x redis-server >/dev/null; then fail "the child redis-server outlived the sample"; fi
echo "ok: without Redis on 6379 the sample starts its own redis-server, and stops it on SIGINT (exit 0)"

mkdir -p /tmp/no-redis-bin && ln -sf "$(command -v node)" /tmp/no-redis-bin/node
start=$(date +%s%N)
out=$(PATH=/tmp/no-redis-bin node dist/sample/main.js 2>&1) && fail "started without any Redis"
took=$(( ($(date +%s%N) - start) / 1000000 ))
grep -q 'No Redis found' <<<"$out" || fail "unclear message: $out"
echo "ok: with no Redis at all it exits at once (${took} ms) saying how to install one or set REDIS_URL"
INNER
