/**
 * The keys of a multi-key call that the call chain does not hold yet, taken one at a time in canonical
 * order under one token, each waiting its turn in that key's FIFO line within what is left of the call's
 * `waitTimeout`. Every caller takes shared keys in the same order, so no two wait for each other. A
 * waiting call first reserves its place on the later keys (where the store can): it is served there from
 * that place once it holds the keys before, instead of queueing at the back while it holds them.
 */

import { LockTimeoutError } from '../errors/lock-timeout.error';
import { orderError } from '../errors/lock-usage.error';
import type { LockStore, LockTicket } from '../store/lock-store';
import { type EngineCall, withWaitLeft } from './call';
import { now } from './clock';
import type { HeldLease } from './held-lease';
import { queueLifetime } from './waiter';

/** What taking keys in order needs of the engine. */
export interface KeyTaker {
  readonly store: LockStore;
  /** The service is closing: no new reservations. */
  isClosed(): boolean;
  /**
   * Takes one key with its ticket; `claim`: served from the ticket's reservation; `onQueued`: called
   * once the call waits in that key's line. Null for a try-once call that found the key busy.
   */
  take(
    ticket: LockTicket,
    call: EngineCall,
    claim: boolean,
    onQueued?: () => void,
  ): Promise<HeldLease | null>;
}

/**
 * Takes every ticket's key in order: resolves with their leases, or null (holding nothing) when a
 * try-once call found one busy. On a timeout, abort or error, the keys taken so far are released
 * (handed to their next waiters) and the reservations left are cancelled before the call rejects.
 */
export async function takeInOrder(
  taker: KeyTaker,
  tickets: readonly LockTicket[],
  call: EngineCall,
): Promise<HeldLease[] | null> {
  const { options } = call;
  const started = now();
  // Reservations on the later keys, made once the call queues on some key (an uncontended call makes none).
  const reservations = new Map<LockTicket, Promise<unknown>>();
  const { waitTimeout } = options;
  /** What is left of the call's waitTimeout, counted over all its keys. */
  const left = (): number =>
    waitTimeout === Infinity ? Infinity : Math.max(0, waitTimeout - (now() - started));
  const reserveAfter = (index: number) => () => {
    const later = tickets.slice(index + 1).filter((ticket) => !reservations.has(ticket));
    const made = reserve(taker, later, left(), options.signal);
    if (made) for (const ticket of later) reservations.set(ticket, made);
  };
  const owned: HeldLease[] = [];
  try {
    for (const [index, ticket] of tickets.entries()) {
      // A reserved key is claimed from its reservation, so the reservation's reply must be in first.
      const reserved = reservations.get(ticket);
      if (reserved) await reserved;
      const lease = await taker.take(
        ticket,
        withWaitLeft(call, left()),
        reserved !== undefined,
        index < tickets.length - 1 ? reserveAfter(index) : undefined,
      );
      if (lease === null) {
        await releaseAll(owned);
        return null;
      }
      owned.push(lease);
    }
  } catch (error) {
    // The key that failed left its place (unless it failed before queueing: cancelled again, harmless);
    // the reservations after it were never claimed.
    // A reservation still in flight is waited for, so its cancel cannot overtake it.
    const unclaimed = tickets.slice(owned.length).filter((ticket) => reservations.has(ticket));
    const cancels = unclaimed.map((ticket) =>
      reservations.get(ticket)?.then(() => taker.store.cancel(ticket)),
    );
    await Promise.allSettled([releaseAll(owned), ...cancels]);
    // Not granted within the call's waitTimeout, counted over all its keys: the error names the key
    // that was still busy (one refused for overload, shed or cut short, says so itself).
    if (error instanceof LockTimeoutError && error.key !== undefined && error.retryAfterMs === undefined) {
      throw new LockTimeoutError(error.key, options.waitTimeout);
    }
    throw error;
  }
  return owned;
}

/**
 * Reserves the later keys' places for a call that waits `left` ms more at most, if the store keeps
 * reservations (subscribing to wake-ups first, so no hand-off takes a reservation for a dead caller's).
 * Settles once every reply is in; a failed reservation only means that key is queued at the back when
 * the call asks for it.
 */
function reserve(
  taker: KeyTaker,
  later: readonly LockTicket[],
  left: number,
  signal: AbortSignal | undefined,
): Promise<unknown> | undefined {
  const { store } = taker;
  if (later.length === 0 || !store.reserve || taker.isClosed() || signal?.aborted || !(left > 0))
    return undefined;
  // A reservation lasts as a place in the queue would.
  const queueTtl = queueLifetime(left, later[0].claimWindow);
  const subscribed = store.wakeReady ? Promise.resolve() : store.subscribeWakes();
  return subscribed
    .then(() => Promise.allSettled(later.map((ticket) => store.reserve?.(ticket, queueTtl))))
    .catch(() => undefined);
}

/** Releases leases taken for a multi-key call that is giving up; never rejects. */
async function releaseAll(leases: readonly HeldLease[]): Promise<void> {
  await Promise.allSettled(leases.map((lease) => lease.release()));
}

/**
 * Refuses keys that sort before a key the call chain holds (`byKey`), once it holds several keys or asks
 * for several: taking them now could wait on a caller that holds them and waits for ours.
 */
export function checkOrder(fresh: readonly string[], byKey: ReadonlyMap<string, HeldLease>): void {
  const held = [...byKey].filter(([, lease]) => lease.isHeld).map(([key]) => key);
  if (held.length === 0) return;
  const highest = held.reduce((a, b) => (a > b ? a : b));
  const lowest = fresh.reduce((a, b) => (a < b ? a : b));
  if (lowest < highest) throw orderError(lowest, held.sort());
}
