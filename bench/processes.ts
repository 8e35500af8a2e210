/**
 * The benchmarks' worker processes (bench/worker.ts, bench/semaphore-worker.ts), forked with
 * `--import tsx` and driven over IPC: one request at a time per process, each answered by the message
 * type it expects.
 */
import { type ChildProcess, fork } from 'node:child_process';
import { resolve } from 'node:path';
import type { FromWorker, ToWorker } from './ipc';

const ROOT = resolve(__dirname, '..');
const WORKER = resolve(__dirname, 'worker.ts');

const WORKER_ARGS = (process.env.BENCH_WORKER_ARGS ?? '').split(' ').filter(Boolean);

/** What every worker can answer: its reply, or the error its request ended in. */
type Message = { type: string };
type Reply<From extends Message, T extends From['type']> = Extract<From, { type: T }>;

/** One forked worker script and its request/reply channel (`To` the requests, `From` the replies). */
export class ChildWorker<To extends Message, From extends Message> {
  private readonly child: ChildProcess;
  private pending:
    | { expect: From['type']; resolve: (m: From) => void; reject: (e: Error) => void }
    | undefined;
  private exited = false;

  /** `execArgv`: flags of this worker kind; `env`: variables added to the harness' own. */
  constructor(script: string, options: { execArgv?: string[]; env?: Record<string, string> } = {}) {
    this.child = fork(script, [], {
      cwd: ROOT,
      // BENCH_WORKER_ARGS adds flags to every worker, e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof".
      execArgv: ['--import', 'tsx', ...(options.execArgv ?? []), ...WORKER_ARGS],
      env: options.env && { ...process.env, ...options.env },
      serialization: 'advanced',
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    this.child.on('message', (message: From) => {
      const pending = this.pending;
      if (!pending) return;
      if (message.type === 'error') {
        this.pending = undefined;
        pending.reject(new Error(`worker: ${(message as Message & { error?: string }).error}`));
      } else if (message.type === pending.expect) {
        this.pending = undefined;
        pending.resolve(message);
      }
    });
    this.child.on('exit', (code, signal) => {
      this.exited = true;
      this.pending?.reject(new Error(`worker process exited (code ${code}, signal ${signal})`));
      this.pending = undefined;
    });
  }

  get alive(): boolean {
    return !this.exited;
  }

  request<T extends From['type']>(message: To, expect: T, timeoutMs: number): Promise<Reply<From, T>> {
    if (this.exited) return Promise.reject(new Error('worker process is gone'));
    return new Promise<Reply<From, T>>((resolvePromise, reject) => {
      const timer = setTimeout(() => {
        this.pending = undefined;
        reject(new Error(`worker did not answer '${message.type}' with '${expect}' within ${timeoutMs} ms`));
      }, timeoutMs);
      this.pending = {
        expect,
        resolve: (m) => {
          clearTimeout(timer);
          resolvePromise(m as Reply<From, T>);
        },
        reject: (e) => {
          clearTimeout(timer);
          reject(e);
        },
      };
      this.child.send(message);
    });
  }

  /** Stops (SIGSTOP) or resumes (SIGCONT) the process, as a CPU quota or a long pause would. */
  pause(stopped: boolean): void {
    if (!this.exited) this.child.kill(stopped ? 'SIGSTOP' : 'SIGCONT');
  }

  kill(): void {
    // With extra worker flags (a profiler), let the worker exit by itself so it can write its output.
    if (!this.exited) this.child.kill(WORKER_ARGS.length > 0 ? 'SIGTERM' : 'SIGKILL');
  }
}

/** A worker of bench/run.ts (bench/worker.ts); `exposeGc` for the heap measurements of scenario 5. */
export class WorkerProcess extends ChildWorker<ToWorker, FromWorker> {
  constructor(exposeGc: boolean) {
    super(WORKER, { execArgv: exposeGc ? ['--expose-gc'] : [] });
  }
}

/** Worker processes reused from run to run (each run gets fresh clients and library instances). */
export class Pool<W extends { readonly alive: boolean; kill(): void } = WorkerProcess> {
  private workers: W[] = [];

  constructor(private readonly spawn: () => W) {}

  take(n: number): W[] {
    for (let i = 0; i < n; i++) {
      if (!this.workers[i]?.alive) this.workers[i] = this.spawn();
    }
    return this.workers.slice(0, n);
  }

  /** After a failed run the workers' state is unknown: start over. */
  reset(): void {
    for (const worker of this.workers) worker.kill();
    this.workers = [];
  }

  close(): void {
    this.reset();
  }
}
