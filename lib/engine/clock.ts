/**
 * The only clock the lock reads on the client: monotonic, so wall-clock steps can never stretch a
 * lease. Validity is always measured from a moment taken before the command that set it was sent.
 */
import { performance } from 'node:perf_hooks';

export const now = (): number => performance.now();

export { safetyMargin } from '../store/lock-store';

/** How long a lease of `ttl` taken through `store` is valid, from before the call: ttl less the store's drift. */
export function validFor(store: { validityDrift?(ttl: number): number }, ttl: number): number {
  return ttl - (store.validityDrift?.(ttl) ?? 0);
}

/** Resolves once every promise has settled, or after `ms`, whichever comes first. */
export async function settledWithin(promises: readonly Promise<unknown>[], ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, ms);
  });
  await Promise.race([Promise.allSettled(promises), deadline]);
  clearTimeout(timer);
}
