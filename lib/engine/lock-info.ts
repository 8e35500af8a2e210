/** What `inspect` reports, from a store's snapshot of one lock. */
import type { LockInfo } from '../lease';
import type { LockSnapshot } from '../store/lock-store';
import { isReaderToken } from '../store/token';

/** A fence further than this from the store's clock is a counter, not the time of a grant. */
const FENCE_AS_TIME = 365 * 86_400_000;

/** How long ago the grant of `fence` was, ms, when fences are the store's µs at their grant. */
function heldFor(fence: number, serverMs: number | undefined): number | undefined {
  if (serverMs === undefined || serverMs <= 0) return undefined;
  const elapsed = serverMs - fence / 1000;
  return elapsed > -60_000 && elapsed < FENCE_AS_TIME ? Math.max(0, Math.round(elapsed)) : undefined;
}

export function lockInfo(key: string, snapshot: LockSnapshot): LockInfo {
  const { owner, ownerTtl, fence, readWrite = false } = snapshot;
  const ttl = Math.max(0, ownerTtl);
  const permits = snapshot.permits ?? 1;
  const modeOf = (token: string): 'read' | 'write' => (isReaderToken(token) ? 'read' : 'write');
  // A mutex's one holder is its owner, under the last fence handed out (a follower's, during a run of
  // local hand-offs: see docs/protocol.md).
  const holders = (snapshot.holders ?? (owner === null ? [] : [{ token: owner, ttl, fence }])).map((h) => {
    const heldMs = heldFor(h.fence, snapshot.serverMs);
    return {
      ...h,
      ...(readWrite ? { mode: modeOf(h.token) } : {}),
      ...(heldMs !== undefined ? { heldMs } : {}),
    };
  });
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
  if (snapshot.serverMs) info.serverTime = snapshot.serverMs;
  if (snapshot.nodes) {
    info.nodes = snapshot.nodes.map((n) =>
      'error' in n
        ? n
        : {
            node: n.node,
            holder: n.owner,
            ttl: Math.max(0, n.ownerTtl),
            queueLength: n.queueLength,
            fence: n.fence,
          },
    );
  }
  if (readWrite) info.mode = holders.length === 0 ? null : modeOf(holders[0].token);
  return info;
}
