/**
 * EVAL, EVALSHA and SCRIPT LOAD / EXISTS / FLUSH. A server knows a script, by its SHA1, once EVAL or
 * SCRIPT LOAD brought it (EVALSHA answers NOSCRIPT before), until SCRIPT FLUSH or a restart (flushAll).
 */
import { createHash } from 'node:crypto';
import { compileScript } from '../lua-vm';
import { OK, type Reply, ReplyError, syntaxError, wrongArity } from '../replies';
import { type CommandTable, integerArg, refuse, type Server } from './command';

const sha1 = (text: string): string => createHash('sha1').update(text).digest('hex');

/** Compiles `text` (refusing it as Redis would if it does not compile) and remembers it. */
function load(server: Server, text: string): string {
  const sha = sha1(text);
  if (!server.scripts.has(sha)) {
    const error = compileScript(text);
    if (error) throw error;
    server.scripts.set(sha, text);
  }
  return sha;
}

function evaluate(bySha: boolean) {
  return (server: Server, args: readonly string[]): Reply => {
    const count = integerArg(args[2]);
    if (count < 0) refuse("ERR Number of keys can't be negative");
    if (count > args.length - 3) refuse("ERR Number of keys can't be greater than number of args");
    const sha = bySha ? args[1].toLowerCase() : load(server, args[1]);
    const text = server.scripts.get(sha);
    if (text === undefined) throw new ReplyError('NOSCRIPT No matching script. Please use EVAL.');
    return server.runScript(text, sha, args.slice(3, 3 + count), args.slice(3 + count));
  };
}

/** SCRIPT's subcommands, with their own arities (Redis names them "script|load" in its errors). */
function script(server: Server, args: readonly string[]): Reply {
  const sub = args[1].toUpperCase();
  const arity = (exact: boolean, count: number) => {
    if (exact ? args.length !== count : args.length < count) throw wrongArity(`script|${sub.toLowerCase()}`);
  };
  switch (sub) {
    case 'LOAD':
      arity(true, 3);
      return load(server, args[2]);
    case 'EXISTS':
      arity(false, 3);
      return args.slice(2).map((sha) => (server.scripts.has(sha.toLowerCase()) ? 1 : 0));
    case 'FLUSH':
      if (args.length > 3 || (args.length === 3 && !['ASYNC', 'SYNC'].includes(args[2].toUpperCase()))) {
        throw syntaxError();
      }
      server.scripts.clear();
      return OK;
    default:
      return refuse(`ERR unknown subcommand '${args[1]}'. Try SCRIPT HELP.`);
  }
}

export const SCRIPTING_COMMANDS: CommandTable = {
  EVAL: { arity: -3, noScript: true, run: evaluate(false) },
  EVALSHA: { arity: -3, noScript: true, run: evaluate(true) },
  SCRIPT: { arity: -2, noScript: true, run: script },
};
