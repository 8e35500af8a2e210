/**
 * The workloads of locks several callers hold at once. Semaphore agents take one of a few keys with
 * `permits` (up to that many holders at once); read-write agents take one of a few keys of their own
 * with `mode: 'read'` (shared with the other readers) or, now and then, `mode: 'write'` (alone). Either
 * way waiters are served in arrival order, and an agent holds the key for a short random time and
 * releases it. There is no resource write: what is judged is the holders themselves, from their
 * reports (the kind's bound, fences increasing in grant order, no waiter left behind:
 * checks/shared-*.ts, checks/hangs.ts). A share of the holders abandon their lease instead (taken with
 * `acquire`, no renewal, never released), as a process that lost track of it would: it ends only when
 * the lease expires, and the line must still be served.
 *
 * Reports, on the shared monotonic clock: `acq` (with the permits or the mode), `grant` (fence,
 * validity), `work` (the hold began: a GC pause can aim at it) and `end`.
 */
import type { Lease, LockMode, LockService } from '../../lib';
import { hr, type Prng, sleep } from '../common';
import type { SharedConfig } from '../config';
import type { EndMsg } from '../history';
import { failureOf, type LossFacts, validUntil, watchLoss } from './lease-facts';

/** What a call asks for: a semaphore's permits, or a read-write lock's mode. */
export type SharedKindOptions = { permits: number } | { mode: LockMode };

export interface SharedAgentHost {
  locks: LockService;
  config: SharedConfig;
  /** The kind of lock of the next call (a read-write agent draws its mode). */
  kind(rnd: Prng): SharedKindOptions;
  ttl: number;
  waitTimeout: number;
  workMs: [number, number];
  rnd: Prng;
  send(message: unknown): void;
  /** A new call id. */
  op(): string;
  /** The worker was asked to drain: finish the current call, take no other. */
  draining(): boolean;
}

type Ending = Omit<EndMsg, 't0' | 'tEnd'>;

export async function sharedAgent(host: SharedAgentHost): Promise<void> {
  const { config, rnd } = host;
  while (!host.draining()) {
    const key = rnd.pick(config.keys);
    const kind = host.kind(rnd);
    const op = host.op();
    const workMs = rnd.int(host.workMs[0], host.workMs[1]);
    const abandon = rnd.chance(config.abandon);
    const t0 = hr();
    host.send({ type: 'acq', op, key, t: t0, ...kind });
    const call: Call = { op, key, kind };
    const ending = abandon ? await abandonOne(host, call) : await holdOne(host, call, workMs);
    host.send({ type: 'end', op, key, t0, ...ending, tEnd: hr() });
    await sleep(rnd.int(0, 20));
  }
}

/** One call of an agent: its id, its key and the kind of lock it asks for. */
interface Call {
  op: string;
  key: string;
  kind: SharedKindOptions;
}

function reportGrant(host: SharedAgentHost, { op, key }: Call, lease: Lease, t: number): void {
  const { fence } = lease;
  host.send({ type: 'grant', op, key, fence, t, wall: Date.now(), validUntil: validUntil(lease) });
}

/** Take the key with `using` (renewed), hold it for `workMs`, give it back. */
async function holdOne(host: SharedAgentHost, call: Call, workMs: number): Promise<Ending> {
  const { op, key } = call;
  const rec: LossFacts & { tGrant?: number; tWorkEnd?: number; lease?: Lease } = {};
  try {
    await host.locks.using(
      key,
      async (lease) => {
        rec.tGrant = hr();
        rec.lease = lease;
        watchLoss(lease, rec, hr);
        reportGrant(host, call, lease, rec.tGrant);
        // Armed before the report, as the mutex agents do: a pause sent on the report lands in the hold.
        const work = sleep(workMs);
        host.send({ type: 'work', op, key, t: hr(), workMs, validUntil: validUntil(lease) });
        await work;
        rec.tWorkEnd = hr();
      },
      { ...call.kind, ttl: host.ttl, renew: true, waitTimeout: host.waitTimeout },
    );
    return { ...facts(rec), outcome: 'ok' };
  } catch (error) {
    const failure = failureOf(error);
    return { ...facts(rec), ...failure, lostCode: rec.lostCode ?? failure.lostCode };
  }
}

function facts(rec: LossFacts & { tGrant?: number; tWorkEnd?: number; lease?: Lease }): Partial<Ending> {
  const { tGrant, tWorkEnd, lostAt, lostReason, lostCode, lease } = rec;
  return { tGrant, tWorkEnd, lostAt, lostReason, lostCode, validUntilEnd: lease && validUntil(lease) };
}

/**
 * Take the key with `acquire` (not renewed) and walk away from it. The holder could use it until its
 * validity ends, so that is where its window ends (tWorkEnd): a permit handed on, or a write granted,
 * before then would be one holder too many. The service releases it at close if it is still held then.
 */
async function abandonOne(host: SharedAgentHost, call: Call): Promise<Ending> {
  try {
    const lease = await host.locks.acquire(call.key, {
      ...call.kind,
      ttl: host.ttl,
      renew: false,
      waitTimeout: host.waitTimeout,
    });
    // As `using` does before its work: a lease whose validity ran out on the way (a slow reply, a
    // stalled process) is no permit at all; its holder gives it back and counts as having lost it.
    if (lease.signal.aborted) {
      await lease.release().catch(() => {});
      return failureOf(lease.signal.reason);
    }
    const tGrant = hr();
    reportGrant(host, call, lease, tGrant);
    const valid = validUntil(lease);
    return { tGrant, tWorkEnd: valid ?? tGrant, validUntilEnd: valid, outcome: 'ok', abandoned: true };
  } catch (error) {
    return failureOf(error);
  }
}
