/**
 * The Nest benchmark application (bench/nest/app.ts) as child processes, for the harnesses that drive it
 * (bench/nest-cpu.ts, bench/nest-load.ts): compile it, fork it, ask it things over IPC, stop it.
 * Not compiled into the application itself (bench/nest/tsconfig.json includes app.ts only).
 */
import { type ChildProcess, execFileSync, fork } from 'node:child_process';
import { join } from 'node:path';

export const ROOT = join(__dirname, '..', '..');
const APP = join(ROOT, 'dist', 'bench-nest', 'app.js');

/** The value after `--<name>` on the harness's command line, or `fallback`. */
export function option(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && process.argv[i + 1] ? process.argv[i + 1] : fallback;
}

/** Compiles the application with tsc: Nest needs its decorator metadata, which tsx does not emit. */
export function buildApp(): void {
  execFileSync('npx', ['tsc', '-p', join(ROOT, 'bench', 'nest', 'tsconfig.json')], {
    stdio: 'inherit',
    cwd: ROOT,
  });
}

/** What the `sections` question answers (BENCH_SECTIONS=1 in the application's environment). */
export interface Sections {
  /** Requests inside the `/pay` handler now, waiting for the lock or running the critical section. */
  inflight: number;
  /** Critical sections completed (their SET done), per id. */
  done: Record<string, number>;
}

export class App {
  private stopping = false;
  /** Why the process ended, when it ended without being asked to. */
  crashed: string | undefined;

  private constructor(
    private readonly child: ChildProcess,
    readonly variant: string,
    readonly port: number,
  ) {
    child.on('exit', (code, signal) => {
      if (!this.stopping) this.crashed = `the ${variant} app exited (${signal ?? code})`;
    });
  }

  /** Forks the application of `variant` against the Redis on `redisPort`; `env` adds to its environment. */
  static start(variant: string, redisPort: number, env: Record<string, string> = {}): Promise<App> {
    const child = fork(APP, [], {
      env: { ...process.env, BENCH_VARIANT: variant, BENCH_REDIS_PORT: String(redisPort), ...env },
      execArgv: (process.env.BENCH_APP_ARGS ?? '').split(' ').filter(Boolean),
      // Another Node for the applications (the harness itself stays on this one).
      execPath: process.env.BENCH_NODE ?? process.execPath,
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    return new Promise((resolve, reject) => {
      const early = (code: number | null) =>
        reject(new Error(`the ${variant} app exited (${code}) before it was ready`));
      child.once('exit', early);
      child.once('message', (message: { type: string; port: number }) => {
        if (message.type !== 'ready') return;
        child.off('exit', early);
        resolve(new App(child, variant, message.port));
      });
    });
  }

  /**
   * Sends `message` and resolves with the first reply of the same type. One question of a type at a
   * time per application: replies carry no id.
   */
  private ask<T>(message: Record<string, unknown> & { type: string }): Promise<T> {
    return new Promise((resolve, reject) => {
      const onMessage = (reply: { type: string }) => {
        if (reply.type !== message.type) return;
        cleanup();
        resolve(reply as T);
      };
      const onExit = () => {
        cleanup();
        reject(new Error(this.crashed ?? `the ${this.variant} app exited`));
      };
      const cleanup = () => {
        this.child.off('message', onMessage);
        this.child.off('exit', onExit);
      };
      this.child.on('message', onMessage);
      this.child.once('exit', onExit);
      this.child.send(message);
    });
  }

  /** The process's CPU time so far (user + system), µs. */
  async cpu(): Promise<number> {
    const { usage } = await this.ask<{ usage: NodeJS.CpuUsage }>({ type: 'cpu' });
    return usage.user + usage.system;
  }

  /** The service method called in-process `count` times, `concurrency` at once (no HTTP): CPU per call, µs. */
  async direct(locked: boolean, count: number, concurrency: number): Promise<number> {
    return (await this.ask<{ cpu: number }>({ type: 'direct', locked, count, concurrency })).cpu;
  }

  /** The unlocked critical section run back to back on one id for about `ms`: calls and elapsed ms. */
  serial(ms: number): Promise<{ count: number; ms: number }> {
    return this.ask({ type: 'serial', ms });
  }

  sections(): Promise<Sections> {
    return this.ask({ type: 'sections' });
  }

  stop(): Promise<void> {
    this.stopping = true;
    if (this.child.exitCode !== null || this.child.signalCode !== null) return Promise.resolve();
    const exited = new Promise<void>((resolve) => this.child.once('exit', () => resolve()));
    this.child.send({ type: 'stop' });
    const timer = setTimeout(() => this.child.kill('SIGKILL'), 5_000);
    return exited.finally(() => clearTimeout(timer));
  }
}
