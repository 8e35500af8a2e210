/**
 * A health check of the lock's Redis connection in the shape @nestjs/terminus (11 and 12) expects,
 * without depending on terminus: `{ [key]: { status: 'up' | 'down', responseTime?, message? } }`. It
 * never throws and never waits past its timeout: a health endpoint must answer while Redis does not.
 */
import { Inject, Injectable } from '@nestjs/common';
import { connectionOf, type RedisClient } from '../clients';
import { LockService } from '../lock.service';
import { describeValue } from '../options/describe-value';
import { MAX_MS } from '../options/option-checks';
import { replyWithin } from '../protocol/redis-errors';
import type { ServerFacts, ServerReport } from '../protocol/server-info';

/** The status of one check, as terminus reports it. */
export interface RedisLockHealthStatus {
  status: 'up' | 'down';
  /** Round trip of the PING, ms (when it answered). */
  responseTime?: number;
  /** Why it is down. */
  message?: string;
  /** 'memory' when the locks are kept in this process (a MemoryLockBackend): up while it runs. */
  store?: 'memory';
  /**
   * A quorum of independent masters (Redlock): each node's own check, by `host:port`. The quorum is up
   * while a majority of them answer.
   */
  nodes?: Record<string, RedisLockHealthStatus>;
  /**
   * What each server the locks live on says about eviction, persistence and replication (INFO), by
   * `host:port`: each master of a Cluster, each node of a quorum. Absent for locks in memory.
   */
  servers?: Record<string, ServerFacts | { unreachable: true } | { error: string }>;
  /**
   * The risks found on those servers, one sentence each (the same the application log shows once):
   * evictable lock keys, no persistence, replicas. The status stays `up`: the locks work, with weaker
   * guarantees (docs/guarantees.md, "Eviction, persistence and replicas").
   */
  warnings?: string[];
}

export type RedisLockHealthResult = Record<string, RedisLockHealthStatus>;

export interface RedisLockHealthOptions {
  /** Longest wait for the PING reply, ms. Default 1 000. */
  timeout?: number;
}

const DEFAULT_TIMEOUT = 1_000;
const DEFAULT_KEY = 'redis-lock';

@Injectable()
export class RedisLockHealthIndicator {
  constructor(@Inject(LockService) private readonly locks: LockService) {}

  /**
   * PINGs the lock's Redis. Resolves `down` (never rejects) when it is unreachable, slow or failing, and
   * also for bad arguments: a key that is not a non-empty string (reported under 'redis-lock') or a
   * timeout that is not a positive integer of ms up to 2^31-1.
   */
  async isHealthy(key = DEFAULT_KEY, options: RedisLockHealthOptions = {}): Promise<RedisLockHealthResult> {
    if (typeof key !== 'string' || key === '') {
      return {
        [DEFAULT_KEY]: {
          status: 'down',
          message: `invalid key ${describeValue(key)}: give a non-empty string such as '${DEFAULT_KEY}'`,
        },
      };
    }
    const down = (message: string): RedisLockHealthResult => ({ [key]: { status: 'down', message } });
    let timeout: unknown;
    try {
      if (options !== null && typeof options !== 'object') throw new TypeError('not an object');
      timeout = options?.timeout ?? DEFAULT_TIMEOUT;
    } catch {
      return down(`invalid options ${describeValue(options)}: give an object such as { timeout: 1000 }`);
    }
    if (typeof timeout !== 'number' || !Number.isInteger(timeout) || timeout <= 0 || timeout > MAX_MS) {
      return down(`invalid timeout ${describeValue(timeout)}: give a positive integer of ms up to ${MAX_MS}`);
    }
    const quorum = this.locks.quorumClients;
    const client = this.locks.redisClient;
    // An in-memory store is in this process: reachable whenever the process answers.
    if (!quorum && !client) return { [key]: { status: 'up', store: 'memory' } };
    // INFO beside the PINGs, within the same timeout: the health check answers no later for it.
    const servers = this.locks.checkServers({ timeout }).then(serverDetails);
    if (quorum) {
      const checks = await Promise.all(quorum.map((node) => ping(node, timeout)));
      const nodes = Object.fromEntries(quorum.map((node, i) => [connectionOf(node).name, checks[i]]));
      const up = checks.filter((check) => check.status === 'up').length;
      const majority = Math.floor(quorum.length / 2) + 1;
      const status: RedisLockHealthStatus =
        up >= majority
          ? { status: 'up', nodes }
          : {
              status: 'down',
              message: `${up} of ${quorum.length} nodes answered, a majority needs ${majority}`,
              nodes,
            };
      return { [key]: { ...status, ...(await servers) } };
    }
    const [status, details] = await Promise.all([ping(client as RedisClient, timeout), servers]);
    // A server that does not answer has no settings to report: `down` says all there is.
    return { [key]: status.status === 'up' ? { ...status, ...details } : status };
  }
}

/** The health result's `servers` and `warnings` from the servers' reports. */
function serverDetails(reports: ServerReport[]): Pick<RedisLockHealthStatus, 'servers' | 'warnings'> {
  const servers: NonNullable<RedisLockHealthStatus['servers']> = {};
  const warnings: string[] = [];
  for (const report of reports) {
    servers[report.server] =
      report.facts ?? (report.unreachable ? { unreachable: true } : { error: 'INFO failed' });
    for (const risk of report.risks) warnings.push(risk.message);
  }
  return warnings.length > 0 ? { servers, warnings } : { servers };
}

/** PINGs one connection within `timeout` ms; never rejects. */
async function ping(client: RedisClient, timeout: number): Promise<RedisLockHealthStatus> {
  const down = (message: string): RedisLockHealthStatus => ({ status: 'down', message });
  const connection = connectionOf(client);
  // A client that is not connected would park the PING in its offline queue: report at once.
  if (connection.state !== 'ready') return down(`Redis connection is ${connection.status}`);
  const started = performance.now();
  try {
    const reply = await replyWithin(connection.command(['PING']), timeout, 'PING');
    if (reply !== 'PONG') return down(`unexpected reply to PING: ${describeValue(reply)}`);
    return { status: 'up', responseTime: Math.round((performance.now() - started) * 100) / 100 };
  } catch (error) {
    return down(error instanceof Error ? error.message : describeValue(error));
  }
}
