/**
 * The shape every simulated command has: its arity as Redis declares it (checked before it runs, so a
 * command reads its arguments without counting them), and a function of the server and Redis' argv
 * (the command's name first). A command answers with a Reply or throws a ReplyError.
 */
import type { Keyspace } from '../keyspace';
import { parseRedisInteger } from '../number-text';
import { notInteger, type Reply, ReplyError } from '../replies';

/** What a command can see of the server running it. */
export interface Server {
  readonly keyspace: Keyspace;
  /** REDIS_VERSION_NUM: 0x070200 for 7.2.0. Decides the commands and options 6.2 lacks. */
  readonly version: number;
  /** The time of this command (for a script, of its start), µs. */
  readonly nowUs: number;
  /** Keys taken out by evict() so far (INFO's evicted_keys). */
  readonly evictedKeys: number;
  /** The scripts this server has seen (EVAL, SCRIPT LOAD), by SHA1. */
  readonly scripts: Map<string, string>;
  publish(channel: string, message: string): number;
  subscribers(channel: string): number;
  /** Runs a script (lua-vm.ts) with this server answering its commands. */
  runScript(text: string, sha: string, keys: readonly string[], args: readonly string[]): Reply;
}

export interface Command {
  /** n: exactly n arguments, the name included; -n: at least n. */
  readonly arity: number;
  /** Refused inside a script ("This Redis command is not allowed from script"). */
  readonly noScript?: boolean;
  /** The first REDIS_VERSION_NUM that has it: an unknown command before. */
  readonly since?: number;
  run(server: Server, args: readonly string[]): Reply;
}

export type CommandTable = Readonly<Record<string, Command>>;

/** An argument read as a 64-bit integer, as JS number (the values used are far below 2^53). */
export function integerArg(text: string): number {
  const value = parseRedisInteger(text);
  if (value === undefined) throw notInteger();
  return Number(value);
}

/** An error worded by the caller: Redis' own text for a case one command words its way. */
export function refuse(message: string): never {
  throw new ReplyError(message);
}
