/**
 * The benchmark's only clock: the system-wide monotonic clock (CLOCK_MONOTONIC on Linux, through libuv),
 * in milliseconds. Every process on the machine reads the same clock, so a timestamp taken in one worker
 * process can be compared with one taken in another (a release in one, the next grant in another).
 */
export const hr = (): number => Number(process.hrtime.bigint()) / 1e6;

/** Resolves at `at` on the shared clock (at once if that moment has passed). */
export function sleepUntil(at: number): Promise<void> {
  const delay = at - hr();
  if (delay <= 0) return Promise.resolve();
  return new Promise((resolve) => setTimeout(resolve, delay));
}
