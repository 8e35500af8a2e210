// What a route's departures teach of its clients' patience: nothing before eight, then the lower
// quartile of the latest 32, forgotten a minute after the last.
import { describe, expect, it } from '@jest/globals';
import { ClientPatience, RoutePatience } from '../../lib/nest/client-patience';

const T = 1_000_000;

describe('ClientPatience', () => {
  it('knows nothing before eight departures, then their lower quartile', () => {
    const clients = new ClientPatience();
    const ages = [900, 1000, 1100, 950, 1050, 300, 1000, 980];
    for (const [i, age] of ages.slice(0, 7).entries()) clients.departed(age, T + i);
    expect(clients.of(T + 7)).toBeUndefined();
    clients.departed(ages[7], T + 7);
    // Sorted: 300 900 950 980 1000 1000 1050 1100: the quartile is the second.
    expect(clients.of(T + 7)).toBe(900);
  });

  it('follows the latest 32 departures: older ones are forgotten', () => {
    const clients = new ClientPatience();
    for (let i = 0; i < 32; i++) clients.departed(200, T + i);
    expect(clients.of(T + 32)).toBe(200);
    for (let i = 0; i < 24; i++) clients.departed(2_000, T + 32 + i);
    // 8 of 200 and 24 of 2,000 left: the quartile (the eighth) is still 200; one more and it is not.
    expect(clients.of(T + 56)).toBe(200);
    clients.departed(2_000, T + 56);
    expect(clients.of(T + 57)).toBe(2_000);
  });

  it('forgets a route a minute after its last departure', () => {
    const clients = new ClientPatience();
    for (let i = 0; i < 8; i++) clients.departed(500, T);
    expect(clients.of(T + 60_000)).toBe(500);
    expect(clients.of(T + 60_001)).toBeUndefined();
  });

  it('ignores an age that is not a number of ms', () => {
    const clients = new ClientPatience();
    for (let i = 0; i < 8; i++) clients.departed(Number.NaN, T);
    clients.departed(-5, T);
    expect(clients.of(T)).toBeUndefined();
  });
});

describe('RoutePatience', () => {
  it('keeps each route apart, by its handler', () => {
    const routes = new RoutePatience();
    const pay = () => 'pay';
    const ship = () => 'ship';
    for (let i = 0; i < 8; i++) routes.of(pay).departed(100, T);
    expect(routes.of(pay).of(T)).toBe(100);
    expect(routes.of(ship).of(T)).toBeUndefined();
    expect(routes.of(pay)).toBe(routes.of(pay));
  });
});
