/**
 * Where the sample finds Redis when REDIS_URL is unset: a server already answering on 127.0.0.1:6379,
 * else a throwaway `redis-server` child on a free port (no persistence), stopped with the app. Without
 * either there is none (undefined), rather than retrying forever: the sample then runs on its in-memory
 * stores and says so (main.ts).
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { createServer, Socket } from 'node:net';

export interface RedisEndpoint {
  url: string;
  /** How it was found, for the start-up log. */
  origin: string;
  /** Stops the child server, if this process started one. */
  stop(): Promise<void>;
}

const DEFAULT_URL = 'redis://127.0.0.1:6379';

/** The Redis to use, or undefined when REDIS_URL is unset, nothing answers on 6379 and redis-server is missing. */
export async function findRedis(configured: string | undefined): Promise<RedisEndpoint | undefined> {
  const none = async () => {};
  if (configured) return { url: configured, origin: 'REDIS_URL', stop: none };
  if (await answersPing('127.0.0.1', 6379)) {
    return { url: DEFAULT_URL, origin: 'the Redis answering on 127.0.0.1:6379', stop: none };
  }
  if (spawnSync('redis-server', ['--version']).status !== 0) return undefined;
  return startChild();
}

function answersPing(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = new Socket();
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(500, () => done(false));
    socket.once('error', () => done(false));
    socket.connect(port, host, () => socket.write('PING\r\n'));
    socket.once('data', (data) => done(data.toString().startsWith('+PONG')));
  });
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject()));
    });
  });
}

async function startChild(): Promise<RedisEndpoint> {
  const port = await freePort();
  const child = spawn(
    'redis-server',
    [
      '--port',
      String(port),
      '--bind',
      '127.0.0.1',
      '--save',
      '',
      '--appendonly',
      'no',
      '--loglevel',
      'notice',
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  // If this process dies without a clean shutdown, do not leave the child behind.
  const killChild = () => child.kill('SIGKILL');
  process.once('exit', killChild);
  await new Promise<void>((resolve, reject) => {
    let output = '';
    const timer = setTimeout(() => reject(new Error(`redis-server did not start:\n${output}`)), 10_000);
    child.stdout?.on('data', (chunk: Buffer) => {
      output += chunk;
      if (output.includes('Ready to accept connections')) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`redis-server exited with code ${code}:\n${output}`));
    });
  });
  child.stdout?.resume();
  return {
    url: `redis://127.0.0.1:${port}`,
    origin: `a throwaway redis-server started by the sample on port ${port} (pid ${child.pid}); it stops with the app`,
    stop: () => stopChild(child, killChild),
  };
}

function stopChild(child: ChildProcess, killChild: () => void): Promise<void> {
  process.removeListener('exit', killChild);
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
  });
}
