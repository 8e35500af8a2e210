#!/usr/bin/env node
// The test suites start their own redis-server processes; say how to get one before jest starts.
import { spawnSync } from 'node:child_process';

const probe = spawnSync('redis-server', ['--version'], { encoding: 'utf8' });
if (probe.error || probe.status !== 0) {
  console.error(
    [
      'redis-server was not found on PATH. The tests start their own Redis servers on free ports.',
      'Install it:  sudo apt-get install redis-server   (Debian/Ubuntu)',
      '             brew install redis                  (macOS)',
      'Then run npm test again. No existing server is used: the suites pause, kill and restart theirs.',
    ].join('\n'),
  );
  process.exit(1);
}
