// Runs workloads in separate Node processes (test/workers, bundled per run) that talk to the test over IPC, for the
// properties that are about several processes. Also home of the process-wide bookkeeping shared by the
// whole harness: every child process (workers and redis-servers) is killed when the test process ends,
// however it ends.
import { type ChildProcess, fork } from 'node:child_process';
import { existsSync } from 'node:fs';
import { basename, join } from 'node:path';
import { runInThisContext } from 'node:vm';
import { lockLibrary } from './client-library';

// ---------------------------------------------------------------------------------------------------------
// The host process.
//
// Jest runs each test file in its own vm context whose `process` is a *copy* of the real one, with its own
// (empty) event listeners: `process.on('exit')` or `process.on('unhandledRejection')` inside a test file
// registers on the copy, which the real process never emits on, so such hooks silently never run. Jest's
// module registry is per test file too, so module-level state is not shared between files run by the same
// worker. `vm.runInThisContext` evaluates in the main context of the process, which gives back the real
// `process` and `globalThis`; outside jest (workers, scripts) they are just the usual ones.
// ---------------------------------------------------------------------------------------------------------

/** The real `process` of this Node process (not jest's per-file copy). */
export function hostProcess(): NodeJS.Process {
  const host: unknown = runInThisContext('process');
  const looksReal = typeof host === 'object' && host !== null && 'pid' in host && 'on' in host;
  return looksReal ? (host as NodeJS.Process) : process;
}

/**
 * A value shared by every module instance in this process: jest loads a support module once per test
 * file, so plain module state is per file. `key` is namespaced with Symbol.for on the real global object.
 */
export function processWide<T>(key: string, create: () => T): T {
  const host = runInThisContext('globalThis') as Record<symbol, unknown>;
  const symbol = Symbol.for(`nestjs-redis-lock.test.${key}`);
  if (!(symbol in host)) host[symbol] = create();
  return host[symbol] as T;
}

const isRunning = (child: ChildProcess): boolean => child.exitCode === null && child.signalCode === null;

/** Kills a child synchronously: SIGCONT first so a paused (SIGSTOPped) one does not linger. */
function killNow(child: ChildProcess): void {
  try {
    child.kill('SIGCONT');
    child.kill('SIGKILL');
  } catch {
    // Already gone: nothing to clean up.
  }
}

/** Every live child started by the harness in this process, across test files. */
const children = processWide('children', () => {
  const set = new Set<ChildProcess>();
  const host = hostProcess();
  const killAll = (): void => {
    for (const child of set) killNow(child);
  };
  // 'exit' runs on normal ends and process.exit(), but only synchronous work is possible there.
  host.on('exit', killAll);
  // A fatal signal ends Node without 'exit' (jest-worker stops a stuck worker with SIGTERM, then SIGKILL):
  // clean up, then re-raise the signal so that the default behaviour (dying) still happens, unless
  // somebody else handles that signal.
  for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) {
    const onSignal = (): void => {
      killAll();
      host.removeListener(signal, onSignal);
      if (host.listenerCount(signal) === 0) host.kill(host.pid, signal);
    };
    host.on(signal, onSignal);
  }
  return set;
});

/** Registers a child to be SIGKILLed if this process ends while it still runs. */
export function killOnExit(child: ChildProcess): void {
  if (!isRunning(child)) return;
  children.add(child);
  child.once('exit', () => children.delete(child));
}

/** Resolves once `child` has exited (at once if it already has). */
export function exited(child: ChildProcess): Promise<void> {
  if (!isRunning(child)) return Promise.resolve();
  return new Promise((resolve) => child.once('exit', () => resolve()));
}

/** Sends `signal`, and SIGKILL if the child is still there after `graceMs`; resolves once it exited. */
export async function terminate(child: ChildProcess, signal: NodeJS.Signals, graceMs = 5_000): Promise<void> {
  if (!isRunning(child)) return;
  const gone = exited(child);
  child.kill(signal);
  // A stopped process only acts on a signal once continued (SIGKILL excepted).
  child.kill('SIGCONT');
  let timer: NodeJS.Timeout | undefined;
  const escalate = new Promise<void>((resolve) => {
    timer = setTimeout(() => {
      killNow(child);
      resolve();
    }, graceMs);
  });
  await Promise.race([gone, escalate]);
  clearTimeout(timer);
  await gone;
}

// ---------------------------------------------------------------------------------------------------------
// Workers.
// ---------------------------------------------------------------------------------------------------------

export interface WorkerExit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface Worker<Msg = unknown> {
  readonly pid: number;
  /** Sends a message over IPC; throws if the worker is gone. */
  send(message: unknown): void;
  /**
   * The first message matching `predicate` that no earlier next() call returned, waiting for it if needed
   * (messages received before the call count, so nothing is missed). Rejects when the worker reports an
   * error or exits before such a message arrives, or after `timeoutMs`.
   */
  next(predicate?: (message: Msg) => boolean, timeoutMs?: number): Promise<Msg>;
  /** Every message received so far, in order. */
  readonly messages: readonly Msg[];
  /** Resolves (never rejects) when the process has exited. */
  readonly exit: Promise<WorkerExit>;
  /** Sends `signal` (SIGKILL by default; a signal that ends the process) and waits for it to exit. */
  kill(signal?: NodeJS.Signals): Promise<void>;
  /** SIGTERM, SIGKILL if it is still running 5 s later; waits for the process to exit. */
  stop(): Promise<void>;
  /** SIGSTOP: the worker is frozen (its timers, sockets and IPC) until resume(). */
  pause(): void;
  /** SIGCONT. */
  resume(): void;
}

/** The report worker-runtime sends before a worker dies of an unhandled error. */
interface ErrorReport {
  type: 'error';
  message: string;
  stack?: string;
}

const isErrorReport = (message: unknown): message is ErrorReport =>
  typeof message === 'object' &&
  message !== null &&
  (message as { type?: unknown }).type === 'error' &&
  typeof (message as { message?: unknown }).message === 'string';

/** Workers started in this process and not yet exited, for killAllWorkers(). */
const workers = processWide('workers', () => new Set<ChildProcess>());

/**
 * `test/workers/<name>.ts`, resolved from the repository root (jest's working directory). `name` may omit
 * the `.worker` suffix: workerPath('lock-agent') is test/workers/lock-agent.worker.ts.
 *
 * Spec files cannot use `import.meta.url` themselves: ts-jest (ESM) accepts it, but `tsc -p tsconfig.json`
 * type-checks the tests as CommonJS and rejects `import.meta` (TS1343).
 */
export function workerPath(name: string): string {
  const dir = join(process.cwd(), 'test', 'workers');
  const candidates = [join(dir, `${name}.ts`), join(dir, `${name}.worker.ts`)];
  const found = candidates.find((file) => existsSync(file));
  if (!found) throw new Error(`workerPath(${JSON.stringify(name)}): none of ${candidates.join(', ')} exists`);
  return found;
}

/**
 * The bundle of `file` (a test/workers .ts file) that jest's global set-up built for this run
 * (test/support/worker-bundles.mjs).
 */
function bundleOf(file: string): string {
  const dir = process.env.LOCK_TEST_WORKER_BUNDLES;
  if (!dir) throw new Error('spawnWorker(): no worker bundles: run the tests through jest.config.mjs');
  const bundle = join(dir, lockLibrary(), `${basename(file, '.ts')}.mjs`);
  if (!existsSync(bundle)) throw new Error(`spawnWorker(): ${file} has no bundle (is it in test/workers?)`);
  return bundle;
}

/**
 * Runs `file` (an absolute path to a test/workers .ts file, see workerPath) in a child Node process. `args`
 * reach the child as workerArgs() (JSON). The child's stdout and stderr go to the test's.
 */
export function spawnWorker<Msg = unknown>(file: string, args: Record<string, unknown> = {}): Worker<Msg> {
  const child = fork(bundleOf(file), [], {
    execArgv: ['--enable-source-maps'],
    env: { ...process.env, WORKER_ARGS: JSON.stringify(args) },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  if (child.pid === undefined) throw new Error(`could not start a worker for ${file}`);
  killOnExit(child);
  workers.add(child);

  const messages: Msg[] = [];
  /** Messages not yet returned by next(), oldest first. */
  const unclaimed: Msg[] = [];
  /** next() calls waiting for a message; each is re-checked when anything happens. */
  const waiting = new Set<() => void>();
  const notify = (): void => {
    for (const check of [...waiting]) check();
  };
  let failure: Error | undefined;

  const exit = new Promise<WorkerExit>((resolve) => {
    child.once('exit', (code, signal) => {
      workers.delete(child);
      failure ??= new Error(`worker ${file} exited (code ${code}, signal ${signal})`);
      resolve({ code, signal });
      notify();
    });
  });
  // IPC errors (e.g. a send racing the worker's death) are emitted here; without a listener they would
  // crash the test process. The exit that follows is what next() reports.
  child.on('error', (error) => {
    failure ??= new Error(`worker ${file}: ${error.message}`);
    notify();
  });
  child.on('message', (raw: unknown) => {
    const message = raw as Msg;
    messages.push(message);
    unclaimed.push(message);
    if (isErrorReport(raw)) failure = new Error(`worker ${file} failed: ${raw.message}\n${raw.stack ?? ''}`);
    notify();
  });

  return {
    pid: child.pid,
    messages,
    exit,
    send(message) {
      if (!child.connected) throw new Error(`worker ${file} is not connected (it exited?)`);
      child.send(message as object);
    },
    next(predicate = () => true, timeoutMs = 30_000) {
      return new Promise<Msg>((resolve, reject) => {
        let timer: NodeJS.Timeout | undefined;
        const check = (): void => {
          const index = unclaimed.findIndex((message) => predicate(message));
          if (index >= 0) {
            resolve(unclaimed.splice(index, 1)[0]);
          } else if (failure) {
            reject(failure);
          } else {
            return;
          }
          waiting.delete(check);
          clearTimeout(timer);
        };
        waiting.add(check);
        check();
        if (!waiting.has(check)) return;
        timer = setTimeout(() => {
          waiting.delete(check);
          reject(new Error(`worker ${file}: no matching message within ${timeoutMs} ms`));
        }, timeoutMs);
      });
    },
    async kill(signal = 'SIGKILL') {
      if (!isRunning(child)) return;
      child.kill(signal);
      // A paused worker only acts on a catchable signal once continued.
      if (signal !== 'SIGKILL') child.kill('SIGCONT');
      await exit;
    },
    stop: () => terminate(child, 'SIGTERM'),
    pause() {
      child.kill('SIGSTOP');
    },
    resume() {
      child.kill('SIGCONT');
    },
  };
}

/** SIGKILLs every worker still running (in this process, whichever test file started it) and waits. */
export async function killAllWorkers(): Promise<void> {
  await Promise.all(
    [...workers].map((child) => {
      const gone = exited(child);
      killNow(child);
      return gone;
    }),
  );
}
