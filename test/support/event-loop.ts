// How late this process's event loop runs: what a bound on a timer (a signal that must abort before a
// lease's validity ends) must allow on a busy machine, where a timer cannot fire while the loop is held
// up or the process is not scheduled. Measured, never guessed: perf_hooks' event-loop delay histogram.
import { type IntervalHistogram, monitorEventLoopDelay } from 'node:perf_hooks';

export interface EventLoopWatch {
  /** The longest delay seen since the watch started, ms. */
  worst(): number;
  stop(): void;
}

/** Starts measuring the event loop's delay (10 ms resolution, the histogram's own timer). */
export function watchEventLoop(): EventLoopWatch {
  const histogram: IntervalHistogram = monitorEventLoopDelay({ resolution: 10 });
  histogram.enable();
  return {
    worst: () => histogram.max / 1e6,
    stop: () => histogram.disable(),
  };
}

export interface StallWatch extends EventLoopWatch {
  /** `call`, timed: a round trip to Redis that takes long says the server (or the way to it) stalled. */
  timed<T>(call: Promise<T>): Promise<T>;
}

/**
 * The event loop's delay and the longest round trip timed through it: together, the longest stall that
 * could have kept a renewal from landing (this process late to send it, or the server late to answer).
 */
export function watchStalls(): StallWatch {
  const loop = watchEventLoop();
  let longestCall = 0;
  return {
    async timed(call) {
      const sent = performance.now();
      try {
        return await call;
      } finally {
        longestCall = Math.max(longestCall, performance.now() - sent);
      }
    },
    worst: () => Math.max(loop.worst(), longestCall),
    stop: loop.stop,
  };
}

/**
 * What a bound on time allows for scheduling and a round trip or two on a loaded 2-core machine, ms, where
 * the test does not measure the event loop's delay itself.
 */
export const SLACK_MS = 150;

/** Resolves after `ms`: a hold, a pause between polls, or a wait whose length is what the test is about. */
export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
