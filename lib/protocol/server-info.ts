/**
 * What a Redis server says about itself that the lock's guarantees depend on, read with INFO alone
 * (managed services often refuse CONFIG): the memory limit and eviction policy, persistence, and the
 * server's place in replication. `risksOf` turns those facts into the warnings a user must see:
 * docs/guarantees.md, "Eviction, persistence and replicas", says what each means and what to configure.
 */
import type { RedisConnection } from './connection';
import { isReplyError, replyWithin } from './redis-errors';
import { OFFLINE } from './script-runner';

/** The facts INFO gives about one server, as far as locks care. */
export interface ServerFacts {
  /** `host:port` (or the socket path) the client connects to. */
  server: string;
  /** `master` or `replica`. */
  role: 'master' | 'replica';
  /** For a replica: `host:port` of its master. */
  master?: string;
  /** Replicas connected to this master. */
  connectedReplicas: number;
  /** `maxmemory` in bytes; 0: no limit (nothing is ever evicted). */
  maxmemory: number;
  /** `maxmemory-policy`, e.g. `noeviction`, `volatile-lru`, `allkeys-lru`. */
  maxmemoryPolicy: string;
  /** Keys evicted since the server started (INFO stats). */
  evictedKeys: number;
  /** The append-only file is on: locks survive a restart (up to its fsync policy). */
  aof: boolean;
  /** RDB snapshots written since start (INFO does not show the snapshot schedule itself). */
  rdbSaves: number;
}

/**
 * Kinds of risk. `eviction`: `maxmemory` with an evicting policy (every lock key has a TTL, so
 * `volatile-*` policies evict them as readily as `allkeys-*`). `no-persistence`: no AOF, so a restart
 * frees every lock. `replica`: the connection goes to a replica, not the lock's master.
 * `async-replication`: a master with replicas, which a failover can promote without the latest grants
 * (not reported when the `replicas` option has each grant acknowledged). `replicas-missing`: the
 * `replicas` option asks for more replicas than the master has connected, so every grant is refused.
 * `unknown`: INFO could not be read, so none of this could be checked.
 */
export type ServerRiskCode =
  | 'eviction'
  | 'no-persistence'
  | 'replica'
  | 'async-replication'
  | 'replicas-missing'
  | 'unknown';

/** One risk on one server, with the sentence a log line shows. */
export interface ServerRisk {
  code: ServerRiskCode;
  /** `host:port` of the server it is about. */
  server: string;
  message: string;
}

/**
 * What the checks found on one server: its facts (unless INFO failed) and its risks (none when safe).
 * `unreachable`: the connection is down, so nothing was asked (the next 'ready' checks it).
 * A refused INFO is the one failure reported as a risk (`unknown`).
 */
export interface ServerReport {
  server: string;
  facts?: ServerFacts;
  risks: ServerRisk[];
  unreachable?: true;
  /** Why INFO gave no facts (refused, timed out, connection lost). */
  error?: string;
}

/** Longest wait for one INFO reply, ms, unless the caller bounds it. */
const DEFAULT_INFO_TIMEOUT = 5_000;

/** Reads and checks one server; never rejects (a failure is reported as an `unknown` risk). */
export async function checkServer(
  connection: RedisConnection,
  {
    timeout = DEFAULT_INFO_TIMEOUT,
    quorum = false,
    replicas,
  }: { timeout?: number; quorum?: boolean; replicas?: number } = {},
): Promise<ServerReport> {
  const server = connection.name;
  // A down connection would only park INFO in the offline queue. `idle` is not down: a Cluster opens its
  // node connections lazily, on their first command.
  if (OFFLINE.has(connection.state)) return { server, risks: [], unreachable: true };
  try {
    const text = await replyWithin(connection.command(['INFO']), timeout, 'INFO');
    const facts = parseInfo(server, String(text));
    return { server, facts, risks: risksOf(facts, quorum, replicas) };
  } catch (error) {
    const why = (error instanceof Error ? error.message : String(error)).slice(0, 200);
    // Only a refusal (an error reply: ACL, a renamed command) is a risk worth a warning; a timeout or a
    // dropped connection says nothing about the settings, and the next check asks again.
    if (!isReplyError(error)) return { server, risks: [], error: why };
    const message =
      `Redis ${server}: INFO was refused (${why}), so whether it can evict or lose locks is unknown. ` +
      'Allow INFO for the lock connection (ACL +info) to have it checked.';
    return { server, risks: [{ code: 'unknown', server, message }], error: why };
  }
}

/** The fields of an INFO reply (`name:value` lines; `#` sections and blank lines skipped). */
function fields(text: string): Map<string, string> {
  const map = new Map<string, string>();
  for (const line of text.split(/\r?\n/)) {
    const colon = line.indexOf(':');
    if (colon > 0 && !line.startsWith('#')) map.set(line.slice(0, colon), line.slice(colon + 1).trim());
  }
  return map;
}

export function parseInfo(server: string, text: string): ServerFacts {
  const f = fields(text);
  const number = (name: string): number => {
    const value = Number(f.get(name));
    return Number.isFinite(value) ? value : 0;
  };
  const replica = f.get('role') === 'slave';
  return {
    server,
    role: replica ? 'replica' : 'master',
    ...(replica ? { master: `${f.get('master_host') ?? '?'}:${f.get('master_port') ?? '?'}` } : {}),
    connectedReplicas: number('connected_slaves'),
    maxmemory: number('maxmemory'),
    maxmemoryPolicy: f.get('maxmemory_policy') ?? 'noeviction',
    evictedKeys: number('evicted_keys'),
    aof: f.get('aof_enabled') === '1',
    rdbSaves: number('rdb_saves'),
  };
}

/** `5mb`-style sizes in messages, as redis.conf writes them. */
function bytes(n: number): string {
  if (n >= 1024 ** 3 && n % 1024 ** 3 === 0) return `${n / 1024 ** 3}gb`;
  if (n >= 1024 ** 2 && n % 1024 ** 2 === 0) return `${n / 1024 ** 2}mb`;
  if (n >= 1024 && n % 1024 === 0) return `${n / 1024}kb`;
  return `${n} bytes`;
}

/**
 * The risks of one server's settings; none for a safe one (no eviction, AOF on, a master without
 * replicas). `quorum`: the server is one of a Redlock quorum's masters, where a restart without
 * persistence is safe if delayed (docs/guarantees.md), so the advice differs. `replicas`: the count the
 * `replicas` option asks to acknowledge each grant, if set.
 */
export function risksOf(facts: ServerFacts, quorum = false, replicas?: number): ServerRisk[] {
  const { server } = facts;
  const risks: ServerRisk[] = [];
  const add = (code: ServerRiskCode, message: string): void => {
    risks.push({ code, server, message: `Redis ${server}: ${message}` });
  };
  if (facts.maxmemory > 0 && facts.maxmemoryPolicy !== 'noeviction') {
    add(
      'eviction',
      `maxmemory ${bytes(facts.maxmemory)} with maxmemory-policy ${facts.maxmemoryPolicy} can evict lock ` +
        'keys (every lock key has a TTL, so volatile-* policies evict them too): a second caller then gets a ' +
        'lock while its holder still works, which learns it only at its next renewal. Set maxmemory-policy ' +
        'noeviction, or keep locks on a Redis of their own.',
    );
  }
  if (facts.role === 'replica') {
    add(
      'replica',
      `is a replica of ${facts.master}: locks must be written on their master. Connect to the master ` +
        '(with Sentinel, give the client the sentinels and the master name).',
    );
  } else if (replicas !== undefined) {
    if (facts.connectedReplicas < replicas) {
      add(
        'replicas-missing',
        `has ${facts.connectedReplicas} connected replica(s) but replicas.count is ${replicas}: no grant can ` +
          'be acknowledged, so each one waits replicas.timeout and is refused (LockNotReplicatedError). ' +
          'Bring the replicas back, or lower replicas.count.',
      );
    }
  } else if (facts.connectedReplicas > 0) {
    add(
      'async-replication',
      `replicates to ${facts.connectedReplicas} replica(s) asynchronously: a failover can promote a replica ` +
        'that missed the latest grants, and a second caller then gets a lock its holder still has. Set the ' +
        'replicas option ({ count: 1, timeout: 50 }) to have each grant acknowledged by a replica first.',
    );
  }
  if (!facts.aof) {
    add(
      'no-persistence',
      'has no append-only file (appendonly no): a restart loses every lock granted since the last RDB ' +
        'snapshot, if snapshots are taken at all, and a second caller gets a lock its holder still has. ' +
        (quorum
          ? 'In a quorum, restart a crashed node only after the longest ttl, or set appendonly yes.'
          : 'Set appendonly yes (appendfsync always to lose nothing), or restart Redis only after the longest ttl.'),
    );
  }
  return risks;
}
