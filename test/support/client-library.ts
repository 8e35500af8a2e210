// Which client library the lock runs on in this test run: ioredis, or node-redis when LOCK_TEST_CLIENT is
// `node-redis` (jest's `node-redis` project sets it, see client-library.setup.ts, and the workers a test
// starts inherit it). Apart from lock-clients.ts, so that knowing it loads neither library.

export type ClientLibrary = 'ioredis' | 'node-redis';

export function lockLibrary(): ClientLibrary {
  return process.env.LOCK_TEST_CLIENT === 'node-redis' ? 'node-redis' : 'ioredis';
}
