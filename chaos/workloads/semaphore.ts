/**
 * The semaphore workload: agents take one of a few keys with `permits` (up to that many holders at
 * once, waiters served in arrival order), hold it for a short random time and release it. There is no
 * resource write: what is judged is the holders themselves, from their reports (never more than
 * `permits` at once, fences increasing in grant order, no waiter left behind: checks/semaphore-*.ts,
 * checks/hangs.ts). A share of the holders abandon their lease instead (taken with `acquire`, no
 * renewal, never released), as a process that lost track of it would: its permit comes back only when
 * the lease expires, and the line must still be served.
 *
 * Reports, on the shared monotonic clock: `acq` (with the permits), `grant` (fence, validity), `work`
 * (the hold began: a GC pause can aim at it) and `end`.
 */
import type { Lease, LockService } from '../../lib';
import { hr, type Prng, sleep } from '../common';
import type { SemaphoreConfig } from '../config';
import type { EndMsg } from '../history';
import { failureOf, type LossFacts, validUntil, watchLoss } from './lease-facts';

export interface SemaphoreAgentHost {
  locks: LockService;
  config: SemaphoreConfig;
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

export async function semaphoreAgent(host: SemaphoreAgentHost): Promise<void> {
  const { config, rnd } = host;
  while (!host.draining()) {
    const key = rnd.pick(config.keys);
    const op = host.op();
    const workMs = rnd.int(host.workMs[0], host.workMs[1]);
    const abandon = rnd.chance(config.abandon);
    const t0 = hr();
    host.send({ type: 'acq', op, key, t: t0, permits: config.permits });
    const ending = abandon ? await abandonOne(host, op, key) : await holdOne(host, op, key, workMs);
    host.send({ type: 'end', op, key, t0, ...ending, tEnd: hr() });
    await sleep(rnd.int(0, 20));
  }
}

function reportGrant(host: SemaphoreAgentHost, op: string, key: string, lease: Lease, t: number): void {
  const { fence } = lease;
  host.send({ type: 'grant', op, key, fence, t, wall: Date.now(), validUntil: validUntil(lease) });
}

/** Take a permit with `using` (renewed), hold it for `workMs`, give it back. */
async function holdOne(host: SemaphoreAgentHost, op: string, key: string, workMs: number): Promise<Ending> {
  const rec: LossFacts & { tGrant?: number; tWorkEnd?: number; lease?: Lease } = {};
  try {
    await host.locks.using(
      key,
      async (lease) => {
        rec.tGrant = hr();
        rec.lease = lease;
        watchLoss(lease, rec, hr);
        reportGrant(host, op, key, lease, rec.tGrant);
        // Armed before the report, as the mutex agents do: a pause sent on the report lands in the hold.
        const work = sleep(workMs);
        host.send({ type: 'work', op, key, t: hr(), workMs, validUntil: validUntil(lease) });
        await work;
        rec.tWorkEnd = hr();
      },
      { permits: host.config.permits, ttl: host.ttl, renew: true, waitTimeout: host.waitTimeout },
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
 * Take a permit with `acquire` (not renewed) and walk away from it. The holder could use it until its
 * validity ends, so that is where its window ends (tWorkEnd): a permit handed on before then would be
 * one holder too many. The service releases it at close if it is still held then.
 */
async function abandonOne(host: SemaphoreAgentHost, op: string, key: string): Promise<Ending> {
  try {
    const lease = await host.locks.acquire(key, {
      permits: host.config.permits,
      ttl: host.ttl,
      renew: false,
      waitTimeout: host.waitTimeout,
    });
    const tGrant = hr();
    reportGrant(host, op, key, lease, tGrant);
    const valid = validUntil(lease);
    return { tGrant, tWorkEnd: valid ?? tGrant, validUntilEnd: valid, outcome: 'ok', abandoned: true };
  } catch (error) {
    return failureOf(error);
  }
}
