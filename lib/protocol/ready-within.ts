/**
 * Waits for a connection still on its way: a Cluster knows its masters only once connected, and the
 * server checks read them then.
 */
import type { RedisConnection } from './connection';

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
