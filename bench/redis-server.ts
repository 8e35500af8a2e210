/**
 * Throwaway redis-server processes for the benchmark: a free port (never 6379, which belongs to someone
 * else), no persistence, killed when the harness exits. Plus the harness' own admin connection, named so
 * that CLIENT LIST can leave it out.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { createServer } from 'node:net';
import Redis from 'ioredis';
import { ADMIN_CONNECTION, HOLDER_CONNECTION } from './ipc';

const FORBIDDEN_PORT = 6379;
const READY_LINE = 'Ready to accept connections';

const running = new Set<ChildProcess>();
process.on('exit', () => {
  for (const child of running) child.kill('SIGKILL');
});

/**
 * The CPU a redis-server has used, µs, from its `INFO cpu` reply: user + system time of the server and of
 * its children (a fork for a snapshot), cumulative since it started, so the work of a window is a delta.
 */
export function cpuUsFromInfo(info: string): number {
  let seconds = 0;
  let found = 0;
  for (const match of info.matchAll(/^used_cpu_(?:sys|user)(?:_children)?:([\d.]+)\r?$/gm)) {
    seconds += Number(match[1]);
    found++;
  }
  if (found === 0) throw new Error('INFO cpu has no used_cpu_* fields');
  return seconds * 1e6;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });
}

function launch(port: number): Promise<ChildProcess> {
  const child = spawn(
    'redis-server',
    [
      ...['--port', String(port), '--bind', '127.0.0.1', '--protected-mode', 'no'],
      ...['--save', '', '--appendonly', 'no', '--loglevel', 'notice'],
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let output = '';
  const append = (chunk: Buffer) => {
    output = (output + chunk.toString()).slice(-8_192);
  };
  child.stdout.on('data', append);
  child.stderr.on('data', append);
  running.add(child);
  child.once('exit', () => running.delete(child));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(
      () => fail(new Error(`redis-server on ${port} not ready in 10 s:\n${output}`)),
      10_000,
    );
    const onData = () => {
      if (!output.includes(READY_LINE)) return;
      cleanup();
      resolve(child);
    };
    const onExit = (code: number | null) =>
      fail(new Error(`redis-server on ${port} exited (${code}):\n${output}`));
    const onError = (error: Error) => fail(new Error(`could not run redis-server: ${error.message}`));
    const cleanup = () => {
      clearTimeout(timer);
      child.stdout.off('data', onData);
      child.off('exit', onExit);
      child.off('error', onError);
    };
    const fail = (error: Error) => {
      cleanup();
      child.kill('SIGKILL');
      reject(error);
    };
    child.stdout.on('data', onData);
    child.once('exit', onExit);
    child.once('error', onError);
  });
}

export interface BenchRedis {
  readonly port: number;
  readonly admin: Admin;
  stop(): Promise<void>;
}

export async function startRedis(): Promise<BenchRedis> {
  for (let attempt = 1; ; attempt++) {
    const port = await freePort();
    if (port === FORBIDDEN_PORT) continue;
    let child: ChildProcess;
    try {
      child = await launch(port);
    } catch (error) {
      // Someone took the port between the probe and the bind: try another.
      if (attempt < 5 && /Address already in use/i.test(String(error))) continue;
      throw error;
    }
    const admin = await Admin.connect(port);
    return {
      port,
      admin,
      async stop() {
        admin.close();
        if (child.exitCode !== null || child.signalCode !== null) return;
        const exited = new Promise((resolve) => child.once('exit', resolve));
        child.kill('SIGKILL');
        await exited;
      },
    };
  }
}

/** The harness' own commands (and connection set-up: INFO ready checks, CLIENT SETNAME), left out of commandstats. */
const ADMIN_COMMANDS = /^(info|config\|.*|client\|.*)$/;

export class Admin {
  private constructor(private readonly redis: Redis) {}

  static async connect(port: number): Promise<Admin> {
    const redis = new Redis({
      host: '127.0.0.1',
      port,
      connectionName: ADMIN_CONNECTION,
      maxRetriesPerRequest: 1,
      commandTimeout: 30_000,
    });
    redis.on('error', () => {});
    await new Promise((resolve) => redis.once('ready', resolve));
    return new Admin(redis);
  }

  async resetStats(): Promise<void> {
    await this.redis.config('RESETSTAT');
  }

  /** INFO commandstats: calls per command (including those run inside scripts), harness' own left out. */
  async commandStats(): Promise<Record<string, number>> {
    const info = await this.redis.info('commandstats');
    const stats: Record<string, number> = {};
    for (const match of info.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) {
      if (!ADMIN_COMMANDS.test(match[1])) stats[match[1]] = Number(match[2]);
    }
    return stats;
  }

  /** CPU time the server used so far (user + system, main thread and children), µs. */
  async cpuUs(): Promise<number> {
    return cpuUsFromInfo(await this.redis.info('cpu'));
  }

  /** Connections other than the harness' own (admin and the scenario-5 holder). */
  async clientCount(): Promise<number> {
    const list = await this.redis.client('LIST');
    return String(list)
      .split('\n')
      .filter((line) => line.startsWith('id='))
      .filter((line) => {
        const name = /\bname=(\S*)/.exec(line)?.[1];
        return name !== ADMIN_CONNECTION && name !== HOLDER_CONNECTION;
      }).length;
  }

  async sum(keys: readonly string[]): Promise<number> {
    return (await this.values(keys)).reduce((total, value) => total + value, 0);
  }

  /** The keys' values as numbers (missing: 0). */
  async values(keys: readonly string[]): Promise<number[]> {
    if (keys.length === 0) return [];
    return (await this.redis.mget(...keys)).map((value) => Number(value ?? 0));
  }

  /** Sets every key to `value` (scenario 6's opening balances), before the stats are reset. */
  async setAll(keys: readonly string[], value: number): Promise<void> {
    if (keys.length) await this.redis.mset(...keys.flatMap((key) => [key, String(value)]));
  }

  close(): void {
    this.redis.disconnect();
  }
}
