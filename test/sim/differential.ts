// Runs each call twice, on a real redis-server (through ioredis) and on a SimRedis whose clock is that
// server's TIME read just before the call, and records every difference: in the replies, in what was
// published, and in the keys left. The real server reads its clock a little later than that TIME, so
// readings of the clock (fences, server µs and ms, scores, a reservation's expiry) and time left (PTTLs,
// a hold in a head note) are compared within CLOCK_SLACK_MS; everything else exactly. Script calls come
// from the library's own classes (LockScripts, QuorumNode) through connection(), so the scripts and
// their arguments are built as the library builds them.
import type { Redis } from 'ioredis';
import type { RedisConnection, Script } from '../../lib/protocol/connection';
import { SimRedis } from '../../sim/redis/sim-redis';
import type { RedisServer } from '../support/redis-server';

/** How far apart the two servers' clocks may read, ms. */
export const CLOCK_SLACK_MS = 250;

/** Where a reply holds time left (ms), by index path: [1] is the reply's second item. */
export type TimeLeft = (path: readonly number[]) => boolean;

/** Time left in the scripts' replies (the rest is exact, or a clock reading, told by its size). */
const SCRIPT_TIME_LEFT: Record<string, TimeLeft> = {
  acquire: ([first, ...rest]) => first === 1 && rest.length === 0,
  semaphoreAcquire: ([first, ...rest]) => first === 1 && rest.length === 0,
  vote: ([first, ...rest]) => first === 1 && rest.length === 0,
  // The owner's PTTL at [1]; at [7] a semaphore's holders, in threes: token, ms left, fence.
  inspect: ([first, second, ...rest]) =>
    rest.length === 0 && ((first === 1 && second === undefined) || (first === 7 && second % 3 === 1)),
};

/** Time left in plain commands' replies. */
const COMMAND_TIME_LEFT: Record<string, TimeLeft> = { PTTL: () => true };

/** A number that is a reading of the clock: µs since 1970 (> 1e14) or ms (> 1e11). */
const slackOf = (value: number): number | undefined =>
  Math.abs(value) >= 1e14 ? CLOCK_SLACK_MS * 1000 : Math.abs(value) >= 1e11 ? CLOCK_SLACK_MS : undefined;

/** Where `real` and `simulated` differ, as "path: real vs simulated" lines. */
export function differences(
  real: unknown,
  simulated: unknown,
  timeLeft: TimeLeft = () => false,
  path: number[] = [],
): string[] {
  if (Object.is(real, simulated)) return [];
  const differ = [`[${path.join(',')}]: ${show(real)} vs ${show(simulated)}`];
  if (typeof real === 'number' && typeof simulated === 'number') {
    const slack = slackOf(real) ?? (timeLeft(path) && real >= 0 ? CLOCK_SLACK_MS : 0);
    return Math.abs(real - simulated) <= slack ? [] : differ;
  }
  if (typeof real === 'string' && typeof simulated === 'string')
    return sameText(real, simulated) ? [] : differ;
  if (real instanceof Error && simulated instanceof Error) {
    return real.name === simulated.name && sameText(real.message, simulated.message) ? [] : differ;
  }
  if (Array.isArray(real) && Array.isArray(simulated)) {
    if (real.length !== simulated.length) return differ;
    return real.flatMap((item, i) => differences(item, simulated[i], timeLeft, [...path, i]));
  }
  return real === simulated ? [] : differ;
}

/** Texts alike but for the clock readings in them (runs of 11 digits or more), within the slack. */
function sameText(real: string, simulated: string): boolean {
  const split = (text: string) => text.split(/(\d{11,})/);
  const [a, b] = [split(real), split(simulated)];
  if (a.length !== b.length) return false;
  return a.every((part, i) =>
    i % 2 === 0 ? part === b[i] : differences(Number(part), Number(b[i])).length === 0,
  );
}

const show = (value: unknown): string =>
  value instanceof Error ? `${value.name}(${value.message})` : JSON.stringify(value);

/** A message on a wake channel. */
interface Published {
  channel: string;
  message: string;
}

/** A head note ("h <token> <hold ms>") holds time left; any other message is compared as text. */
function sameMessage(real: Published, simulated: Published): boolean {
  if (real.channel !== simulated.channel) return false;
  const [r, s] = [real.message.split(' '), simulated.message.split(' ')];
  if (r[0] !== 'h' || s[0] !== 'h' || r.length !== 3 || s.length !== 3) {
    return sameText(real.message, simulated.message);
  }
  return r[1] === s[1] && differences(Number(r[2]), Number(s[2]), () => true, [0]).length === 0;
}

/** One key as both sides are compared: its type, its value (hash fields sorted), its PTTL. */
interface KeyState {
  key: string;
  type: string;
  value: unknown;
  ttl: number;
}

/** REDIS_VERSION_NUM of a version text: "7.0.15" -> 0x07000f. */
export function versionNumber(text: string): number {
  const [major, minor, patch] = text.split('.').map(Number);
  return (major << 16) | (minor << 8) | patch;
}

export class Differential {
  readonly sim: SimRedis;
  /** Every difference found so far, described; a test expects none. */
  readonly mismatches: string[] = [];
  /** PUBLISH calls the simulated server made (the real one counts its own: INFO commandstats). */
  simulatedPublishes = 0;
  private now = 0;
  private readonly listening = new Set<string>();
  /** The simulated server's text for a text the real one answered with (see call). */
  private readonly aliases = new Map<string, string>();
  private readonly published: { real: Published[]; simulated: Published[] } = { real: [], simulated: [] };

  private constructor(
    private readonly server: RedisServer,
    readonly real: Redis,
    private readonly subscriber: Redis,
    version: number,
  ) {
    this.sim = new SimRedis({
      clock: () => this.now,
      version,
      publish: (channel, message) => {
        this.simulatedPublishes++;
        // What the real server's subscriber receives: messages on the channels it listens to.
        if (!this.listening.has(channel)) return 0;
        this.published.simulated.push({ channel, message });
        return 1;
      },
      subscribers: (channel) => (this.listening.has(channel) ? 1 : 0),
    });
    subscriber.on('message', (channel: string, message: string) => {
      this.published.real.push({ channel, message });
    });
  }

  /** A differential run on `server`, the SimRedis reporting the same version. */
  static async open(server: RedisServer): Promise<Differential> {
    const real = server.client();
    const info = await real.info('server');
    const version = versionNumber(/redis_version:([\d.]+)/.exec(info)?.[1] ?? '7.0.0');
    return new Differential(server, real, server.client(), version);
  }

  /** Subscribes a client to `channel` on the real server; the simulated one counts it as listened to. */
  async listen(channel: string): Promise<void> {
    await this.subscriber.subscribe(channel);
    this.listening.add(channel);
  }

  /** Both servers empty, their counts and messages cleared; the subscriptions stay. */
  async reset(): Promise<void> {
    // A restart of the simulated server forgets its scripts too.
    await this.real.flushall();
    await this.real.script('FLUSH');
    await this.server.resetStats();
    this.sim.flushAll();
    this.simulatedPublishes = 0;
    this.published.real.length = 0;
    this.published.simulated.length = 0;
    this.mismatches.length = 0;
    this.aliases.clear();
  }

  /**
   * Runs `args` on both servers; returns (or throws) the real server's reply. A text the real server
   * answered with a clock reading in it (a reservation) reaches the simulated one as its own.
   */
  async call(args: readonly (string | number)[], timeLeft?: TimeLeft): Promise<unknown> {
    const [seconds, micros] = await this.real.time();
    this.now = Number(seconds) * 1e6 + Number(micros);
    const real = await settle(this.real.call(String(args[0]), ...args.slice(1)));
    const own = args.map((arg) => (typeof arg === 'string' ? (this.aliases.get(arg) ?? arg) : arg));
    const simulated = await settle(Promise.resolve().then(() => this.sim.call(own)));
    const lines = differences(real.value, simulated.value, timeLeft ?? COMMAND_TIME_LEFT[String(args[0])]);
    for (const line of lines) this.mismatches.push(`${args.slice(0, 2).join(' ')} ${line}`);
    this.alias(real.value, simulated.value);
    if (real.value instanceof Error) throw real.value;
    return real.value;
  }

  /** Records each text of `real` that differs from its counterpart in `simulated` (by clock readings only). */
  private alias(real: unknown, simulated: unknown): void {
    if (typeof real === 'string' && typeof simulated === 'string' && real !== simulated) {
      this.aliases.set(real, simulated);
    } else if (Array.isArray(real) && Array.isArray(simulated)) {
      for (const [i, item] of real.entries()) this.alias(item, simulated[i]);
    }
  }

  /** Runs a script as ioredis does (EVALSHA, then EVAL on NOSCRIPT) on both servers. */
  private async script(script: Script, args: readonly (string | number)[]): Promise<unknown> {
    const timeLeft = SCRIPT_TIME_LEFT[script.name];
    try {
      return await this.call(['EVALSHA', script.sha, script.keys, ...args], timeLeft);
    } catch (error) {
      if (!(error instanceof Error && error.message.startsWith('NOSCRIPT'))) throw error;
      return this.call(['EVAL', script.lua, script.keys, ...args], timeLeft);
    }
  }

  /** A connection for LockScripts or QuorumNode whose every script call runs on both servers. */
  connection(): RedisConnection {
    const refuse = (): never => {
      throw new Error('not used by the differential run');
    };
    return {
      client: this.real,
      library: 'ioredis',
      cluster: false,
      name: 'differential',
      state: 'ready',
      status: 'ready',
      attempt: async () => {},
      on: () => () => {},
      script: (script) => (args) => this.script(script, args),
      inOrder: refuse,
      command: (args) => this.call(args),
      masters: async () => [this.connection()],
      subscriber: refuse,
    };
  }

  /**
   * Compares what both servers published since the last check and the keys they hold now, recording
   * any difference; returns the mismatches found so far.
   */
  async check(): Promise<string[]> {
    // The subscriber's reply to PING comes after every message published before it.
    await this.subscriber.ping();
    const { real, simulated } = this.published;
    const count = Math.max(real.length, simulated.length);
    for (let i = 0; i < count; i++) {
      if (!real[i] || !simulated[i] || !sameMessage(real[i], simulated[i])) {
        this.mismatches.push(`published #${i}: ${show(real[i])} vs ${show(simulated[i])}`);
      }
    }
    real.length = 0;
    simulated.length = 0;
    const [realKeys, simKeys] = [await this.realKeys(), this.simKeys()];
    const names = (keys: KeyState[]) => keys.map(({ key }) => key);
    if (show(names(realKeys)) !== show(names(simKeys))) {
      this.mismatches.push(`keys: ${show(names(realKeys))} vs ${show(names(simKeys))}`);
    } else {
      realKeys.forEach((state, i) => {
        const other = simKeys[i];
        const lines = [
          ...(state.type === other.type ? [] : [`type ${state.type} vs ${other.type}`]),
          ...differences(state.value, other.value),
          ...differences(state.ttl, other.ttl, () => true, [0]).map((line) => `ttl ${line}`),
        ];
        for (const line of lines) this.mismatches.push(`key ${state.key}: ${line}`);
      });
    }
    return this.mismatches;
  }

  /** PUBLISH calls each server made since the last reset. */
  async publishCounts(): Promise<{ real: number; simulated: number }> {
    const stats = await this.server.commandStats();
    return { real: stats.get('publish') ?? 0, simulated: this.simulatedPublishes };
  }

  private async realKeys(): Promise<KeyState[]> {
    const keys = (await this.real.keys('*')).sort();
    return Promise.all(
      keys.map(async (key) => {
        const [type, ttl] = [await this.real.type(key), await this.real.pttl(key)];
        return { key, type, ttl, value: await this.realValue(key, type) };
      }),
    );
  }

  private async realValue(key: string, type: string): Promise<unknown> {
    if (type === 'string') return this.real.get(key);
    if (type === 'list') return this.real.lrange(key, 0, -1);
    if (type === 'hash')
      return Object.entries(await this.real.hgetall(key)).sort(([a], [b]) => (a < b ? -1 : 1));
    const flat = await this.real.zrange(key, 0, -1, 'WITHSCORES');
    const pairs: [string, number][] = [];
    const score = (text: string) => Number(text.replace(/^(-?)inf$/, '$1Infinity'));
    for (let i = 0; i < flat.length; i += 2) pairs.push([flat[i], score(flat[i + 1])]);
    return pairs;
  }

  private simKeys(): KeyState[] {
    return this.sim
      .snapshot()
      .map(({ key, type, value }) => ({ key, type, value, ttl: this.sim.ttlOf(key) }));
  }

  /** Ends both clients. */
  close(): void {
    this.real.disconnect();
    this.subscriber.disconnect();
  }
}

/** A promise's outcome, rejection included, as a value. */
async function settle(promise: Promise<unknown>): Promise<{ value: unknown }> {
  try {
    return { value: await promise };
  } catch (error) {
    return { value: error };
  }
}
