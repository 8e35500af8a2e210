/**
 * What a simulated command answers, before it is handed to a caller (as ioredis would hand it) or to a
 * script (as Redis converts it for Lua): an integer is a JS number, a bulk string a JS string, nil null;
 * status replies and errors are their own classes, since both sides tell them from bulk strings. The
 * error texts Redis words the same way in several commands are here, once.
 */

/** A status reply ("+OK"): ioredis gives its text, a script gets {ok = text}. */
export class StatusReply {
  constructor(readonly status: string) {}
}

/**
 * An error reply, with Redis' text ("WRONGTYPE Operation against ..."). Its name is ioredis' ReplyError's,
 * by which the library tells Redis' refusals from a lost connection.
 */
export class ReplyError extends Error {
  override readonly name = 'ReplyError';
}

export type Reply = number | string | null | StatusReply | ReplyError | readonly Reply[];

export const OK = new StatusReply('OK');

export const wrongType = (): ReplyError =>
  new ReplyError('WRONGTYPE Operation against a key holding the wrong kind of value');
export const notInteger = (): ReplyError => new ReplyError('ERR value is not an integer or out of range');
export const notFloat = (): ReplyError => new ReplyError('ERR value is not a valid float');
export const syntaxError = (): ReplyError => new ReplyError('ERR syntax error');
export const wrongArity = (command: string): ReplyError =>
  new ReplyError(`ERR wrong number of arguments for '${command}' command`);
