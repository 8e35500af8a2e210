/**
 * Lua 5.1, as Redis' scripts see it, on fengari's Lua 5.3: the libraries Redis opens, cut to what 5.1
 * has, and 5.1's numbers (every number a double, written "%.14g") and string.format (C's printf on
 * doubles). lua-vm.ts lists every difference and why; this file makes them.
 */
import fengari from 'fengari';
import lobject from 'fengari/src/lobject.js';
import lstring from 'fengari/src/lstring.js';
import { exponential, fixed, general, luaNumberText, signBit } from './number-text';

const { lua, lauxlib, lualib, to_luastring } = fengari;
type LuaState = fengari.LuaState;

let numbersPatched = false;

/** A hexadecimal integer numeral's value, which fengari would have wrapped to 32 bits. */
function hexadecimal(text: Uint8Array): number | undefined {
  if (!text.includes(120) && !text.includes(88)) return undefined; // no "x" or "X"
  const match = /^\s*([-+]?)0[xX]([0-9a-fA-F]+)\s*$/.exec(String.fromCharCode(...text));
  if (!match) return undefined;
  const value = Number(BigInt(`0x${match[2]}`));
  return match[1] === '-' ? -value : value;
}

/**
 * Numerals, tonumber and strings coerced to numbers read as doubles (5.3 reads integers, which fengari
 * keeps in 32 bits and wraps: a clock in µs would overflow), "inf" and "nan" included as strtod reads
 * them; any number written as "%.14g" (3, not 5.3's 3.0). Patched into the VM once, for every state.
 */
function patchNumbers(): void {
  if (numbersPatched) return;
  numbersPatched = true;
  const read = lobject.luaO_str2num;
  lobject.luaO_str2num = (text, into) => {
    const length = read(text, into);
    if (length !== 0) {
      if (into.ttisinteger()) into.setfltvalue(hexadecimal(text) ?? (into.value as number));
      return length;
    }
    const special =
      text.length <= 32 && /^\s*([-+]?)(inf(inity)?|nan)\s*$/i.exec(String.fromCharCode(...text));
    if (!special) return 0;
    into.setfltvalue(
      special[2].toLowerCase() === 'nan' ? Number.NaN : special[1] === '-' ? -Infinity : Infinity,
    );
    return text.length + 1;
  };
  lobject.luaO_tostring = (L, slot) => {
    slot.setsvalue(lstring.luaS_bless(L, to_luastring(luaNumberText(slot.value as number))));
  };
}

const pushText = (L: LuaState, text: string): void => lua.lua_pushstring(L, to_luastring(text));

/** tostring: numbers as "%.14g" (fengari's own goes through an unpatched path for them). */
function tostring(L: LuaState): number {
  lauxlib.luaL_checkany(L, 1);
  if (lua.lua_type(L, 1) === lua.LUA_TNUMBER) pushText(L, luaNumberText(lua.lua_tonumber(L, 1)));
  else lauxlib.luaL_tolstring(L, 1);
  return 1;
}

/** error: 5.1 adds the position to a number too ("user_script:1: 12"), 5.3 to strings only. */
function error(L: LuaState): number {
  const level = lauxlib.luaL_optinteger(L, 2, 1);
  lua.lua_settop(L, 1);
  const type = lua.lua_type(L, 1);
  if ((type === lua.LUA_TSTRING || type === lua.LUA_TNUMBER) && level > 0) {
    lauxlib.luaL_where(L, level);
    lua.lua_pushvalue(L, 1);
    lua.lua_concat(L, 2);
  }
  return lua.lua_error(L);
}

const rounded = (direction: (x: number) => number) => (L: LuaState) => {
  lua.lua_pushnumber(L, direction(lauxlib.luaL_checknumber(L, 1)));
  return 1;
};

/**
 * table.sort without fengari's random pivots (it draws them from Math.random past 100 items, so ties
 * would land in another order on each run): a stable sort by the same `<` or comparison function.
 */
function sort(L: LuaState): number {
  lauxlib.luaL_checktype(L, 1, lua.LUA_TTABLE);
  const count = lua.lua_rawlen(L, 1);
  const byFunction = lua.lua_type(L, 2) === lua.LUA_TFUNCTION;
  lua.lua_settop(L, 2);
  const before = (a: number, b: number): boolean => {
    if (byFunction) lua.lua_pushvalue(L, 2);
    lua.lua_rawgeti(L, 3, a);
    lua.lua_rawgeti(L, 3, b);
    if (byFunction) lua.lua_call(L, 2, 1);
    const less = byFunction ? lua.lua_toboolean(L, -1) : lua.lua_compare(L, -2, -1, lua.LUA_OPLT);
    lua.lua_pop(L, byFunction ? 1 : 2);
    return less;
  };
  // The items are read from a copy (index 3) while the table is rewritten in order.
  lua.lua_createtable(L, count, 0);
  for (let i = 1; i <= count; i++) {
    lua.lua_rawgeti(L, 1, i);
    lua.lua_rawseti(L, 3, i);
  }
  const order = Array.from({ length: count }, (_, i) => i + 1);
  order.sort((a, b) => (before(a, b) ? -1 : before(b, a) ? 1 : 0));
  order.forEach((from, i) => {
    lua.lua_rawgeti(L, 3, from);
    lua.lua_rawseti(L, 1, i + 1);
  });
  return 0;
}

/** A double cast to a C long long, as x86 casts it: truncated; out of range (or NaN) the lowest one. */
function int64(x: number): bigint {
  return Number.isFinite(x) && Math.abs(x) < 2 ** 63 ? BigInt(Math.trunc(x)) : -(2n ** 63n);
}

interface Spec {
  flags: string;
  width: number;
  precision?: number;
}

/** `body` with its sign (or prefix) and padded to the width, as printf lays it out. */
function laid(spec: Spec, negative: boolean, body: string, zeroes: boolean, prefix = ''): string {
  const { flags, width } = spec;
  const sign = (negative ? '-' : flags.includes('+') ? '+' : flags.includes(' ') ? ' ' : '') + prefix;
  if (flags.includes('-')) return (sign + body).padEnd(width);
  if (zeroes && flags.includes('0')) return sign + body.padStart(width - sign.length, '0');
  return (sign + body).padStart(width);
}

function integerText(spec: Spec, conversion: string, x: number): string {
  const signed = conversion === 'd' || conversion === 'i';
  const value = signed || x < 2 ** 63 ? int64(x) : BigInt(Math.trunc(x));
  const magnitude = signed ? (value < 0n ? -value : value) : BigInt.asUintN(64, value);
  const radix = conversion === 'o' ? 8 : conversion === 'x' || conversion === 'X' ? 16 : 10;
  let digits = spec.precision === 0 && magnitude === 0n ? '' : magnitude.toString(radix);
  if (conversion === 'X') digits = digits.toUpperCase();
  digits = digits.padStart(spec.precision ?? 0, '0');
  const alt = spec.flags.includes('#');
  if (alt && conversion === 'o' && !digits.startsWith('0')) digits = `0${digits}`;
  const prefix = alt && radix === 16 && magnitude !== 0n ? `0${conversion}` : '';
  return laid(spec, signed && value < 0n, digits, spec.precision === undefined, prefix);
}

function floatText(spec: Spec, conversion: string, x: number): string {
  const upper = conversion === 'E' || conversion === 'G';
  if (!Number.isFinite(x)) {
    const text = Number.isNaN(x) ? 'nan' : 'inf';
    return laid(spec, signBit(x), upper ? text.toUpperCase() : text, false);
  }
  const precision = spec.precision ?? 6;
  const alt = spec.flags.includes('#');
  const lower = conversion.toLowerCase();
  const body =
    lower === 'f'
      ? fixed(x, precision, alt)
      : lower === 'e'
        ? exponential(x, precision, alt)
        : general(x, precision, alt);
  return laid(spec, signBit(x), upper ? body.toUpperCase() : body, true);
}

/** %q: 5.1 escapes quotes, backslashes and NULs, and writes a newline as a backslash then the newline. */
function quoted(bytes: Uint8Array): number[] {
  const out = [34];
  for (const byte of bytes) {
    if (byte === 34 || byte === 92 || byte === 10) out.push(92, byte);
    else if (byte === 13) out.push(92, 114);
    else if (byte === 0) out.push(92, 48, 48, 48);
    else out.push(byte);
  }
  out.push(34);
  return out;
}

const ascii = (text: string): number[] => Array.from(text, (c) => c.charCodeAt(0));

/** Bytes padded with spaces to the width (%s, %c): no sign, no zeros. */
function padded(spec: Spec, bytes: ArrayLike<number>): number[] {
  const pad = Array<number>(Math.max(0, spec.width - bytes.length)).fill(32);
  return spec.flags.includes('-') ? [...Array.from(bytes), ...pad] : [...pad, ...Array.from(bytes)];
}

/** string.format as 5.1 has it: each item taken by printf's rules, on doubles. */
function format(L: LuaState): number {
  const template = lauxlib.luaL_checklstring(L, 1);
  const out: number[] = [];
  let arg = 1;
  for (let i = 0; i < template.length; ) {
    const byte = template[i++];
    if (byte !== 37 || template[i] === 37) {
      out.push(byte);
      if (byte === 37) i++;
      continue;
    }
    const rest = String.fromCharCode(...template.subarray(i, i + 12));
    const [item, flags, width, precision] = /^([-+ #0]*)(\d*)(?:\.(\d*))?/.exec(rest) as RegExpExecArray;
    if (flags.length > 5) lauxlib.luaL_error(L, to_luastring('invalid format (repeated flags)'));
    if (width.length > 2 || (precision ?? '').length > 2) {
      lauxlib.luaL_error(L, to_luastring('invalid format (width or precision too long)'));
    }
    i += item.length;
    const conversion = String.fromCharCode(template[i++] ?? 0);
    const spec: Spec = {
      flags,
      width: Number(width || 0),
      precision: precision === undefined ? undefined : Number(precision || 0),
    };
    arg++;
    if ('diouxX'.includes(conversion)) {
      out.push(...ascii(integerText(spec, conversion, lauxlib.luaL_checknumber(L, arg))));
    } else if ('eEfgG'.includes(conversion)) {
      out.push(...ascii(floatText(spec, conversion, lauxlib.luaL_checknumber(L, arg))));
    } else if (conversion === 'c') {
      out.push(...padded(spec, [Number(BigInt.asUintN(8, int64(lauxlib.luaL_checknumber(L, arg))))]));
    } else if (conversion === 'q') {
      out.push(...quoted(lauxlib.luaL_checklstring(L, arg)));
    } else if (conversion === 's') {
      const bytes = lauxlib.luaL_checklstring(L, arg);
      out.push(...padded(spec, spec.precision === undefined ? bytes : bytes.subarray(0, spec.precision)));
    } else {
      lauxlib.luaL_error(L, to_luastring(`invalid option '%${conversion}' to 'format'`));
    }
  }
  lua.lua_pushstring(L, Uint8Array.from(out));
  return 1;
}

/** Sets (or, with undefined, removes) `field` of the global table `table`. */
function setField(L: LuaState, table: string, field: string, fn: fengari.JsFunction | undefined): void {
  lua.lua_getglobal(L, table);
  if (fn) lua.lua_pushjsfunction(L, fn);
  else lua.lua_pushnil(L);
  lua.lua_setfield(L, -2, field);
  lua.lua_pop(L, 1);
}

/**
 * Opens what Redis opens of Lua 5.1's libraries in `L`: base, string, table and math, without 5.3's
 * additions, without what reads the outside (print, load, dofile, math.random), with unpack global,
 * and a table.sort that draws no random pivot.
 */
export function openLua51(L: LuaState): void {
  patchNumbers();
  const libraries: [string, fengari.JsFunction][] = [
    ['_G', lualib.luaopen_base],
    ['string', lualib.luaopen_string],
    ['table', lualib.luaopen_table],
    ['math', lualib.luaopen_math],
  ];
  for (const [name, open] of libraries) {
    lauxlib.luaL_requiref(L, name, open, true);
    lua.lua_pop(L, 1);
  }
  for (const name of ['collectgarbage', 'dofile', 'loadfile', 'load', 'print', 'rawlen']) {
    lua.lua_pushnil(L);
    lua.lua_setglobal(L, name);
  }
  pushText(L, 'Lua 5.1');
  lua.lua_setglobal(L, '_VERSION');
  // unpack is a global in 5.1, table.unpack in 5.3 (and absent from 5.1's table).
  lua.lua_getglobal(L, 'table');
  lua.lua_getfield(L, -1, 'unpack');
  lua.lua_setglobal(L, 'unpack');
  lua.lua_pop(L, 1);
  lua.lua_pushjsfunction(L, tostring);
  lua.lua_setglobal(L, 'tostring');
  lua.lua_pushjsfunction(L, error);
  lua.lua_setglobal(L, 'error');
  setField(L, 'string', 'format', format);
  setField(L, 'table', 'sort', sort);
  setField(L, 'math', 'floor', rounded(Math.floor));
  setField(L, 'math', 'ceil', rounded(Math.ceil));
  const removed: Record<string, string[]> = {
    string: ['pack', 'packsize', 'unpack'],
    table: ['move', 'pack', 'unpack'],
    math: ['tointeger', 'type', 'ult', 'maxinteger', 'mininteger', 'random', 'randomseed'],
  };
  for (const [table, fields] of Object.entries(removed)) {
    for (const field of fields) setField(L, table, field, undefined);
  }
}
