/**
 * Commands on strings and hashes: GET, SET (NX, XX, GET, EX, PX, EXAT, PXAT, KEEPTTL), GETDEL, INCR,
 * HGET, HSET, HDEL, HMGET.
 */
import { fitsInt64, parseRedisInteger } from '../number-text';
import { notInteger, OK, type Reply, syntaxError, wrongArity } from '../replies';
import { type CommandTable, refuse, type Server } from './command';

const REDIS_7 = 0x070000;

interface SetOptions {
  nx: boolean;
  xx: boolean;
  get: boolean;
  keepTtl: boolean;
  /** EX, PX, EXAT or PXAT, and its argument. */
  expiry?: { unit: string; value: string };
}

function setOptions(server: Server, args: readonly string[]): SetOptions {
  const options: SetOptions = { nx: false, xx: false, get: false, keepTtl: false };
  for (let i = 3; i < args.length; i++) {
    const option = args[i].toUpperCase();
    // Before Redis 7, NX and GET exclude each other.
    const old = server.version < REDIS_7;
    if (option === 'NX' && !options.xx && !(old && options.get)) options.nx = true;
    else if (option === 'XX' && !options.nx) options.xx = true;
    else if (option === 'GET' && !(old && options.nx)) options.get = true;
    else if (option === 'KEEPTTL' && !options.expiry) options.keepTtl = true;
    else if (['EX', 'PX', 'EXAT', 'PXAT'].includes(option) && !options.keepTtl && !options.expiry) {
      if (i + 1 >= args.length) throw syntaxError();
      options.expiry = { unit: option, value: args[++i] };
    } else throw syntaxError();
  }
  return options;
}

/** The absolute expiry SET was given, ms. */
function expiryOf(server: Server, { unit, value }: { unit: string; value: string }): number {
  const given = parseRedisInteger(value);
  if (given === undefined) throw notInteger();
  const invalid = () => refuse("ERR invalid expire time in 'set' command");
  if (given <= 0n) invalid();
  const ms = unit === 'EX' || unit === 'EXAT' ? given * 1000n : given;
  const at = unit === 'EX' || unit === 'PX' ? ms + BigInt(server.keyspace.nowMs) : ms;
  if (!fitsInt64(at)) invalid();
  return Number(at);
}

function set(server: Server, args: readonly string[]): Reply {
  const options = setOptions(server, args);
  const at = options.expiry ? expiryOf(server, options.expiry) : undefined;
  const { keyspace } = server;
  const key = args[1];
  // GET reads first: a key of another type is refused before anything is written.
  const previous = options.get ? (keyspace.read(key, 'string') ?? null) : undefined;
  const found = keyspace.has(key);
  if ((options.nx && found) || (options.xx && !found)) return options.get ? (previous ?? null) : null;
  const keep = options.keepTtl ? keyspace.expireAt(key) : undefined;
  keyspace.setString(key, args[2], at ?? keep);
  return previous === undefined ? OK : previous;
}

function incr({ keyspace }: Server, args: readonly string[]): number {
  const text = keyspace.read(args[1], 'string');
  const current = text === undefined ? 0n : parseRedisInteger(text);
  if (current === undefined) throw notInteger();
  const next = current + 1n;
  if (!fitsInt64(next)) refuse('ERR increment or decrement would overflow');
  keyspace.updateString(args[1], next.toString());
  return Number(next);
}

function hset({ keyspace }: Server, args: readonly string[]): number {
  if (args.length % 2 !== 0) throw wrongArity(args[0].toLowerCase());
  const hash = keyspace.write(args[1], 'hash');
  let added = 0;
  for (let i = 2; i < args.length; i += 2) {
    if (!hash.has(args[i])) added++;
    hash.set(args[i], args[i + 1]);
  }
  return added;
}

function hdel({ keyspace }: Server, args: readonly string[]): number {
  const hash = keyspace.read(args[1], 'hash');
  if (!hash) return 0;
  const removed = args.slice(2).filter((field) => hash.delete(field)).length;
  keyspace.dropIfEmpty(args[1]);
  return removed;
}

export const STRING_COMMANDS: CommandTable = {
  GET: { arity: 2, run: ({ keyspace }, args) => keyspace.read(args[1], 'string') ?? null },
  SET: { arity: -3, run: set },
  GETDEL: {
    arity: 2,
    run: ({ keyspace }, args) => {
      const value = keyspace.read(args[1], 'string');
      if (value === undefined) return null;
      keyspace.delete(args[1]);
      return value;
    },
  },
  INCR: { arity: 2, run: incr },
  HGET: { arity: 3, run: ({ keyspace }, args) => keyspace.read(args[1], 'hash')?.get(args[2]) ?? null },
  HSET: { arity: -4, run: hset },
  HDEL: { arity: -3, run: hdel },
  HMGET: {
    arity: -3,
    run: ({ keyspace }, args) => {
      const hash = keyspace.read(args[1], 'hash');
      return args.slice(2).map((field) => hash?.get(field) ?? null);
    },
  },
};
