/**
 * Scenario 5, many waiters ('many', then 'release'): a holder takes the key(s), 1,000 calls wait for
 * them, the heap and the connections are measured while they wait, then the holder lets go and they drain.
 */
import { setTimeout as sleep, setImmediate as tick } from 'node:timers/promises';
import { getHeapSpaceStatistics } from 'node:v8';
import { createAdapter, type Held } from './adapters';
import { hr } from './clock';
import { CommandCounts } from './instrument';
import { HOLDER_CONNECTION, lockKey, type ManySpec, WORKER_CONNECTION } from './ipc';
import { bump, connect, cpuNow, kindOf, send, uncaught } from './worker-process';

let releaseSignal: (() => void) | undefined;

function gc(): void {
  const collect = (globalThis as { gc?: () => void }).gc;
  if (!collect) throw new Error('run this worker with --expose-gc');
  collect();
  collect();
}

/**
 * heapUsed after a full GC, without the code spaces: machine code that V8 compiles while the waiters
 * run (the first time 1,000 calls take a path) is not memory the waiters hold.
 */
async function heapAfterGc(): Promise<number> {
  await tick();
  gc();
  let used = 0;
  for (const space of getHeapSpaceStatistics()) {
    if (!space.space_name.startsWith('code')) used += space.space_used_size;
  }
  return used;
}

export async function runMany(spec: ManySpec): Promise<void> {
  const counts = new CommandCounts();
  const holderClient = await connect(spec.port, HOLDER_CONNECTION);
  const waiterClient = await connect(spec.port, WORKER_CONNECTION, counts);
  const holder = createAdapter(spec.lib, [holderClient]);
  const waiters = createAdapter(spec.lib, [waiterClient], counts);

  // Warm-up: one contended acquisition, so that scripts are loaded and connections opened on both sides
  // (this library's wake connection included) before the baseline is taken.
  const warm = await holder.acquire('warm');
  const warmWaiter = waiters.acquire('warm');
  await sleep(20);
  await warm.release();
  await (await warmWaiter).release();

  const n = spec.waiters;
  const keys = Array.from({ length: spec.keys }, (_, i) => lockKey(i));
  const held: Held[] = [];
  for (const key of keys) held.push(await holder.acquire(key));

  const keyOf = (i: number): string => keys[i % keys.length];
  const calls = new Float64Array(n);
  const grants = new Float64Array(n).fill(Number.NaN);
  const failedKinds: Record<string, number> = {};
  const pending: Promise<void>[] = new Array(n);

  // Calibration: the same bookkeeping around a bare promise, to tell the harness' share from the library's.
  const resolvers: (() => void)[] = new Array(n);
  const calibrate = async (i: number): Promise<void> => {
    calls[i] = hr();
    await new Promise<void>((resolve) => {
      resolvers[i] = resolve;
    });
    grants[i] = hr();
  };
  let base = await heapAfterGc();
  for (let i = 0; i < n; i++) pending[i] = calibrate(i);
  const harnessHeapPerWaiter = ((await heapAfterGc()) - base) / n;
  for (const resolve of resolvers) resolve();
  await Promise.all(pending);
  // Drop the calibration's objects before the next baseline, so freeing them cannot offset the delta.
  const settled = Promise.resolve();
  pending.fill(settled);
  resolvers.fill(() => {});
  grants.fill(Number.NaN);

  const wait = async (i: number): Promise<void> => {
    calls[i] = hr();
    try {
      const lease = await waiters.acquire(keyOf(i));
      grants[i] = hr();
      await lease.release();
    } catch (error) {
      bump(failedKinds, kindOf(error));
    }
  };

  counts.reset();
  uncaught.length = 0;
  base = await heapAfterGc();
  const cpuFrom = cpuNow();
  const started = hr();
  for (let i = 0; i < n; i++) pending[i] = wait(i);
  await sleep(spec.settleMs);
  let queued: number | null = null;
  if (waiters.queued) {
    // This library queues in Redis: wait until every waiter is in its queue (at most 5 s more).
    const until = hr() + 5_000;
    do {
      queued = (await holder.queued?.(keys).catch(() => null)) ?? null;
      if (queued === n) break;
      await sleep(50);
    } while (hr() < until);
  }
  const settledMs = hr() - started;
  const gcFrom = cpuNow();
  const heapPerWaiter = ((await heapAfterGc()) - base) / n;
  // The forced collections are the harness' measurement, not the waiters' cost.
  const gcCpu = cpuNow() - gcFrom;

  const released = new Promise<void>((resolve) => {
    releaseSignal = resolve;
  });
  send({ type: 'waiting', waiting: { heapPerWaiter, harnessHeapPerWaiter, queued, settledMs } });
  await released;

  const before = counts.total();
  const holdStarted = hr();
  await sleep(spec.holdMs);
  const idle = counts.total() - before;
  const idleCommandsPerWaiterPerS = idle / n / ((hr() - holdStarted) / 1000);

  const releasedAt = hr();
  await Promise.all(held.map((lease) => lease.release().catch(() => {})));
  await Promise.all(pending);
  const drainMs = hr() - releasedAt;
  const cpuUsPerWaiter = (cpuNow() - cpuFrom - gcCpu) / n;

  const afterRelease: number[] = [];
  let granted = 0;
  for (let i = 0; i < n; i++) {
    if (Number.isNaN(grants[i])) continue;
    granted++;
    afterRelease.push(Math.max(0, grants[i] - releasedAt));
  }
  send({
    type: 'many-result',
    result: {
      granted,
      failures: n - granted,
      failureKinds: failedKinds,
      uncaught: [...uncaught],
      idleCommandsPerWaiterPerS,
      sentPerWaiter: counts.total() / n,
      cpuUsPerWaiter,
      drainMs,
      afterRelease: Float64Array.from(afterRelease),
    },
  });
  await Promise.all([holder.close(), waiters.close()]).catch(() => {});
  holderClient.disconnect();
  waiterClient.disconnect();
}

/** The harness says the waiters have been measured: the holder lets go. */
export function releaseMany(): void {
  releaseSignal?.();
}
