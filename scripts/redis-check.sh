#!/usr/bin/env bash
# The suites whose outcome depends on the Redis version, on a recent Redis beside the one npm test runs
# on. From Redis 7.2, WAIT counts only the writes of its own connection (before, every command moved
# the connection's offset to the server's): a WAIT a client sends again after a reconnect, behind a
# script that wrote nothing on the new connection, then returns at once. The replica acknowledgements
# and the first calls resent after a reconnect are proved here too, on Redis 8.
#
# The Redis is built from Debian's source package (apt-get source: the tarball Debian 13 builds its redis
# from, checked against its SHA-256), in about a minute on two cores, and kept in the user's cache
# directory, so a second run, or another clone, builds nothing. Needs apt-get, make and a C compiler.
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
dir="${XDG_CACHE_HOME:-$HOME/.cache}/nestjs-redis-lock/redis-check/redis-$version"
server="$dir/bin/redis-server"
if [ ! -x "$server" ]; then
  echo "redis-check: building Redis $version from Debian's source package (trixie)" >&2
  work="$(mktemp -d)"
  trap 'rm -rf "$work"' EXIT
  # apt-get source, from the archive this machine's own apt sources name, with trixie's source index in a
  # list of its own: the system's apt configuration is left as it is.
  archive="$(awk '/^URIs:/ { print $2; exit }' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)"
  if [ -z "$archive" ]; then
    archive="$(awk '$1 == "deb" && $2 !~ /security/ { print $2; exit }' /etc/apt/sources.list 2>/dev/null || true)"
  fi
  [ -n "$archive" ] || { echo "redis-check: no Debian archive in this machine's apt sources" >&2; exit 1; }
  printf 'Types: deb-src\nURIs: %s\nSuites: trixie\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
    "$archive" >"$work/trixie-src.sources"
  apt_options=(-o "Dir::Etc::sourcelist=$work/trixie-src.sources" -o Dir::Etc::sourceparts=- -o APT::Get::List-Cleanup=0)
  bash scripts/apt-get-waiting.sh "${apt_options[@]}" update -qq >/dev/null
  # Only the upstream tarball is needed: its packaging files may be gone from the archive already (a newer
  # Debian revision of the same tarball), which apt-get reports as a failure; the checksum below decides.
  (cd "$work" && apt-get "${apt_options[@]}" source --download-only -qq redis >/dev/null 2>&1) || true
  [ -f "$work/redis_$version.orig.tar.gz" ] ||
    { echo "redis-check: apt-get source gave no redis_$version.orig.tar.gz" >&2; exit 1; }
  mv "$work/redis_$version.orig.tar.gz" "$work/redis.tar.gz"
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
