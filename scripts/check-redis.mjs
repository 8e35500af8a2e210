#!/usr/bin/env node
// The test suites start their own redis-server processes; say how to get one before jest starts.
import { NO_REDIS_SUITES, REDIS_SERVER_INSTALLED, SINGLE_SERVER_SUITES } from '../jest.config.mjs';

if (!REDIS_SERVER_INSTALLED) {
  if (process.env.REDIS_URL) {
    console.error(
      [
        `redis-server was not found on PATH: running only the ${SINGLE_SERVER_SUITES.length} suites that need just one`,
        `server, one at a time, against REDIS_URL (${redact(process.env.REDIS_URL)}), and the ${NO_REDIS_SUITES.length} that need`,
        'none (the testing module on the in-memory store). That server is never paused,',
        'restarted or flushed. The other suites need redis-server: install it to run them all.',
      ].join('\n'),
    );
    process.exit(0);
  }
  console.error(
    [
      'redis-server was not found on PATH. The tests start their own Redis servers on free ports.',
      'Install it:  sudo apt-get install redis-server   (Debian/Ubuntu)',
      '             brew install redis                  (macOS)',
      'Then run npm test again. No existing server is used: the suites pause, kill and restart theirs.',
      'Or point REDIS_URL at a Redis you can spare (REDIS_URL=redis://host:6379 npm test) to run the',
      `${SINGLE_SERVER_SUITES.length} suites that need only one server; it is never paused, restarted or flushed.`,
    ].join('\n'),
  );
  process.exit(1);
}

/** The URL without its password, for the log. */
function redact(url) {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = '***';
    return parsed.toString();
  } catch {
    return '(not a valid URL)';
  }
}
