/**
 * Commands on lists: LPUSH, RPUSH, LPOP, RPOP (with a count), LLEN, LINDEX, LRANGE, LSET, LREM, LPOS
 * (RANK, COUNT, MAXLEN). A list is a JS array, head first; an emptied list is deleted.
 */
import { OK, type Reply, syntaxError, wrongArity } from '../replies';
import { type CommandTable, integerArg, refuse, type Server } from './command';

function push(front: boolean) {
  return ({ keyspace }: Server, args: readonly string[]): number => {
    const list = keyspace.write(args[1], 'list');
    for (const item of args.slice(2)) {
      if (front) list.unshift(item);
      else list.push(item);
    }
    return list.length;
  };
}

function pop(front: boolean) {
  return ({ keyspace }: Server, args: readonly string[]): Reply => {
    if (args.length > 3) throw wrongArity(args[0].toLowerCase());
    const count = args.length > 2 ? integerArg(args[2]) : undefined;
    if (count !== undefined && count < 0) refuse('ERR value is out of range, must be positive');
    const list = keyspace.read(args[1], 'list');
    if (!list) return null;
    const taken = front ? list.splice(0, count ?? 1) : list.splice(Math.max(0, list.length - (count ?? 1)));
    if (!front) taken.reverse();
    keyspace.dropIfEmpty(args[1]);
    return count === undefined ? taken[0] : taken;
  };
}

/** An index that may count from the end (-1: the last), as a position in a list of `length`. */
const from = (index: number, length: number): number => (index < 0 ? index + length : index);

function lrange({ keyspace }: Server, args: readonly string[]): string[] {
  const startArg = integerArg(args[2]);
  const stopArg = integerArg(args[3]);
  const list = keyspace.read(args[1], 'list') ?? [];
  const start = Math.max(0, from(startArg, list.length));
  const stop = Math.min(list.length - 1, from(stopArg, list.length));
  return start > stop ? [] : list.slice(start, stop + 1);
}

function lset({ keyspace }: Server, args: readonly string[]): Reply {
  const index = integerArg(args[2]);
  const list = keyspace.read(args[1], 'list');
  if (!list) refuse('ERR no such key');
  const at = from(index, list.length);
  if (at < 0 || at >= list.length) refuse('ERR index out of range');
  list[at] = args[3];
  return OK;
}

function lrem({ keyspace }: Server, args: readonly string[]): number {
  const count = integerArg(args[2]);
  const list = keyspace.read(args[1], 'list');
  if (!list) return 0;
  // Up to |count| matches (0: all), from the head, or from the tail when count is negative.
  const limit = count === 0 ? list.length : Math.abs(count);
  const indexes = [...list.keys()];
  if (count < 0) indexes.reverse();
  const gone = new Set<number>();
  for (const i of indexes) {
    if (gone.size === limit) break;
    if (list[i] === args[3]) gone.add(i);
  }
  const kept = list.filter((_, i) => !gone.has(i));
  list.splice(0, list.length, ...kept);
  keyspace.dropIfEmpty(args[1]);
  return gone.size;
}

function lpos({ keyspace }: Server, args: readonly string[]): Reply {
  let rank = 1;
  let count: number | undefined;
  let maxlen = 0;
  for (let i = 3; i < args.length; i += 2) {
    const option = args[i].toUpperCase();
    if (i + 1 >= args.length) throw syntaxError();
    const value = integerArg(args[i + 1]);
    if (option === 'RANK') {
      if (value === 0) {
        refuse(
          "ERR RANK can't be zero: use 1 to start from the first match, 2 from the second ... or use " +
            'negative to start from the end of the list',
        );
      }
      rank = value;
    } else if (option === 'COUNT') {
      if (value < 0) refuse("ERR COUNT can't be negative");
      count = value;
    } else if (option === 'MAXLEN') {
      if (value < 0) refuse("ERR MAXLEN can't be negative");
      maxlen = value;
    } else throw syntaxError();
  }
  const list = keyspace.read(args[1], 'list') ?? [];
  const found: number[] = [];
  let skip = Math.abs(rank) - 1;
  const last = maxlen === 0 ? list.length : Math.min(list.length, maxlen);
  for (let step = 0; step < last; step++) {
    const index = rank < 0 ? list.length - 1 - step : step;
    if (list[index] !== args[2]) continue;
    if (skip > 0) skip--;
    else {
      found.push(index);
      if (count === undefined || found.length === count) break;
    }
  }
  return count === undefined ? (found[0] ?? null) : found;
}

export const LIST_COMMANDS: CommandTable = {
  LPUSH: { arity: -3, run: push(true) },
  RPUSH: { arity: -3, run: push(false) },
  LPOP: { arity: -2, run: pop(true) },
  RPOP: { arity: -2, run: pop(false) },
  LLEN: { arity: 2, run: ({ keyspace }, args) => keyspace.read(args[1], 'list')?.length ?? 0 },
  LINDEX: {
    arity: 3,
    run: ({ keyspace }, args) => {
      const index = integerArg(args[2]);
      const list = keyspace.read(args[1], 'list') ?? [];
      return list[from(index, list.length)] ?? null;
    },
  },
  LRANGE: { arity: 4, run: lrange },
  LSET: { arity: 4, run: lset },
  LREM: { arity: 4, run: lrem },
  LPOS: { arity: -3, run: lpos },
};
