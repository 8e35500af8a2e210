#!/usr/bin/env bash
# Checks the sample's start-up paths that the demo does not take: a bad configuration, no REDIS_URL with
# nothing on 127.0.0.1:6379 (it starts its own redis-server and stops it on SIGINT), and no Redis at all
# (it runs on in-memory stores, says so in one line, and its locks still work within the process).
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

if ! command -v ip >/dev/null; then
  echo "skipped: embedded-Redis and no-Redis start-up (they need ip)"
  exit 0
fi
if ! unshare --net --fork --pid --mount-proc true 2>/dev/null; then
  echo "skipped: embedded-Redis and no-Redis start-up (unshare is not permitted here)"
  exit 0
fi

unshare --net --fork --pid --mount-proc bash -s <<'INNER'
set -euo pipefail
fail() { echo "FAIL: $*"; exit 1; }
# The sample's HTTP answers, read with Node (no download tool needed): exits 1 on an error status.
http() { node scripts/local-request.mjs "$@"; }
ip link set lo up
log=$(mktemp)
PORT=3999 node dist/sample/main.js >"$log" 2>&1 &
app=$!
for _ in $(seq 1 100); do http localhost:3999/health >/dev/null && break; sleep 0.1; done
http POST localhost:3999/orders/1/pay | grep -q '"charged":true' || fail "payment failed: $(cat "$log")"
grep -q 'throwaway redis-server started by the sample' "$log" || fail "no embedded Redis: $(cat "$log")"
grep -q 'try: POST localhost:3999/orders/1/pay' "$log" || fail "the hint does not name PORT 3999: $(cat "$log")"
pgrep -x redis-server >/dev/null || fail "no redis-server child"
kill -INT "$app"
code=0; wait "$app" || code=$?
[ "$code" -eq 0 ] || fail "sample exited with $code after SIGINT"
if pgrep -x redis-server >/dev/null; then fail "the child redis-server outlived the sample"; fi
echo "ok: without Redis on 6379 the sample starts its own redis-server, and stops it on SIGINT (exit 0)"

mkdir -p /tmp/no-redis-bin && ln -sf "$(command -v node)" /tmp/no-redis-bin/node
log=$(mktemp)
PATH=/tmp/no-redis-bin PORT=3998 node dist/sample/main.js >"$log" 2>&1 &
app=$!
for _ in $(seq 1 100); do http localhost:3998/health >/dev/null && break; sleep 0.1; done
grep -q 'No Redis found' "$log" || fail "no banner: $(cat "$log")"
grep -q 'locks hold within this process only' "$log" || fail "banner does not say the locks are local: $(cat "$log")"
[ "$(grep -c 'No Redis found' "$log")" -eq 1 ] || fail "banner is not one line: $(cat "$log")"
health=$(http localhost:3998/health) || fail "no health answer: $(cat "$log")"
grep -q '"status":"up"' <<<"$health" || fail "health not up: $health"
grep -q '"store":"memory"' <<<"$health" || fail "health does not report the memory store: $health"
first=$(http POST localhost:3998/orders/1/pay) || fail "payment failed: $(cat "$log")"
grep -q '"charged":true' <<<"$first" || fail "first payment not charged: $first"
second=$(http POST localhost:3998/orders/1/pay) || fail "second payment failed: $(cat "$log")"
grep -q '"charged":false' <<<"$second" || fail "second payment charged again: $second"
# Five payments of one order at once: the in-process lock lets exactly one charge.
for _ in 1 2 3 4 5; do http POST localhost:3998/orders/2/pay >>"$log.pay" & done
wait_pay=0; for job in $(jobs -p); do [ "$job" = "$app" ] || wait "$job" || wait_pay=$?; done
[ "$wait_pay" -eq 0 ] || fail "a concurrent payment failed: $(cat "$log")"
charged=$(grep -o '"charged":true' "$log.pay" | wc -l)
[ "$charged" -eq 1 ] || fail "5 concurrent payments of one order charged $charged times: $(cat "$log.pay")"
start=$(date +%s%N)
kill -INT "$app"
# A watchdog, so a sample that does not end by itself fails the check (killed: 137) instead of hanging it.
( sleep 10; kill -KILL "$app" 2>/dev/null ) &
watchdog=$!
code=0; wait "$app" || code=$?
kill "$watchdog" 2>/dev/null || true
took=$(( ($(date +%s%N) - start) / 1000000 ))
[ "$code" -eq 0 ] || fail "sample exited with $code after SIGINT (137: still running after 10 s): $(cat "$log")"
echo "ok: with no Redis at all it starts on in-memory stores (health up, store memory, 5 concurrent" \
  "payments of one order charged once) with a one-line banner, and stops on SIGINT (exit 0 in ${took} ms)"
INNER
