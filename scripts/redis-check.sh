#!/usr/bin/env bash
# The suites whose outcome depends on the Redis version, on a recent Redis beside the one npm test runs
# on. From Redis 7.2, WAIT counts only the writes of its own connection (before, every command moved
# the connection's offset to the server's): a WAIT a client sends again after a reconnect, behind a
# script that wrote nothing on the new connection, then returns at once. The replica acknowledgements
# and the first calls resent after a reconnect are proved here too, on Redis 8.
#
# The Redis is built from Debian's source package (the same tarball Debian 13 builds its redis from,
# checked against its SHA-256), in about a minute on two cores, and kept in the user's cache directory,
# so a second run, or another clone, builds nothing. Needs make and a C compiler.
#
# Usage: bash scripts/redis-check.sh [-- <jest arguments>]
#        bash scripts/redis-check.sh --which   builds it if needed and prints the redis-server's path
set -euo pipefail
cd "$(dirname "$0")/.."

which_only=0
if [ "${1:-}" = "--which" ]; then
  which_only=1
  shift
fi
if [ "${1:-}" = "--" ]; then shift; fi

version="8.0.2"
sha256="caf3c0069f06fc84c5153bd2a348b204c578de80490c73857bee01d9b5d7401f"
url="http://deb.debian.org/debian/pool/main/r/redis/redis_${version}.orig.tar.gz"
dir="${XDG_CACHE_HOME:-$HOME/.cache}/nestjs-redis-lock/redis-check/redis-$version"
server="$dir/bin/redis-server"
if [ ! -x "$server" ]; then
  echo "redis-check: building Redis $version from $url" >&2
  work="$(mktemp -d)"
  trap 'rm -rf "$work"' EXIT
  curl -fsSL --retry 3 -o "$work/redis.tar.gz" "$url"
  echo "$sha256  $work/redis.tar.gz" | sha256sum -c --quiet -
  tar -xzf "$work/redis.tar.gz" -C "$work"
  # libc's allocator and no TLS: nothing to build or link beyond Redis' own sources.
  make -C "$work/redis-$version" -j"$(nproc)" MALLOC=libc BUILD_TLS=no >"$work/build.log" 2>&1 ||
    { tail -40 "$work/build.log" >&2; exit 1; }
  mkdir -p "$dir/bin"
  cp "$work/redis-$version/src/redis-server" "$work/redis-$version/src/redis-cli" "$dir/bin/"
fi
if [ "$which_only" -eq 1 ]; then
  echo "$server"
  exit 0
fi
echo "redis-check: $("$server" --version) at $server"

# Replica acknowledgements across a dropped connection (both client libraries, two major versions of
# each), the replicas option, and the first calls a client sends again.
LOCK_TEST_REDIS_SERVER="$server" NODE_OPTIONS=--experimental-vm-modules npx jest \
  test/replication/acknowledged-reconnect.spec.ts \
  test/replication/replicas.spec.ts \
  test/api/dead-on-arrival.spec.ts \
  --selectProjects ioredis "$@"
