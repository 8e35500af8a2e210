/**
 * Commands on keys of any type: DEL, EXISTS, TYPE, PTTL, PEXPIRE, PEXPIREAT (with Redis 7's NX, XX,
 * GT and LT), SCAN. Expiry times are ms; an expiry at or before now deletes the key at once.
 */
import { fitsInt64, parseRedisInteger } from '../number-text';
import { notInteger, StatusReply, syntaxError, wrongArity } from '../replies';
import { type CommandTable, integerArg, refuse, type Server } from './command';

const REDIS_7 = 0x070000;

interface ExpireFlags {
  nx: boolean;
  xx: boolean;
  gt: boolean;
  lt: boolean;
}

function expireFlags(server: Server, args: readonly string[]): ExpireFlags {
  const flags = { nx: false, xx: false, gt: false, lt: false };
  // Redis 6.2 has no options: PEXPIRE takes exactly three arguments.
  if (args.length > 3 && server.version < REDIS_7) throw wrongArity(args[0].toLowerCase());
  for (const option of args.slice(3)) {
    const name = option.toLowerCase();
    if (name === 'nx' || name === 'xx' || name === 'gt' || name === 'lt') flags[name] = true;
    else refuse(`ERR Unsupported option ${option}`);
  }
  if (flags.nx && (flags.xx || flags.gt || flags.lt)) {
    refuse('ERR NX and XX, GT or LT options at the same time are not compatible');
  }
  if (flags.gt && flags.lt) refuse('ERR GT and LT options at the same time are not compatible');
  return flags;
}

/** PEXPIRE (`relative`) and PEXPIREAT: 1 when the expiry was set (or the key deleted), 0 otherwise. */
function expire(relative: boolean) {
  return (server: Server, args: readonly string[]): number => {
    const flags = expireFlags(server, args);
    const given = parseRedisInteger(args[2]);
    if (given === undefined) throw notInteger();
    const nowMs = server.keyspace.nowMs;
    const when = relative ? given + BigInt(nowMs) : given;
    if (!fitsInt64(when)) refuse(`ERR invalid expire time in '${args[0].toLowerCase()}' command`);
    const at = Number(when);
    const { keyspace } = server;
    const key = args[1];
    if (!keyspace.has(key)) return 0;
    const current = keyspace.expireAt(key);
    if (flags.nx && current !== undefined) return 0;
    if (flags.xx && current === undefined) return 0;
    // A key without expiry counts as expiring never: GT never beats it, LT always does.
    if (flags.gt && (current === undefined || at <= current)) return 0;
    if (flags.lt && current !== undefined && at >= current) return 0;
    if (at <= nowMs) keyspace.delete(key);
    else keyspace.setExpire(key, at);
    return 1;
  };
}

/** Redis' glob (stringmatchlen) as a regular expression: *, ?, [set], [^set], [a-z], \ escapes. */
export function globPattern(glob: string): RegExp {
  let source = '';
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i];
    if (c === '*') source += '[\\s\\S]*';
    else if (c === '?') source += '[\\s\\S]';
    else if (c === '\\' && i + 1 < glob.length) source += literal(glob[++i]);
    else if (c === '[') {
      let set = '';
      let j = i + 1;
      const negate = glob[j] === '^';
      if (negate) j++;
      for (; j < glob.length && glob[j] !== ']'; j++) {
        if (glob[j] === '\\' && j + 1 < glob.length) set += literal(glob[++j]);
        else if (glob[j + 1] === '-' && j + 2 < glob.length && glob[j + 2] !== ']') {
          const [from, to] = [glob[j], glob[j + 2]].sort();
          set += `${literal(from)}-${literal(to)}`;
          j += 2;
        } else set += literal(glob[j]);
      }
      source += set === '' ? (negate ? '[\\s\\S]' : '(?!)') : `[${negate ? '^' : ''}${set}]`;
      i = j;
    } else source += literal(c);
  }
  return new RegExp(`^${source}$`);
}

const literal = (c: string): string => c.replace(/[\\^$.*+?()[\]{}|/-]/g, '\\$&');

/** SCAN: every match in one reply, cursor "0" (COUNT is only a hint, and one pass keeps it simple). */
function scan(server: Server, args: readonly string[]): [string, string[]] {
  if (parseRedisInteger(args[1]) === undefined || args[1].startsWith('-')) refuse('ERR invalid cursor');
  let match: RegExp | undefined;
  let type: string | undefined;
  for (let i = 2; i < args.length; i += 2) {
    const option = args[i].toUpperCase();
    if (i + 1 >= args.length) throw syntaxError();
    if (option === 'MATCH') match = globPattern(args[i + 1]);
    else if (option === 'TYPE') type = args[i + 1].toLowerCase();
    else if (option === 'COUNT') {
      if (integerArg(args[i + 1]) < 1) throw syntaxError();
    } else throw syntaxError();
  }
  const { keyspace } = server;
  const keys = keyspace
    .keys()
    .filter((key) => (!match || match.test(key)) && (!type || keyspace.typeOf(key) === type));
  return ['0', keys];
}

export const KEY_COMMANDS: CommandTable = {
  DEL: {
    arity: -2,
    run: ({ keyspace }, args) => args.slice(1).filter((key) => keyspace.delete(key)).length,
  },
  EXISTS: {
    arity: -2,
    run: ({ keyspace }, args) => args.slice(1).filter((key) => keyspace.has(key)).length,
  },
  TYPE: { arity: 2, run: ({ keyspace }, args) => new StatusReply(keyspace.typeOf(args[1]) ?? 'none') },
  PTTL: { arity: 2, run: ({ keyspace }, args) => keyspace.ttl(args[1]) },
  PEXPIRE: { arity: -3, run: expire(true) },
  PEXPIREAT: { arity: -3, run: expire(false) },
  SCAN: { arity: -2, run: scan },
};
