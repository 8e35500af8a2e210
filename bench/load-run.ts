/**
 * The steps of a load run that bench/run.ts's load scenarios and bench/semaphore.ts share: every worker
 * process set up ('init'), the measurement window (when the processes start, count and stop), the 'go'
 * that hands it to all of them, and what Redis itself executed within it.
 */
import { hr, sleepUntil } from './clock';
import type { LoadTiming } from './config';
import type { LoadWindow } from './ipc';
import type { ChildWorker } from './processes';
import type { BenchRedis } from './redis-server';

/** A worker's reply: the 'result' of a 'go' carries what the process measured. */
type Reply = { type: string; result?: unknown };
/** A worker process that runs the window on a 'go' and answers with its 'result'. */
type Goer<From extends Reply> = ChildWorker<{ type: 'go' } & LoadWindow, From>;

/** Sends every process its part of the run (`specOf` its index) and waits until all are ready. */
export async function initAll<S, From extends Reply>(
  processes: readonly ChildWorker<{ type: 'init'; spec: NoInfer<S> }, From>[],
  specOf: (process: number) => S,
): Promise<void> {
  await Promise.all(
    processes.map((worker, process) =>
      worker.request({ type: 'init', spec: specOf(process) }, 'ready', 60_000),
    ),
  );
}

/** What Redis executed in the window: INFO commandstats calls (admin commands left out) and its CPU, µs. */
export interface RedisWindow {
  executed: Record<string, number>;
  redisCpuUs: number;
}

/**
 * Opens a window that starts shortly from now, and starts reading Redis at its edges (summed over
 * `servers`). `executedInWindow()` gives the delta once the window has closed.
 */
export function openWindow(
  servers: readonly BenchRedis[],
  timing: Omit<LoadTiming, 'rounds'>,
): { window: LoadWindow; executedInWindow(): Promise<RedisWindow> } {
  // Time for the 'go' to reach every process before their loops start.
  const startAt = hr() + 300;
  const measureFrom = startAt + timing.warmMs;
  const measureTo = measureFrom + timing.measureMs;
  const stopAt = measureTo + timing.graceMs;
  const snapshot = async () => ({
    cpuUs: (await Promise.all(servers.map((server) => server.admin.cpuUs()))).reduce((a, b) => a + b, 0),
    stats: await commandStats(servers),
  });
  const statsFrom = sleepUntil(measureFrom).then(snapshot);
  const statsTo = sleepUntil(measureTo).then(snapshot);
  // Awaited by executedInWindow(); if the run fails first, their rejection (the servers are gone by
  // then) is not an error of its own.
  for (const pending of [statsFrom, statsTo]) pending.catch(() => {});
  return {
    window: { startAt, measureFrom, measureTo, stopAt },
    async executedInWindow() {
      const before = await statsFrom;
      const after = await statsTo;
      const executed: Record<string, number> = {};
      for (const [name, calls] of Object.entries(after.stats)) {
        if (calls - (before.stats[name] ?? 0) > 0) executed[name] = calls - (before.stats[name] ?? 0);
      }
      return { executed, redisCpuUs: after.cpuUs - before.cpuUs };
    },
  };
}

/** Sends every process the window and waits for all their results, each given a minute past the stop. */
export function goAll<From extends Reply>(
  processes: readonly Goer<From>[],
  window: LoadWindow,
): Promise<Extract<From, { type: 'result' }>['result'][]> {
  return Promise.all(
    processes.map((worker) =>
      worker
        .request({ type: 'go', ...window }, 'result', window.stopAt - hr() + 60_000)
        .then((reply) => reply.result),
    ),
  );
}

/** INFO commandstats of every server, summed per command. */
export async function commandStats(servers: readonly BenchRedis[]): Promise<Record<string, number>> {
  const sum: Record<string, number> = {};
  for (const stats of await Promise.all(servers.map((server) => server.admin.commandStats()))) {
    for (const [name, calls] of Object.entries(stats)) sum[name] = (sum[name] ?? 0) + calls;
  }
  return sum;
}
