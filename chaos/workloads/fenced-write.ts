/**
 * The fenced value: each holder writes its op id under its lease's fence with FencedStore, on the
 * resource server. The resource refuses a fence older than the newest it accepted, so a stale holder's
 * write is refused however late it arrives (checks/fenced-writes.ts reads the order the resource ran
 * them in).
 */
import type { FencedStore } from '../../lib';
import type { FencedAccept } from '../history';

export const FENCED_PREFIX = 'chaos:fenced:';

export const fencedKey = (key: string): string => `${FENCED_PREFIX}{${key}}`;

export function writeFenced(store: FencedStore, key: string, fence: number, op: string) {
  return store.set(fencedKey(key), fence, op);
}

/** An accepted fenced write in the resource's MONITOR stream: fenced-write.lua's HSET key v <op> f <fence>. */
export function fencedAccept(
  args: readonly string[],
  source: string,
  lockOf: (k: string) => string,
): FencedAccept | undefined {
  if (source !== 'lua' || args[0]?.toUpperCase() !== 'HSET' || !args[1]?.startsWith(FENCED_PREFIX))
    return undefined;
  return { key: lockOf(args[1]), op: args[3], fence: Number(args[5]) };
}
