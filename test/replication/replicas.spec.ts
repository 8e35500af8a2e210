// The `replicas` option: each grant, confirmed hand-off and renewal is followed by WAIT on the same
// connection, so it resolves only once a replica has it, and a grant no replica acknowledged in time is
// given back. Against a real master and a real replica (--replicaof) whose replication link runs through
// a TCP proxy, so a test can slow replication down (latency) or stop it (SIGSTOP of the replica).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { Test } from '@nestjs/testing';
import Redis, { Cluster } from 'ioredis';
import { ChaosProxy } from '../../chaos/proxy';
import {
  LockLostError,
  LockNotReplicatedError,
  LockService,
  type LockServiceOptions,
  LockUsageError,
  MemoryLockBackend,
  RedisLockModule,
  RedisUnavailableError,
  type ServerRisk,
} from '../../lib';
import { RedisLockTestingModule } from '../../lib/testing';
import { abortedAt, lockService, outcome, until } from '../support/lock-fixtures';
import { type RedisServer, startRedis } from '../support/redis-server';

let master: RedisServer;
let replica: RedisServer;
let link: ChaosProxy;
let dir: string;

/** Replication offsets of the master and the replica agree: everything written so far has arrived. */
async function caughtUp(): Promise<void> {
  await until(
    async () => {
      const offset = (info: string) =>
        Number(/(?:master_repl_offset|slave_repl_offset):(\d+)/.exec(info)?.[1]);
      const [m, r] = await Promise.all([
        master.admin((a) => a.info('replication')),
        replica.admin((a) => a.info('replication')),
      ]);
      return /master_link_status:up/.test(r) && offset(m) === offset(r);
    },
    (done) => done,
  );
}

beforeAll(async () => {
  master = await startRedis();
  link = new ChaosProxy(master.port);
  await link.listen();
  // A replica's full sync writes an RDB file: into a directory of its own, not the working directory.
  dir = mkdtempSync(join(tmpdir(), 'lock-replica-'));
  replica = await startRedis({ args: ['--replicaof', '127.0.0.1', String(link.port), '--dir', dir] });
  await caughtUp();
});

afterEach(async () => {
  link.setLatency(0);
  replica.resume();
  await caughtUp();
});

afterAll(async () => {
  await link.close();
  await Promise.all([replica.dispose(), master.dispose()]);
  rmSync(dir, { recursive: true, force: true });
});

const acked = (extra: Partial<NonNullable<LockServiceOptions['replicas']>> = {}): LockServiceOptions => ({
  replicas: { count: 1, timeout: 1_000, ...extra },
});
const onReplica = (redisKey: string) => replica.admin((a) => a.get(redisKey));
const ownerKey = (key: string) => `lock:{${key}}`;

describe('grants, hand-offs and renewals wait for a replica', () => {
  it('an acquire resolves only once the replica has the grant (replication slowed to 150 ms)', async () => {
    link.setLatency(150);
    const started = performance.now();
    // A WAIT long enough for a loaded machine: what is checked is when the grant came, not how fast.
    const lease = await lockService(master, acked({ timeout: 5_000 })).acquire('acked-grant');
    const took = performance.now() - started;
    // Read at once: the replica already holds the owner key with this lease's token.
    expect(await onReplica(ownerKey('acked-grant'))).toBe(lease.tokens['acked-grant']);
    expect(took).toBeGreaterThanOrEqual(140);
    await lease.release();
  });

  it('without the option the same acquire resolves before the replica has it: the window', async () => {
    link.setLatency(150);
    const lease = await lockService(master).acquire('unacked-grant');
    expect(await onReplica(ownerKey('unacked-grant'))).toBeNull();
    await lease.release();
  });

  it('a waiter handed the lock starts only once the replica has its grant', async () => {
    const first = await lockService(master, acked()).acquire('acked-handoff');
    const waiting = lockService(master, acked()).acquire('acked-handoff', { waitTimeout: 10_000 });
    await until(
      () => master.admin((a) => a.llen(`${ownerKey('acked-handoff')}:q`)),
      (n) => n === 1,
    );
    link.setLatency(150);
    await first.release();
    const second = await waiting;
    expect(await onReplica(ownerKey('acked-handoff'))).toBe(second.tokens['acked-handoff']);
    expect(second.fence).toBeGreaterThan(first.fence);
    await second.release();
  });

  it('extend() resolves only once the replica has the new expiry', async () => {
    const lease = await lockService(master, acked()).acquire('acked-extend', { ttl: 3_000 });
    link.setLatency(150);
    await lease.extend(60_000);
    // Without the wait the replica would still count down from 3 s.
    expect(await replica.admin((a) => a.pttl(ownerKey('acked-extend')))).toBeGreaterThan(50_000);
    await lease.release();
  });

  it('a script the master lost (SCRIPT FLUSH, as on a promoted replica) is re-sent before the wait', async () => {
    await master.admin((a) => a.script('FLUSH'));
    link.setLatency(150);
    const lease = await lockService(master, acked()).acquire('acked-noscript');
    expect(await onReplica(ownerKey('acked-noscript'))).toBe(lease.tokens['acked-noscript']);
    await lease.release();
  });
});

describe('a grant no replica acknowledges is given back', () => {
  it('tryAcquire rejects with LockNotReplicatedError after the timeout and leaves no lock held', async () => {
    replica.pause();
    const locks = lockService(master, acked({ timeout: 200 }));
    const started = performance.now();
    const result = await outcome(locks.tryAcquire('refused'));
    expect(performance.now() - started).toBeGreaterThanOrEqual(195);
    expect(result.error).toBeInstanceOf(LockNotReplicatedError);
    expect(result.error).toBeInstanceOf(RedisUnavailableError);
    expect(result.error).toMatchObject({
      code: 'LOCK_REDIS_UNAVAILABLE',
      key: 'refused',
      write: 'grant',
      acknowledged: 0,
      required: 1,
      timeout: 200,
    });
    expect((result.error as Error).message).toMatch(
      /0 of the 1 replicas .* within 200 ms, so it was released/,
    );
    expect(await master.admin((a) => a.exists(ownerKey('refused')))).toBe(0);
    // Free for anyone at once, not after a ttl.
    const other = await lockService(master).tryAcquire('refused');
    expect(other).not.toBeNull();
    await other?.release();
  });

  it("acquire with unacknowledged 'fail' rejects at the first refusal, long before its waitTimeout", async () => {
    replica.pause();
    const locks = lockService(master, acked({ timeout: 100 }));
    const started = performance.now();
    await expect(locks.acquire('refused-fail', { waitTimeout: 10_000 })).rejects.toBeInstanceOf(
      LockNotReplicatedError,
    );
    expect(performance.now() - started).toBeLessThan(2_000);
    expect(await master.admin((a) => a.exists(ownerKey('refused-fail')))).toBe(0);
  });

  it("a hand-off not acknowledged goes on to the next waiter; unacknowledged 'fail' tells the one it skipped", async () => {
    const holder = await lockService(master).acquire('refused-handoff');
    const skipped = outcome(lockService(master, acked({ timeout: 100 })).acquire('refused-handoff'));
    await until(
      () => master.admin((a) => a.llen(`${ownerKey('refused-handoff')}:q`)),
      (n) => n === 1,
    );
    const next = lockService(master).acquire('refused-handoff', { waitTimeout: 10_000 });
    await until(
      () => master.admin((a) => a.llen(`${ownerKey('refused-handoff')}:q`)),
      (n) => n === 2,
    );
    replica.pause();
    await holder.release();
    expect((await skipped).error).toMatchObject({ write: 'grant', acknowledged: 0 });
    // The refused grant was released, so the next in line got the lock without waiting out a ttl.
    const lease = await next;
    expect(lease.fence).toBeGreaterThan(holder.fence);
    await lease.release();
  });

  it("unacknowledged 'requeue' goes back in line and is served once the replica is back", async () => {
    replica.pause();
    await master.resetStats();
    const pending = lockService(master, acked({ timeout: 100, unacknowledged: 'requeue' })).acquire(
      'refused-wait',
      {
        waitTimeout: 20_000,
      },
    );
    // Two refusals seen by Redis (two WAITs answered after their timeout), then the replica comes back.
    await until(
      () => master.commandStats(),
      (stats) => (stats.get('wait') ?? 0) >= 2,
    );
    replica.resume();
    const lease = await pending;
    expect(await onReplica(ownerKey('refused-wait'))).toBe(lease.tokens['refused-wait']);
    await lease.release();
  });

  it("unacknowledged 'requeue' rejects with LockNotReplicatedError at its waitTimeout, holding nothing", async () => {
    replica.pause();
    const started = performance.now();
    const result = await outcome(
      lockService(master, acked({ timeout: 100, unacknowledged: 'requeue' })).acquire('refused-wait-out', {
        waitTimeout: 800,
      }),
    );
    expect(result.error).toBeInstanceOf(LockNotReplicatedError);
    expect(performance.now() - started).toBeGreaterThanOrEqual(795);
    // Its leaving the queue is sent behind the WAIT still in flight on its connection.
    await until(
      () => master.admin((a) => a.exists(ownerKey('refused-wait-out'), `${ownerKey('refused-wait-out')}:q`)),
      (n) => n === 0,
      1_000,
    );
  });

  it('a renewal no replica acknowledges aborts the signal (LockLostError, not-replicated)', async () => {
    const lease = await lockService(master, acked({ timeout: 100 })).acquire('refused-renewal', {
      ttl: 1_500,
      renew: true,
    });
    const aborted = abortedAt(lease.signal);
    const paused = performance.now();
    replica.pause();
    const at = await aborted;
    // At the next renewal (ttl/3 = 500 ms) and its wait: 100 ms, which Redis times on its own clock tick
    // (hz 10: up to a few hundred ms more). Well before the lease's own expiry.
    expect(at - paused).toBeLessThan(500 + 100 + 500);
    const reason = lease.signal.reason as LockLostError;
    expect(reason).toBeInstanceOf(LockLostError);
    expect(reason.reason).toBe('not-replicated');
    expect(reason.cause).toBeInstanceOf(LockNotReplicatedError);
    expect(lease.signal.aborted).toBe(true);
    // Released in Redis all the same (a release is not waited on).
    await lease.release();
    expect(await master.admin((a) => a.exists(ownerKey('refused-renewal')))).toBe(0);
  });

  it('extend() that no replica acknowledges rejects and aborts the signal', async () => {
    const lease = await lockService(master, acked({ timeout: 100 })).acquire('refused-extend');
    replica.pause();
    const result = await outcome(lease.extend());
    expect(result.error).toMatchObject({ write: 'renewal', acknowledged: 0, required: 1 });
    expect(lease.signal.aborted).toBe(true);
    expect((lease.signal.reason as LockLostError).reason).toBe('not-replicated');
    await lease.release();
  });
});

describe('a semaphore with replicas', () => {
  it('a permit, a hand-off and a renewal resolve only once the replica has them', async () => {
    link.setLatency(150);
    const locks = lockService(master, acked());
    const first = await locks.acquire('acked-sem', { permits: 2 });
    const holders = `${ownerKey('acked-sem')}:s`;
    expect(await replica.admin((a) => a.zscore(holders, first.token))).not.toBeNull();
    const second = await locks.acquire('acked-sem', { permits: 2 });
    const waiting = lockService(master, acked()).acquire('acked-sem', { permits: 2, waitTimeout: 10_000 });
    await until(
      () => master.admin((a) => a.llen(`${ownerKey('acked-sem')}:sq`)),
      (n) => n === 1,
    );
    await first.release();
    const third = await waiting;
    expect(await replica.admin((a) => a.zscore(holders, third.token))).not.toBeNull();
    await second.extend(60_000);
    const ends = Number(await replica.admin((a) => a.zscore(holders, second.token)));
    expect(ends - Date.now()).toBeGreaterThan(50_000);
    await Promise.all([second.release(), third.release()]);
  });

  it('a permit no replica acknowledges is given back: LockNotReplicatedError, no holder left', async () => {
    replica.pause();
    const locks = lockService(master, acked({ timeout: 200 }));
    const result = await outcome(locks.tryAcquire('refused-sem', { permits: 3 }));
    expect(result.error).toBeInstanceOf(LockNotReplicatedError);
    expect(await master.admin((a) => a.exists(`${ownerKey('refused-sem')}:s`))).toBe(0);
    expect(await lockService(master).inspect('refused-sem')).toMatchObject({ held: false, holders: [] });
  });
});

describe('a wait that ioredis resends on a new connection acknowledges nothing', () => {
  // ioredis sends again what a dropped connection left unanswered, once it has reconnected: the WAIT
  // alone when the script's reply had arrived. After a failover the new connection is to the new
  // master, whose replicas acknowledge its own writes at once, not the script the old master ran.
  // Here the old master is `master` with its replica stopped (so its WAIT blocks) and the new one is
  // `other`, with a replica of its own that is up to date.
  let other: RedisServer;
  let otherReplica: RedisServer;
  let door: ChaosProxy;
  let client: Redis;
  let service: LockService;

  beforeAll(async () => {
    other = await startRedis();
    otherReplica = await startRedis({ args: ['--replicaof', '127.0.0.1', String(other.port), '--dir', dir] });
    await until(
      () => otherReplica.admin((a) => a.info('replication')),
      (info) => info.includes('master_link_status:up'),
    );
  });

  afterAll(async () => {
    await Promise.all([otherReplica.dispose(), other.dispose()]);
  });

  /** A service on `master` whose connection goes through `door`, a proxy that can be re-pointed. */
  async function throughDoor(): Promise<void> {
    door = new ChaosProxy(master.port);
    await door.listen();
    client = new Redis({ host: '127.0.0.1', port: door.port, retryStrategy: () => 10 });
    service = new LockService(client, acked({ timeout: 5_000 }));
  }

  /** The script's reply has arrived and only its WAIT is unanswered, blocked on the server. */
  const waitPending = () =>
    until(
      async () => client.commandQueue.toArray().map((item) => item.command.name),
      (names) => names.length === 1 && names[0] === 'wait',
    );

  /** The failover, as the client sees it: its address leads to `other` now, and its connection drops. */
  function failOver(): void {
    door.retarget(other.port);
    door.dropAll();
  }

  afterEach(async () => {
    await service.close();
    client.disconnect();
    await door.close();
  });

  it('a grant whose wait was answered by the new master is refused, not used', async () => {
    await throughDoor();
    // Scripts loaded while the replica runs, so the one under test is a single EVALSHA and its WAIT.
    await (await service.acquire('moved-warm')).release();
    replica.pause();
    const attempt = outcome(service.acquire('moved-grant'));
    await until(
      () => master.admin((a) => a.exists(ownerKey('moved-grant'))),
      (n) => n === 1,
    );
    await waitPending();
    failOver();
    const { value, error } = await attempt;
    expect(value).toBeUndefined();
    expect(error).toBeInstanceOf(LockNotReplicatedError);
    expect(error).toMatchObject({ write: 'grant', acknowledged: 0 });
    expect((error as Error).message).toMatch(/connection to Redis dropped before the replicas acknowledged/);
    // The new master never had the grant: a caller told it held the lock would share it with the next.
    expect(await other.admin((a) => a.exists(ownerKey('moved-grant')))).toBe(0);
  });

  it('a renewal whose wait was answered by the new master aborts the signal', async () => {
    await throughDoor();
    const lease = await service.acquire('moved-renewal', { ttl: 5_000 });
    await lease.extend();
    replica.pause();
    const extended = outcome(lease.extend());
    await waitPending();
    failOver();
    const { value, error } = await extended;
    expect(value).toBeUndefined();
    expect(error).toBeInstanceOf(LockNotReplicatedError);
    expect(error).toMatchObject({ write: 'renewal', acknowledged: 0 });
    expect(lease.signal.aborted).toBe(true);
    expect((lease.signal.reason as LockLostError).reason).toBe('not-replicated');
    await outcome(lease.release());
  });
});

describe('a master that never saw the scripts, with no replica yet (as just after a failover)', () => {
  let fresh: RedisServer;
  beforeAll(async () => {
    fresh = await startRedis();
  });
  afterAll(async () => {
    await fresh.dispose();
  });

  const waits = async () => (await fresh.commandStats()).get('wait') ?? 0;
  const TIMEOUT = 300;

  /** A refused tryAcquire on `locks`, and how many WAITs and how long it took. */
  async function refusedTry(locks: LockService, key: string) {
    const before = await waits();
    const started = performance.now();
    const result = await outcome(locks.tryAcquire(key));
    const took = performance.now() - started;
    if (process.env.REPLICAS_REPORT) console.log(`replicas: refused try on ${key}: ${took.toFixed(0)} ms`);
    expect(result.error).toBeInstanceOf(LockNotReplicatedError);
    expect(await fresh.admin((a) => a.exists(ownerKey(key)))).toBe(0);
    return { waits: (await waits()) - before, took };
  }

  it('a grant waits for replicas once, not twice: the script goes as EVAL, never as an EVALSHA that fails', async () => {
    const locks = lockService(fresh, acked({ timeout: TIMEOUT }));
    // No replica answers a WAIT here, whatever the connection wrote: each WAIT takes its whole timeout.
    const first = await refusedTry(locks, 'noscript-fresh');
    expect(first.waits).toBe(1);
    expect(first.took).toBeGreaterThanOrEqual(TIMEOUT - 5);
  });

  it('after the connection is made again to a server that lost the scripts, still one wait', async () => {
    const locks = lockService(fresh, acked({ timeout: TIMEOUT }));
    await refusedTry(locks, 'noscript-warm');
    // The same address, another server's memory: its scripts are gone, and the client reconnects.
    await fresh.admin(async (a) => {
      await a.script('FLUSH');
      await a.client('KILL', 'TYPE', 'normal', 'SKIPME', 'yes');
    });
    // The reconnected client answers again (a plain read, not a script).
    await until(
      () => outcome(locks.inspect('noscript-again')),
      ({ error }) => error === undefined,
    );
    const again = await refusedTry(locks, 'noscript-again');
    expect(again.waits).toBe(1);
  });
});

describe('WAITAOF (replicas.aof)', () => {
  it('is used when asked; before Redis 7.2 the call rejects saying so, and leaves nothing held', async () => {
    const version = await master.admin(async (a) =>
      /redis_version:(\d+)\.(\d+)/.exec(await a.info('server')),
    );
    const supported = Number(version?.[1]) > 7 || (Number(version?.[1]) === 7 && Number(version?.[2]) >= 2);
    const locks = lockService(master, acked({ aof: true }));
    const result = await outcome(locks.tryAcquire('aof'));
    if (supported) {
      // A master without AOF refuses WAITAOF with numlocal 1.
      expect(result.error).toMatchObject({ code: 'LOCK_REDIS_ERROR' });
      expect((result.error as Error).message).toMatch(/replicas\.aof: .*appendonly yes/);
    } else {
      expect(result.error).toMatchObject({ code: 'LOCK_REDIS_ERROR', key: 'aof' });
      expect((result.error as Error).message).toMatch(/replicas\.aof: .*WAITAOF needs Redis 7\.2 or later/);
    }
    expect(await master.admin((a) => a.exists(ownerKey('aof')))).toBe(0);
  });
});

describe('what the server checks say with replicas', () => {
  it('no async-replication warning when grants are acknowledged; replicas-missing when too few', async () => {
    const seen: ServerRisk[] = [];
    const enough = lockService(master, { ...acked(), onWarning: (w) => seen.push(w) });
    const [report] = await enough.checkServers();
    expect(report.risks.map((r) => r.code)).not.toContain('async-replication');
    const tooMany = lockService(master, { ...acked({ count: 2 }), onWarning: (w) => seen.push(w) });
    const [short] = await tooMany.checkServers();
    const missing = short.risks.find((r) => r.code === 'replicas-missing');
    expect(missing?.message).toMatch(/1 connected replica\(s\) but replicas\.count is 2/);
    const without = lockService(master, { onWarning: (w) => seen.push(w) });
    const [plain] = await without.checkServers();
    expect(plain.risks.find((r) => r.code === 'async-replication')?.message).toMatch(/replicas option/);
  });
});

describe('replicas: bad input and stores it does not apply to', () => {
  it('is validated before anything is sent', () => {
    const client = master.client();
    const bad: unknown[] = [
      null,
      3,
      {},
      { count: 0, timeout: 50 },
      { count: 1.5, timeout: 50 },
      { count: 1 },
      { count: 1, timeout: 0 },
      { count: 1, timeout: 20_000 },
      { count: 1, timeout: 50, unacknowledged: 'retry' },
      { count: 1, timeout: 50, unacknowledged: 'wait' },
      { count: 1, timeout: 50, aof: 'yes' },
      { count: 1, timeout: 50, timout: 5 },
    ];
    for (const replicas of bad) {
      expect(() => new LockService(client, { replicas } as LockServiceOptions)).toThrow(LockUsageError);
    }
    expect(() => new LockService(client, { replicas: { count: 1, timeout: 20_000 } })).toThrow(
      /at most a third of defaults.ttl/,
    );
    expect(
      () => new LockService(client, { replicas: { count: 1, timeout: 50, timout: 5 } as never }),
    ).toThrow(/timeout/);
    expect(
      () => new LockService(client, { replicas: { count: 1, timeout: 50, onTimeout: 'wait' } as never }),
    ).toThrow(/Unknown option "onTimeout" in replicas \(known: count, timeout, unacknowledged, aof\)/);
    client.disconnect();
  });

  it('is refused for a Cluster client, a quorum and a lock backend, saying what to use', () => {
    const cluster = new Cluster([{ host: '127.0.0.1', port: master.port }], { lazyConnect: true });
    expect(() => new LockService(cluster, acked())).toThrow(/not supported on a Cluster client.*Sentinel/);
    cluster.disconnect();
    const nodes = [master, replica].map((s) => new Redis({ port: s.port, lazyConnect: true }));
    nodes.push(new Redis({ port: link.port, lazyConnect: true }));
    expect(() => new LockService(nodes, acked())).toThrow(/quorum of independent masters/);
    expect(() => new LockService(new MemoryLockBackend(), acked())).toThrow(/lock backend/);
  });
});

describe('in a Nest app', () => {
  it('RedisLockModule.forRoot({ replicas }) gives a LockService whose grants wait for the replica', async () => {
    const client = master.client();
    const moduleRef = await Test.createTestingModule({
      imports: [RedisLockModule.forRoot({ client, replicas: { count: 1, timeout: 1_000 } })],
    }).compile();
    const app = moduleRef.createNestApplication({ logger: false });
    await app.init();
    try {
      const locks = app.get(LockService);
      link.setLatency(150);
      const lease = await locks.acquire('nest-acked');
      expect(await onReplica(ownerKey('nest-acked'))).toBe(lease.tokens['nest-acked']);
      await lease.release();
      link.setLatency(0);
      replica.pause();
      await expect(locks.tryAcquire('nest-refused')).rejects.toBeInstanceOf(LockNotReplicatedError);
    } finally {
      await app.close();
      client.disconnect();
    }
  });

  it('the testing module accepts the same options and ignores replicas (locks in memory)', async () => {
    const moduleRef = await Test.createTestingModule({
      imports: [
        RedisLockTestingModule.forRoot({ url: 'redis://unused:6379', replicas: { count: 1, timeout: 50 } }),
      ],
    }).compile();
    const locks = moduleRef.get(LockService);
    const lease = await locks.acquire('in-memory');
    await lease.release();
    await moduleRef.close();
  });
});
