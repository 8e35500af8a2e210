/**
 * The natural failover race: `npx tsx scripts/failover-window.ts [--runs N]` (default 10).
 *
 * Each run starts a Sentinel group (a master, one replica, three sentinels), takes a lock through a
 * Sentinel client and SIGKILLs the master the moment the grant's reply is read: no freeze of the
 * replication link, no delay. Once the replica is promoted, a second service tries the lock on it. A
 * second holder means the grant was lost in the failover while the first caller still held it. N runs
 * without the `replicas` option, then N with `replicas: { count: 1, timeout: 100 }`; the summary says
 * how many runs of each showed a second holder. Exits 1 if one did with `replicas`, which must not happen.
 *
 * Expect 0 without `replicas` too, on one machine: Redis writes a command's replication stream to the
 * replica's socket in the same event-loop pass as the reply to the client, so by the time the client
 * has read its grant, the replica has been sent it over loopback, and a SIGKILL cannot take it back.
 * The window is real across a network (a replica link that lags or drops), which
 * test/replication/sentinel-failover.spec.ts opens on purpose by freezing the replication link.
 * `--link-latency MS` puts the replication link through a proxy that delays each chunk MS ms each way,
 * as between two zones, and drops what it still holds when the master dies, as a crashed machine or a
 * cut link would: the natural race then has a window of about MS ms after each grant.
 */
import { parseArgs } from 'node:util';
import type { Redis } from 'ioredis';
import { type Lease, LockNotReplicatedError, LockService, type LockServiceOptions } from '../lib';
import { DEFAULT_PREFIX } from '../lib/options/service-options';
import { redisKeys } from '../lib/protocol/keys';
import { poll, type SentinelGroup, startSentinelGroup } from '../test/support/redis-sentinel';

type Mode = 'without replicas' | 'with replicas';

interface RunResult {
  /** The first caller was granted the lock (with replicas, a grant not acknowledged is refused). */
  granted: boolean;
  /** The promoted replica had the first caller's grant. */
  survived: boolean;
  /** The second service got the lock while the first lease was still held. */
  secondHolder: boolean;
  failoverMs: number;
}

const KEY = 'failover-window';
const OWNER = redisKeys(DEFAULT_PREFIX, KEY).owner;
const OPTIONS: Record<Mode, LockServiceOptions> = {
  'without replicas': {},
  'with replicas': { replicas: { count: 1, timeout: 100 } },
};
// Short Sentinel timings, so that a run takes about 3 s (most of it Sentinel's own pacing).
const GROUP = { replicas: 1, downAfterMs: 200, failoverTimeoutMs: 1_000 };
let linkLatency = 0;

/** Until `redis` is connected (to the new master, after a failover): a call made before fails fast. */
const ready = (redis: Redis): Promise<true> =>
  poll(async () => (redis.status === 'ready' ? true : undefined), 10_000, 'a connected client');

async function race(group: SentinelGroup, mode: Mode): Promise<RunResult> {
  const first = new LockService(group.client(), OPTIONS[mode]);
  // Without replicas: once the replica is promoted it has none, so every grant there would be refused.
  const second = new LockService(group.client());
  try {
    await Promise.all([ready(first.client as Redis), ready(second.client as Redis)]);
    if (linkLatency > 0) group.replicationProxy().setLatency(linkLatency);
    let lease: Lease | undefined;
    try {
      lease = await first.acquire(KEY, { ttl: 15_000, renew: true, waitTimeout: 0 });
    } catch (error) {
      if (!(error instanceof LockNotReplicatedError)) throw error;
    }
    // No delay: the kill goes out as soon as the grant's reply has been read.
    const killedAt = performance.now();
    await group.master.kill();
    const promoted = await group.waitForFailover(group.master);
    const failoverMs = performance.now() - killedAt;

    const server = group.replicas.find((replica) => replica.port === promoted.port);
    const owner = await server?.admin((redis) => redis.get(OWNER));
    await ready(second.client as Redis);
    const taken = await second.tryAcquire(KEY, { ttl: 15_000 });
    return {
      granted: lease !== undefined,
      survived: lease !== undefined && owner === lease.token,
      // With a 15 s ttl renewed every 5 s, the first lease has not yet checked its grant again.
      secondHolder: taken !== null && lease !== undefined && !lease.signal.aborted,
      failoverMs,
    };
  } finally {
    await Promise.all([first.close(), second.close()].map((closing) => closing.catch(() => {})));
  }
}

const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: { runs: { type: 'string', default: '10' }, 'link-latency': { type: 'string', default: '0' } },
  });
  const runs = Number(values.runs);
  if (!Number.isInteger(runs) || runs < 1)
    throw new Error(`--runs must be a positive integer, got ${values.runs}`);
  linkLatency = Number(values['link-latency']);
  if (!Number.isInteger(linkLatency) || linkLatency < 0 || linkLatency > 50)
    throw new Error(`--link-latency must be an integer of ms from 0 to 50, got ${values['link-latency']}`);

  const summary: string[] = [];
  let unsafe = false;
  for (const mode of ['without replicas', 'with replicas'] as const) {
    const results: RunResult[] = [];
    for (let i = 1; i <= runs; i++) {
      // Through a proxy, the harness' own failover-timeout keeps the sentinels from re-pointing the link.
      const group = await startSentinelGroup(
        linkLatency > 0 ? { replicas: 1, downAfterMs: 200, replicationProxy: true } : GROUP,
      );
      try {
        const result = await race(group, mode);
        results.push(result);
        console.log(
          `${mode}, run ${i}/${runs}: granted ${result.granted}, on the promoted replica ${result.survived}, ` +
            `second holder ${result.secondHolder}, failover ${Math.round(result.failoverMs)} ms`,
        );
      } finally {
        await group.dispose();
      }
    }
    const count = (pick: (result: RunResult) => boolean) => results.filter(pick).length;
    if (mode === 'with replicas' && count((r) => r.secondHolder) > 0) unsafe = true;
    summary.push(
      `${mode}: ${count((r) => r.secondHolder)} of ${runs} runs had a second holder; ` +
        `${count((r) => r.granted)} grants, ${count((r) => r.survived)} of them on the promoted replica; ` +
        `failover median ${Math.round(median(results.map((r) => r.failoverMs)))} ms`,
    );
  }
  console.log(`\n${summary.join('\n')}`);
  return unsafe ? 1 : 0;
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(error);
    process.exit(2);
  },
);
