/** What `inspect` reports, from a store's snapshot of one lock. */
import type { LockInfo } from '../lease';
import type { LockSnapshot } from '../store/lock-store';
import { isReaderToken } from '../store/token';

export function lockInfo(key: string, snapshot: LockSnapshot): LockInfo {
  const { owner, ownerTtl, fence, readWrite = false } = snapshot;
  const ttl = Math.max(0, ownerTtl);
  const permits = snapshot.permits ?? 1;
  const modeOf = (token: string): 'read' | 'write' => (isReaderToken(token) ? 'read' : 'write');
  // A mutex's one holder is its owner, under the last fence handed out (a follower's, during a run of
  // local hand-offs: see docs/protocol.md).
  const holders = (snapshot.holders ?? (owner === null ? [] : [{ token: owner, ttl, fence }])).map((h) =>
    readWrite ? { ...h, mode: modeOf(h.token) } : h,
  );
  const info: LockInfo = {
    key,
    kind: readWrite ? 'read-write' : permits === 1 ? 'mutex' : 'semaphore',
    held: owner !== null,
    holder: owner,
    ttl,
    queueLength: snapshot.queueLength,
    reserved: snapshot.reserved,
    fence,
    permits,
    holders,
    waiting: snapshot.waiting?.map((token) => (readWrite ? { token, mode: modeOf(token) } : { token })),
  };
  if (readWrite) info.mode = holders.length === 0 ? null : modeOf(holders[0].token);
  return info;
}
