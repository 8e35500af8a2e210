/**
 * Lock events as `node:diagnostics_channel` channels, for code that watches locks without OpenTelemetry
 * (a logger, a metrics client of its own). Publishing costs nothing while a channel has no subscriber:
 * each event is built only when someone listens to its channel or the service's `onEvent` is set.
 */
import { channel } from 'node:diagnostics_channel';

/** The channel of each event kind: subscribe with `diagnostics_channel.subscribe(LOCK_CHANNELS.lost, fn)`. */
export const LOCK_CHANNELS = Object.freeze({
  queued: 'nestjs-redis-lock:queued',
  granted: 'nestjs-redis-lock:granted',
  timeout: 'nestjs-redis-lock:timeout',
  aborted: 'nestjs-redis-lock:aborted',
  released: 'nestjs-redis-lock:released',
  renewed: 'nestjs-redis-lock:renewed',
  lost: 'nestjs-redis-lock:lost',
});

export type LockEventKind = keyof typeof LOCK_CHANNELS;

/**
 * One event. `name`: the lock's name (a `@Locked` key template, a call's `label` option, or 'unnamed');
 * `keys`: the keys themselves. `token` and `fence` once granted; `waitedMs` from the call to its outcome
 * (granted, timeout, aborted); `heldMs` from the grant to its end (released, lost); `reason` and `error`
 * for a lost lease (LockLostError's reason) and for a timeout or an abort (the error the call rejects with).
 */
export interface LockEvent {
  kind: LockEventKind;
  name: string;
  keys: readonly string[];
  token?: string;
  fence?: number;
  waitedMs?: number;
  heldMs?: number;
  reason?: string;
  error?: unknown;
  /** A timeout of a `@Locked` method with `onTimeout: 'skip'`: the call returned without running it. */
  skipped?: true;
}

const channels = Object.fromEntries(
  Object.entries(LOCK_CHANNELS).map(([kind, name]) => [kind, channel(name)]),
) as Record<LockEventKind, ReturnType<typeof channel>>;

/** Whether an event of `kind` would reach anyone: a channel subscriber or the service's own handler. */
export function isWatched(kind: LockEventKind, handler: unknown): boolean {
  return handler !== undefined || channels[kind].hasSubscribers;
}

/** Any channel subscribed at all: when none is and nothing else reports, a call records nothing. */
export function anyChannelWatched(): boolean {
  for (const kind in channels) if (channels[kind as LockEventKind].hasSubscribers) return true;
  return false;
}

/** Sends `event` to its channel's subscribers and to `handler`; what a handler throws is ignored. */
export function publish(event: LockEvent, handler: ((event: LockEvent) => void) | undefined): void {
  const target = channels[event.kind];
  if (target.hasSubscribers) target.publish(event);
  if (handler) {
    try {
      handler(event);
    } catch {
      // An observer must never break the lock call it observes.
    }
  }
}
