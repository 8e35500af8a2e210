/**
 * Open-loop load: requests arrive on their own schedule (a Poisson process), not when a worker is free,
 * and each one's latency counts from the moment it arrived. A closed loop lets a starved caller send
 * fewer requests, so its waits barely enter the percentiles (coordinated omission); here every arrival
 * is a sample, whatever happened to the ones before it.
 *
 * Pure functions, shared by the benchmark's workers (bench/worker.ts), the Nest load (bench/nest-load.ts)
 * and their unit tests: the arrival schedule, and from what happened to each request (granted, gave up,
 * still open when observation ended) to latency percentiles, timeouts and goodput.
 */
import { type Summary, summarize } from './stats';

/** A small seeded generator (mulberry32), so a schedule can be replayed: uniform in [0, 1). */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

/**
 * Arrival times of a Poisson process of `ratePerS` requests per second in [from, to) (ms on the shared
 * clock): exponential gaps of mean 1000 / ratePerS. Several processes each running one at rate r / n
 * add up to one Poisson process at rate r.
 */
export function poissonArrivals(
  ratePerS: number,
  from: number,
  to: number,
  random: () => number,
): Float64Array {
  if (!(ratePerS > 0) || !(to > from)) return new Float64Array(0);
  const meanGap = 1000 / ratePerS;
  const out: number[] = [];
  let t = from;
  for (;;) {
    // 1 - random() is in (0, 1]: the logarithm is finite.
    t += -Math.log(1 - random()) * meanGap;
    if (t >= to) break;
    out.push(t);
  }
  return Float64Array.from(out);
}

/** What happened to one request. Times in ms on the shared clock; NaN where it did not happen. */
export interface RequestOutcome {
  arrival: number;
  /** The lock was held (or, over HTTP, the response said so). */
  granted: number;
  /** The call gave up or failed (a timeout, an error). */
  failed: number;
  /** The failure was the library (or the HTTP layer) giving up on waiting, not another error. */
  timedOut?: boolean;
}

export interface OpenLoopWindow {
  /** Requests that arrived in [from, to) are measured. */
  from: number;
  to: number;
  /** Requests count as timed out when not granted within this long of their arrival. */
  timeoutMs: number;
  /** When the harness stopped looking: a request still open then counts up to this moment (censored). */
  observedUntil: number;
}

export interface OpenLoopSummary {
  /** Requests that arrived in the window. */
  arrived: number;
  /** Granted within the timeout. */
  served: number;
  /** Not granted within the timeout: the call gave up, was granted later than that, or was still open
   * when observation ended after waiting at least that long. */
  timedOut: number;
  /** Failed with an error other than giving up on waiting, before the timeout. */
  errors: number;
  /** Still open when observation ended (a subset of timedOut, or of `open` below if shorter). */
  censored: number;
  /** Still open when observation ended, without having waited the timeout yet (observation ended too
   * early: a harness fault, reported so it is never silently dropped). */
  open: number;
  /**
   * Requests granted within their timeout per second, counted by when they were granted (in the
   * window), whenever they arrived: what the service delivered in the window. Counting the window's
   * arrivals instead would credit it with the backlog served after it, above what it can sustain.
   */
  goodputPerS: number;
  /** Arrivals per second in the window (the offered load). */
  offeredPerS: number;
  /**
   * Latency of every request that arrived in the window, from its arrival: until it was granted, until
   * it gave up or failed, or (censored) until observation ended. Timed-out and censored requests are in
   * it at those lower bounds rather than left out, which is what a closed loop would do.
   */
  latency: Summary;
}

export function summarizeOpenLoop(
  outcomes: Iterable<RequestOutcome>,
  window: OpenLoopWindow,
): OpenLoopSummary {
  return summarizeOpenLoopRounds([{ outcomes, window }]);
}

/** Several runs of the same load pooled: counts summed, latencies pooled, rates over all the windows. */
export function summarizeOpenLoopRounds(
  rounds: readonly { outcomes: Iterable<RequestOutcome>; window: OpenLoopWindow }[],
): OpenLoopSummary {
  const latencies: number[] = [];
  let arrived = 0;
  let served = 0;
  let timedOut = 0;
  let errors = 0;
  let censored = 0;
  let open = 0;
  let windowMs = 0;
  let goodput = 0;
  for (const { outcomes, window } of rounds) {
    const { from, to, timeoutMs, observedUntil } = window;
    windowMs += to - from;
    for (const o of outcomes) {
      if (o.granted >= from && o.granted < to && o.granted - o.arrival <= timeoutMs) goodput++;
      if (!(o.arrival >= from && o.arrival < to)) continue;
      arrived++;
      // What happened after observation ended is not known to have happened in time.
      const grantedAt = o.granted <= observedUntil ? o.granted : Number.NaN;
      const failedAt = o.failed <= observedUntil ? o.failed : Number.NaN;
      if (!Number.isNaN(grantedAt)) {
        const latency = grantedAt - o.arrival;
        latencies.push(latency);
        if (latency <= timeoutMs) served++;
        else timedOut++;
      } else if (!Number.isNaN(failedAt)) {
        const latency = failedAt - o.arrival;
        latencies.push(latency);
        if (o.timedOut || latency > timeoutMs) timedOut++;
        else errors++;
      } else {
        const latency = Math.max(0, observedUntil - o.arrival);
        latencies.push(latency);
        censored++;
        if (latency >= timeoutMs) timedOut++;
        else open++;
      }
    }
  }
  const windowS = windowMs / 1000;
  return {
    arrived,
    served,
    timedOut,
    errors,
    censored,
    open,
    goodputPerS: windowS > 0 ? goodput / windowS : Number.NaN,
    offeredPerS: windowS > 0 ? arrived / windowS : Number.NaN,
    latency: summarize(latencies),
  };
}

/**
 * CPU per grant from two readings of a cumulative CPU counter (µs): `process.cpuUsage()` user + system,
 * or redis-server's INFO cpu used_cpu_user + used_cpu_sys. NaN when nothing was granted; a counter that
 * went backwards (a restarted server) is an error, not a negative cost.
 */
export function cpuPerGrant(beforeUs: number, afterUs: number, grants: number): number {
  if (afterUs < beforeUs) throw new Error(`CPU counter went backwards (${beforeUs} → ${afterUs} µs)`);
  return grants > 0 ? (afterUs - beforeUs) / grants : Number.NaN;
}
