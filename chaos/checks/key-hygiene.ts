/**
 * Keys without a TTL: every key the lock left on its servers must expire, and so must every resource
 * key but the workloads' own values (kept on purpose, to be read after the run).
 */
import { type CheckResult, Findings } from './check';

/** The keys left on the servers at the end of a run, each with its TTL in seconds (-1: none). */
export interface KeySnapshot {
  lock: ReadonlyArray<{ key: string; ttl: number }>;
  resource: ReadonlyArray<{ key: string; ttl: number }>;
  /** Resource key prefixes the workloads keep on purpose. */
  keptPrefixes: readonly string[];
}

export function checkKeyHygiene(snapshot: KeySnapshot): CheckResult<Record<string, unknown>> {
  const found = new Findings();
  const lockKeys = snapshot.lock.map(({ key }) => key);
  const noTtl = snapshot.lock.filter(({ ttl }) => ttl === -1).map(({ key }) => key);
  if (noTtl.length > 0) found.add('key hygiene: lock keys without a TTL', noTtl);
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
      lockKeyKinds: {
        owner: lockKeys.filter((k) => /^lock:\{[^}]*\}$/.test(k)).length,
        queue: lockKeys.filter((k) => k.endsWith(':q')).length,
        fence: lockKeys.filter((k) => k.endsWith(':fence')).length,
      },
      resourceKeysPersistentOnPurpose: persistentOnPurpose.length,
      resourceKeysWithoutTtl: otherNoTtl,
    },
    violations: found.violations,
  };
}
