/**
 * The unfenced twin: a plain read-modify-write counter per lock (GET, work, SET of value + 1) on the
 * resource server, written by every holder next to the fenced value. It has no protection but the lock
 * itself, so a holder frozen past its lease and overtaken makes it lose an update: the run's proof that
 * its checkers see violations where they can happen (checks/lost-updates.ts, checks/sensitivity.ts).
 */
import type Redis from 'ioredis';
import type { TwinSet } from '../history';

export const COUNTER_PREFIX = 'chaos:twin:';

export const twinKey = (key: string): string => `${COUNTER_PREFIX}{${key}}`;

/** The counter's current value (0 when unset). */
export async function readCounter(resource: Redis, key: string): Promise<number> {
  const raw = await resource.get(twinKey(key));
  return raw === null ? 0 : Number(raw.split('|')[0]);
}

/** Writes `seq` for `op`: the value carries its writer, so the resource's log says who wrote what. */
export function writeCounter(resource: Redis, key: string, seq: number, op: string): Promise<unknown> {
  return resource.set(twinKey(key), `${seq}|${op}`);
}

/** A SET of a counter in the resource's MONITOR stream (sent by a client, not by a script). */
export function counterWrite(
  args: readonly string[],
  source: string,
  lockOf: (k: string) => string,
): TwinSet | undefined {
  if (source === 'lua' || args[0]?.toUpperCase() !== 'SET' || !args[1]?.startsWith(COUNTER_PREFIX))
    return undefined;
  const [seq, op] = args[2].split('|');
  return { key: lockOf(args[1]), seq: Number(seq), op };
}
