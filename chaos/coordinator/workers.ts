/**
 * The worker processes of a fault run, seen from the coordinator: it starts each in its slot
 * (chaos/workloads/worker.ts), records what they report into the run's history, pauses, resumes and
 * kills them for the nemesis, and runs the end phases (drain, probe, close) with their bounds.
 */
import { join } from 'node:path';
import { forkTs, hr, isRunning, sleep } from '../common';
import type { Holder } from '../faults/kinds';
import type { EndMsg, History, OpRec, Violation } from '../history';
import type { WorkerArgs } from '../workloads/worker';

export interface Msg {
  type: string;
  [field: string]: unknown;
}

export interface Slot {
  slot: number;
  generation: number;
  pid: number;
  child: ReturnType<typeof forkTs>;
  paused: boolean;
  killT?: number;
  expectedExit: boolean;
  got: Map<string, Msg>;
  wanted: Map<string, (m: Msg) => void>;
}

export class WorkerPool {
  readonly slots = new Map<number, Slot>();
  /** Calls not yet ended. */
  readonly open = new Set<OpRec>();
  readonly crashes: { slot: number; pid: number; code: number | null; signal: string | null }[] = [];
  private readonly readers = new Set<(h: Holder) => void>();
  private readonly respawns = new Set<Promise<void>>();

  constructor(
    private readonly history: History,
    /** Violations seen while the run goes (crashes, failed restarts, hangs at the end). */
    private readonly violations: Violation[],
    private readonly argsFor: (slot: number, generation: number) => WorkerArgs,
    /**
     * The report that shows a holder in its work, which a GC pause aims at: the mutex agents' read of
     * the twin (the pause must land between it and the write), or, in a run with no mutex workload, the
     * start of a semaphore agent's hold.
     */
    private readonly inWork: 'read' | 'work' = 'read',
  ) {}

  private violate(check: string, detail: unknown): void {
    this.violations.push({ check, detail });
  }

  spawn(slot: number): Promise<void> {
    const generation = (this.slots.get(slot)?.generation ?? -1) + 1;
    const child = forkTs(join(__dirname, '..', 'workloads', 'worker.ts'), this.argsFor(slot, generation));
    const s: Slot = {
      slot,
      generation,
      pid: child.pid as number,
      child,
      paused: false,
      expectedExit: false,
      got: new Map(),
      wanted: new Map(),
    };
    this.slots.set(slot, s);
    child.on('message', (m: Msg) => this.onMessage(s, m));
    child.once('exit', (code, signal) => {
      // Messages sent just before death may still be on their way: settle open ops a moment later.
      setTimeout(() => {
        const at = s.killT ?? hr();
        for (const rec of this.open) {
          if (rec.pid === s.pid) {
            rec.killedAt = at;
            this.open.delete(rec);
          }
        }
      }, 200);
      if (!s.expectedExit) {
        this.crashes.push({ slot, pid: s.pid, code, signal });
        this.violate('worker exited unexpectedly', { slot, pid: s.pid, code, signal });
      }
    });
    return this.expect(s, 'ready', 30_000).then((m) => {
      if (!m) throw new Error(`worker ${slot} did not start within 30 s`);
    });
  }

  /** The first message of `type` from `s` (received before or after the call), or undefined on timeout/exit. */
  expect(s: Slot, type: string, timeoutMs: number): Promise<Msg | undefined> {
    const got = s.got.get(type);
    if (got) return Promise.resolve(got);
    return new Promise((resolve) => {
      const timer = setTimeout(() => finish(undefined), timeoutMs);
      const onExit = (): void => {
        setTimeout(() => finish(s.got.get(type)), 250);
      };
      const finish = (m: Msg | undefined): void => {
        clearTimeout(timer);
        s.wanted.delete(type);
        s.child.off('exit', onExit);
        resolve(m);
      };
      s.wanted.set(type, finish);
      s.child.once('exit', onExit);
    });
  }

  private onMessage(s: Slot, m: Msg): void {
    const { ops } = this.history;
    const rec = typeof m.op === 'string' ? ops.get(m.op) : undefined;
    if (rec && typeof m.validUntil === 'number') {
      rec.validUntilLast = Math.max(rec.validUntilLast ?? -Infinity, m.validUntil);
    }
    if (rec && ['grant', 'read', 'work', 'fenced', 'twin', 'skipped'].includes(m.type)) {
      const at = (m.tDone ?? m.t) as number;
      rec.heldAtLeastUntil = Math.max(rec.heldAtLeastUntil ?? -Infinity, at);
    }
    switch (m.type) {
      case 'acq': {
        const r: OpRec = {
          op: m.op as string,
          key: m.key as string,
          slot: s.slot,
          pid: s.pid,
          t0: m.t as number,
        };
        if (typeof m.permits === 'number') r.permits = m.permits;
        if (m.mode === 'read' || m.mode === 'write') r.mode = m.mode;
        ops.set(r.op, r);
        this.open.add(r);
        return;
      }
      case 'grant':
        if (!rec) return;
        rec.tGrant = m.t as number;
        rec.fence = m.fence as number;
        rec.wall = m.wall as number;
        rec.validUntilGrant = m.validUntil as number | undefined;
        return;
      case 'read':
      case 'work': {
        if (!rec) return;
        if (m.type === 'read') {
          rec.tRead = m.t as number;
          rec.seqRead = m.seq as number;
        }
        rec.workMs = m.workMs as number;
        const h: Holder = { slot: s.slot, pid: s.pid, op: rec.op, key: rec.key, workMs: rec.workMs };
        if (m.type === this.inWork && !s.paused) for (const reader of [...this.readers]) reader(h);
        return;
      }
      case 'fenced':
        if (!rec) return;
        rec.fenced = {
          written: m.written as boolean,
          newest: m.newest as number,
          tSent: m.tSent as number,
          tDone: m.tDone as number,
        };
        return;
      case 'twin':
        if (rec) rec.twin = { seq: m.seq as number, t: m.t as number };
        return;
      case 'skipped':
        if (rec) rec.skipped = m.t as number;
        return;
      case 'end':
        if (!rec) return;
        rec.end = m as unknown as EndMsg;
        this.open.delete(rec);
        return;
      case 'unhandled':
        this.history.unhandled.push({
          slot: s.slot,
          pid: s.pid,
          kind: m.kind as string,
          message: m.message as string,
        });
        return;
      default:
        s.got.set(m.type, m);
        s.wanted.get(m.type)?.(m);
    }
  }

  running(s: Slot): boolean {
    return !s.paused && !s.expectedExit && isRunning(s.child);
  }

  /** Resolves with the next holder that reports it is in its work (see `inWork`), or undefined. */
  nextReader(accept: (h: Holder) => boolean, timeoutMs: number): Promise<Holder | undefined> {
    return new Promise((resolve) => {
      const done = (h: Holder | undefined): void => {
        clearTimeout(timer);
        this.readers.delete(listener);
        resolve(h);
      };
      const listener = (h: Holder): void => {
        if (accept(h)) done(h);
      };
      const timer = setTimeout(() => done(undefined), timeoutMs);
      this.readers.add(listener);
    });
  }

  pause(slot: number): void {
    const s = this.slots.get(slot);
    if (!s || !isRunning(s.child)) return;
    s.child.kill('SIGSTOP');
    s.paused = true;
    this.history.pauses.push({ pid: s.pid, t0: hr() });
  }

  resume(slot: number): void {
    const s = this.slots.get(slot);
    if (!s) return;
    s.child.kill('SIGCONT');
    s.paused = false;
    const p = [...this.history.pauses].reverse().find((x) => x.pid === s.pid && x.t1 === undefined);
    if (p) p.t1 = hr();
  }

  /** SIGKILL, then a new worker in the same slot after `restartAfterMs` (in the background). */
  async kill(slot: number, restartAfterMs: number): Promise<void> {
    const s = this.slots.get(slot);
    if (!s || !isRunning(s.child)) return;
    s.expectedExit = true;
    s.killT = hr();
    const gone = new Promise((resolve) => s.child.once('exit', resolve));
    s.child.kill('SIGKILL');
    await gone;
    const respawn = sleep(restartAfterMs)
      .then(() => this.spawn(slot))
      .catch((error: unknown) => this.violate('worker restart failed', String(error)));
    this.respawns.add(respawn);
    respawn.finally(() => this.respawns.delete(respawn));
  }

  /** End of the nemesis: every worker resumed, every killed one replaced. */
  async heal(): Promise<void> {
    for (const s of this.slots.values()) if (s.paused) this.resume(s.slot);
    while (this.respawns.size > 0) await Promise.all([...this.respawns]);
    for (const s of this.slots.values()) {
      if (!isRunning(s.child))
        await this.spawn(s.slot).catch((e) => this.violate('worker restart failed', String(e)));
    }
  }
}
