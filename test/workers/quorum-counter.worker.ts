// Contending process for the quorum store's exclusion test: `tasks` loops, each doing a deliberately
// non-atomic read-modify-write of a counter on a separate resource server under a lock held on a
// quorum of masters, until told to stop. Each grant is reported with its fence, the counter value it
// read (its global position) and its window on the system-wide monotonic clock: from the grant to the
// moment the holder stopped believing it held the lock (release called, or the signal aborted).

import Redis from 'ioredis';
import { LockError, LockService } from '../../lib/core';
import { sleep } from '../support/event-loop';
import { onMessage, ready, send, workerArgs } from '../support/worker-runtime';

interface Args {
  urls: string[];
  resourceUrl: string;
  key: string;
  counter: string;
  tasks: number;
  ttl: number;
  nodeTimeout: number;
}

const args = workerArgs<Args>();
const clients = args.urls.map((url) => {
  const client = new Redis(url, { maxRetriesPerRequest: 1, retryStrategy: () => 50 });
  client.on('error', () => {});
  return client;
});
const resource = new Redis(args.resourceUrl);
resource.on('error', () => {});
const locks = new LockService(clients, {
  nodeTimeout: args.nodeTimeout,
  defaults: { ttl: args.ttl, waitTimeout: 30_000 },
});
const hr = (): number => Number(process.hrtime.bigint()) / 1e6;

type Grant = { value: number; fence: number; from: number; to: number; lost: boolean };
const grants: Grant[] = [];
const errors: Record<string, number> = {};
/** The first message of each error code, to say what went wrong. */
const examples: Record<string, string> = {};
let stopping = false;

async function task(): Promise<void> {
  while (!stopping) {
    try {
      await locks.using(args.key, async (lease) => {
        const from = hr();
        const value = Number((await resource.get(args.counter)) ?? '0');
        await sleep(2);
        // A careful holder checks its signal before it writes: a lease lost meanwhile writes nothing.
        if (lease.signal.aborted) {
          grants.push({ value, fence: lease.fence, from, to: hr(), lost: true });
          return;
        }
        await resource.set(args.counter, String(value + 1));
        grants.push({ value, fence: lease.fence, from, to: hr(), lost: false });
      });
    } catch (error) {
      const code = error instanceof LockError ? error.code : String(error);
      errors[code] = (errors[code] ?? 0) + 1;
      examples[code] ??= error instanceof Error ? error.message : String(error);
    }
  }
}

const running = Array.from({ length: args.tasks }, task);
onMessage(async (message: { type: string }) => {
  if (message.type !== 'stop') return;
  stopping = true;
  await Promise.all(running);
  send({ type: 'done', grants, errors, examples });
  await locks.close();
  for (const client of [...clients, resource]) client.disconnect();
  process.exit(0);
});
ready();
