// Helpers shared by the engine's property suites: services that are closed after each test, and
// small synchronisation tools (no sleeps standing in for synchronisation).
import { afterEach } from '@jest/globals';
import type { RedisOptions } from 'ioredis';
import { LockService, type LockServiceOptions } from '../../lib/core';
import { sleep } from './event-loop';
import { lockClient, lockLibrary } from './lock-clients';
import type { RedisServer } from './redis-server';

const open: Array<{ service: LockService; close: () => void }> = [];

/**
 * A LockService on its own client to `server`; closed (with its client) after the test. The client is
 * of the run's library (test/support/lock-clients.ts), unless `clientOptions` (ioredis options) are
 * given: those suites are about ioredis' own settings.
 */
export function lockService(
  server: RedisServer,
  options?: LockServiceOptions,
  clientOptions?: RedisOptions,
): LockService {
  if (clientOptions === undefined && lockLibrary() === 'node-redis') {
    const { client, close } = lockClient(server.url);
    const service = new LockService(client, options);
    open.push({ service, close });
    return service;
  }
  const client = server.client(clientOptions);
  const service = new LockService(client, options);
  open.push({ service, close: () => client.disconnect() });
  return service;
}

afterEach(async () => {
  const all = open.splice(0);
  await Promise.all(all.map(({ service }) => service.close().catch(() => {})));
  for (const { close } of all) close();
});

/** Resolves once `predicate` holds, checking each time `probe` resolves; fails after `timeoutMs`. */
export async function until<T>(
  probe: () => Promise<T>,
  predicate: (value: T) => boolean,
  timeoutMs = 15_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (predicate(value)) return value;
    if (Date.now() > deadline) throw new Error(`condition not reached within ${timeoutMs} ms`);
    await sleep(5);
  }
}

/**
 * Resolves once each service's (or instance's) wake connection listens and the mark its waiters' early
 * joins left is gone (docs/protocol.md, "The first wait"): from then on a push to its waiters reaches
 * them, and Redis skips them at once if it stops listening. Its calls join the line before that.
 */
export async function listening(server: RedisServer, ...services: (LockService | string)[]): Promise<void> {
  const admin = server.client();
  try {
    for (const service of services) {
      const channel = `lock:wake:${typeof service === 'string' ? service : service.instance}`;
      await until(
        async () => [await admin.pubsub('NUMSUB', channel), await admin.exists(channel)] as const,
        ([subscribers, marked]) => Number((subscribers as unknown[])[1]) > 0 && marked === 0,
      );
    }
  } finally {
    admin.disconnect();
  }
}

/** The instance a lock-agent worker reported (test/workers/lock-agent.worker.ts), for `listening`. */
export function agentInstance(agent: { readonly messages: readonly { type: string }[] }): string {
  const reported = agent.messages.find((m) => m.type === 'instance') as { instance?: string } | undefined;
  if (!reported?.instance) throw new Error('the agent has not reported its instance yet: await its ready');
  return reported.instance;
}

/**
 * `service` waits once, behind `other`, on a key of its own: it then listens on its wake connection, and
 * any re-check its first wait caused is done (on a Cluster too, where no mark tells listening apart).
 */
export async function waitOnce(service: LockService, other: LockService): Promise<void> {
  const key = `wait-once:${service.instance}`;
  const held = await other.acquire(key, { ttl: 30_000 });
  const waited = service.acquire(key, { waitTimeout: 30_000 });
  await until(
    () => other.inspect(key),
    (info) => info.queueLength === 1,
  );
  await held.release();
  await (await waited).release();
}

/** Settles a promise into a value or the error it rejected with, for assertions. */
export async function outcome<T>(promise: Promise<T>): Promise<{ value?: T; error?: unknown }> {
  try {
    return { value: await promise };
  } catch (error) {
    return { error };
  }
}

export const elapsedSince = (start: number): number => performance.now() - start;

/**
 * Resolves with `signal`'s reason once it aborts, at once if it has already: a lease can come back
 * lost already (a short ttl that ran out while a busy machine connected), and an 'abort' listener
 * added after the fact never fires.
 */
export const whenAborted = (signal: AbortSignal): Promise<unknown> =>
  signal.aborted
    ? Promise.resolve(signal.reason)
    : new Promise((resolve) =>
        signal.addEventListener('abort', () => resolve(signal.reason), { once: true }),
      );

/** Resolves with the time (performance.now()) at which `signal` aborted (now, if it already had). */
export const abortedAt = (signal: AbortSignal): Promise<number> =>
  whenAborted(signal).then(() => performance.now());

/**
 * Commands in an INFO commandstats map, less the harness' own (INFO, CONFIG RESETSTAT) and a client's
 * connection set-up. A script's first call counts once: its rejected EVALSHA is not in `calls`.
 */
export function commandsIn(stats: Map<string, number>): number {
  let total = 0;
  for (const [name, calls] of stats) {
    if (name === 'info' || name.startsWith('config|') || name.startsWith('client|')) continue;
    total += calls;
  }
  return total;
}

/**
 * The keys matching `pattern` left behind, less a line's pace (`...:p`, docs/protocol.md "Keys"), which a
 * contended line leaves for 10 s: that one must be expiring within them.
 */
export async function keysLeft(
  client: { keys(pattern: string): Promise<string[]>; pttl(key: string): Promise<number> },
  pattern: string,
): Promise<string[]> {
  const left = (await client.keys(pattern)).sort();
  for (const key of left.filter((one) => one.endsWith(':p'))) {
    const ttl = await client.pttl(key);
    // -2: it expired since KEYS listed it.
    if (ttl !== -2 && !(ttl > 0 && ttl <= 10_000)) throw new Error(`${key} is left with a ttl of ${ttl} ms`);
  }
  return left.filter((one) => !one.endsWith(':p'));
}
