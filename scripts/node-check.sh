#!/usr/bin/env bash
# The suites that need no fault injection, on another Node than the one running this script: the store
# conformance suite (memory and one Redis), the Nest module, the testing module and the hostile-input
# suites. That Node comes from the npm registry's package of Node's own binaries (node-linux-<arch>), as
# every other dependency does, and is kept in the user's cache directory (as npm keeps its own), so a
# second run, or another clone, installs nothing.
#
# Usage: bash scripts/node-check.sh [version] [-- <jest arguments>]   (default: the current LTS below)
#        bash scripts/node-check.sh --which [version]   installs it if needed and prints its path, e.g.
#        BENCH_NODE="$(bash scripts/node-check.sh --which)" npm run bench:nest
set -euo pipefail
cd "$(dirname "$0")/.."

which_only=0
if [ "${1:-}" = "--which" ]; then
  which_only=1
  shift
fi
# The current LTS line. Node 20 (this machine's) is the oldest the package supports; 22, 24 and 26 are run
# by .github/workflows/ci.yml.
version="24.21.0"
if [ "$#" -gt 0 ] && [ "$1" != "--" ]; then
  version="$1"
  shift
fi
if [ "${1:-}" = "--" ]; then shift; fi

arch="$(node -p process.arch)"
package="node-linux-$arch"
dir="${XDG_CACHE_HOME:-$HOME/.cache}/nestjs-redis-lock/node-check/$package-$version"
node_bin="$dir/node_modules/$package/bin/node"
if [ ! -x "$node_bin" ]; then
  echo "node-check: installing $package@$version from the npm registry" >&2
  npm install --prefix "$dir" --no-save --no-package-lock --no-audit --no-fund "$package@$version" >/dev/null
fi
if [ "$which_only" -eq 1 ]; then
  echo "$node_bin"
  exit 0
fi
echo "node-check: $("$node_bin" --version) at $node_bin"

suites=(
  test/conformance/memory.conformance.spec.ts
  test/conformance/redis.conformance.spec.ts
  test/nest
  test/testing
  test/hostile
)
# Suites named among the jest arguments replace these; options alone (--maxWorkers=1) keep them.
for arg in "$@"; do
  if [ "${arg#-}" = "$arg" ]; then
    suites=()
    break
  fi
done
# Node first on PATH, so that everything the suites start (workers, tsx, npm scripts) runs on it too.
PATH="$(cd "$(dirname "$node_bin")" && pwd):$PATH" NODE_OPTIONS=--experimental-vm-modules \
  "$node_bin" node_modules/jest/bin/jest.js "${suites[@]}" "$@" --selectProjects ioredis
