// Runs before each test file: the client library the lock runs on in this jest project (its `globals`),
// made an environment variable so that the workers a test starts use it too (lock-clients.ts).
const library = (globalThis as { LOCK_TEST_CLIENT?: string }).LOCK_TEST_CLIENT ?? 'ioredis';
process.env.LOCK_TEST_CLIENT = library;
// The node-redis major a project maps `redis` to (the node-redis-4 project), for the suites that check it.
const major = (globalThis as { LOCK_TEST_NODE_REDIS?: string }).LOCK_TEST_NODE_REDIS;
if (major) process.env.LOCK_TEST_NODE_REDIS = major;
