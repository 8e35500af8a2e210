#!/usr/bin/env bash
# The testing module's promise: unit tests of locked code run with no Redis anywhere and jest exits with
# nothing left open; the engine's own unit tier (test/unit/) likewise. Runs test/testing/ and test/unit/
# with redis-server and its tools hidden from PATH, REDIS_URL unset,
# under --detectOpenHandles; in a private network namespace (unshare, as root) when permitted, so no Redis
# is reachable at all (not even the machine's own on 6379). Fails if jest reports an open handle.
set -euo pipefail
cd "$(dirname "$0")/.."

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# A PATH with every command of this one but redis-server and its tools.
# shellcheck source=path-without-redis.sh
source scripts/path-without-redis.sh
path_without_redis "$work/bin"

# Jest does not exit while something is left open: the time limit turns that into a failure, not a hang.
limit="${NO_REDIS_CHECK_TIMEOUT:-240}"
jest=(timeout -k 5 "$limit" node --experimental-vm-modules node_modules/jest/bin/jest.js test/testing
  test/unit --detectOpenHandles)
run() { env -u REDIS_URL -u REDIS_LOCK_TEST_URL PATH="$work/bin" "${jest[@]}"; }

isolation="redis-server hidden from PATH, REDIS_URL unset"
status=0
if unshare --net true 2>/dev/null; then
  isolation="$isolation, no network (private namespace)"
  export -f run
  export work
  # Loopback only: supertest's in-process HTTP server needs it; nothing else is reachable.
  unshare --net bash -c "ip link set lo up 2>/dev/null || true; $(declare -p jest); run" \
    >"$work/out" 2>&1 || status=$?
else
  run >"$work/out" 2>&1 || status=$?
fi
cat "$work/out"
if [ "$status" -eq 124 ] || [ "$status" -eq 137 ]; then
  echo "no-Redis suites: jest did not exit within ${limit} s: something was left open ($isolation)" >&2
  exit 1
fi
if [ "$status" -ne 0 ]; then
  echo "no-Redis suites failed (exit $status; $isolation)" >&2
  exit 1
fi
if grep -qE 'open handle|did not exit one second' "$work/out"; then
  echo "no-Redis suites: jest reported something left open ($isolation)" >&2
  exit 1
fi
grep -qE 'Tests: +[0-9]+ passed' "$work/out" || { echo "no-Redis suites: no passing tests reported" >&2; exit 1; }
echo "no-Redis suites: passed with $isolation; --detectOpenHandles found nothing open"
