// A LockService in its own process, driven over IPC by a test: acquire, release, report. Used where a
// property is about several processes (a holder that is SIGKILLed, a waiter that is SIGSTOPped, ...).
import { type Lease, LockError, LockService } from '../../lib/core';
import { lockClient, lockClusterClient } from '../support/lock-clients';
import { onMessage, ready, send, workerArgs } from '../support/worker-runtime';

interface Args {
  /** One server; or `cluster`, the ports of a Redis Cluster's nodes on 127.0.0.1; or `urls`, the
   * masters of a quorum (Redlock). */
  url?: string;
  cluster?: number[];
  urls?: string[];
  claimWindow?: number;
  ttl?: number;
  /** Put before the random part of its tokens, so a test can tell them in `inspect`. */
  instanceName?: string;
}

type Command =
  | {
      type: 'acquire';
      id: string;
      /** One key, or several for one multi-key lease. */
      key: string | string[];
      ttl?: number;
      waitTimeout?: number;
      renew?: boolean;
      minHold?: number;
      permits?: number;
      mode?: 'read' | 'write';
      /** ms since the epoch. */
      deadline?: number;
    }
  | { type: 'release'; id: string };

const args = workerArgs<Args>();
// The run's client library (LOCK_TEST_CLIENT, inherited from the test).
const connect = (url: string) => lockClient(url).client;
const redis = args.urls
  ? args.urls.map(connect)
  : args.cluster
    ? lockClusterClient(args.cluster).client
    : connect(args.url ?? '');
const locks = new LockService(redis, {
  claimWindow: args.claimWindow,
  instanceName: args.instanceName,
  defaults: args.ttl === undefined ? undefined : { ttl: args.ttl },
});
const leases = new Map<string, Lease>();

onMessage(async (message: Command) => {
  if (message.type === 'acquire') {
    try {
      const lease = await locks.acquire(message.key, {
        ttl: message.ttl,
        waitTimeout: message.waitTimeout,
        renew: message.renew,
        minHold: message.minHold,
        permits: message.permits,
        mode: message.mode,
        deadline: message.deadline,
      });
      leases.set(message.id, lease);
      send({ type: 'granted', id: message.id, fence: lease.fence, fences: lease.fences, at: Date.now() });
      // A short lease may be lost by the time this runs (its ttl ran out on a busy machine): report that too.
      if (lease.signal.aborted) send({ type: 'lost', id: message.id });
      else lease.signal.addEventListener('abort', () => send({ type: 'lost', id: message.id }));
    } catch (error) {
      send({
        type: 'failed',
        id: message.id,
        code: error instanceof LockError ? error.code : String(error),
        // Whether the call's deadline, not its waitTimeout, ended the wait (LockTimeoutError.deadline).
        byDeadline: (error as { deadline?: unknown }).deadline !== undefined,
        at: Date.now(),
      });
    }
  } else if (message.type === 'release') {
    const lease = leases.get(message.id);
    leases.delete(message.id);
    await lease?.release();
    send({ type: 'released', id: message.id });
  }
});

// Its service's id, so a test can tell its tokens and its wake channel.
send({ type: 'instance', instance: locks.instance });
ready();
