/**
 * The end of a fault run, once the nemesis has stopped and the run has calmed down: every worker drains
 * (finishes its current call; none may hang), probes every lock (each granted within ttl + claim window
 * + slack; a semaphore's with its permits, a read-write lock's as a writer), then closes its
 * LockService and exits by itself. Each phase has a bound; missing it is a violation. Then the keys of
 * the semaphores and read-write locks are given the time they may still live, for key hygiene to find
 * them gone.
 */
import { hr, isRunning, sleep } from '../common';
import type { History, Violation } from '../history';
import type { LockNode } from '../topologies/topology';
import type { Msg, WorkerPool } from './workers';

export interface EndBounds {
  ttl: number;
  claimWindow: number;
  waitTimeout: number;
  commandTimeout: number;
  workMs: [number, number];
  slackMs: number;
  keys: string[];
}

export async function drain(pool: WorkerPool, cfg: EndBounds, violations: Violation[]): Promise<number> {
  const drainBound = cfg.waitTimeout + cfg.commandTimeout + cfg.workMs[1] + 2 * cfg.slackMs;
  const tDrain = hr();
  const slots = [...pool.slots.values()];
  for (const s of slots) s.child.send({ type: 'drain' });
  const drained = await Promise.all(slots.map((s) => pool.expect(s, 'drained', drainBound)));
  const drainMs = hr() - tDrain;
  drained.forEach((m, i) => {
    if (!m) {
      const s = slots[i];
      const stuck = [...pool.open]
        .filter((r) => r.pid === s.pid)
        .map((r) => ({ op: r.op, key: r.key, ageMs: hr() - r.t0 }));
      violations.push({
        check: 'liveness: worker did not drain in time (hung call)',
        detail: { slot: s.slot, boundMs: drainBound, stuck },
      });
    }
  });
  return drainMs;
}

/** After the storm, every worker gets every lock within ttl + claim window + slack. Returns the slowest. */
export async function probe(pool: WorkerPool, cfg: EndBounds, violations: Violation[]): Promise<number> {
  const probeWait = cfg.ttl + cfg.claimWindow + cfg.slackMs;
  const slots = [...pool.slots.values()];
  for (const s of slots) s.child.send({ type: 'probe', keys: cfg.keys, waitTimeout: probeWait });
  const probeBound = cfg.keys.length * (probeWait + cfg.commandTimeout) + 2_000;
  const probes = await Promise.all(slots.map((s) => pool.expect(s, 'probed', probeBound)));
  let probeMax = 0;
  probes.forEach((m, i) => {
    const s = slots[i];
    if (!m) {
      violations.push({ check: 'liveness: probe did not finish', detail: { slot: s.slot } });
      return;
    }
    for (const r of m.results as { key: string; ok: boolean; ms: number; code?: string }[]) {
      probeMax = Math.max(probeMax, r.ms);
      if (!r.ok)
        violations.push({
          check: 'liveness: probe not granted',
          detail: { slot: s.slot, ...r, waitTimeout: probeWait },
        });
    }
  });
  return probeMax;
}

/**
 * Every worker stops its service and exits by itself; what each reported at close goes to the history.
 * One still running 5 s after its close is SIGKILLed (a violation), and marked `killed`.
 */
export async function closeAll(
  pool: WorkerPool,
  history: History,
  violations: Violation[],
): Promise<Array<{ slot: number; closed: Msg | undefined; killed: boolean }>> {
  const closing = [...pool.slots.values()].map(async (s) => {
    s.expectedExit = true;
    s.child.send({ type: 'close' });
    const closed = await pool.expect(s, 'closed', 10_000);
    const exited = await Promise.race([
      new Promise<boolean>((resolve) =>
        isRunning(s.child) ? s.child.once('exit', () => resolve(true)) : resolve(true),
      ),
      sleep(5_000).then(() => false),
    ]);
    if (!closed)
      violations.push({ check: 'hang: worker did not close its LockService', detail: { slot: s.slot } });
    if (!exited) {
      violations.push({
        check: 'hang: worker did not exit after close (something keeps its event loop alive)',
        detail: { slot: s.slot, resources: closed?.resources },
      });
      s.child.kill('SIGKILL');
    }
    return { slot: s.slot, closed, killed: !exited };
  });
  const closedAll = await Promise.all(closing);
  for (const { slot, closed } of closedAll) {
    history.closes.push({ slot, unhandled: closed?.unhandled as number | undefined });
  }
  return closedAll;
}

/**
 * The keys of each semaphore or read-write lock (the same ones) that expire with its last hold and its
 * newest waiter's wait: its hash `<prefix>{<key>}`, its holders `:s` and its line `:sq`
 * (lib/protocol/keys.ts). Its fence counter outlives them, with a TTL of its own.
 */
export function sharedLockKeys(prefix: string, keys: readonly string[]): string[] {
  return keys.flatMap((key) => [`${prefix}{${key}}`, `${prefix}{${key}}:s`, `${prefix}{${key}}:sq`]);
}

/**
 * Once every worker closed: waits until none of `gone` is left, or until `deadline` (the last hold
 * ended at the latest a ttl after the close, the line a wait plus a claim window after its newest
 * waiter joined), whichever comes first. Returns how long it waited.
 */
export async function untilGone(
  nodes: readonly LockNode[],
  gone: readonly string[],
  deadline: number,
): Promise<number> {
  const t0 = hr();
  while (hr() < deadline) {
    const left = await Promise.all(nodes.map((node) => node.admin.exists(...gone)));
    if (left.every((n) => n === 0)) break;
    await sleep(100);
  }
  return hr() - t0;
}
