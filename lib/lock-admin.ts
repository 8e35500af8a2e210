/**
 * What an operator does with locks rather than a caller: list the live ones (the lock board's source)
 * and end a hold that is stuck. Both go through the store's own calls (inspect, release), so a forced
 * release hands the lock to the next waiter exactly as the holder's own release would.
 */

import { lockInfo } from './engine/lock-info';
import { LockUsageError } from './errors/lock-usage.error';
import type { LockInfo } from './lease';
import { describeValue as describe } from './options/describe-value';
import type { LockStore, TicketKind } from './store/lock-store';
import { claimWindowOf } from './store/token';

/** Options of LockService.list. */
export interface ListLocksOptions {
  /** Only keys containing this text. */
  filter?: string;
  /** At most this many locks (1 to 10 000; default 500): the scan stops there and says `truncated`. */
  limit?: number;
}

/** The live locks found: held, or with someone in line. */
export interface LockList {
  locks: LockInfo[];
  /** More locks may exist than were listed (the limit, or the scan's own bound, was reached). */
  truncated: boolean;
}

export const DEFAULT_LIST_LIMIT = 500;
const MAX_LIST_LIMIT = 10_000;
/** Locks inspected at once while listing: one script each, so a long list never floods the server. */
const INSPECT_AT_ONCE = 16;

function resolveListOptions(options: ListLocksOptions | undefined): { limit: number; filter?: string } {
  if (options === undefined) return { limit: DEFAULT_LIST_LIMIT };
  if (options === null || typeof options !== 'object') {
    throw new LockUsageError(`list() options must be an object, got ${describe(options)}.`);
  }
  const { filter, limit = DEFAULT_LIST_LIMIT } = options;
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_LIST_LIMIT) {
    throw new LockUsageError(
      `list() limit must be an integer from 1 to ${MAX_LIST_LIMIT}, got ${describe(limit)}.`,
    );
  }
  if (filter !== undefined && typeof filter !== 'string') {
    throw new LockUsageError(
      `list() filter must be a string (text the keys contain), got ${describe(filter)}.`,
    );
  }
  return filter ? { limit, filter } : { limit };
}

/**
 * The live locks, sorted by key. `waitingSince` gives the start (performance.now()) of a waiter of this
 * service, whose wait is then reported exactly.
 */
export async function listLocks(
  store: LockStore,
  options: ListLocksOptions | undefined,
  waitingSince: (token: string) => number | undefined,
): Promise<LockList> {
  const { limit, filter } = resolveListOptions(options);
  if (!store.list) throw new LockUsageError('This lock store cannot list its locks.');
  const { keys, truncated } = await store.list(limit, filter);
  const infos: LockInfo[] = [];
  for (let i = 0; i < keys.length; i += INSPECT_AT_ONCE) {
    const batch = keys.slice(i, i + INSPECT_AT_ONCE);
    infos.push(...(await Promise.all(batch.map(async (key) => lockInfo(key, await store.inspect(key))))));
  }
  const locks = infos
    .filter((info) => info.held || info.queueLength > 0)
    .map((info) => withWaits(info, waitingSince));
  locks.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  return { locks, truncated };
}

/** `info` with the wait of each waiter `waitingSince` knows (a waiter of the service asking), in ms. */
export function withWaits(info: LockInfo, waitingSince: (token: string) => number | undefined): LockInfo {
  const now = performance.now();
  for (const waiter of info.waiting ?? []) {
    const since = waitingSince(waiter.token);
    if (since !== undefined) waiter.waitedMs = Math.max(0, Math.round(now - since));
  }
  return info;
}

/**
 * Ends `token`'s hold on `key` as its own release would (the next waiter is served); false when that
 * token does not hold it now. The holder learns of it at its next renewal (its signal aborts with
 * LockLostError) or when it releases (LockNotHeldError).
 */
export async function forceRelease(store: LockStore, key: string, token: unknown): Promise<boolean> {
  if (typeof token !== 'string' || token === '') {
    throw new LockUsageError(
      `forceRelease() needs the holder's token (inspect(key).holders[i].token), got ${describe(token)}.`,
    );
  }
  const info = lockInfo(key, await store.inspect(key));
  const holder = info.holders.find((h) => h.token === token);
  if (!holder) return false;
  const kind: TicketKind | undefined =
    info.kind === 'semaphore'
      ? { permits: info.permits }
      : info.kind === 'read-write'
        ? { mode: holder.mode ?? 'write' }
        : undefined;
  const own = store.ticket(key, { ttl: Math.max(1, holder.ttl), claimWindow: claimWindowOf(token), kind });
  return store.release({ ...own, token }, holder.fence);
}
