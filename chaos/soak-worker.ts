/**
 * One soak process: a LockService shared by many agents that loop over many keys (a few hot ones
 * carry most of the contention), with no faults. On request it reports what could leak: heap after a
 * full GC, active handles and timers, event listeners on its Redis connections, and the sizes of the
 * service's own bookkeeping (waiters, leases, tickets taken back; private fields, read for the test only).
 */
import Redis from 'ioredis';
import { LockError, LockService } from '../lib';
import { childArgs, Prng, sendToParent as send, sleep, workerLifecycle } from './common';

export interface SoakWorkerArgs {
  id: number;
  port: number;
  keys: number;
  hotKeys: number;
  agents: number;
  ttl: number;
  waitTimeout: number;
  workMs: [number, number];
  seed: number;
}

const args = childArgs<SoakWorkerArgs>();
const lifecycle = workerLifecycle();

const redis = new Redis({ host: '127.0.0.1', port: args.port, connectionName: `soak-p${args.id}` });
redis.on('error', () => {});
const locks = new LockService(redis, { defaults: { ttl: args.ttl, waitTimeout: args.waitTimeout } });

let stopping = false;
let ops = 0;
const outcomes: Record<string, number> = {};

async function agent(index: number): Promise<void> {
  const rnd = new Prng(args.seed * 977 + args.id * 131 + index);
  while (!stopping) {
    // Half the calls go to a few hot keys (queues, hand-offs), half spread over all keys.
    const k = rnd.chance(0.5) ? rnd.int(0, args.hotKeys - 1) : rnd.int(0, args.keys - 1);
    const work = rnd.int(args.workMs[0], args.workMs[1]);
    let outcome = 'ok';
    try {
      await locks.using(`soak-${k}`, () => sleep(work));
    } catch (error) {
      outcome = error instanceof LockError ? error.code : 'UNTYPED';
    }
    ops++;
    outcomes[outcome] = (outcomes[outcome] ?? 0) + 1;
    // A little think time: steady contention without pinning both cores of a shared CI machine.
    await sleep(rnd.int(0, 5));
  }
}

function listeners(emitter: NodeJS.EventEmitter | undefined): number {
  if (!emitter) return 0;
  return emitter.eventNames().reduce((n, name) => n + emitter.listenerCount(name), 0);
}

function sample(): Record<string, unknown> {
  const gc = (globalThis as { gc?: () => void }).gc;
  gc?.();
  const memory = process.memoryUsage();
  const resources: Record<string, number> = {};
  for (const r of process.getActiveResourcesInfo()) resources[r] = (resources[r] ?? 0) + 1;
  // The service's engine (lib/engine/lock-engine.ts) and call chain (lib/engine/call-chain.ts).
  const { engine, chain } = locks as unknown as {
    engine: {
      waiters: Map<unknown, unknown>;
      leases: Set<unknown>;
      takeBacks: { pending: Map<unknown, unknown> };
      // The Redis store's wake-up subscription (lib/store/redis-store.ts): the client library's own
      // connection inside it (lib/clients/ioredis/ioredis-connection.ts).
      store: { wake: { subscriber?: { connection?: NodeJS.EventEmitter } } };
    };
    chain: { running: Set<unknown> };
  };
  return {
    type: 'sample',
    gc: gc !== undefined,
    heapUsed: memory.heapUsed,
    rss: memory.rss,
    external: memory.external,
    resources,
    resourceTotal: Object.values(resources).reduce((a, b) => a + b, 0),
    listeners: listeners(redis) + listeners(engine.store.wake.subscriber?.connection),
    processListeners: process.eventNames().reduce((n, name) => n + process.listenerCount(name), 0),
    waiters: engine.waiters.size,
    leases: engine.leases.size,
    takenBack: engine.takeBacks.pending.size,
    running: chain.running.size,
    ops,
    outcomes: { ...outcomes },
    unhandled: lifecycle.unhandled(),
  };
}

const agents: Promise<void>[] = [];
process.on('message', async (message: { type: string }) => {
  if (message.type === 'sample') send(sample());
  else if (message.type === 'stop') {
    stopping = true;
    await Promise.all(agents);
    await locks.close();
    await redis.quit().catch(() => {});
    const resources = await lifecycle.openResources();
    send({ type: 'stopped', ops, outcomes, unhandled: lifecycle.unhandled(), resources });
    lifecycle.leave();
  }
});

for (let i = 0; i < args.agents; i++) agents.push(agent(i));
send({ type: 'ready' });
