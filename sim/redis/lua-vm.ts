/**
 * The Lua VM the simulated servers run scripts in: one fengari state shared by every SimRedis (a
 * script keeps nothing between calls, and Redis refuses globals), each script text compiled once,
 * then run with KEYS, ARGV and a `redis` table whose calls go to the server running it. Synchronous,
 * with no clock and no randomness of its own.
 *
 * Redis runs Lua 5.1; fengari is Lua 5.3. The differences Redis' scripts can meet are made 5.1 here
 * (lua-51.ts):
 * - Numbers are doubles. 5.3 reads "10" as an integer, and fengari keeps integers in 32 bits and wraps
 *   them, so a server clock in µs (TIME's seconds * 1000000) would overflow: numerals, tonumber and
 *   strings coerced by arithmetic all read doubles ("inf" and "nan" too, as strtod reads them).
 * - A number becomes text as "%.14g" (tostring, `..`, %s): 3 and not 5.3's 3.0, 1e+15 for 10^15,
 *   1.7e+15 for a µs clock (which is why the scripts write clocks and fences with %.0f).
 * - math.floor and math.ceil return doubles.
 * - string.format is C's printf on doubles: %d truncates any double (5.3 refuses one without an integer
 *   value, fengari any beyond 32 bits), %.0f rounds half to even on the exact value (2.5 -> "2"), %q
 *   quotes as 5.1 does; the integer conversions cast as x86 does.
 * - error() adds the position to a number message too.
 * - unpack is a global (table.unpack in 5.3).
 * - Only the globals Redis 7 offers exist; 5.3's additions are gone (math.type, math.tointeger,
 *   string.pack, table.move, rawlen, load...), and so are print and math.random (fengari's is
 *   Math.random). Reading an unknown global or creating one is an error, worded as Redis 7 words it.
 * - table.sort draws no random pivot (fengari's does past 100 items): a stable sort, so the same run
 *   sorts ties alike every time (Redis' quicksort may order ties otherwise; the scripts do not sort).
 * Redis' own, as Redis 7 with RESP2:
 * - redis.call / redis.pcall take strings and numbers; a number is written as Redis writes it ("%.17g"
 *   before 7.2; from 7.2 an integer as its digits, anything else as its shortest text), never Lua's
 *   "%.14g". Replies reach Lua as: integer -> number, bulk -> string, nil -> false, array -> table,
 *   status -> {ok = text}, error -> {err = text} (raised by call, returned by pcall).
 * - What a script returns reaches the caller as: number -> integer (truncated; out of range, the lowest
 *   64-bit integer, as x86 casts), string -> bulk, {err} -> error, {ok} -> status, other table -> array
 *   up to its first nil, true -> 1, false and nil -> nil.
 * - redis.error_reply / status_reply, sha1hex, log (a no-op) and LOG_*, REDIS_VERSION_NUM and
 *   REDIS_VERSION (the server's).
 * - A script that fails answers "<message> script: <sha>, on @user_script:<line>.", the message being
 *   "ERR user_script:<line>: <Lua's message>", or the command's error for one redis.call raised. Lua's
 *   messages are fengari's (5.3's) but for the commonest, reworded as 5.1 words them (as51); inside the
 *   script (pcall) they stay 5.3's.
 * Not simulated: the cjson, bit, struct and cmsgpack libraries, coroutine, loadstring, gcinfo,
 * redis.setresp, set_repl, replicate_commands, breakpoint, debug, acl_check_cmd; the busy-script time
 * limit (a script that never ends hangs the simulation); read-only library tables (Redis 7 refuses
 * `string.x = ...`); syntax 5.1 lacks (//, bitwise operators, goto) compiles here; strings cross
 * between Lua and JS as UTF-8, so bytes that are not UTF-8 do not survive.
 */
import { createHash } from 'node:crypto';
import fengari from 'fengari';
import { openLua51 } from './lua-51';
import { luaNumberText, redisArgumentText, versionText } from './number-text';
import { type Reply, ReplyError, StatusReply } from './replies';

const { lua, lauxlib, to_luastring } = fengari;
type LuaState = fengari.LuaState;

/** The server a script runs on: the version it reports, and its commands. */
export interface ScriptHost {
  readonly version: number;
  /** Runs one command for the script: its reply, or its error reply (returned, not thrown). */
  command(args: string[]): Reply;
}

const ERR = to_luastring('err');
const OK = to_luastring('ok');
const L = lauxlib.luaL_newstate();
/** Registry references of the compiled scripts, by text. */
const compiled = new Map<string, number>();
/** The server running a script now (scripts never nest). */
let host: ScriptHost | undefined;
/** The version redis.REDIS_VERSION_NUM now says. */
let versionShown = -1;
/** The line a failing script was at (the error handler records it). */
let failedAt = 0;

/** Pushes {`field` = text}. */
function pushTagged(L: LuaState, field: Uint8Array, text: string): void {
  lua.lua_createtable(L, 0, 1);
  lua.lua_pushstring(L, text);
  lua.lua_setfield(L, -2, field);
}

/** The text of an error table made from "-CODE message" or "message" (ERR is added), as Redis 7 words it. */
function errorText(raw: string): string {
  let [code, message] = ['ERR', raw];
  if (raw.startsWith('-')) {
    const space = raw.indexOf(' ');
    if (space < 0) message = raw.slice(1);
    else [code, message] = [raw.slice(1, space), raw.slice(space + 1)];
  }
  return `${code} ${message.replace(/^[\r\n]+|[\r\n]+$/g, '')}`;
}

/** Pushes a command's reply as Redis hands it to Lua. */
function pushReply(L: LuaState, reply: Reply): void {
  if (typeof reply === 'number') lua.lua_pushnumber(L, reply);
  else if (typeof reply === 'string') lua.lua_pushstring(L, reply);
  else if (reply === null) lua.lua_pushboolean(L, false);
  else if (reply instanceof StatusReply) pushTagged(L, OK, reply.status);
  else if (reply instanceof ReplyError) pushTagged(L, ERR, reply.message);
  else {
    lua.lua_createtable(L, reply.length, 0);
    reply.forEach((item, i) => {
      pushReply(L, item);
      lua.lua_rawseti(L, -2, i + 1);
    });
  }
}

/** The string field `name` of the table at `index`, read raw, or undefined. */
function stringField(L: LuaState, index: number, name: Uint8Array): string | undefined {
  const at = index < 0 ? lua.lua_gettop(L) + index + 1 : index;
  lua.lua_pushstring(L, name);
  const type = lua.lua_rawget(L, at);
  const text = type === lua.LUA_TSTRING ? (lua.lua_tojsstring(L, -1) as string) : undefined;
  lua.lua_pop(L, 1);
  return text;
}

/** The Lua value at `index` as the reply Redis makes of a script's result. */
function replyOf(L: LuaState, index: number): Reply {
  const at = index < 0 ? lua.lua_gettop(L) + index + 1 : index;
  switch (lua.lua_type(L, at)) {
    case lua.LUA_TBOOLEAN:
      return lua.lua_toboolean(L, at) ? 1 : null;
    case lua.LUA_TNUMBER: {
      const n = lua.lua_tonumber(L, at);
      return Number.isFinite(n) && Math.abs(n) < 2 ** 63 ? Math.trunc(n) || 0 : -(2 ** 63);
    }
    case lua.LUA_TSTRING:
      return lua.lua_tojsstring(L, at) as string;
    case lua.LUA_TTABLE: {
      const err = stringField(L, at, ERR);
      if (err !== undefined) return new ReplyError(err);
      const ok = stringField(L, at, OK);
      if (ok !== undefined) return new StatusReply(ok.replace(/[\r\n]/g, ' '));
      const items: Reply[] = [];
      for (let i = 1; lua.lua_rawgeti(L, at, i) !== lua.LUA_TNIL; i++) {
        items.push(replyOf(L, -1));
        lua.lua_pop(L, 1);
      }
      lua.lua_pop(L, 1);
      return items;
    }
    default:
      return null;
  }
}

/** Fails a redis.call / redis.pcall made wrong: raised by call, returned by pcall. */
function failed(L: LuaState, raise: boolean, message: string): number {
  pushTagged(L, ERR, message);
  return raise ? lua.lua_error(L) : 1;
}

/** redis.call (`raise`: an error reply is raised) and redis.pcall (it is returned). */
const redisCall = (raise: boolean) => (L: LuaState) => {
  const running = host as ScriptHost;
  const count = lua.lua_gettop(L);
  if (count === 0)
    return failed(L, raise, 'ERR Please specify at least one argument for this redis lib call');
  const args: string[] = [];
  for (let i = 1; i <= count; i++) {
    const type = lua.lua_type(L, i);
    if (type === lua.LUA_TNUMBER) args.push(redisArgumentText(lua.lua_tonumber(L, i), running.version));
    else if (type === lua.LUA_TSTRING) args.push(lua.lua_tojsstring(L, i) as string);
    else return failed(L, raise, 'ERR Lua redis lib command arguments must be strings or integers');
  }
  const reply = running.command(args);
  if (reply instanceof ReplyError) return failed(L, raise, reply.message);
  pushReply(L, reply);
  return 1;
};

/** redis.error_reply and redis.status_reply: a table tagged `field`; a wrong call returns an error table. */
const tagged = (field: Uint8Array) => (L: LuaState) => {
  if (lua.lua_gettop(L) !== 1 || lua.lua_type(L, 1) !== lua.LUA_TSTRING) {
    pushTagged(L, ERR, 'ERR wrong number or type of arguments');
    return 1;
  }
  const text = lua.lua_tojsstring(L, 1) as string;
  pushTagged(L, field, field === ERR ? errorText(text.startsWith('-') ? text : `-${text}`) : text);
  return 1;
};

function sha1hex(L: LuaState): number {
  if (lua.lua_gettop(L) !== 1) return failed(L, true, 'ERR wrong number of arguments');
  const bytes = lua.lua_tolstring(L, 1) ?? new Uint8Array();
  lua.lua_pushstring(L, createHash('sha1').update(bytes).digest('hex'));
  return 1;
}

/** redis.log: checked as Redis checks it, then dropped. */
function log(L: LuaState): number {
  const count = lua.lua_gettop(L);
  if (count < 2) return failed(L, true, 'ERR redis.log() requires two arguments or more.');
  if (lua.lua_type(L, 1) !== lua.LUA_TNUMBER) {
    return failed(L, true, 'ERR First argument must be a number (log level).');
  }
  const level = lua.lua_tonumber(L, 1);
  if (level < 0 || level > 3) return failed(L, true, 'ERR Invalid log level.');
  return 0;
}

/** Reading an unknown global, or creating one, fails as Redis 7 fails it. */
function protectGlobals(L: LuaState): void {
  lua.lua_pushglobaltable(L);
  lua.lua_createtable(L, 0, 2);
  lua.lua_pushjsfunction(L, (L) => {
    const name =
      lua.lua_type(L, 2) === lua.LUA_TNUMBER
        ? luaNumberText(lua.lua_tonumber(L, 2))
        : lua.lua_tojsstring(L, 2);
    return lauxlib.luaL_error(
      L,
      to_luastring(`Script attempted to access nonexistent global variable '${name}'`),
    );
  });
  lua.lua_setfield(L, -2, '__index');
  lua.lua_pushjsfunction(L, (L) => lauxlib.luaL_error(L, to_luastring('Attempt to modify a readonly table')));
  lua.lua_setfield(L, -2, '__newindex');
  lua.lua_setmetatable(L, -2);
  lua.lua_pop(L, 1);
}

function createState(L: LuaState): void {
  openLua51(L);
  lua.lua_createtable(L, 0, 16);
  const functions: Record<string, fengari.JsFunction> = {
    call: redisCall(true),
    pcall: redisCall(false),
    error_reply: tagged(ERR),
    status_reply: tagged(OK),
    sha1hex,
    log,
  };
  for (const [name, fn] of Object.entries(functions)) {
    lua.lua_pushjsfunction(L, fn);
    lua.lua_setfield(L, -2, name);
  }
  ['LOG_DEBUG', 'LOG_VERBOSE', 'LOG_NOTICE', 'LOG_WARNING'].forEach((name, level) => {
    lua.lua_pushnumber(L, level);
    lua.lua_setfield(L, -2, name);
  });
  lua.lua_setglobal(L, 'redis');
  protectGlobals(L);
}

createState(L);

/** Sets redis.REDIS_VERSION_NUM and REDIS_VERSION to `version`'s, unless they say it already. */
function showVersion(version: number): void {
  if (version === versionShown) return;
  versionShown = version;
  lua.lua_getglobal(L, 'redis');
  lua.lua_pushnumber(L, version);
  lua.lua_setfield(L, -2, 'REDIS_VERSION_NUM');
  lua.lua_pushstring(L, versionText(version));
  lua.lua_setfield(L, -2, 'REDIS_VERSION');
  lua.lua_pop(L, 1);
}

/** Sets the global `name` to a table of `items`, past the protection (as Redis sets KEYS and ARGV). */
function setList(name: string, items: readonly string[]): void {
  lua.lua_pushglobaltable(L);
  lua.lua_pushstring(L, name);
  lua.lua_createtable(L, items.length, 0);
  items.forEach((item, i) => {
    lua.lua_pushstring(L, item);
    lua.lua_rawseti(L, -2, i + 1);
  });
  lua.lua_rawset(L, -3);
  lua.lua_pop(L, 1);
}

/** Records the line of the Lua function that raised (past a JS function such as error or redis.call). */
const debug = new lua.lua_Debug();
function errorHandler(L: LuaState): number {
  failedAt = 0;
  for (let level = 1; level <= 2 && lua.lua_getstack(L, level, debug); level++) {
    lua.lua_getinfo(L, 'Sl', debug);
    // fengari calls a function of JavaScript "J" where Lua says "C".
    if (debug.what?.[0] !== 74 /* "J" */) {
      failedAt = debug.currentline;
      break;
    }
  }
  return 1;
}

/**
 * Lua 5.3's wording of the messages Lua itself raises, as 5.1 (and so Redis) words them: "near '<eof>'",
 * "attempt to index local 'x' (a nil value)" rather than "attempt to index a nil value (local 'x')".
 */
function as51(message: string): string {
  return message
    .replace(/ near <eof>$/, " near '<eof>'")
    .replace(
      /attempt to (index|call|perform arithmetic on|concatenate) a (\w+) value \((global|local|field|upvalue|method|constant) '([^']*)'\)/,
      "attempt to $1 $3 '$4' (a $2 value)",
    );
}

/** Compiles `text` once; a script that does not compile is refused with Redis' words. */
export function compileScript(text: string): ReplyError | undefined {
  if (compiled.has(text)) return undefined;
  if (lauxlib.luaL_loadbuffer(L, to_luastring(text), null, '@user_script') !== lua.LUA_OK) {
    const message = as51(lua.lua_tojsstring(L, -1) ?? '');
    lua.lua_settop(L, 0);
    return new ReplyError(`ERR Error compiling script (new function): ${message}`);
  }
  compiled.set(text, lauxlib.luaL_ref(L, lua.LUA_REGISTRYINDEX));
  return undefined;
}

/** Runs a compiled script on `on`: its reply, an error reply included (returned, not thrown). */
export function runScript(
  text: string,
  sha: string,
  keys: readonly string[],
  args: readonly string[],
  on: ScriptHost,
): Reply {
  const refused = compileScript(text);
  if (refused) return refused;
  lua.lua_settop(L, 0);
  showVersion(on.version);
  setList('KEYS', keys);
  setList('ARGV', args);
  lua.lua_pushjsfunction(L, errorHandler);
  lua.lua_rawgeti(L, lua.LUA_REGISTRYINDEX, compiled.get(text) as number);
  host = on;
  try {
    if (lua.lua_pcall(L, 0, 1, 1) !== lua.LUA_OK) return scriptError(sha);
    return replyOf(L, -1);
  } finally {
    host = undefined;
    lua.lua_settop(L, 0);
  }
}

/** The error reply of a script that raised the value on top of the stack. */
function scriptError(sha: string): ReplyError {
  const type = lua.lua_type(L, -1);
  let message: string;
  if (type === lua.LUA_TTABLE) message = stringField(L, -1, ERR) ?? 'ERR unknown error';
  else if (type === lua.LUA_TNUMBER) message = `ERR ${luaNumberText(lua.lua_tonumber(L, -1))}`;
  else message = `ERR ${as51(fengari.to_jsstring(lauxlib.luaL_tolstring(L, -1)))}`;
  return new ReplyError(`${message} script: ${sha}, on @user_script:${failedAt}.`);
}
