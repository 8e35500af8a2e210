/**
 * The locks several callers hold at once, and the bound each keeps, for the checks that judge them
 * (shared-holders.ts, shared-fences.ts, hangs.ts): a semaphore's holders never number more than its
 * permits; a read-write lock's writer holds its key alone, while readers share it with each other.
 * Both read as one rule: of the holders that count against a new one (`conflicts`), at most `limit`
 * may hold at once, the new one included.
 */
import type { OpRec } from '../history';

export type SharedKind = 'semaphore' | 'rw';
export const SHARED_KINDS: readonly SharedKind[] = ['semaphore', 'rw'];

/** How the checks name each kind in their violations. */
export const SHARED_LABEL: Record<SharedKind, string> = { semaphore: 'semaphore', rw: 'read-write' };

export interface SharedRule {
  label: string;
  /** What a violation of the bound is, as its check reads. */
  bound: string;
  /** What goes from one holder to the next, as a slow hand-off names it. */
  handoff: string;
  /** How many holders that conflict with each other may hold at once. */
  limit: number;
  /** Whether `a` and `b` holding at once count against the limit. */
  conflicts(a: OpRec, b: OpRec): boolean;
  /** What a violation's detail says of the key's kind. */
  detail: Record<string, unknown>;
}

const writes = (r: OpRec): boolean => r.mode === 'write';

/** The rule of `kind` for a key whose grants are `list` (a semaphore's permits are in every call). */
export function sharedRule(kind: SharedKind, list: readonly OpRec[]): SharedRule {
  if (kind === 'semaphore') {
    const permits = list[0].permits as number;
    return {
      label: SHARED_LABEL.semaphore,
      bound: `more than ${permits} holders of one key at once`,
      handoff: 'semaphore permit',
      limit: permits,
      conflicts: () => true,
      detail: { permits },
    };
  }
  return {
    label: SHARED_LABEL.rw,
    bound: 'a writer held its key beside another holder',
    handoff: 'read-write lock',
    limit: 1,
    conflicts: (a, b) => writes(a) || writes(b),
    detail: {},
  };
}
