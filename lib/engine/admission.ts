/**
 * Admission: the one step the engine asks before a call queues on a key (`admit`) and tells after it is
 * served (`served`), over one map of what this service has seen of each key's line. It owns every way a
 * call's wait is shortened or refused for overload, so that they compose in one order and one place:
 *
 * 1. **The deadline.** A call with a deadline waits only as long as leaves the key's usual hold before
 *    it: served later, its result would come too late. Past the deadline it is not asked for at all.
 * 2. **A standing line** (CoDel, as in "Fail at Scale"). When every call served from a key's line during
 *    an interval waited longer than the target, the line is standing: while it stands, a new call that
 *    serves someone waits at most half the target. The line stops standing after an interval in which
 *    nearly every such call that came was served: the load fell back below what the key can serve.
 * 3. **The door.** A join is turned away, unqueued, when more are in line than what is left of its wait
 *    could see through at the pace the line moves (the store refuses it, LockShedError).
 *
 * A call that serves nobody (no request, no deadline: a cron job) is never cut by 1 or 2; the door turns
 * it away only when its whole wait could not see the line through.
 *
 * The standing line's trip and cut are two thresholds on purpose: below capacity a line drains now and
 * then, so some caller of an interval is served within the target and the rule does not trip; past
 * capacity none is, and once tripped the shorter cut keeps the line near half its target. It stops by the
 * share served, not by a short wait: a short line past capacity still serves someone at once now and
 * then. The floors keep event-loop jitter on keys held for microseconds from reading as a standing line.
 * The target and interval are scaled to the key's pace: PACED_TARGET places and PACED_INTERVAL targets
 * (a test or a benchmark may fix them, or pace other places, under SHED_RULE). What these choices cost
 * and gain, modelled and measured: docs/benchmarks.md, "A standing line held to half its target".
 *
 * What is seen of a line: how long a hold lasts, and how long the line takes per place (a waiter granted
 * after waiting `w` ms from place `p` gives w / p, departures ahead of it included: the pace a newcomer's
 * wait is measured by). Each is a mean that weighs the latest sample a quarter, so it follows a change
 * within a few. Bounded: past MAX_REMEMBERED_KEYS the key seen first is forgotten, and learnt again.
 */
import { setBounded } from '../bounded-map';
import { LockTimeoutError } from '../errors/lock-timeout.error';
import type { ResolvedServiceOptions, StandingRule } from '../options/service-options';
import type { JoinDoor } from '../store/lock-store';
import { type EngineCall, withWaitLeft } from './call';

/**
 * How often a service offers a key's pace with its joins, ms. The store keeps a pace it is offered for
 * 10 s and replaces none meanwhile (prelude.lua, join_door), so an offer with every join would cost a busy
 * line one command per join for nothing: once every 2 s leaves the pace missing at most 2 s after it
 * expired, for a new service to learn the line for itself meanwhile.
 */
const PACE_OFFER_MS = 2_000;
export const PACED_TARGET = 15;
const PACED_INTERVAL = 10;
const MIN_TARGET_MS = 20;
const MIN_INTERVAL_MS = 200;
/** A standing line stops standing after an interval that served at least this share of the calls that came. */
const SERVED_TO_STOP = 0.95;

/** What this service has seen of one key's line. */
interface Line {
  /** Mean hold, ms (undefined before any hold ended). */
  hold?: number;
  /** Mean ms per place (undefined before any waiter was served from the line). */
  perPlace?: number;
  /** When a join last offered the store this line's pace (monotonic ms, as `at`). */
  offeredAt?: number;
  /** The standing-line rule's interval: since when, the least wait of a call served in it, ms. */
  since: number;
  least: number;
  standing: boolean;
  /** Calls that serve someone: how many came to this key since `since`, and how many were served. */
  came: number;
  served: number;
}

export class Admission {
  private readonly lines = new Map<string, Line>();
  /** The standing-line rule, unless the service's `shed` is false or 'door'. */
  private readonly rule: StandingRule | undefined;
  /** Whether joins have a door at all (`shed` not false). */
  private readonly door: boolean;

  constructor({ shed }: Pick<ResolvedServiceOptions, 'shed'>) {
    this.door = shed !== false;
    this.rule =
      shed === false || shed === 'door' ? undefined : shed === true ? { places: PACED_TARGET } : shed;
  }

  /**
   * The call as it may wait on `key` (its wait cut by its deadline or a standing line), or
   * why it may not: LockTimeoutError for a call whose deadline has passed, null for a try-once call then.
   */
  admit(key: string, call: EngineCall, at: number): EngineCall | LockTimeoutError | null {
    const line = this.lines.get(key);
    const { deadline } = call.options;
    if (deadline !== undefined) {
      const left = Math.round(deadline - Date.now());
      const holdMs = Math.round(line?.hold ?? 0);
      if (left <= 0) {
        if (!call.busyIsTimeout) return null;
        return new LockTimeoutError(key, 0, {
          deadline: { leftMs: left, holdMs },
          retryAfterMs: this.lineClears(line, 0, undefined),
        });
      }
      const wait = Math.max(0, left - holdMs);
      if (wait < call.options.waitTimeout) {
        call = { ...withWaitLeft(call, wait), deadline: { leftMs: left, holdMs }, startWithin: wait };
      } else {
        call = { ...call, startWithin: wait };
      }
    }
    if (this.rule && call.serving) {
      const times = line?.standing ? this.timesOf(line) : undefined;
      const own = call.options.waitTimeout;
      if (times && times.target / 2 < own) call = { ...withWaitLeft(call, times.target / 2), cutFrom: own };
      this.line(key, at).came++;
    }
    return call;
  }

  /**
   * An admitted call about to join `key`'s line, with its door: what is left of its wait at the pace seen,
   * or, before any was seen, that wait for the store to set the door by (asked only at a join, so a call
   * served at once pays nothing for it).
   */
  atDoor(key: string, call: EngineCall, at: number): EngineCall {
    const { waitTimeout } = call.options;
    if (!this.door || !Number.isFinite(waitTimeout)) return call;
    const line = this.lines.get(key);
    const perPlaceMs = line?.perPlace;
    if (!line || !perPlaceMs) return { ...call, door: { waitMs: waitTimeout } };
    const offer = line.offeredAt === undefined || at - line.offeredAt >= PACE_OFFER_MS;
    return {
      ...call,
      door: { places: Math.max(1, Math.floor(waitTimeout / perPlaceMs)), perPlaceMs, offer },
    };
  }

  /**
   * A join of `key` reached the store's door (`door` as sent): a pace it offered is kept there now, and
   * the next is offered PACE_OFFER_MS later (a call granted at once never reaches the door, so it is
   * counted from here, not from atDoor). `pace`: the store told the pace a cold join's door was set by,
   * to start from.
   */
  joined(key: string, door: JoinDoor | undefined, pace: number | undefined, at: number): void {
    if (pace !== undefined && pace > 0) {
      const line = this.line(key, at);
      if (line.perPlace === undefined) line.perPlace = pace;
    }
    // Only a line seen already: one made here would start the standing-line rule's interval at a join.
    const seen = door !== undefined && 'offer' in door && door.offer ? this.lines.get(key) : undefined;
    if (seen) seen.offeredAt = at;
  }

  /** A call admitted on `key` was served after `waitedMs`, from `place` in line if it queued (1: first). */
  served(key: string, call: EngineCall, waitedMs: number, place: number | undefined, at: number): void {
    const line = this.line(key, at);
    if (place) line.perPlace = mean(line.perPlace, waitedMs / place);
    if (!this.rule) return;
    line.least = Math.min(line.least, waitedMs);
    if (call.serving) line.served++;
    const times = this.timesOf(line);
    if (!times || at - line.since < times.interval) return;
    line.standing = line.standing ? line.served < SERVED_TO_STOP * line.came : line.least > times.target;
    line.least = Number.POSITIVE_INFINITY;
    line.since = at;
    line.came = 0;
    line.served = 0;
  }

  /** A hold of `key` ended after `ms`: what a deadline keeps back for the work after its wait. */
  held(key: string, ms: number, at: number): void {
    const line = this.line(key, at);
    line.hold = mean(line.hold, ms);
  }

  /**
   * The LockTimeoutError of a call on `key` whose wait ran out after `waitedMs`, from `place` in line if
   * the store said: a refusal for overload when admission cut its wait (its deadline, a standing line),
   * with when the line would clear; else its own waitTimeout ran out while the lock was held.
   */
  refusal(key: string, call: EngineCall, waitedMs: number, place: number | undefined): LockTimeoutError {
    const { deadline, cutFrom } = call;
    if (cutFrom === undefined && deadline === undefined) return new LockTimeoutError(key, waitedMs);
    const retryAfterMs = this.lineClears(this.lines.get(key), waitedMs, place);
    return new LockTimeoutError(key, waitedMs, { retryAfterMs, deadline, waitTimeout: cutFrom });
  }

  /**
   * When a line would clear for a call refused after waiting `waitedMs` from `place` (undefined if it
   * never joined or the store did not say), ms from now, at least 1.
   */
  private lineClears(line: Line | undefined, waitedMs: number, place: number | undefined): number {
    const perPlace = line?.perPlace;
    // The line it joined, at the pace seen, less what it waited: when the line it saw clears, as a shed's
    // retryAfterMs is; at least one place, as its own turn had not come.
    if (perPlace !== undefined && place !== undefined) {
      return Math.ceil(Math.max(perPlace, place * perPlace - waitedMs));
    }
    // Without its place (its time ran out before the store's reply said it): a call not served has at
    // least one place (or one hold) ahead, and a standing line's waits run past its target; the longer.
    const target = line?.standing ? (this.timesOf(line)?.target ?? 0) : 0;
    return Math.max(1, Math.ceil(Math.max(perPlace ?? line?.hold ?? 0, target)));
  }

  private line(key: string, at: number): Line {
    let line = this.lines.get(key);
    if (!line) {
      line = {
        since: at,
        least: Number.POSITIVE_INFINITY,
        standing: false,
        came: 0,
        served: 0,
      };
      setBounded(this.lines, key, line);
    }
    return line;
  }

  private timesOf(line: Line): { target: number; interval: number } | undefined {
    const { rule } = this;
    if (!rule) return undefined;
    if ('target' in rule) return rule;
    if (!line.perPlace) return undefined;
    const target = Math.max(MIN_TARGET_MS, rule.places * line.perPlace);
    return { target, interval: Math.max(MIN_INTERVAL_MS, PACED_INTERVAL * target) };
  }
}

function mean(previous: number | undefined, sample: number): number {
  return previous === undefined ? sample : previous + (sample - previous) / 4;
}
