// Worker for the harness's own tests (test/harness.spec.ts). With `count`, it INCRs `key` on the server at
// `url` that many times and reports { type: 'done', last } (the value after its last INCR). It then obeys
// commands: start a redis-server or a worker of its own through the harness (to test that the harness
// cleans them up when this process ends), exit with a code, or throw an uncaught error.
import Redis from 'ioredis';
import { spawnWorker, workerPath } from '../support/processes';
import { startRedis } from '../support/redis-server';
import { onMessage, ready, send, workerArgs } from '../support/worker-runtime';

interface Args {
  url?: string;
  key?: string;
  count?: number;
}

export type Command =
  | { type: 'start-redis' }
  | { type: 'spawn-worker' }
  | { type: 'exit'; code: number }
  | { type: 'throw'; message: string };

export type Report =
  | { type: 'ready' }
  | { type: 'done'; last: number }
  | { type: 'redis-started'; port: number; pid: number }
  | { type: 'worker-started'; pid: number }
  | { type: 'error'; message: string; stack?: string };

const args = workerArgs<Args>();

async function increment(url: string, key: string, count: number): Promise<void> {
  const redis = new Redis(url);
  let last = 0;
  try {
    for (let i = 0; i < count; i++) last = await redis.incr(key);
  } finally {
    redis.disconnect();
  }
  send({ type: 'done', last } satisfies Report);
}

onMessage(async (command: Command) => {
  switch (command.type) {
    case 'start-redis': {
      const server = await startRedis();
      const client = server.client();
      // The server's own pid, so that the test can check the process is gone once this worker is.
      const info = await client.info('server');
      client.disconnect();
      const pid = Number(/^process_id:(\d+)/m.exec(info)?.[1]);
      send({ type: 'redis-started', port: server.port, pid } satisfies Report);
      break;
    }
    case 'spawn-worker': {
      // A worker of this worker, to test that a worker whose parent dies exits by itself.
      const child = spawnWorker<Report>(workerPath('harness-incr'));
      await child.next((m) => m.type === 'ready');
      send({ type: 'worker-started', pid: child.pid } satisfies Report);
      break;
    }
    case 'exit':
      process.exit(command.code);
      break;
    case 'throw':
      // Thrown from a timer, outside the handler's promise: a genuinely uncaught exception.
      setTimeout(() => {
        throw new Error(command.message);
      });
      break;
  }
});

ready();
if (args.count !== undefined) {
  if (args.url === undefined || args.key === undefined) throw new Error('count needs url and key');
  void increment(args.url, args.key, args.count);
}
