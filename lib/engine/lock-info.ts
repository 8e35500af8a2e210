/** What `inspect` reports, from a store's snapshot of one lock. */
import type { LockInfo } from '../lease';
import type { LockSnapshot } from '../store/lock-store';

export function lockInfo(key: string, snapshot: LockSnapshot): LockInfo {
  const { owner, ownerTtl, fence } = snapshot;
  const ttl = Math.max(0, ownerTtl);
  // A mutex's one holder is its owner, under the last fence handed out (a follower's, during a run of
  // local hand-offs: see docs/protocol.md).
  const holders = snapshot.holders ?? (owner === null ? [] : [{ token: owner, ttl, fence }]);
  return {
    key,
    held: owner !== null,
    holder: owner,
    ttl,
    queueLength: snapshot.queueLength,
    reserved: snapshot.reserved,
    fence,
    permits: snapshot.permits ?? 1,
    holders,
    waiting: snapshot.waiting,
  };
}
