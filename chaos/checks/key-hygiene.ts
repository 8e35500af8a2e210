/**
 * Keys without a TTL: every key the lock left on its servers (every node of a quorum) must expire, and
 * so must every resource key but the workloads' own values (kept on purpose, to be read after the run).
 * The hash, holders set and line of a semaphore or a read-write lock (the same keys) must be gone
 * outright once the run has ended: they expire with the last hold and the newest waiter's wait, and the
 * snapshot is taken after both (`gone`).
 */
import { type CheckResult, Findings } from './check';

/** The keys left on the servers at the end of a run, each with its TTL in seconds (-1: none). */
export interface KeySnapshot {
  /** `node`: which lock server, when there are several. */
  lock: ReadonlyArray<{ key: string; ttl: number; node?: string }>;
  resource: ReadonlyArray<{ key: string; ttl: number }>;
  /** Resource key prefixes the workloads keep on purpose. */
  keptPrefixes: readonly string[];
  /** Lock keys that must no longer exist (a TTL of -2: expired between the listing and the PTTL). */
  gone?: readonly string[];
}

/**
 * How many keys of each kind: owner (a semaphore's or read-write lock's hash too), queue, a quorum's
 * waiters and line (per node), fence, a semaphore's or read-write lock's holders and line, and any other.
 */
function kindsOf(keys: readonly string[]): Record<string, number> {
  const kinds: Record<string, number> = {
    owner: 0,
    queue: 0,
    waiters: 0,
    fence: 0,
    holders: 0,
    line: 0,
    other: 0,
  };
  for (const key of keys) {
    if (/^lock:\{[^}]*\}$/.test(key)) kinds.owner++;
    else if (key.endsWith(':q')) kinds.queue++;
    else if (key.endsWith(':s')) kinds.holders++;
    else if (key.endsWith(':sq')) kinds.line++;
    else if (key.endsWith(':w') || key.endsWith(':l')) kinds.waiters++;
    else if (key.endsWith(':fence')) kinds.fence++;
    else kinds.other++;
  }
  return kinds;
}

export function checkKeyHygiene(snapshot: KeySnapshot): CheckResult<Record<string, unknown>> {
  const found = new Findings();
  const lockKeys = snapshot.lock.map(({ key }) => key);
  const noTtl = snapshot.lock
    .filter(({ ttl }) => ttl === -1)
    .map(({ key, node }) => (node === undefined ? key : `${node}: ${key}`));
  if (noTtl.length > 0) found.add('key hygiene: lock keys without a TTL', noTtl);
  const mustBeGone = new Set(snapshot.gone ?? []);
  const left = snapshot.lock
    .filter(({ key, ttl }) => mustBeGone.has(key) && ttl !== -2)
    .map(({ key, ttl, node }) => ({ key, ttl, node }));
  if (left.length > 0)
    found.add(
      "key hygiene: a semaphore's or read-write lock's keys still there after its last hold and wait ended",
      left,
    );
  const kept = (key: string): boolean => snapshot.keptPrefixes.some((prefix) => key.startsWith(prefix));
  const persistentOnPurpose = snapshot.resource.filter(({ key }) => kept(key));
  const otherNoTtl = snapshot.resource
    .filter(({ key, ttl }) => !kept(key) && ttl === -1)
    .map(({ key }) => key);
  if (otherNoTtl.length > 0) found.add('key hygiene: resource keys without a TTL', otherNoTtl);
  return {
    stats: {
      lockKeys: lockKeys.length,
      lockKeysWithoutTtl: noTtl,
      sharedKeysLeft: left.length,
      lockKeyKinds: kindsOf(lockKeys),
      resourceKeysPersistentOnPurpose: persistentOnPurpose.length,
      resourceKeysWithoutTtl: otherNoTtl,
    },
    violations: found.violations,
  };
}
