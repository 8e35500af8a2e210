/**
 * The node-redis connections the Nest module opens itself (from `url`, when ioredis is not
 * installed) and closes on shutdown: made unconnected, so nothing is left open if the application fails
 * to start, and closed within bounds, so nothing of ours holds the process after shutdown.
 */

import { LockUsageError } from '../../errors/lock-usage.error';
import { describeValue } from '../../options/describe-value';
import { settled } from '../bounded-waits';
import type { OwnedConnection, OwnedRequest } from '../client-library';

/** How long close() (QUIT) may wait for its reply before the socket is dropped. */
const QUIT_TIMEOUT = 1_000;
/** How long to wait for the socket to close after dropping it. */
const DISCONNECT_TIMEOUT = 3_000;

/** What the module uses of node-redis' `createClient()`. */
type NodeRedisFactory = (options: { url: string }) => NodeRedisOwned;
interface NodeRedisOwned {
  readonly isOpen: boolean;
  connect(): Promise<unknown>;
  close?(): Promise<void>;
  quit?(): Promise<unknown>;
  destroy?(): void;
  disconnect?(): Promise<void>;
  on(event: string, listener: (...args: never[]) => void): unknown;
  once(event: string, listener: () => void): unknown;
}

/** The connections of `request` (one per URL), made with the application's node-redis (`redis`). */
export function openNodeRedis(loaded: unknown, request: OwnedRequest): OwnedConnection[] {
  const { createClient } = loaded as { createClient: NodeRedisFactory };
  return request.urls.map((url) => openOne(createClient, url as string, request));
}

function openOne(createClient: NodeRedisFactory, url: string, request: OwnedRequest): OwnedConnection {
  let client: NodeRedisOwned;
  try {
    client = createClient({ url });
  } catch (error) {
    throw new LockUsageError(
      `node-redis refused the URL (${error instanceof Error ? error.message : describeValue(error)}).`,
      { cause: error },
    );
  }
  const outage = request.outages();
  // node-redis throws an 'error' nobody listens to; it retries by itself (its reconnectStrategy).
  client.on('error', (error: Error) => outage.down(error.message));
  client.on('ready', () => outage.back());
  const drop = (): void => {
    try {
      if (client.destroy) client.destroy();
      else client.disconnect?.().catch(() => {});
    } catch {
      // Already closed.
    }
  };
  return {
    client,
    connect: () => {
      // Redis being down at start-up must not stop the application: node-redis keeps trying.
      if (!client.isOpen) client.connect().catch(() => {});
    },
    async close() {
      if (!client.isOpen) return;
      const end = new Promise<void>((resolve) => client.once('end', resolve));
      const closing = client.close ? client.close() : client.quit?.();
      Promise.resolve(closing).catch(drop);
      await settled(end, QUIT_TIMEOUT);
      drop();
      await settled(end, DISCONNECT_TIMEOUT);
    },
    drop,
  };
}
