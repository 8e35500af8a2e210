/**
 * Puts the process on the scheduler's clock: setTimeout, setInterval, setImmediate, performance.now,
 * Date.now, Math.random and crypto.randomBytes are replaced, for the whole run, by ones that read and schedule on
 * virtual time for the actor whose event is running. The lock's code is loaded unchanged: it reads the
 * globals and node:perf_hooks' `performance` (the same object) when it calls them. Only the real
 * setImmediate stays, to let each event's promise continuations finish.
 */
import { createRequire } from 'node:module';
import { performance } from 'node:perf_hooks';
import type { Actor, Rng, Scheduled, Scheduler } from './scheduler';

/** The module object itself (a namespace import would be a copy): the one the lock's code calls into. */
const crypto = createRequire(`${process.cwd()}/`)('node:crypto') as { randomBytes: unknown };

/** What a timer handle offers Node code: unref/ref/refresh/hasRef, all no-ops but refresh. */
class VirtualTimer {
  private event: Scheduled | undefined;

  constructor(
    private readonly time: VirtualTime,
    private readonly actor: Actor | null,
    private readonly fn: () => void,
    private readonly delayMs: number,
    private readonly repeat: boolean,
  ) {
    this.arm();
  }

  private arm(): void {
    this.event = this.time.schedule(this.actor, this.delayMs, () => {
      if (this.repeat) this.arm();
      else this.event = undefined;
      this.fn();
    });
  }

  clear(): void {
    this.event?.cancel();
    this.event = undefined;
  }

  refresh(): this {
    this.clear();
    this.arm();
    return this;
  }

  unref(): this {
    return this;
  }

  ref(): this {
    return this;
  }

  hasRef(): boolean {
    return true;
  }

  [Symbol.toPrimitive](): number {
    return 0;
  }
}

export class VirtualTime {
  private readonly real = {
    setTimeout: globalThis.setTimeout,
    clearTimeout: globalThis.clearTimeout,
    setInterval: globalThis.setInterval,
    clearInterval: globalThis.clearInterval,
    setImmediate: globalThis.setImmediate,
    clearImmediate: globalThis.clearImmediate,
    now: performance.now,
    dateNow: Date.now,
    random: Math.random,
    randomBytes: crypto.randomBytes,
  };
  private scheduler: Scheduler | undefined;
  private bytes: Rng | undefined;
  /** Wall-clock epoch of virtual time 0, ms: a fixed date, so Date.now replays too. */
  static readonly EPOCH_MS = Date.UTC(2026, 0, 1);

  /** Resolves once every promise continuation queued so far (and those they queue) has run. */
  readonly drain = (): Promise<void> => new Promise((resolve) => this.real.setImmediate(resolve));

  install(): void {
    const g = globalThis as Record<string, unknown>;
    // Before a run (the module loader's own timers), the real ones.
    const r = this.real;
    g.setTimeout = (fn: (...a: unknown[]) => void, ms?: number, ...args: unknown[]) =>
      this.scheduler
        ? new VirtualTimer(this, this.actor(), () => fn(...args), ms ?? 0, false)
        : r.setTimeout(fn, ms, ...args);
    g.setInterval = (fn: (...a: unknown[]) => void, ms?: number, ...args: unknown[]) =>
      this.scheduler
        ? new VirtualTimer(this, this.actor(), () => fn(...args), ms ?? 0, true)
        : r.setInterval(fn, ms, ...args);
    g.setImmediate = (fn: (...a: unknown[]) => void, ...args: unknown[]) =>
      this.scheduler
        ? new VirtualTimer(this, this.actor(), () => fn(...args), -1, false)
        : r.setImmediate(fn, ...args);
    const clear = (real: (t: never) => void) => (timer: unknown) => {
      if (timer instanceof VirtualTimer) timer.clear();
      else if (timer !== undefined && timer !== null) real(timer as never);
    };
    g.clearTimeout = clear(r.clearTimeout);
    g.clearInterval = clear(r.clearInterval);
    g.clearImmediate = clear(r.clearImmediate);
    // Before a run (the module loader reads the clock too), the real clock.
    const realNow = this.real.now.bind(performance);
    (performance as { now: () => number }).now = () =>
      this.scheduler ? this.clockMs(this.actor()) : realNow();
    Date.now = () =>
      this.scheduler ? VirtualTime.EPOCH_MS + Math.floor(this.clockMs(this.actor())) : this.real.dateNow();
    Math.random = () => (this.bytes ? this.bytes.float() : this.real.random());
    crypto.randomBytes = (size: number) => {
      const out = Buffer.alloc(size);
      for (let i = 0; i < size; i++) out[i] = (this.bytes as Rng).next() & 0xff;
      return out;
    };
  }

  uninstall(): void {
    const g = globalThis as Record<string, unknown>;
    g.setTimeout = this.real.setTimeout;
    g.clearTimeout = this.real.clearTimeout;
    g.setInterval = this.real.setInterval;
    g.clearInterval = this.real.clearInterval;
    g.setImmediate = this.real.setImmediate;
    g.clearImmediate = this.real.clearImmediate;
    (performance as { now: () => number }).now = this.real.now;
    Date.now = this.real.dateNow;
    Math.random = this.real.random;
    crypto.randomBytes = this.real.randomBytes;
  }

  /** The run whose clock the globals read from now on. */
  use(scheduler: Scheduler, bytes: Rng): void {
    this.scheduler = scheduler;
    this.bytes = bytes;
  }

  /** Runs `scheduler`'s events on this clock (see Scheduler.run). */
  runScheduler(scheduler: Scheduler, until: number, stop: () => boolean): Promise<void> {
    return scheduler.run(until, this.drain, stop);
  }

  private actor(): Actor | null {
    return this.scheduler?.current ?? null;
  }

  /** `actor`'s clock now, ms (the world's own: virtual time). */
  clockMs(actor: Actor | null): number {
    const t = (this.scheduler as Scheduler).now;
    return (actor ? actor.clockAt(t) : t) / 1000;
  }

  /**
   * Schedules `fn` `delayMs` from now on `actor`'s clock, as Node does: at least 1 ms (a setImmediate,
   * -1: now, after what is already due).
   */
  schedule(actor: Actor | null, delayMs: number, fn: () => void): Scheduled {
    const scheduler = this.scheduler as Scheduler;
    if (delayMs < 0) return scheduler.at(scheduler.now, actor, fn);
    const ms = Number.isFinite(delayMs) && delayMs >= 1 ? delayMs : 1;
    const due = actor ? actor.virtualAt(actor.clockAt(scheduler.now) + ms * 1000) : scheduler.now + ms * 1000;
    return scheduler.at(due, actor, fn);
  }
}
