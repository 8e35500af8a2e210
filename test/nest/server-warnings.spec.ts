// What the lock's Redis says about eviction, persistence and replication (INFO only), warned about once
// per server and kind through the Nest logger (and `onWarning` of a plain LockService), and shown in the
// health details. Against real redis-servers configured each way: maxmemory + volatile-lru, noeviction
// with AOF, no persistence, a master with a replica (--replicaof), and a quorum's nodes.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from '@jest/globals';
import type { INestApplication, LoggerService } from '@nestjs/common';
import {
  LockService,
  type LockWarning,
  RedisLockHealthIndicator,
  RedisLockModule,
  type ServerRisk,
} from '../../lib';
import { until } from '../support/lock-fixtures';
import { bootApp } from '../support/nest-apps';
import { type RedisServer, startRedis } from '../support/redis-server';

const servers: RedisServer[] = [];
const dirs: string[] = [];

afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.dispose()));
});

afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

async function server(...args: string[]): Promise<RedisServer> {
  const started = await startRedis({ args });
  servers.push(started);
  return started;
}

/** Append-only file on, in a directory of its own (never the working directory). */
function aof(): string[] {
  const dir = mkdtempSync(join(tmpdir(), 'lock-aof-'));
  dirs.push(dir);
  return ['--appendonly', 'yes', '--dir', dir];
}

/** The Nest logger's warnings, as the application would print them. */
class CapturingLogger implements LoggerService {
  readonly warnings: Array<{ message: string; context?: string }> = [];
  log(): void {}
  error(): void {}
  debug(): void {}
  verbose(): void {}
  warn(message: unknown, context?: string): void {
    this.warnings.push({ message: String(message), context });
  }
}

/** An application with the module on its own connection to `url`, once connected. */
async function boot(url: string): Promise<{ app: INestApplication; logger: CapturingLogger }> {
  const logger = new CapturingLogger();
  const app = await bootApp({ imports: [RedisLockModule.forRoot({ url })], logger });
  const client = app.get(LockService).client;
  await until(
    async () => client.status,
    (status) => status === 'ready',
  );
  return { app, logger };
}

const lockWarnings = (logger: CapturingLogger) => logger.warnings.filter((w) => w.context === 'RedisLock');

describe('warnings about the lock server', () => {
  it('maxmemory + volatile-lru (with AOF): exactly one warning, logged once, and shown by the health check', async () => {
    const redis = await server('--maxmemory', '5mb', '--maxmemory-policy', 'volatile-lru', ...aof());
    const { app, logger } = await boot(redis.url);
    await until(
      async () => lockWarnings(logger).length,
      (n) => n > 0,
    );
    const locks = app.get(LockService);
    // Asked again, and again after a reconnect (each 'ready' checks anew): still the one warning.
    await locks.checkServers();
    const ready = new Promise((resolve) => locks.client.once('ready', resolve));
    await redis.admin((admin) => admin.client('KILL', 'TYPE', 'normal'));
    await ready;
    const reports = await locks.checkServers();
    const health = await app.get(RedisLockHealthIndicator).isHealthy();

    const warnings = lockWarnings(logger);
    expect(warnings).toHaveLength(1);
    expect(warnings[0].message).toMatch(
      new RegExp(
        `^Redis 127\\.0\\.0\\.1:${redis.port}: maxmemory 5mb with maxmemory-policy volatile-lru can evict lock keys`,
      ),
    );
    expect(warnings[0].message).toMatch(
      /Set maxmemory-policy noeviction, or keep locks on a Redis of their own/,
    );
    expect(reports).toHaveLength(1);
    expect(reports[0].risks.map((risk) => risk.code)).toEqual(['eviction']);

    const status = health['redis-lock'];
    expect(status.status).toBe('up');
    expect(status.warnings).toEqual([warnings[0].message]);
    expect(status.servers?.[`127.0.0.1:${redis.port}`]).toMatchObject({
      role: 'master',
      maxmemory: 5 * 1024 * 1024,
      maxmemoryPolicy: 'volatile-lru',
      aof: true,
      connectedReplicas: 0,
    });
  });

  it('noeviction with AOF: no warning at start-up, after a check or in the health result', async () => {
    const redis = await server('--maxmemory', '5mb', '--maxmemory-policy', 'noeviction', ...aof());
    const { app, logger } = await boot(redis.url);
    const locks = app.get(LockService);
    // The start-up check has run once INFO was answered: a later check on the same connection queues after it.
    const reports = await locks.checkServers();
    const health = await app.get(RedisLockHealthIndicator).isHealthy();

    expect(reports).toEqual([{ server: `127.0.0.1:${redis.port}`, facts: expect.any(Object), risks: [] }]);
    expect(lockWarnings(logger)).toEqual([]);
    const status = health['redis-lock'];
    expect(status.status).toBe('up');
    expect(status.warnings).toBeUndefined();
    expect(status.servers?.[`127.0.0.1:${redis.port}`]).toMatchObject({
      maxmemoryPolicy: 'noeviction',
      aof: true,
    });
  });

  it('no persistence: one warning that a restart frees every lock', async () => {
    const redis = await server();
    const { logger } = await boot(redis.url);
    await until(
      async () => lockWarnings(logger).length,
      (n) => n > 0,
    );
    const [warning] = lockWarnings(logger);
    expect(warning.message).toMatch(/has no append-only file \(appendonly no\): a restart loses every lock/);
    expect(lockWarnings(logger)).toHaveLength(1);
  });

  it('a plain LockService reports through onWarning: a master with a replica, then the replica itself', async () => {
    const master = await server(...aof());
    const replica = await server('--replicaof', '127.0.0.1', String(master.port), ...aof());
    await until(
      () => master.admin((admin) => admin.info('replication')),
      (info) => /connected_slaves:1/.test(info),
    );
    const seen: ServerRisk[] = [];
    const onMaster = new LockService(master.client(), { onWarning: (w) => seen.push(w) });
    const onReplica = new LockService(replica.client(), { onWarning: (w) => seen.push(w) });
    try {
      const [masterReport] = await onMaster.checkServers();
      const [replicaReport] = await onReplica.checkServers();
      expect(masterReport.risks.map((r) => r.code)).toEqual(['async-replication']);
      expect(replicaReport.risks.map((r) => r.code)).toEqual(['replica']);
      expect(replicaReport.facts).toMatchObject({
        role: 'replica',
        master: `127.0.0.1:${master.port}`,
      });
      // Each told once, however many checks ran (the start-up check and the one above).
      expect(seen.map((w) => `${w.server} ${w.code}`).sort()).toEqual(
        [`127.0.0.1:${master.port} async-replication`, `127.0.0.1:${replica.port} replica`].sort(),
      );
    } finally {
      await Promise.all([onMaster.close(), onReplica.close()]);
    }
  });

  it('a quorum: each node checked, warned about and shown in the health details', async () => {
    const nodes = await Promise.all([server(), server(...aof()), server(...aof())]);
    // The module's handler also receives key warnings (none here: no @Locked method).
    const seen: LockWarning[] = [];
    const app = await bootApp({
      imports: [RedisLockModule.forRoot({ url: nodes.map((n) => n.url), onWarning: (w) => seen.push(w) })],
    });
    const health = await until(
      () => app.get(RedisLockHealthIndicator).isHealthy(),
      (result) =>
        Object.keys(result['redis-lock'].servers ?? {}).length === 3 && result['redis-lock'].status === 'up',
    );
    const status = health['redis-lock'];
    expect(status.warnings).toHaveLength(1);
    expect(status.warnings?.[0]).toMatch(
      new RegExp(
        `^Redis 127\\.0\\.0\\.1:${nodes[0].port}: has no append-only file.*In a quorum, restart a crashed node only after the longest ttl`,
      ),
    );
    expect(seen.map((w) => w.code)).toEqual(['no-persistence']);
  });

  it('a handler that throws changes nothing', async () => {
    const redis = await server();
    const throwing = new LockService(redis.client(), {
      onWarning: () => {
        throw new Error('handler bug');
      },
    });
    try {
      const [report] = await throwing.checkServers();
      expect(report.risks.map((r) => r.code)).toEqual(['no-persistence']);
      await (await throwing.acquire('k')).release();
      await expect(throwing.checkServers({ timeout: 0 })).rejects.toMatchObject({
        code: 'LOCK_INVALID_OPTIONS',
      });
    } finally {
      await throwing.close();
    }
  });

  it('INFO refused by an ACL: one `unknown` warning that says how to allow it; locks still work', async () => {
    const redis = await server();
    await redis.admin((admin) =>
      admin.call('ACL', 'SETUSER', 'locker', 'on', 'nopass', '~*', '&*', '+@all', '-info'),
    );
    const seen: ServerRisk[] = [];
    const client = redis.client({ username: 'locker', password: 'x', enableReadyCheck: false });
    const locks = new LockService(client, { onWarning: (w) => seen.push(w) });
    try {
      const [report] = await locks.checkServers();
      await locks.checkServers();
      expect(report.facts).toBeUndefined();
      expect(report.risks.map((r) => r.code)).toEqual(['unknown']);
      expect(report.risks[0].message).toMatch(
        /INFO was refused \(NOPERM.*Allow INFO for the lock connection \(ACL \+info\)/,
      );
      expect(seen.map((w) => w.code)).toEqual(['unknown']);
      await (await locks.acquire('acl')).release();
    } finally {
      await locks.close();
    }
  });

  it('without onWarning, a LockService sends no INFO of its own', async () => {
    const redis = await server();
    const client = redis.client();
    // ioredis' own ready check sends an INFO: the count starts after it.
    await until(
      async () => client.status,
      (status) => status === 'ready',
    );
    await redis.resetStats();
    const quiet = new LockService(client);
    try {
      await (await quiet.acquire('k')).release();
      const stats = await redis.commandStats();
      expect((stats.get('evalsha') ?? 0) + (stats.get('eval') ?? 0)).toBeGreaterThan(0);
      expect(stats.get('info')).toBeUndefined();
    } finally {
      await quiet.close();
    }
  });
});
