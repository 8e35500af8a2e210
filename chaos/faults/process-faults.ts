/**
 * Faults on the workers' processes: SIGSTOP a holder in its work for longer than its ttl (a GC pause),
 * SIGSTOP any worker briefly, or a waiter while its lock's holder works; SIGKILL a holder or a waiter
 * (a new worker takes its slot).
 */
import { hr } from '../common';
import { type FaultAction, type Holder, holdThenHeal } from './kinds';

export const gcPause: FaultAction = async (fault, host, prng) => {
  // Aim at a holder inside its work (between the twin's GET and SET) whose lock another process is
  // waiting for: the waiter takes over during the pause and the holder then resumes and writes.
  // Prefer the longer pieces of work, so the SIGSTOP lands before the write.
  const foreignWaiter = (h: Holder): boolean =>
    host.waiters().some((w) => w.key === h.key && w.slot !== h.slot);
  const victim =
    (await host.nextReader((h) => (h.workMs ?? 0) >= 50 && foreignWaiter(h), 3_000)) ??
    (await host.nextReader(() => true, 2_000));
  if (!victim) {
    fault.skipped = 'no holder in its work';
    return;
  }
  const ms = host.ttl + host.claimWindow + prng.int(300, 900);
  host.pause(victim.slot);
  fault.t0 = hr();
  fault.keys = [victim.key];
  fault.detail = { slot: victim.slot, pid: victim.pid, op: victim.op, key: victim.key, ms };
  return holdThenHeal(fault, ms, () => host.resume(victim.slot));
};

export const pauseAny: FaultAction = async (fault, host, prng) => {
  const slots = host.runningSlots();
  if (slots.length === 0) {
    fault.skipped = 'no running worker';
    return;
  }
  const slot = prng.pick(slots);
  const ms = prng.int(50, 2 * host.ttl);
  const held = host.holders().filter((h) => h.slot === slot);
  host.pause(slot);
  fault.t0 = hr();
  fault.keys = held.length > 0 ? held.map((h) => h.key) : undefined;
  fault.detail = { slot, ms, holding: held.map((h) => h.key) };
  return holdThenHeal(fault, ms, () => host.resume(slot));
};

/**
 * pause-waiter: a process waiting on a lock that another process holds and is working under is stopped
 * for 20 to 200 ms, so the holder's release pushes the grant (or hands the line on) to a stalled process:
 * the next waiter must not be held up past the claim window, and the stalled one must not start on a
 * grant that has moved on.
 */
export const pauseWaiter: FaultAction = async (fault, host, prng) => {
  const waitersOf = (h: Holder): Holder[] =>
    host
      .waiters()
      .filter((w) => w.key === h.key && w.slot !== h.slot && !host.holders().some((o) => o.slot === w.slot));
  const holder = await host.nextReader((h) => waitersOf(h).length > 0, 3_000);
  const waiting = holder ? waitersOf(holder) : [];
  if (!holder || waiting.length === 0) {
    fault.skipped = 'no holder with a waiter in another process';
    return;
  }
  const victim = prng.pick(waiting);
  const ms = prng.int(20, 200);
  host.pause(victim.slot);
  fault.t0 = hr();
  fault.keys = [victim.key];
  fault.detail = { slot: victim.slot, pid: victim.pid, key: victim.key, holder: holder.slot, ms };
  return holdThenHeal(fault, ms, () => host.resume(victim.slot));
};

/** kill-holder and kill-waiter: SIGKILL, then a new worker in the slot a little later. */
export const killWorker: FaultAction = async (fault, host, prng) => {
  const holder = fault.kind === 'kill-holder';
  const candidates = holder
    ? host.holders()
    : host.waiters().filter((w) => !host.holders().some((h) => h.slot === w.slot));
  const pool = candidates.length > 0 ? candidates : holder ? [] : host.waiters();
  if (pool.length === 0) {
    fault.skipped = holder ? 'no holder' : 'no waiter';
    return;
  }
  const target = prng.pick(pool);
  const restartAfterMs = prng.int(100, 800);
  fault.t0 = hr();
  fault.keys = [target.key];
  fault.detail = { slot: target.slot, pid: target.pid, key: target.key, restartAfterMs };
  await host.kill(target.slot, restartAfterMs);
  fault.t1 = hr();
};
