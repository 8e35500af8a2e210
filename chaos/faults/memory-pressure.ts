/**
 * Memory pressure on one lock server: a `maxmemory` a little above what the server uses now, the
 * `allkeys-lru` policy, and a writer filling it with cache-like entries while the workloads run. Redis
 * then evicts what it samples, lock keys among them: the setting of an application whose cache shares
 * the lock's Redis under an eviction policy. Which lock keys went, and when, comes from the server's
 * keyspace notifications for evictions, read on a connection of their own.
 *
 * Healing restores the settings read before (maxmemory, policy, notifications) and deletes the filler
 * left over: it is the fault's, not the lock's, so the key-hygiene check must not see it.
 */
import type Redis from 'ioredis';
import { hr, Prng, sleep } from '../common';
import type { Eviction, FaultAction } from './kinds';

/** The filler's keys: no lock or workload key starts so. */
const FILLER_PREFIX = 'cache:';
const EVICTED = '__keyevent@0__:evicted';
/**
 * SETs per round trip: few enough that the writer's query buffer (counted in used_memory) stays far
 * below the margin, so that there is always something to evict and writes are never refused for memory
 * (an eviction fault, not an out-of-memory one).
 */
const BATCH = 16;
const FILLER_VALUE = 'c'.repeat(4_096);

function infoField(info: string, field: string): number {
  const match = new RegExp(`^${field}:(\\d+)`, 'm').exec(info);
  if (!match) throw new Error(`INFO has no ${field}`);
  return Number(match[1]);
}

async function configGet(admin: Redis, name: string): Promise<string> {
  const reply = (await admin.call('CONFIG', 'GET', name)) as string[];
  return reply[1] ?? '';
}

/** The lock and the part of it a key is, or undefined for a key that is not the lock's. */
function lockKeyParser(prefix: string): (key: string) => Pick<Eviction, 'lock' | 'part'> | undefined {
  const escaped = prefix.replace(/[.*+?^$()|[\]\\{}]/g, '\\$&');
  const pattern = new RegExp(`^${escaped}\\{([^}]*)\\}(:q|:sq|:s|:fence)?$`);
  // A semaphore's hash takes the owner key's place; its line and holders set are keys of their own.
  const parts: Record<string, Eviction['part']> = {
    ':q': 'queue',
    ':sq': 'queue',
    ':s': 'holders',
    ':fence': 'fence',
  };
  return (key) => {
    const match = pattern.exec(key);
    if (!match) return undefined;
    return { lock: match[1], part: match[2] ? parts[match[2]] : 'owner' };
  };
}

/**
 * The server's eviction notifications, on a connection of their own. A notification carries no time,
 * so a PING goes out every few ms on the same connection: the server answers in order, so a notification
 * that arrives after a PING was answered was sent after that PING was received, hence after it was sent.
 */
class EvictionWatch {
  readonly evictions: Eviction[] = [];
  notices = 0;
  fillerNotices = 0;
  /** When the latest PING answered so far was sent: a lower bound for any notification after it. */
  private answered = hr();
  private pinging = true;
  private pinger: Promise<void> = Promise.resolve();

  private constructor(
    private readonly connection: Redis,
    private readonly parse: ReturnType<typeof lockKeyParser>,
  ) {}

  static async open(admin: Redis, lockPrefix: string): Promise<EvictionWatch> {
    const connection = admin.duplicate({ connectionName: 'chaos-evictions' });
    connection.on('error', () => {});
    const watch = new EvictionWatch(connection, lockKeyParser(lockPrefix));
    connection.on('message', (_channel: string, key: string) => watch.notice(key));
    try {
      await connection.subscribe(EVICTED);
    } catch (error) {
      connection.disconnect();
      throw error;
    }
    watch.pinger = watch.ping();
    return watch;
  }

  private notice(key: string): void {
    this.notices++;
    if (key.startsWith(FILLER_PREFIX)) {
      this.fillerNotices++;
      return;
    }
    const of = this.parse(key);
    if (of) this.evictions.push({ key, ...of, after: this.answered, by: hr() });
  }

  private async ping(): Promise<void> {
    while (this.pinging) {
      const sent = hr();
      try {
        await this.connection.ping();
      } catch {
        return;
      }
      this.answered = sent;
      await sleep(2);
    }
  }

  /** Reads every notification sent before this call (the PING's answer comes after them), then closes. */
  async close(): Promise<void> {
    this.pinging = false;
    await this.pinger;
    try {
      await this.connection.ping();
    } finally {
      this.connection.disconnect();
    }
  }
}

export const memoryPressure: FaultAction = async (fault, host, prng, node) => {
  const { admin } = node;
  // A fixed number of draws, all made first: what the nemesis draws next must not depend on how many
  // entries the writer got through, or a seed would not replay its plan.
  const marginKb = prng.int(192, 512);
  const ms = prng.int(300, 2_000);
  // Past the margin, the writer keeps to this rate: how fast the cache churns, from replacing the
  // margin's worth of keys every few hundred ms down to every few tens of ms.
  const rateKbS = prng.int(1_000, 10_000);
  const fillerTtl = prng.int(5_000, 20_000);
  const sizes = new Prng(prng.int(1, 0x7fffffff));

  const saved = {
    maxmemory: await configGet(admin, 'maxmemory'),
    policy: await configGet(admin, 'maxmemory-policy'),
    events: await configGet(admin, 'notify-keyspace-events'),
  };
  const evictedBefore = infoField(await admin.info('stats'), 'evicted_keys');
  const watch = await EvictionWatch.open(admin, host.lockPrefix);
  // The same list the watch fills: kept even if the fault fails half-way.
  fault.evictions = watch.evictions;
  const filler = { keys: 0, kb: 0, refused: 0, deleted: 0 };
  let usedBefore = 0;
  let maxmemory = 0;
  let bytes = 0;
  try {
    // 'E' keyevent notifications, 'e' for evictions; whatever was enabled stays enabled.
    await admin.call('CONFIG', 'SET', 'notify-keyspace-events', `${saved.events}Ee`);
    await admin.call('CONFIG', 'SET', 'maxmemory-policy', 'allkeys-lru');
    usedBefore = infoField(await admin.info('memory'), 'used_memory');
    maxmemory = usedBefore + marginKb * 1024;
    fault.t0 = hr();
    await admin.call('CONFIG', 'SET', 'maxmemory', String(maxmemory));
    while (hr() < fault.t0 + ms) {
      const batch = admin.pipeline();
      for (let i = 0; i < BATCH; i++) {
        const size = sizes.int(1_024, 4_096);
        batch.set(
          `${FILLER_PREFIX}${fault.id}:${filler.keys++}`,
          FILLER_VALUE.slice(0, size),
          'PX',
          fillerTtl,
        );
        bytes += size;
      }
      for (const [error] of (await batch.exec()) ?? []) if (error) filler.refused++;
      // The first margin's worth goes at once, to reach the limit; the rest at the drawn rate.
      const due = fault.t0 + ((bytes - marginKb * 1024) / (rateKbS * 1024)) * 1000;
      if (due > hr()) await sleep(due - hr());
    }
  } finally {
    // Settings back first: once maxmemory is restored, nothing more is evicted, and the notifications
    // already sent still arrive.
    filler.kb = Math.round(bytes / 1024);
    await admin.call('CONFIG', 'SET', 'maxmemory', saved.maxmemory);
    await admin.call('CONFIG', 'SET', 'maxmemory-policy', saved.policy);
    fault.t1 = hr();
    await admin.call('CONFIG', 'SET', 'notify-keyspace-events', saved.events);
    await watch.close();
  }
  const evictedAfter = infoField(await admin.info('stats'), 'evicted_keys');
  let cursor = '0';
  do {
    const [next, keys] = await admin.scan(cursor, 'MATCH', `${FILLER_PREFIX}*`, 'COUNT', 1_000);
    cursor = next;
    if (keys.length > 0) filler.deleted += await admin.unlink(...keys);
  } while (cursor !== '0');

  fault.keys = [...new Set(watch.evictions.map((e) => e.lock))];
  const lockKeysEvicted: Record<string, number> = {};
  for (const e of watch.evictions) lockKeysEvicted[e.key] = (lockKeysEvicted[e.key] ?? 0) + 1;
  fault.detail = {
    maxmemory,
    usedBefore,
    marginKb,
    policy: 'allkeys-lru',
    ms,
    rateKbS,
    filler,
    evictedKeys: evictedAfter - evictedBefore,
    notices: watch.notices,
    fillerEvicted: watch.fillerNotices,
    lockKeysEvicted,
    restored: saved,
  };
};
