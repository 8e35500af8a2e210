/**
 * One master of a quorum (Redlock): the quorum scripts on its client, each call bounded by the node
 * timeout, which is kept well below any ttl so that one slow node costs a grant little of its validity.
 * A node has no queue: waiters are woken by the PUBLISH of a release, and otherwise re-check when the
 * hold would run out (lib/store/quorum-store.ts).
 */
import type { LockSnapshot } from '../store/lock-store';
import type { LockKeys } from './keys';
import type { RedisClient } from './lock-scripts';
import {
  extendLua,
  quorumCommitLua,
  quorumInspectLua,
  quorumReleaseLua,
  quorumVoteLua,
} from './lua/scripts.generated';
import { ScriptRunner, type ScriptSource } from './script-runner';

type QuorumScript = 'vote' | 'commit' | 'release' | 'extend' | 'inspect';

const SOURCES: Record<QuorumScript, ScriptSource> = {
  vote: { lua: quorumVoteLua, keys: 3 },
  commit: { lua: quorumCommitLua, keys: 3 },
  release: { lua: quorumReleaseLua, keys: 2 },
  extend: { lua: extendLua, keys: 1 },
  inspect: { lua: quorumInspectLua, keys: 3 },
};

/** The waiters of a lock on one node (a sorted set, scored by when each entry expires). */
const waitersKey = (keys: LockKeys): string => `${keys.owner}:w`;

export type Vote = { voted: true; floor: number } | { voted: false; pttl: number };

/** `host:port` of an ioredis client, as its options name it. */
export function nodeName(client: RedisClient): string {
  const options = (client as { options?: { host?: string; port?: number; path?: string } }).options;
  if (options?.path) return options.path;
  return `${options?.host ?? 'localhost'}:${options?.port ?? 6379}`;
}

export class QuorumNode {
  readonly name: string;
  private readonly runner: ScriptRunner<QuorumScript>;

  constructor(
    readonly client: RedisClient,
    timeout: number,
  ) {
    this.name = nodeName(client);
    this.runner = new ScriptRunner(client, timeout, SOURCES);
  }

  /** `waitFor`: how long to record the caller among the waiters if the lock is busy here (0: a try). */
  async vote(keys: LockKeys, token: string, ttl: number, waitFor: number): Promise<Vote> {
    const args = [keys.owner, keys.fence, waitersKey(keys), token, ttl, waitFor];
    const [voted, value] = (await this.runner.run('vote', keys.owner, args)) as [number, number];
    return voted === 1 ? { voted: true, floor: value } : { voted: false, pttl: value };
  }

  async commit(keys: LockKeys, token: string, fence: number, retention: number): Promise<boolean> {
    const args = [keys.owner, keys.fence, waitersKey(keys), token, String(fence), retention];
    return (await this.runner.run('commit', keys.owner, args)) === 1;
  }

  /** `leaving`: the caller no longer waits (else it gives back the votes of a failed attempt). */
  async release(
    keys: LockKeys,
    token: string,
    channel: string,
    key: string,
    leaving: boolean,
  ): Promise<boolean> {
    const args = [keys.owner, waitersKey(keys), token, channel, key, leaving ? '1' : '0'];
    return (await this.runner.run('release', keys.owner, args)) === 1;
  }

  /** Resets the lock's expiry here to `ttl` if the caller holds it (renewal, or a shortened hold). */
  async extend(keys: LockKeys, token: string, ttl: number): Promise<boolean> {
    return (await this.runner.run('extend', keys.owner, [keys.owner, token, ttl])) === 1;
  }

  async inspect(keys: LockKeys): Promise<LockSnapshot> {
    const [owner, ownerTtl, waiting, fence] = (await this.runner.run('inspect', keys.owner, [
      keys.owner,
      keys.fence,
      waitersKey(keys),
    ])) as [string | null, number, number, number];
    return { owner: owner ?? null, ownerTtl, queueLength: waiting, reserved: 0, fence };
  }
}
