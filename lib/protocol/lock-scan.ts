/**
 * Finds the locks that are held or waited for under a prefix, for a listing (the lock board,
 * LockService.list). SCAN, never KEYS: each step reads a bounded number of keys, so a large keyspace
 * never blocks the server, and the whole walk stops at a bound of its own.
 */

import type { RedisConnection } from './connection';
import type { KeyList } from './replies';

/** Keys a SCAN step asks for (a hint to the server, not a limit). */
const STEP = 250;
/** SCAN steps per node at most: a listing reads at most about STEP × this many names per node. */
const MAX_STEPS = 400;
/**
 * What follows `{<key>` in the names of a live lock's keys: the owner key (a string or a semaphore's
 * hash), the queue, a semaphore's line and holders, and a quorum node's waiters and line. The fence key
 * alone outlives a lock, so it says nothing about one being live.
 */
const LIVE_SUFFIXES = ['}', '}:q', '}:sq', '}:s', '}:w', '}:l'];

/** A glob pattern matching `text` literally (SCAN's MATCH treats * ? [ ] \ as special). */
export function globLiteral(text: string): string {
  return text.replace(/[*?[\]\\]/g, '\\$&');
}

/** The lock key a Redis key name belongs to, or undefined when it is no live lock's key under `prefix`. */
export function lockKeyOf(name: string, prefix: string): string | undefined {
  if (!name.startsWith(`${prefix}{`)) return undefined;
  const rest = name.slice(prefix.length + 1);
  for (const suffix of LIVE_SUFFIXES) {
    if (rest.endsWith(suffix) && rest.length > suffix.length) return rest.slice(0, -suffix.length);
  }
  return undefined;
}

/**
 * The lock keys found on `nodes` (the same lock on several nodes counts once), at most `limit`, those
 * containing `filter` if given, in the order found.
 */
export async function scanLockKeys(
  nodes: readonly RedisConnection[],
  prefix: string,
  limit: number,
  filter?: string,
): Promise<KeyList> {
  const pattern = `${globLiteral(prefix)}{*${filter ? `${globLiteral(filter)}*` : ''}`;
  const found = new Set<string>();
  let truncated = false;
  await Promise.all(
    nodes.map(async (node) => {
      let cursor = '0';
      let steps = 0;
      do {
        if (found.size >= limit || ++steps > MAX_STEPS) {
          truncated = true;
          return;
        }
        const [next, names] = (await node.command(['SCAN', cursor, 'MATCH', pattern, 'COUNT', STEP])) as [
          string,
          string[],
        ];
        cursor = String(next);
        for (const name of names) {
          const key = lockKeyOf(name, prefix);
          if (key === undefined || (filter && !key.includes(filter)) || found.has(key)) continue;
          if (found.size >= limit) {
            truncated = true;
            return;
          }
          found.add(key);
        }
      } while (cursor !== '0');
    }),
  );
  return { keys: [...found], truncated };
}
