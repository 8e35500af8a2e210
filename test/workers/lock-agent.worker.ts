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
  /**
   * Where this process stops itself (SIGSTOP; the test sends SIGCONT) the first time it is pushed a
   * grant, on one server with ioredis: `push`, as the push arrives, before the lock reads it; `confirm`,
   * after reading it and deciding to start, before the confirmation is sent; `confirmed`, right after the
   * confirmation is written to the socket.
   */
  stopAt?: 'push' | 'confirm' | 'confirmed';
  /** Blocks the event loop this long (ms) as the first grant pushed to it arrives, as a GC pause would. */
  blockOnGrantMs?: number;
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
if (args.stopAt || args.blockOnGrantMs) stallOnce(redis as unknown as Hookable);
const locks = new LockService(redis, {
  claimWindow: args.claimWindow,
  instanceName: args.instanceName,
  defaults: args.ttl === undefined ? undefined : { ttl: args.ttl },
});
const leases = new Map<string, Lease>();

/** What stallOnce hooks on an ioredis client: its commands, and the duplicate the lock listens on. */
interface Hookable {
  sendCommand(command: { name: string; args: unknown[] }, ...rest: unknown[]): unknown;
  duplicate(...args: unknown[]): { emit(event: string | symbol, ...params: unknown[]): boolean };
}

/**
 * Stalls this process once, at the point the arguments name, around the first grant pushed to it.
 */
function stallOnce(client: Hookable): void {
  let armed = true;
  const stop = () => {
    armed = false;
    process.kill(process.pid, 'SIGSTOP');
  };
  const send = client.sendCommand.bind(client);
  client.sendCommand = (command, ...rest) => {
    const keys = Number(command.args[1]);
    const confirming =
      armed &&
      /^eval(sha)?$/i.test(command.name) &&
      // A mutex's (extend.lua with the pending note: two keys), or a semaphore's (semaphore-extend.lua,
      // five keys, eight arguments, the last "1": it starts).
      (keys === 2 || (keys === 5 && command.args.length === 15 && String(command.args[14]) === '1'));
    if (confirming && args.stopAt === 'confirm') stop();
    const reply = send(command, ...rest);
    if (confirming && args.stopAt === 'confirmed') stop();
    return reply;
  };
  const duplicate = client.duplicate.bind(client);
  client.duplicate = (...options) => {
    const subscriber = duplicate(...options);
    const emit = subscriber.emit.bind(subscriber);
    subscriber.emit = (event, ...params) => {
      if (armed && event === 'message' && String(params[1]).startsWith('g ')) {
        if (args.stopAt === 'push') stop();
        else if (args.blockOnGrantMs) {
          armed = false;
          const until = performance.now() + args.blockOnGrantMs;
          while (performance.now() < until) {
            // The event loop is blocked, as in a long GC pause.
          }
        }
      }
      return emit(event, ...params);
    };
    return subscriber;
  };
}

/** What the agent reports to its test; each report sets the fields it carries. */
export interface AgentMessage {
  /** `ready`: sent by the worker runtime once the agent listens. */
  type: 'ready' | 'granted' | 'lost' | 'failed' | 'released' | 'instance';
  id?: string;
  fence?: number;
  fences?: Record<string, number>;
  /** When it was granted, or failed (Date.now()). */
  at?: number;
  /** Why a lease was lost (LockLostError's reason). */
  reason?: string;
  /** A failure's LockError code. */
  code?: string;
  /** Whether the call's deadline, not its waitTimeout, ended the wait (LockTimeoutError.deadline). */
  byDeadline?: boolean;
  instance?: string;
}
const report = (message: AgentMessage): void => send(message);

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
      report({ type: 'granted', id: message.id, fence: lease.fence, fences: lease.fences, at: Date.now() });
      // A short lease may be lost by the time this runs (its ttl ran out on a busy machine): report that too.
      const lost = () =>
        report({
          type: 'lost',
          id: message.id,
          reason: (lease.signal.reason as { reason?: string })?.reason,
        });
      if (lease.signal.aborted) lost();
      else lease.signal.addEventListener('abort', lost);
    } catch (error) {
      report({
        type: 'failed',
        id: message.id,
        code: error instanceof LockError ? error.code : String(error),
        byDeadline: (error as { deadline?: unknown }).deadline !== undefined,
        at: Date.now(),
      });
    }
  } else if (message.type === 'release') {
    const lease = leases.get(message.id);
    leases.delete(message.id);
    await lease?.release();
    report({ type: 'released', id: message.id });
  }
});

// Its service's id, so a test can tell its tokens and its wake channel.
report({ type: 'instance', instance: locks.instance });
ready();
