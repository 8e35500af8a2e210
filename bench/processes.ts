/**
 * The benchmark's worker processes (bench/worker.ts), forked with `--import tsx` and driven over IPC: one
 * request at a time per process, each answered by the message type it expects.
 */
import { type ChildProcess, fork } from 'node:child_process';
import { resolve } from 'node:path';
import type { FromWorker, ToWorker } from './ipc';

const ROOT = resolve(__dirname, '..');
const WORKER = resolve(__dirname, 'worker.ts');

type Reply<T extends FromWorker['type']> = Extract<FromWorker, { type: T }>;

const WORKER_ARGS = (process.env.BENCH_WORKER_ARGS ?? '').split(' ').filter(Boolean);

export class WorkerProcess {
  private readonly child: ChildProcess;
  private pending:
    | { expect: FromWorker['type']; resolve: (m: FromWorker) => void; reject: (e: Error) => void }
    | undefined;
  private exited = false;

  constructor(exposeGc: boolean) {
    this.child = fork(WORKER, [], {
      cwd: ROOT,
      // BENCH_WORKER_ARGS adds flags to every worker, e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof".
      execArgv: ['--import', 'tsx', ...(exposeGc ? ['--expose-gc'] : []), ...WORKER_ARGS],
      serialization: 'advanced',
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    this.child.on('message', (message: FromWorker) => {
      const pending = this.pending;
      if (!pending) return;
      if (message.type === 'error') {
        this.pending = undefined;
        pending.reject(new Error(`worker: ${message.error}`));
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

  request<T extends FromWorker['type']>(message: ToWorker, expect: T, timeoutMs: number): Promise<Reply<T>> {
    if (this.exited) return Promise.reject(new Error('worker process is gone'));
    return new Promise<Reply<T>>((resolvePromise, reject) => {
      const timer = setTimeout(() => {
        this.pending = undefined;
        reject(new Error(`worker did not answer '${message.type}' with '${expect}' within ${timeoutMs} ms`));
      }, timeoutMs);
      this.pending = {
        expect,
        resolve: (m) => {
          clearTimeout(timer);
          resolvePromise(m as Reply<T>);
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

/** The load scenarios' worker processes, reused from run to run (each run gets fresh clients and library instances). */
export class Pool {
  private workers: WorkerProcess[] = [];

  take(n: number): WorkerProcess[] {
    for (let i = 0; i < n; i++) {
      if (!this.workers[i]?.alive) this.workers[i] = new WorkerProcess(false);
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
