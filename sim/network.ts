/**
 * The simulated network: each direction of each connection is a pipe that delivers in order (TCP), each
 * message after a latency the seed draws. Runs differ in their latencies, so they differ in the order in
 * which the messages of different connections reach a server or a service.
 */
import type { Actor, Rng, Scheduler } from './scheduler';

/** How slow a run's network is: a base latency, its jitter, and rare stalls of a message. */
export interface NetworkProfile {
  baseUs: number;
  jitterUs: number;
  /** Chance that one message is held back by a stall. */
  stallChance: number;
  stallUs: number;
}

export function drawProfile(rng: Rng): NetworkProfile {
  return {
    baseUs: rng.int(20, 400),
    jitterUs: rng.int(0, 2_000),
    stallChance: rng.pick([0, 0.002, 0.02]),
    stallUs: rng.int(5_000, 150_000),
  };
}

export class Network {
  constructor(
    readonly scheduler: Scheduler,
    private readonly rng: Rng,
    private readonly profile: NetworkProfile,
  ) {}

  /** One message's latency, µs. */
  latency(): number {
    const { baseUs, jitterUs, stallChance, stallUs } = this.profile;
    let us = baseUs + this.rng.int(0, jitterUs);
    if (stallChance > 0 && this.rng.chance(stallChance)) us += this.rng.int(1, stallUs);
    return us;
  }

  pipe(to: Actor): Pipe {
    return new Pipe(this, to);
  }
}

/** One direction of one connection: messages arrive in the order sent, each at least 1 µs after the last. */
export class Pipe {
  private last = 0;

  constructor(
    private readonly network: Network,
    readonly to: Actor,
  ) {}

  send(deliver: () => void): void {
    const { scheduler } = this.network;
    const at = Math.max(this.last + 1, scheduler.now + this.network.latency());
    this.last = at;
    scheduler.at(at, this.to, deliver);
  }
}
