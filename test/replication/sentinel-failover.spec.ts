// A Sentinel failover after a SIGKILL of the master, with the lock's clients following the master
// through Sentinel. Replication is asynchronous: a grant the master had not yet sent to its replica is
// lost when that replica is promoted, and a second caller is granted the lock while the first still
// holds it. The `replicas` option closes that window: a grant counts only once a replica has it.
import { afterEach, describe, expect, it } from '@jest/globals';
import { Test } from '@nestjs/testing';
import {
  FencedStore,
  type Lease,
  LockError,
  LockLostError,
  LockNotReplicatedError,
  LockService,
  type LockServiceOptions,
  RedisLockModule,
} from '../../lib';
import { DEFAULT_PREFIX } from '../../lib/options/service-options';
import { redisKeys } from '../../lib/protocol/keys';
import { sleep } from '../support/event-loop';
import { abortedAt, outcome, until } from '../support/lock-fixtures';
import { type SentinelGroup, type SentinelGroupOptions, startSentinelGroup } from '../support/redis-sentinel';
import { useRedis } from '../support/redis-server';

const REPLICAS = { replicas: { count: 1, timeout: 100 } } satisfies LockServiceOptions;
/** Where the holders write, fenced: a plain server of its own, untouched by the failover. */
const resource = useRedis();

/** Clean-up steps of the current test, run in reverse: services close before their group goes. */
const cleanup: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step().catch(() => {});
});

async function sentinelGroup(options?: SentinelGroupOptions): Promise<SentinelGroup> {
  const group = await startSentinelGroup(options);
  cleanup.push(() => group.dispose());
  return group;
}

/** A LockService on a Sentinel client of its own, as each application instance would have. */
function service(group: SentinelGroup, options?: LockServiceOptions): LockService {
  const locks = new LockService(group.client(), options);
  cleanup.push(() => locks.close());
  return locks;
}

/**
 * Resolves once the service's client is connected again (to the new master, after a failover): a call
 * made while it reconnects fails fast with RedisUnavailableError, as it would for an application.
 */
const connected = (locks: LockService): Promise<unknown> =>
  until(
    async () => locks.client.status,
    (status) => status === 'ready',
  );

/** The lock's owner key on `port` (a server of the group, by port), or null. */
const ownerOn = (group: SentinelGroup, port: number, key: string): Promise<string | null> => {
  const server = [group.master, ...group.replicas].find((candidate) => candidate.port === port);
  if (!server) throw new Error(`no server of the group listens on ${port}`);
  return server.admin((redis) => redis.get(redisKeys(DEFAULT_PREFIX, key).owner));
};

type Outcome<T> = Awaited<ReturnType<typeof outcome<T>>>;

/**
 * Resolves with an outcome taken when its call was made, or 'hung' if it has not settled within `ms`. A
 * caller may be answered with a typed error during the failover, long before the test waits for it:
 * taken later, that rejection would have had no handler meanwhile, which fails the test.
 */
async function settlesWithin<T>(answer: Promise<Outcome<T>>, ms: number): Promise<Outcome<T> | 'hung'> {
  let timer: NodeJS.Timeout | undefined;
  const hung = new Promise<'hung'>((resolve) => {
    timer = setTimeout(() => resolve('hung'), ms);
  });
  try {
    return await Promise.race([answer, hung]);
  } finally {
    clearTimeout(timer);
  }
}

/** A span in which one caller believed it held the lock: from its grant to its release call or its loss. */
interface Tenure {
  name: string;
  fence: number;
  from: number;
  to: number;
}

/** Everything the callers did, for the checks at the end. */
class Ledger {
  readonly tenures: Tenure[] = [];
  /** Fences of the writes the resource accepted, in the order it accepted them. */
  readonly accepted: number[] = [];
  rejected = 0;

  /** Tenures that overlap another one (each pair once). */
  overlaps(): Array<[Tenure, Tenure]> {
    const sorted = [...this.tenures].sort((a, b) => a.from - b.from);
    const pairs: Array<[Tenure, Tenure]> = [];
    for (const [i, a] of sorted.entries()) {
      for (const b of sorted.slice(i + 1)) if (b.from < a.to) pairs.push([a, b]);
    }
    return pairs;
  }

  /** Accepted writes carrying a lower fence than a write accepted before them. */
  outOfOrder(): number {
    let highest = 0;
    let count = 0;
    for (const fence of this.accepted) {
      if (fence < highest) count++;
      highest = Math.max(highest, fence);
    }
    return count;
  }
}

/**
 * Works under `lease`: fenced writes until `enough()` or the lease is lost, then a release (which may
 * fail, typed, if the lease was lost meanwhile). The tenure ends when the release is asked for, before
 * Redis could hand the lock on, or when the signal aborted.
 */
async function workUnder(
  name: string,
  lease: Lease,
  store: FencedStore,
  ledger: Ledger,
  enough: (writes: number) => boolean,
): Promise<void> {
  const from = performance.now();
  let lostAt: number | undefined;
  void abortedAt(lease.signal).then((at) => {
    lostAt = at;
  });
  let writes = 0;
  while (!lease.signal.aborted && !enough(writes)) {
    const result = await store.set('failover:resource', lease.fence, name);
    writes++;
    if (result.written) ledger.accepted.push(lease.fence);
    else ledger.rejected++;
    // Paced so that the loop leaves the two cores to the servers and sentinels; not a synchronisation.
    await sleep(10);
  }
  const to = lease.signal.aborted ? (lostAt ?? performance.now()) : performance.now();
  ledger.tenures.push({ name, fence: lease.fence, from, to });
  if (!lease.signal.aborted) await outcome(lease.release());
}

describe('a SIGKILL of the master under load, with replicas: { count: 1 }', () => {
  it('keeps one holder at a time, fenced writes in order, and every caller answered', async () => {
    const key = 'failover:under-load';
    // Two replicas: after the failover the new master still has one to acknowledge grants and renewals.
    const group = await sentinelGroup({ replicas: 2 });
    const store = new FencedStore(resource().client());
    const ledger = new Ledger();

    const holderService = service(group, REPLICAS);
    const holderLease = await holderService.acquire(key, { ttl: 5_000, renew: true });
    let holderDone = false;
    const holder = outcome(workUnder('holder', holderLease, store, ledger, () => holderDone));

    const waiters = Array.from({ length: 4 }, (_, i) =>
      outcome(
        service(group, REPLICAS)
          .acquire(key, { ttl: 5_000, renew: true, waitTimeout: 20_000 })
          .then((lease) => workUnder(`waiter-${i}`, lease, store, ledger, (writes) => writes >= 3)),
      ),
    );
    await until(
      () => holderService.inspect(key),
      (info) => info.queueLength === 4,
    );

    const oldMaster = group.master.port;
    await group.master.kill();
    const promoted = await group.waitForFailover({ port: oldMaster });
    const writesBefore = ledger.accepted.length;

    // The holder either still holds a lease the new master knows (its grant and renewals were on a
    // replica), or it learnt it lost it: never a lease the new master has no trace of.
    await until(
      async () => ({
        aborted: holderLease.signal.aborted,
        owner: await ownerOn(group, promoted.port, key),
        wrote: ledger.accepted.length > writesBefore,
      }),
      ({ aborted, owner, wrote }) => aborted || (owner === holderLease.token && wrote),
      10_000,
    );
    holderDone = true;

    const outcomes = await Promise.all([holder, ...waiters].map((promise) => settlesWithin(promise, 30_000)));
    expect(outcomes.filter((result) => result === 'hung')).toEqual([]);
    const errors = outcomes.flatMap((result) => (result !== 'hung' && result.error ? [result.error] : []));
    for (const error of errors) expect(error).toBeInstanceOf(LockError);

    expect(ledger.overlaps()).toEqual([]);
    expect(ledger.outOfOrder()).toBe(0);
    // Each holder's fence is above the previous one's, across the failover too.
    const fences = [...ledger.tenures].sort((a, b) => a.from - b.from).map((tenure) => tenure.fence);
    expect(fences).toEqual([...fences].sort((a, b) => a - b));
    expect(new Set(fences).size).toBe(fences.length);
    // Every waiter was served or answered with a typed error.
    expect(ledger.tenures.length - 1 + errors.length).toBe(4);
  });
});

describe('the window between a grant and its replication', () => {
  const key = 'failover:window';

  it('without replicas, a grant that never reached the replica is lost in the failover: two holders', async () => {
    const group = await sentinelGroup({ replicationProxy: true });
    const first = service(group);
    const second = service(group);

    group.replicationProxy().freeze();
    const firstLease = await first.acquire(key, { ttl: 15_000, renew: true });
    expect(await ownerOn(group, group.master.port, key)).toBe(firstLease.token);
    // The replica does not have the grant, and acknowledges nothing (WAIT counts the replicas that have
    // the connection's own last write: hence a write of its own first).
    expect(await ownerOn(group, group.replicas[0].port, key)).toBeNull();
    const acknowledged = await group.master.admin(async (redis) => {
      await redis.set('failover:probe', 'frozen');
      return redis.wait(1, 100);
    });
    expect(acknowledged).toBe(0);

    await group.master.kill();
    const promoted = await group.waitForFailover(group.master);
    expect(promoted.port).toBe(group.replicas[0].port);

    await connected(second);
    const secondLease = await second.acquire(key, { ttl: 15_000, waitTimeout: 5_000 });
    // Two holders: the first, renewing every 5 s, has not yet learnt that its grant is gone.
    expect(firstLease.signal.aborted).toBe(false);
    expect(await ownerOn(group, promoted.port, key)).toBe(secondLease.token);

    // Its next renewal finds the other holder, and only then does it stop.
    await abortedAt(firstLease.signal);
    expect(firstLease.signal.reason).toBeInstanceOf(LockLostError);
    expect((firstLease.signal.reason as LockLostError).reason).toBe('taken-over');
  });

  it('with replicas: { count: 1 }, the unreplicated grant is refused and released: one holder', async () => {
    const group = await sentinelGroup({ replicationProxy: true });
    const first = service(group, REPLICAS);
    const second = service(group);

    group.replicationProxy().freeze();
    const refused = await outcome(first.acquire(key, { ttl: 15_000, renew: true }));
    expect(refused.error).toBeInstanceOf(LockNotReplicatedError);
    expect(refused.error).toMatchObject({ write: 'grant', acknowledged: 0, required: 1 });
    expect(await ownerOn(group, group.master.port, key)).toBeNull();

    await group.master.kill();
    const promoted = await group.waitForFailover(group.master);

    await connected(second);
    const secondLease = await second.acquire(key, { ttl: 15_000, waitTimeout: 5_000 });
    expect(await ownerOn(group, promoted.port, key)).toBe(secondLease.token);
  });
});

describe('through the Nest module', () => {
  it('forRoot({ redis: { sentinels, name }, replicas }) follows the master through a failover', async () => {
    const group = await sentinelGroup({ replicas: 2 });
    const moduleRef = await Test.createTestingModule({
      imports: [
        RedisLockModule.forRoot({
          redis: { ...group.sentinelOptions(), retryStrategy: () => 50 },
          ...REPLICAS,
        }),
      ],
    }).compile();
    const app = moduleRef.createNestApplication({ logger: false });
    await app.init();
    cleanup.push(() => app.close());
    const locks = app.get(LockService);
    const before = await locks.acquire('nest-failover');
    expect(await ownerOn(group, group.master.port, 'nest-failover')).toBe(before.token);
    await before.release();

    await group.master.kill();
    const promoted = await group.waitForFailover(group.master);
    await connected(locks);
    const after = await locks.acquire('nest-failover');
    expect(await ownerOn(group, promoted.port, 'nest-failover')).toBe(after.token);
    expect(after.fence).toBeGreaterThan(before.fence);
    await after.release();
  });
});
