/**
 * One chaos worker process: a LockService whose connections go through the nemesis' proxies (one lock
 * server, one client per node of a quorum, or a Sentinel client that finds the master through the
 * sentinels, with the `replicas` option), and a few agents that loop: take one of a few locks
 * (`using`, short ttl, renewal on), and while holding it run both workloads on the same lock:
 *   (a) an unfenced read-modify-write of a per-lock counter ("twin", GET ... work ... SET: counter.ts),
 *   (b) a fenced write of the same lock's resource with FencedStore (lease.fence: fenced-write.ts).
 * Like a careful application, an agent checks `lease.signal.aborted` right before it writes; that is
 * exactly what a paused process cannot get right (on resume, the work's timer runs before the lease's
 * expiry timer), and what the twin exposes. With the semaphore and read-write workloads, other agents
 * of the same process take permits, or read or write, on keys of their own (shared-locks.ts): a pause
 * or a kill hits every kind at once.
 *
 * The resource (twin counters and fenced values) lives on a second Redis, reached DIRECTLY, not through
 * the proxy: it stands for the application's database, which is not the lock service. So a lock-Redis
 * restart does not erase the fence high-water marks, and proxy faults only hit the lock protocol.
 *
 * Everything the coordinator checks is reported over IPC, with times on the system-wide monotonic clock.
 */
import Redis from 'ioredis';
import { FencedStore, type Lease, LockError, LockService } from '../../lib';
import { childArgs, describeError, hr, Prng, sendToParent as send, sleep, workerLifecycle } from '../common';
import type { ChaosConfig } from '../config';
import type { SentinelConnection } from '../topologies/topology';
import { readCounter, writeCounter } from './counter';
import { writeFenced } from './fenced-write';
import { failureOf, type LossFacts, validUntil, watchLoss } from './lease-facts';
import { type SharedAgentHost, sharedAgent } from './shared-locks';

/** The run's settings a worker uses (chaos/config.ts says what each is), and where it connects. */
export type WorkerArgs = Pick<
  ChaosConfig,
  | 'keys'
  | 'agents'
  | 'ttl'
  | 'claimWindow'
  | 'waitTimeout'
  | 'commandTimeout'
  | 'nodeTimeout'
  | 'lockPrefix'
  | 'workMs'
  | 'semaphore'
  | 'readWrite'
> & {
  slot: number;
  /** One port: a single lock server. Several: independent masters holding each lock on a majority. */
  lockPorts: number[];
  /** A Sentinel-managed master instead (lockPorts is then empty). */
  sentinel?: SentinelConnection;
  resourcePort: number;
  seed: number;
};

const args = childArgs<WorkerArgs>();
const pid = process.pid;
const lifecycle = workerLifecycle();
process.on('uncaughtException', (error: unknown) => {
  send({ type: 'unhandled', kind: 'exception', message: describeError(error) });
  setTimeout(() => process.exit(1), 200);
});

const redisErrors: Record<string, number> = {};
const { sentinel } = args;
const quorum = args.lockPorts.length > 1;
/** Named so that CLIENT LIST shows whose each connection is (client-kill-addr picks from it). */
const ownName = `chaos-w${args.slot}-${pid}`;
/** Counts the client's errors by code, for the worker's report at close. */
function counted(client: Redis): Redis {
  client.on('error', (error: Error) => {
    const code = (error as { code?: string }).code ?? error.name;
    redisErrors[code] = (redisErrors[code] ?? 0) + 1;
  });
  return client;
}
const lockClients = sentinel
  ? [
      counted(
        new Redis({
          sentinels: sentinel.sentinels,
          name: sentinel.name,
          natMap: sentinel.natMap,
          connectionName: ownName,
          // Each attempt asks a sentinel for the master: at a flat 50 ms, a client finds the promoted
          // replica as soon as the sentinels name it, not up to a backed-off delay later.
          retryStrategy: () => 50,
        }),
      ),
    ]
  : args.lockPorts.map((port, i) =>
      counted(
        new Redis({
          host: '127.0.0.1',
          port,
          connectionName: quorum ? `${ownName}-n${i + 1}` : ownName,
          // Reconnect quickly: the nemesis drops connections every few seconds.
          retryStrategy: (times) => Math.min(times * 50, 500),
        }),
      ),
    );
const resource = new Redis({
  host: '127.0.0.1',
  port: args.resourcePort,
  connectionName: `chaos-r${args.slot}`,
});
resource.on('error', () => {});
const store = new FencedStore(resource);
const options = {
  prefix: args.lockPrefix,
  claimWindow: args.claimWindow,
  commandTimeout: args.commandTimeout,
  defaults: { ttl: args.ttl, waitTimeout: args.waitTimeout },
};
const locks = quorum
  ? new LockService(lockClients, { ...options, nodeTimeout: args.nodeTimeout })
  : new LockService(lockClients[0], sentinel ? { ...options, replicas: sentinel.replicas } : options);

let draining = false;
let sequence = 0;
/** A call's id: its worker slot, process, agent and a number unique in the process. */
const nextOp = (agent: number | string): string => `${args.slot}.${pid}.${agent}.${++sequence}`;

async function agent(index: number): Promise<void> {
  const rnd = new Prng(args.seed * 7919 + index * 13);
  while (!draining) {
    const key = rnd.pick(args.keys);
    const op = nextOp(index);
    const workMs = rnd.int(args.workMs[0], args.workMs[1]);
    const t0 = hr();
    send({ type: 'acq', op, key, t: t0 });
    const rec: LossFacts & { tGrant?: number; tWorkEnd?: number; lease?: Lease; harnessError?: string } = {};
    let outcome = 'ok';
    let message: string | undefined;
    try {
      await locks.using(
        key,
        async (lease) => {
          rec.tGrant = hr();
          rec.lease = lease;
          watchLoss(lease, rec, hr);
          send({
            type: 'grant',
            op,
            key,
            fence: lease.fence,
            t: rec.tGrant,
            wall: Date.now(),
            validUntil: validUntil(lease),
          });
          try {
            const seq = await readCounter(resource, key);
            // The "work". Its timer is armed before the report: the coordinator's SIGSTOP can land
            // inside process.send(), and a GC pause must hit work that is already under way.
            const work = sleep(workMs);
            send({ type: 'read', op, key, t: hr(), seq, workMs, validUntil: validUntil(lease) });
            await work;
            // The writes go out without a look at lease.signal, as from code that trusts its lock. A
            // look would catch most stale writers (reading the signal checks the clock), but not one
            // frozen between the look and the write; this way every pause that lands in the work
            // tests the fence. The look is only recorded.
            if (lease.signal.aborted) {
              send({ type: 'skipped', op, key, t: hr(), validUntil: validUntil(lease) });
            }
            // Both writes go out together. The fenced one is the resource's protection; the twin
            // shows what happens without it.
            const tSent = hr();
            const [result] = await Promise.all([
              writeFenced(store, key, lease.fence, op),
              writeCounter(resource, key, seq + 1, op),
            ]);
            const tDone = hr();
            const valid = validUntil(lease);
            send({
              type: 'fenced',
              op,
              key,
              fence: lease.fence,
              written: result.written,
              newest: result.fence,
              tSent,
              tDone,
              validUntil: valid,
            });
            send({ type: 'twin', op, key, seq: seq + 1, t: tSent, validUntil: valid });
          } catch (error) {
            rec.harnessError = describeError(error);
          } finally {
            rec.tWorkEnd = hr();
          }
        },
        { ttl: args.ttl, renew: true, waitTimeout: args.waitTimeout },
      );
    } catch (error) {
      const failure = failureOf(error);
      outcome = failure.outcome;
      message = failure.message;
      rec.lostCode ??= failure.lostCode;
    }
    send({
      type: 'end',
      op,
      key,
      t0,
      tGrant: rec.tGrant,
      tWorkEnd: rec.tWorkEnd,
      lostAt: rec.lostAt,
      lostReason: rec.lostReason,
      lostCode: rec.lostCode,
      validUntilEnd: rec.lease ? validUntil(rec.lease) : undefined,
      tEnd: hr(),
      outcome,
      message,
      harnessError: rec.harnessError,
    });
    await sleep(rnd.int(0, 20));
  }
}

async function probe(keys: string[], waitTimeout: number): Promise<void> {
  const results: { key: string; ok: boolean; ms: number; code?: string }[] = [];
  for (const key of keys) {
    const t = hr();
    // A semaphore's key is probed with its permits, a read-write lock's as a writer (which needs every
    // holder gone): one key is one kind of lock.
    const permits = args.semaphore?.keys.includes(key) ? args.semaphore.permits : undefined;
    const mode = args.readWrite?.keys.includes(key) ? 'write' : undefined;
    try {
      await locks.using(key, async () => {}, { waitTimeout, ttl: args.ttl, permits, mode });
      results.push({ key, ok: true, ms: hr() - t });
    } catch (error) {
      results.push({
        key,
        ok: false,
        ms: hr() - t,
        code: error instanceof LockError ? error.code : String(error),
      });
    }
  }
  send({ type: 'probed', results });
}

async function close(): Promise<void> {
  await locks.close();
  await Promise.allSettled([...lockClients.map((client) => client.quit()), resource.quit()]);
  const resources = await lifecycle.openResources();
  send({ type: 'closed', resources, unhandled: lifecycle.unhandled(), redisErrors });
  lifecycle.leave();
}

const agents: Promise<void>[] = [];
process.on('message', (message: { type: string; keys?: string[]; waitTimeout?: number }) => {
  if (message.type === 'drain') {
    draining = true;
    Promise.all(agents).then(() => send({ type: 'drained', t: hr() }));
  } else if (message.type === 'probe') {
    probe(message.keys ?? args.keys, message.waitTimeout ?? args.waitTimeout);
  } else if (message.type === 'close') {
    close();
  }
});

/** Agents of a lock several callers hold at once: `prefix` names their calls, `salt` seeds their draws. */
function sharedAgents(
  config: SharedAgentHost['config'] | undefined,
  prefix: string,
  salt: number,
  kind: SharedAgentHost['kind'],
): void {
  for (let i = 0; config && i < config.agents; i++) {
    const rnd = new Prng(args.seed * 7919 + salt + i * 13);
    const host = { locks, config, kind, ttl: args.ttl, waitTimeout: args.waitTimeout, workMs: args.workMs };
    const op = () => nextOp(`${prefix}${i}`);
    agents.push(sharedAgent({ ...host, rnd, send, op, draining: () => draining }));
  }
}
for (let i = 0; i < args.agents; i++) agents.push(agent(i));
const { semaphore, readWrite } = args;
sharedAgents(semaphore, 's', 1_000_003, () => ({ permits: semaphore?.permits ?? 1 }));
sharedAgents(readWrite, 'rw', 2_000_003, (rnd) => ({
  mode: rnd.chance(readWrite?.writes ?? 0) ? 'write' : 'read',
}));
send({ type: 'ready', pid, t: hr() });
