/**
 * One master of a quorum (Redlock): the quorum scripts on its client, each call bounded by the node
 * timeout, which is kept well below any ttl so that one slow node costs a grant little of its validity.
 * Each node keeps a line of waiters, ordered by the arrival time each caller sends to every node alike,
 * and hands the lock to the first of them on release (lib/store/quorum-store.ts).
 */

import type { RedisConnection } from './connection';
import type { RedisKeys } from './keys';
import { extendOutcome } from './lock-scripts';
import {
  extendLua,
  quorumCommitLua,
  quorumInspectLua,
  quorumReleaseLua,
  quorumRestoreLua,
  quorumVoteLua,
} from './lua/scripts.generated';
import type { ExtendOutcome, LockSnapshot } from './replies';
import { ReplyPace } from './reply-pace';
import { CONNECTING, ScriptRunner, type ScriptSource } from './script-runner';

type QuorumScript = 'vote' | 'commit' | 'release' | 'extend' | 'restore' | 'inspect';

const SOURCES: Record<QuorumScript, ScriptSource> = {
  vote: { lua: quorumVoteLua, keys: 5 },
  commit: { lua: quorumCommitLua, keys: 4 },
  release: { lua: quorumReleaseLua, keys: 5 },
  extend: { lua: extendLua, keys: 1 },
  restore: { lua: quorumRestoreLua, keys: 1 },
  inspect: { lua: quorumInspectLua, keys: 3 },
};

/** The waiters of a lock on one node (a sorted set, scored by when each entry expires). */
const waitersKey = (keys: RedisKeys): string => `${keys.owner}:w`;
/** The same waiters in line (a sorted set, scored by the arrival each caller sent). */
const lineKey = (keys: RedisKeys): string => `${keys.owner}:l`;
/** The caller a release here last handed the lock to, for that hand-off's claim window. */
const handedKey = (keys: RedisKeys): string => `${keys.owner}:h`;

/** A node's vote: granted with a fence floor, or refused because `owner` holds the lock here for `pttl`
 * more ms (`first`: the caller is first in this node's line); `serverUs`: the node's clock, µs. */
export type Vote = { serverUs: number } & (
  | { voted: true; floor: number }
  | { voted: false; pttl: number; owner: string; first: boolean }
);

export class QuorumNode {
  readonly name: string;
  private readonly runner: ScriptRunner<QuorumScript>;

  /** `timeout`: the least a reply is waited for; longer while this node's replies are slower, up to `cap`. */
  constructor(
    readonly connection: RedisConnection,
    timeout: number,
    cap = timeout,
  ) {
    this.name = connection.name;
    this.runner = new ScriptRunner(connection, timeout, SOURCES, new ReplyPace(timeout, cap));
  }

  /**
   * Resolves once this node's connection is ready, has failed, or `limitMs` have passed, whichever comes
   * first (at once if it is not connecting): a node's time limit is for answering, so a call made while
   * the connections of a new service are still opening waits for them first.
   */
  connected(limitMs: number): Promise<void> {
    if (!CONNECTING.has(this.connection.state)) return Promise.resolve();
    let timer: NodeJS.Timeout | undefined;
    const limit = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, limitMs);
    });
    // A failed attempt settles it too: the call that follows then fails fast, naming the node.
    const attempt = this.runner.whenConnected().catch(() => {});
    return Promise.race([attempt, limit]).finally(() => clearTimeout(timer));
  }

  /**
   * `waitFor`: how long to keep the caller in line if the lock is busy here (0: a try, not put in line);
   * `arrival`: when the caller started waiting, the same for every node (orders the line).
   */
  async vote(keys: RedisKeys, token: string, ttl: number, waitFor: number, arrival: number): Promise<Vote> {
    const args = [
      ...[keys.owner, keys.fence, waitersKey(keys), lineKey(keys), handedKey(keys)],
      ...[token, ttl, waitFor, arrival],
    ];
    const reply = (await this.runner.run('vote', keys.lock, args)) as [number, number, ...unknown[]];
    if (reply[0] === 1) return { voted: true, floor: reply[1], serverUs: Number(reply[2]) };
    const [, pttl, owner, first, serverUs] = reply as [number, number, string, number, number];
    return { voted: false, pttl, owner, first: first === 1, serverUs };
  }

  /** Records `fence` and renews the hold to `ttl` if the caller holds the lock here (voted, or handed). */
  async commit(
    keys: RedisKeys,
    token: string,
    fence: number,
    retention: number,
    ttl: number,
  ): Promise<boolean> {
    const args = [
      ...[keys.owner, keys.fence, waitersKey(keys), lineKey(keys)],
      ...[token, String(fence), retention, ttl],
    ];
    return (await this.runner.run('commit', keys.lock, args)) === 1;
  }

  /**
   * `leaving`: the caller no longer waits, and the node hands the lock to the first in its line, told on
   * `channelPrefix` + its service's id (the message: "<token> <next fence>", the next fence being
   * `fence` + 1 unless the node knows a higher one); else it gives back the vote of a failed attempt and
   * waits on. `retention`: how long the next fence is kept.
   */
  async release(
    keys: RedisKeys,
    token: string,
    channelPrefix: string,
    leaving: boolean,
    fence: number,
    retention: number,
  ): Promise<boolean> {
    const args = [
      ...[keys.owner, waitersKey(keys), lineKey(keys), keys.fence, handedKey(keys)],
      ...[token, channelPrefix, leaving ? '1' : '0', String(fence), retention],
    ];
    return (await this.runner.run('release', keys.lock, args)) === 1;
  }

  /** Resets the lock's expiry here to `ttl` if the caller holds it (renewal, or a shortened hold). */
  async extend(keys: RedisKeys, token: string, ttl: number): Promise<ExtendOutcome> {
    return extendOutcome(await this.runner.run('extend', keys.lock, [keys.owner, token, ttl]));
  }

  /** Puts the holder's key back where it is missing (quorum-restore.lua); true if it was. */
  async restore(keys: RedisKeys, token: string, ttl: number): Promise<boolean> {
    return (await this.runner.run('restore', keys.lock, [keys.owner, token, ttl])) === 1;
  }

  async inspect(keys: RedisKeys): Promise<LockSnapshot> {
    const [owner, ownerTtl, waiting, fence, serverMs] = (await this.runner.run('inspect', keys.lock, [
      keys.owner,
      keys.fence,
      waitersKey(keys),
    ])) as [string | null, number, number, number, number];
    return { owner: owner ?? null, ownerTtl, queueLength: waiting, reserved: 0, fence, serverMs };
  }
}
