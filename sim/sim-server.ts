/**
 * One simulated Redis server: the keyspace and scripts (SimRedis) on its own clock, its pub/sub
 * subscriptions, and the faults a server meets (a key evicted, a restart that lost everything).
 */
import { SimRedis } from './redis/sim-redis';
import type { Actor, Scheduler } from './scheduler';

/** A subscriber as the server sees it: pushes go to it on its connection. */
export interface PushTarget {
  push(channel: string, message: string): void;
}

export class SimServer {
  readonly redis: SimRedis;
  private readonly subscriptions = new Map<string, Set<PushTarget>>();
  /** Stopped (restarting): it runs nothing and its connections cannot connect. */
  down = false;
  /** Every command run, for the run's statistics. */
  commands = 0;
  /** The command the current step ran here, if it ran one (the invariants clear it after each step). */
  lastCommand: readonly (string | number)[] | undefined;
  /** Called with each command run and its outcome (the run's history). */
  onCommand: ((args: readonly (string | number)[], outcome: unknown) => void) | undefined;

  constructor(
    readonly name: string,
    readonly actor: Actor,
    private readonly scheduler: Scheduler,
  ) {
    this.redis = new SimRedis({
      clock: () => Math.floor(actor.clockAt(this.scheduler.now)),
      publish: (channel, message) => this.publish(channel, message),
      subscribers: (channel) => this.subscriptions.get(channel)?.size ?? 0,
    });
  }

  /** Runs one command: its reply, or the error Redis answered with. */
  execute(args: readonly (string | number)[]): { ok: true; value: unknown } | { ok: false; error: Error } {
    this.commands++;
    this.lastCommand = args;
    try {
      const value = this.redis.call(args);
      this.onCommand?.(args, value);
      return { ok: true, value };
    } catch (error) {
      this.onCommand?.(args, error);
      return { ok: false, error: error as Error };
    }
  }

  /**
   * Stops, losing every key, script and subscription (a restart without persistence); it answers again
   * `forUs` later. Its clients see their connections drop (the caller drops them).
   */
  restart(scheduler: Scheduler, forUs: number): void {
    this.down = true;
    this.redis.flushAll();
    this.subscriptions.clear();
    scheduler.after(forUs, this.actor, () => {
      this.down = false;
    });
  }

  subscribe(channel: string, target: PushTarget): void {
    let set = this.subscriptions.get(channel);
    if (!set) {
      set = new Set();
      this.subscriptions.set(channel, set);
    }
    set.add(target);
  }

  /** The connection of `target` closed: it hears nothing more. */
  unsubscribeAll(target: PushTarget): void {
    for (const [channel, set] of this.subscriptions) {
      set.delete(target);
      if (set.size === 0) this.subscriptions.delete(channel);
    }
  }

  /** How many connections the server counts on `channel`: what a script's PUBLISH would reach. */
  listeners(channel: string): number {
    return this.subscriptions.get(channel)?.size ?? 0;
  }

  private publish(channel: string, message: string): number {
    const set = this.subscriptions.get(channel);
    if (!set) return 0;
    for (const target of set) target.push(channel, message);
    return set.size;
  }
}
