// The start window a service reserves a pushed grant for (docs/protocol.md, "Start window"): its ceiling
// until it has seen enough round trips to Redis, then a multiple of their p99, between a floor and a
// ceiling, never above a waiter's claim window; a fixed number when the option is one. Bad option values
// are refused before anything is sent. No Redis: test/api/start-window.spec.ts has the protocol.
import { describe, expect, it } from '@jest/globals';
import { StartWindows } from '../../lib/engine/start-window';
import { LockOptionsError } from '../../lib/errors/lock-options.error';
import { resolveServiceOptions } from '../../lib/options/service-options';

const rule = (startWindow?: unknown) => resolveServiceOptions({ startWindow }).startWindow;

describe('the start window', () => {
  it('is the ceiling until round trips were seen, never more than the claim window', () => {
    const windows = new StartWindows(rule());
    expect(windows.windowFor(2_000)).toBe(500);
    expect(windows.windowFor(300)).toBe(300);
  });

  it('follows factor x the p99 of the round trips, between the floor and the ceiling', () => {
    const windows = new StartWindows(rule());
    for (let i = 0; i < 200; i++) windows.observe(1);
    expect(windows.windowFor(2_000)).toBe(20); // 4 ms: the floor
    // Three round trips in a hundred take 60 ms: the p99 is 60 ms, the window 240 ms.
    for (let i = 0; i < 200; i++) windows.observe(i % 33 === 0 ? 60 : 1);
    expect(windows.windowFor(2_000)).toBe(240);
    for (let i = 0; i < 200; i++) windows.observe(400);
    expect(windows.windowFor(2_000)).toBe(500); // the ceiling
    // The latency falls back: so does the window, once the slow ones have left the last 200.
    for (let i = 0; i < 200; i++) windows.observe(2);
    expect(windows.windowFor(2_000)).toBe(20);
  });

  it('is fixed when the option is a number, and follows the rule given', () => {
    const fixed = new StartWindows(rule(75));
    for (let i = 0; i < 200; i++) fixed.observe(300);
    expect(fixed.windowFor(2_000)).toBe(75);
    const custom = new StartWindows(rule({ factor: 2, min: 5, max: 50 }));
    expect(custom.windowFor(2_000)).toBe(50);
    for (let i = 0; i < 200; i++) custom.observe(10);
    expect(custom.windowFor(2_000)).toBe(20);
  });

  it.each([
    ['a string', '100', 'startWindow must be a number of ms'],
    ['a negative number', -1, 'startWindow'],
    ['a factor below 1', { factor: 0.5 }, 'startWindow.factor must be a number from 1 to 100'],
    ['a ceiling below the floor', { min: 100, max: 50 }, 'startWindow.max (50 ms) must be at least'],
    ['an unknown key', { floor: 10 }, 'floor'],
  ])('refuses %s with a LockOptionsError that says what to give', (_what, value, message) => {
    expect(() => rule(value)).toThrow(LockOptionsError);
    expect(() => rule(value)).toThrow(message);
  });
});
