/**
 * Commands on sorted sets: ZADD (NX, XX, GT, LT, CH, INCR), ZCARD, ZCOUNT, ZRANGE (by rank or BYSCORE,
 * REV, LIMIT, WITHSCORES), ZRANGEBYSCORE, ZRANK, ZREM, ZREMRANGEBYSCORE, ZSCORE. Scores are written as
 * this version of Redis writes doubles (number-text.ts). BYLEX ranges are not simulated.
 */
import { parseRedisDouble, REDIS_7_2, redisDoubleText } from '../number-text';
import { notFloat, type Reply, syntaxError, wrongArity } from '../replies';
import type { ScoreBound, Scored } from '../sorted-set';
import { type CommandTable, integerArg, refuse, type Server } from './command';

function zadd(server: Server, args: readonly string[]): Reply {
  const flags = new Set<string>();
  let at = 2;
  for (; at < args.length; at++) {
    const option = args[at].toUpperCase();
    if (!['NX', 'XX', 'CH', 'INCR', 'GT', 'LT'].includes(option)) break;
    flags.add(option);
  }
  const pairs = args.length - at;
  if (pairs === 0 || pairs % 2 !== 0) throw syntaxError();
  const has = (flag: string) => flags.has(flag);
  if (has('NX') && has('XX')) refuse('ERR XX and NX options at the same time are not compatible');
  if ((has('GT') || has('LT')) && (has('NX') || (has('GT') && has('LT')))) {
    refuse('ERR GT, LT, and/or NX options at the same time are not compatible');
  }
  if (has('INCR') && pairs > 2) refuse('ERR INCR option supports a single increment-element pair');
  const scores: number[] = [];
  for (let i = at; i < args.length; i += 2) scores.push(parseRedisDouble(args[i]) ?? throwNotFloat());
  const { keyspace } = server;
  const exists = keyspace.read(args[1], 'zset') !== undefined;
  if (!exists && has('XX')) return has('INCR') ? null : 0;
  const set = keyspace.write(args[1], 'zset');
  let added = 0;
  let changed = 0;
  let result: number | null = null;
  scores.forEach((given, i) => {
    const member = args[at + 2 * i + 1];
    const current = set.score(member);
    if (current === undefined) {
      if (has('XX')) return;
      set.add(member, given);
      added++;
      result = given;
      return;
    }
    if (has('NX')) return;
    const score = has('INCR') ? current + given : given;
    if (Number.isNaN(score)) refuse('ERR resulting score is not a number (NaN)');
    if ((has('GT') && score <= current) || (has('LT') && score >= current)) return;
    result = score;
    if (score !== current) {
      set.add(member, score);
      changed++;
    }
  });
  keyspace.dropIfEmpty(args[1]);
  if (has('INCR')) return result === null ? null : redisDoubleText(result, server.version);
  return has('CH') ? added + changed : added;
}

function throwNotFloat(): never {
  throw notFloat();
}

/** A range end as ZCOUNT and BYSCORE read it: a double, "(" for exclusive, "-inf" / "+inf". */
function bound(text: string): ScoreBound {
  const exclusive = text.startsWith('(');
  const score = parseRedisDouble(exclusive ? text.slice(1) : text);
  if (score === undefined) refuse('ERR min or max is not a float');
  return { score, exclusive };
}

/** Members, with their scores after each when `withScores`. */
function listed(server: Server, entries: readonly Scored[], withScores: boolean): string[] {
  if (!withScores) return entries.map(({ member }) => member);
  return entries.flatMap(({ member, score }) => [member, redisDoubleText(score, server.version)]);
}

interface RangeOptions {
  byScore: boolean;
  rev: boolean;
  withScores: boolean;
  limit?: { offset: number; count: number };
}

/** ZRANGE's options after its first four arguments; `byScoreCommand`: ZRANGEBYSCORE's (WITHSCORES, LIMIT). */
function rangeOptions(args: readonly string[], byScoreCommand: boolean): RangeOptions {
  const options: RangeOptions = { byScore: byScoreCommand, rev: false, withScores: false };
  for (let i = 4; i < args.length; i++) {
    const option = args[i].toUpperCase();
    if (option === 'WITHSCORES') options.withScores = true;
    else if (option === 'BYSCORE' && !byScoreCommand) options.byScore = true;
    else if (option === 'REV' && !byScoreCommand) options.rev = true;
    else if (option === 'LIMIT' && i + 2 < args.length) {
      options.limit = { offset: integerArg(args[i + 1]), count: integerArg(args[i + 2]) };
      i += 2;
    } else if (option === 'BYLEX' && !byScoreCommand) refuse('ERR BYLEX ranges are not simulated');
    else throw syntaxError();
  }
  if (options.limit && !options.byScore) {
    refuse('ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX');
  }
  return options;
}

/** ZRANGE and ZRANGEBYSCORE: `start`, `stop` are ranks, or scores (min, max; max, min with REV). */
function range(server: Server, key: string, start: string, stop: string, options: RangeOptions): string[] {
  let entries: readonly Scored[];
  if (options.byScore) {
    const [min, max] = options.rev ? [bound(stop), bound(start)] : [bound(start), bound(stop)];
    entries = server.keyspace.read(key, 'zset')?.inRange(min, max) ?? [];
    if (options.rev) entries = [...entries].reverse();
    if (options.limit) {
      const { offset, count } = options.limit;
      entries = offset < 0 ? [] : entries.slice(offset, count < 0 ? undefined : offset + count);
    }
  } else {
    const [first, last] = [integerArg(start), integerArg(stop)];
    const all = server.keyspace.read(key, 'zset')?.entries() ?? [];
    const ordered = options.rev ? [...all].reverse() : all;
    const length = ordered.length;
    const from = Math.max(0, first < 0 ? first + length : first);
    const to = Math.min(length - 1, last < 0 ? last + length : last);
    entries = from > to ? [] : ordered.slice(from, to + 1);
  }
  return listed(server, entries, options.withScores);
}

function zrank(server: Server, args: readonly string[]): Reply {
  // WITHSCORE came with Redis 7.2; before, ZRANK takes exactly three arguments.
  const withScore = args.length === 4;
  if (args.length > 4 || (withScore && server.version < REDIS_7_2)) throw wrongArity('zrank');
  if (withScore && args[3].toUpperCase() !== 'WITHSCORE') throw syntaxError();
  const set = server.keyspace.read(args[1], 'zset');
  const rank = set?.rank(args[2]);
  if (rank === undefined || !set) return null;
  return withScore ? [rank, redisDoubleText(set.score(args[2]) as number, server.version)] : rank;
}

function zremRangeByScore({ keyspace }: Server, args: readonly string[]): number {
  const [min, max] = [bound(args[2]), bound(args[3])];
  const set = keyspace.read(args[1], 'zset');
  if (!set) return 0;
  const gone = set.inRange(min, max);
  for (const { member } of gone) set.remove(member);
  keyspace.dropIfEmpty(args[1]);
  return gone.length;
}

export const SORTED_SET_COMMANDS: CommandTable = {
  ZADD: { arity: -4, run: zadd },
  ZCARD: { arity: 2, run: ({ keyspace }, args) => keyspace.read(args[1], 'zset')?.size ?? 0 },
  ZCOUNT: {
    arity: 4,
    run: ({ keyspace }, args) => {
      const [min, max] = [bound(args[2]), bound(args[3])];
      return keyspace.read(args[1], 'zset')?.inRange(min, max).length ?? 0;
    },
  },
  ZRANGE: {
    arity: -4,
    run: (server, args) => range(server, args[1], args[2], args[3], rangeOptions(args, false)),
  },
  ZRANGEBYSCORE: {
    arity: -4,
    run: (server, args) => range(server, args[1], args[2], args[3], rangeOptions(args, true)),
  },
  ZRANK: { arity: -3, run: zrank },
  ZREM: {
    arity: -3,
    run: ({ keyspace }, args) => {
      const set = keyspace.read(args[1], 'zset');
      if (!set) return 0;
      const removed = args.slice(2).filter((member) => set.remove(member)).length;
      keyspace.dropIfEmpty(args[1]);
      return removed;
    },
  },
  ZREMRANGEBYSCORE: { arity: 4, run: zremRangeByScore },
  ZSCORE: {
    arity: 3,
    run: (server, args) => {
      const score = server.keyspace.read(args[1], 'zset')?.score(args[2]);
      return score === undefined ? null : redisDoubleText(score, server.version);
    },
  },
};
