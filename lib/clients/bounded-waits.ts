/**
 * The bounded waits both client libraries share: for a connection still on its way (a Cluster knows its
 * masters only once connected), for a QUIT that a frozen server never answers, for a socket to close.
 * The lock never waits on Redis without a bound.
 */
import type { RedisConnection } from '../protocol/connection';

/** Resolves once `connection` reports ready, or after `ms`, whichever comes first. */
export async function readyWithin(connection: RedisConnection, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  let detach = (): void => {};
  await new Promise<void>((resolve) => {
    detach = connection.on('ready', resolve);
    timer = setTimeout(resolve, ms);
  });
  clearTimeout(timer);
  detach();
}

/** Whether `reply` resolved within `ms` (false if it rejected, or had not settled by then). */
export async function answeredWithin(reply: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      reply.then(
        () => true,
        () => false,
      ),
      new Promise<boolean>((resolve) => {
        timer = setTimeout(() => resolve(false), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/** Waits for `promise`, or `ms` at most. */
export async function settled(promise: Promise<void>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([promise, new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)))]);
  clearTimeout(timer);
}
