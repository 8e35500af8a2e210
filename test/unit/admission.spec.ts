// Admission, the one step the engine asks before a call queues and tells after it is served, on its own
// (its clock given: times here are ms from 0): the standing-line rule paced by the key, and how the
// deadline, the standing line and the door compose. Fast, no Redis; test/unit/standing-line.spec.ts and
// test/api/standing-line.spec.ts run the same rule through an engine and over Redis.
import { describe, expect, it } from '@jest/globals';
import { Admission } from '../../lib/engine/admission';
import type { EngineCall } from '../../lib/engine/call';
import { LockTimeoutError } from '../../lib/errors/lock-timeout.error';
import type { AcquireOptions } from '../../lib/options/call-options';
import type { ResolvedServiceOptions } from '../../lib/options/service-options';
import type { JoinDoor } from '../../lib/store/lock-store';
import { call } from './engine-fixtures';

const request = (options: AcquireOptions = {}) => call({ waitTimeout: 10_000, ...options }, true, true);
const job = (options: AcquireOptions = {}) => call({ waitTimeout: 10_000, ...options }, true, false);

/** The call as admitted on `key` at `t` (a test that expects a refusal says so). */
function admitted(admission: Admission, key: string, made: EngineCall, t: number): EngineCall {
  const result = admission.admit(key, made, t);
  if (result === null || result instanceof LockTimeoutError) throw new Error('refused');
  return result;
}

/** `n` calls that serve someone came to `k` at `t` and were served after `waited` ms, at `t`. */
function cameAndServed(admission: Admission, n: number, waited: number, t: number) {
  const made = Array.from({ length: n }, () => admitted(admission, 'k', request(), t));
  for (const one of made) admission.served('k', one, waited, undefined, t);
}

/** A line on `k` whose pace is `perPlace` ms a place, from a job's call served far past any target. */
function paced(shed: ResolvedServiceOptions['shed'], perPlace: number): Admission {
  const admission = new Admission({ shed });
  admission.served('k', job(), 1_000 * perPlace, 1_000, 0);
  return admission;
}

/** What a new request's 10 s wait on `k` is cut to at `t`. */
const patience = (admission: Admission, t: number, key = 'k') =>
  admitted(admission, key, request(), t).options.waitTimeout;

describe('the standing-line rule, paced by the key', () => {
  it('a target of 15 places and an interval of 10 targets, from the pace of that moment', () => {
    const admission = paced(true, 4); // a 60 ms target, a 600 ms interval
    cameAndServed(admission, 1, 61, 599); // not an interval yet
    expect(patience(admission, 599)).toBe(10_000);
    cameAndServed(admission, 1, 61, 600); // every wait in it past 60 ms: the line stands
    const cut = admitted(admission, 'k', request(), 601);
    expect(cut.options.waitTimeout).toBe(30);
    expect(cut.cutFrom).toBe(10_000);
    expect(admitted(admission, 'k', request({ waitTimeout: 20 }), 601).options.waitTimeout).toBe(20);
    expect(patience(admission, 601, 'other')).toBe(10_000);
    // The key slowed: 8 ms a place weighs a quarter (5 ms: a 75 ms target).
    admission.served('k', job(), 8_000, 1_000, 602);
    expect(patience(admission, 603)).toBe(37.5);
  });

  it('a standing line stands until an interval serves 95 % of the calls that came', () => {
    const admission = paced(true, 4);
    cameAndServed(admission, 1, 61, 600);
    expect(patience(admission, 601)).toBe(30); // it came: 1 of 1, not served yet
    // 100 came, 90 served, some at once: past capacity a short line still serves someone at once.
    for (let i = 0; i < 9; i++) admitted(admission, 'k', request(), 700);
    cameAndServed(admission, 90, 0, 700);
    admission.served('k', job(), 10, undefined, 1_200); // a job's call ends the interval: still standing
    expect(patience(admission, 1_201)).toBe(30);
    for (let i = 0; i < 4; i++) admitted(admission, 'k', request(), 1_300);
    cameAndServed(admission, 95, 40, 1_300); // with the probe above: 95 of 100 served
    admission.served('k', job(), 40, undefined, 1_900);
    expect(patience(admission, 1_901)).toBe(10_000);
  });

  it('waits at the target are not a standing line; the floors hold for keys held microseconds', () => {
    const admission = new Admission({ shed: true });
    admission.served('k', job(), 20, 2_000, 0); // 0.01 ms a place: a 20 ms target, a 200 ms interval (floors)
    cameAndServed(admission, 1, 25, 200);
    expect(patience(admission, 201)).toBe(10_000); // 20 ms is not past the target
    cameAndServed(admission, 1, 21, 400); // every wait of this interval is
    expect(patience(admission, 401)).toBe(10);
  });

  it('shed: { places } sets the target in places instead of 15', () => {
    const admission = paced({ places: 5 }, 10); // a 50 ms target, a 500 ms interval
    cameAndServed(admission, 1, 51, 500);
    expect(patience(admission, 501)).toBe(25);
  });

  it('a key whose pace is not known yet never stands', () => {
    const admission = new Admission({ shed: true });
    for (let t = 0; t <= 10_000; t += 100) cameAndServed(admission, 1, 5_000, t);
    expect(patience(admission, 10_001)).toBe(10_000);
  });
});

describe('one admission: the deadline, then the standing line, then the door', () => {
  it("a call that serves nobody (a cron job's) is never cut, and its door is its whole wait", () => {
    const admission = paced(true, 4);
    cameAndServed(admission, 1, 61, 600);
    const cron = admitted(admission, 'k', job(), 601);
    expect(cron.options.waitTimeout).toBe(10_000);
    expect(cron.cutFrom).toBeUndefined();
    expect(admission.atDoor('k', cron, 601).door).toEqual({ places: 2_500, perPlaceMs: 4, offer: true });
  });

  it("a request's door is what is left of its wait once the standing line cut it", () => {
    const admission = paced(true, 4);
    cameAndServed(admission, 1, 61, 600);
    expect(admission.atDoor('k', admitted(admission, 'k', request(), 601), 601).door).toEqual({
      places: 7,
      perPlaceMs: 4,
      offer: true,
    });
  });

  it('a deadline keeps back the usual hold, and the standing line cuts what is left', () => {
    const admission = paced(true, 4);
    admission.held('k', 200, 0);
    const far = admitted(admission, 'k', job({ deadline: Date.now() + 1_000 }), 1);
    expect(far.options.waitTimeout).toBeLessThanOrEqual(800);
    expect(far.options.waitTimeout).toBeGreaterThan(700);
    expect(far.deadline).toMatchObject({ holdMs: 200 });
    cameAndServed(admission, 1, 61, 600);
    expect(admitted(admission, 'k', job({ deadline: Date.now() + 1_000 }), 601).options.waitTimeout).toBe(30);
  });

  it('a deadline already past is refused before anything is sent, and a try-once call gets null', () => {
    const admission = paced(true, 4);
    const refused = admission.admit('k', job({ deadline: Date.now() - 5 }), 1);
    expect(refused).toBeInstanceOf(LockTimeoutError);
    expect((refused as LockTimeoutError).retryAfterMs).toBeGreaterThanOrEqual(1);
    expect(admission.admit('k', call({ deadline: Date.now() - 5 }, false), 1)).toBeNull();
  });

  it('a wait the admission cut runs out as a refusal for overload; one that ran out its own wait does not', () => {
    const admission = paced(true, 4);
    cameAndServed(admission, 1, 61, 600);
    const cut = admission.refusal('k', admitted(admission, 'k', request(), 601), 30, 12);
    expect(cut.retryAfterMs).toBe(18); // 12 places at 4 ms, less the 30 it waited
    expect(cut.message).toMatch(/standing/);
    const own = admission.refusal('k', admitted(admission, 'k', job(), 601), 10_000, 12);
    expect(own.retryAfterMs).toBeUndefined();
  });

  it("shed: false sets no door, and 'door' no standing line", () => {
    const off = paced(false, 4);
    cameAndServed(off, 1, 61, 600);
    const plain = admitted(off, 'k', request(), 601);
    expect(off.atDoor('k', plain, 601).door).toBeUndefined();
    expect(plain.options.waitTimeout).toBe(10_000);
    const door = paced('door', 4);
    cameAndServed(door, 1, 61, 600);
    const doored = admitted(door, 'k', request(), 601);
    expect(doored.options.waitTimeout).toBe(10_000);
    expect(door.atDoor('k', doored, 601).door).toEqual({ places: 2_500, perPlaceMs: 4, offer: true });
  });
});

describe('the pace offered with a join', () => {
  it('is offered until a join that offered it reached the door, then again 2 s later, not with each join', () => {
    const admission = paced(true, 4);
    const door = (at: number) =>
      admission.atDoor('k', admitted(admission, 'k', job(), at), at).door as { offer: boolean };
    // A call granted at once never reaches the door: the pace it would have offered is not spent.
    expect(door(601).offer).toBe(true);
    const offered = door(602);
    expect(offered.offer).toBe(true);
    admission.joined('k', offered as JoinDoor, undefined, 602);
    expect([603, 2_601].map((at) => door(at).offer)).toEqual([false, false]);
    expect(door(2_602).offer).toBe(true);
  });
});
