// Tests of the test harness itself, against real redis-server and Node processes: the engine's property
// suites are only as trustworthy as the servers and workers they drive.
import { readFileSync } from 'node:fs';
import { connect } from 'node:net';
import { setTimeout as delay } from 'node:timers/promises';
import { afterEach, describe, expect, it } from '@jest/globals';
import type { Redis } from 'ioredis';
import { killAllWorkers, spawnWorker, type Worker, workerPath } from './support/processes';
import { type RedisServer, startRedis, stopAll, useRedis } from './support/redis-server';
import type { Command, Report } from './workers/harness-incr.worker';

/** Settles with 'stalled' if `promise` has not settled within `ms`: the proof that something is stuck. */
async function settlesWithin(promise: Promise<unknown>, ms: number): Promise<'settled' | 'stalled'> {
  const timer = new AbortController();
  return Promise.race([
    promise.then(
      () => 'settled' as const,
      () => 'settled' as const,
    ),
    delay(ms, 'stalled' as const, { signal: timer.signal }).catch(() => 'settled' as const),
  ]).finally(() => timer.abort());
}

/**
 * Whether the redis-server `pid` no longer serves 127.0.0.1:`port`: the connection is refused, or what
 * answers there is another process (a parallel suite's server that got the freed port since).
 */
function notServedBy(port: number, pid: number): Promise<boolean> {
  expect(port).not.toBe(6379); // never even knock on the door of someone else's Redis
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    let reply = '';
    socket.setTimeout(2_000, () => {
      socket.destroy();
      resolve(false);
    });
    socket.once('connect', () => socket.write('INFO server\r\n'));
    socket.on('data', (chunk) => {
      reply += chunk;
      const match = /process_id:(\d+)/.exec(reply);
      if (!match) return;
      socket.destroy();
      resolve(Number(match[1]) !== pid);
    });
    socket.once('error', (error: NodeJS.ErrnoException) => resolve(error.code === 'ECONNREFUSED'));
  });
}

/** Whether process `pid` still runs (a zombie, dead but not yet reaped, does not count). */
function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
  try {
    // /proc/<pid>/stat is "pid (comm) state ...": Z is a zombie.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return process.platform !== 'linux'; // no /proc: trust kill(pid, 0)
  }
}

/** Waits until process `pid` is gone. Polling: we are not its parent, so no event tells us. */
async function gone(pid: number, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (isAlive(pid)) {
    if (Date.now() > deadline) throw new Error(`process ${pid} still alive after ${timeoutMs} ms`);
    await delay(10);
  }
}

async function serverPid(client: Redis): Promise<number> {
  return Number(/^process_id:(\d+)/m.exec(await client.info('server'))?.[1]);
}

describe('a shared server (useRedis)', () => {
  const server = useRedis();

  it('runs on a free port other than 6379 and answers PING', async () => {
    expect(server().port).not.toBe(6379);
    expect(server().url).toBe(`redis://127.0.0.1:${server().port}`);
    expect(await server().client().ping()).toBe('PONG');
  });

  it('counts commands since resetStats()', async () => {
    const client = server().client();
    await client.ping();
    await client.set('harness:before-reset', '1');
    await server().resetStats();
    for (const i of [1, 2, 3]) await client.set(`harness:stat:${i}`, String(i));
    const stats = await server().commandStats();
    expect(stats.get('set')).toBe(3);
    expect(stats.get('get')).toBeUndefined();
  });

  it('lists keys with SCAN and reads their PTTL', async () => {
    const client = server().client();
    await client.set('harness:keys:b', '1', 'PX', 10_000);
    await client.set('harness:keys:a', '1');
    expect(await server().keys('harness:keys:*')).toEqual(['harness:keys:a', 'harness:keys:b']);
    const ttl = await server().ttlOf('harness:keys:b');
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(10_000);
    expect(await server().ttlOf('harness:keys:a')).toBe(-1);
    expect(await server().ttlOf('harness:keys:missing')).toBe(-2);
  });

  it('pause() stalls commands until resume()', async () => {
    const client = server().client();
    await client.ping();
    server().pause();
    let reply: Promise<string>;
    try {
      reply = client.ping();
      expect(await settlesWithin(reply, 300)).toBe('stalled');
    } finally {
      server().resume();
    }
    expect(await reply).toBe('PONG');
  });
});

describe('server lifecycle', () => {
  const started: RedisServer[] = [];
  const start = async (args?: string[]): Promise<RedisServer> => {
    const server = await startRedis({ args });
    started.push(server);
    return server;
  };
  afterEach(async () => {
    await Promise.all(started.splice(0).map((server) => server.dispose()));
  });

  it('passes extra arguments to redis-server', async () => {
    const server = await start(['--maxmemory', '12mb']);
    expect(await server.client().config('GET', 'maxmemory')).toEqual(['maxmemory', String(12 * 1024 * 1024)]);
  });

  it('refuses arguments that would hide the readiness line or move the server', async () => {
    await expect(startRedis({ args: ['--loglevel', 'warning'] })).rejects.toThrow(/--loglevel warning/);
    await expect(startRedis({ args: ['--port', '6379'] })).rejects.toThrow(/--port/);
  });

  it('restart() comes back on the same port with an empty dataset, after stop, kill or while running', async () => {
    const server = await start();
    const { port } = server;
    const client = server.client();
    await client.set('harness:restart', 'v');
    const pid = await serverPid(client);

    await server.restart(); // while running: stops first
    expect(server.port).toBe(port);
    expect(isAlive(pid)).toBe(false);
    expect(await server.keys()).toEqual([]);
    // The existing client reconnects by itself and sees the empty dataset.
    expect(await client.get('harness:restart')).toBeNull();

    await client.set('harness:restart', 'v');
    await server.kill();
    await server.restart();
    expect(await server.client().dbsize()).toBe(0);

    await server.stop();
    await server.restart();
    expect(await server.client().ping()).toBe('PONG');
  });

  it('kill() makes clients see the server gone', async () => {
    const server = await start();
    // Without an offline queue, a command sent while disconnected fails at once instead of waiting.
    const client = server.client({ enableOfflineQueue: false });
    await new Promise<void>((resolve) => client.once('ready', () => resolve()));
    const pid = Number(/process_id:(\d+)/.exec(await client.info('server'))?.[1]);
    expect(pid).toBeGreaterThan(0);
    const closed = new Promise<void>((resolve) => client.once('close', () => resolve()));

    await server.kill();
    await closed;
    await expect(client.ping()).rejects.toThrow();
    expect(await notServedBy(server.port, pid)).toBe(true);
  });

  it('stopAll() disconnects every client and kills every server, paused ones included', async () => {
    const servers = [await startRedis(), await startRedis()];
    const clients = servers.map((server) => server.client());
    const pids = await Promise.all(clients.map(serverPid));
    servers[1].pause();

    await stopAll();
    for (const pid of pids) expect(isAlive(pid)).toBe(false);
    for (const client of clients) expect(client.status).toBe('end');
    await expect(servers[0].restart()).rejects.toThrow(/disposed/);
  });
});

describe('workers', () => {
  const server = useRedis();
  const incrWorker = (args: Record<string, unknown> = {}): Worker<Report> =>
    spawnWorker<Report>(workerPath('harness-incr.worker'), args);
  const command = (worker: Worker<Report>, message: Command): void => worker.send(message);
  afterEach(killAllWorkers);

  it('resolves worker files by name, with or without the .worker suffix', () => {
    expect(workerPath('harness-incr')).toBe(workerPath('harness-incr.worker'));
    expect(() => workerPath('no-such-worker')).toThrow(/no-such-worker/);
  });

  it('runs children that INCR a key and report over IPC', async () => {
    const key = 'harness:workers:counter';
    const workers = [1, 2, 3].map(() => incrWorker({ url: server().url, key, count: 50 }));
    const reports = await Promise.all(workers.map((worker) => worker.next((m) => m.type === 'done')));

    const lasts = reports.map((report) => (report.type === 'done' ? report.last : -1));
    expect(Math.max(...lasts)).toBe(150);
    expect(await server().client().get(key)).toBe('150');

    for (const worker of workers) command(worker, { type: 'exit', code: 0 });
    for (const worker of workers) expect(await worker.exit).toEqual({ code: 0, signal: null });
  });

  it('next() also returns messages that arrived before it was called', async () => {
    const worker = incrWorker({ url: server().url, key: 'harness:workers:buffered', count: 1 });
    await worker.next((m) => m.type === 'done');
    // 'ready' was sent before 'done', so it is waiting in the buffer.
    expect(await worker.next((m) => m.type === 'ready', 1)).toEqual({ type: 'ready' });
    expect(worker.messages.map((m) => m.type)).toEqual(['ready', 'done']);
  });

  it('kill() with SIGKILL resolves exit with signal SIGKILL', async () => {
    const worker = incrWorker();
    await worker.next((m) => m.type === 'ready');
    await worker.kill();
    expect(await worker.exit).toEqual({ code: null, signal: 'SIGKILL' });
  });

  it('stop() ends a worker with SIGTERM', async () => {
    const worker = incrWorker();
    await worker.next((m) => m.type === 'ready');
    await worker.stop();
    expect(await worker.exit).toEqual({ code: null, signal: 'SIGTERM' });
  });

  it('pause() freezes a worker until resume()', async () => {
    const worker = incrWorker();
    await worker.next((m) => m.type === 'ready');
    worker.pause();
    try {
      command(worker, { type: 'exit', code: 3 });
      expect(await settlesWithin(worker.exit, 300)).toBe('stalled');
    } finally {
      worker.resume();
    }
    expect(await worker.exit).toEqual({ code: 3, signal: null });
  });

  it('reports an uncaught exception in a worker, which exits with code 1', async () => {
    const worker = incrWorker();
    await worker.next((m) => m.type === 'ready');
    command(worker, { type: 'throw', message: 'boom from the worker' });
    await expect(worker.next((m) => m.type === 'done')).rejects.toThrow(/boom from the worker/);
    expect(await worker.exit).toEqual({ code: 1, signal: null });
    expect(worker.messages).toContainEqual(expect.objectContaining({ type: 'error' }));
  });

  it('a worker exits by itself when its parent dies', async () => {
    const parent = incrWorker();
    await parent.next((m) => m.type === 'ready');
    command(parent, { type: 'spawn-worker' });
    const spawned = await parent.next((m) => m.type === 'worker-started');
    if (spawned.type !== 'worker-started') throw new Error('unreachable');
    expect(isAlive(spawned.pid)).toBe(true);

    // SIGKILL: the parent runs no cleanup at all, so only the child's own 'disconnect' handler can end it.
    await parent.kill();
    await gone(spawned.pid);
  });
});

describe('cleanup when the process that started a server ends', () => {
  const endings = ['process.exit()', 'an uncaught exception', 'SIGTERM'] as const;

  it.each(endings)('kills the redis-server when its process ends by %s', async (ending) => {
    const worker = spawnWorker<Report>(workerPath('harness-incr'));
    await worker.next((m) => m.type === 'ready');
    worker.send({ type: 'start-redis' } satisfies Command);
    const started = await worker.next((m) => m.type === 'redis-started');
    if (started.type !== 'redis-started') throw new Error('unreachable');
    expect(started.port).not.toBe(6379);
    expect(isAlive(started.pid)).toBe(true);

    if (ending === 'process.exit()') worker.send({ type: 'exit', code: 0 } satisfies Command);
    if (ending === 'an uncaught exception') worker.send({ type: 'throw', message: 'boom' } satisfies Command);
    if (ending === 'SIGTERM') await worker.kill('SIGTERM');
    const exit = await worker.exit;
    expect(exit).toEqual(
      {
        'process.exit()': { code: 0, signal: null },
        'an uncaught exception': { code: 1, signal: null },
        SIGTERM: { code: null, signal: 'SIGTERM' },
      }[ending],
    );

    await gone(started.pid);
    expect(await notServedBy(started.port, started.pid)).toBe(true);
  });
});
