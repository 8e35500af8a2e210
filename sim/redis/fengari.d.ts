// The part of fengari (a Lua 5.3 VM in JavaScript, shipped without types) that the simulated Redis uses.
// Lua strings are byte arrays (Uint8Array); functions that take a name also take a JavaScript string.

declare module 'fengari' {
  namespace fengari {
    /** A Lua state (opaque). */
    interface LuaState {
      readonly __luaState: never;
    }
    /** A byte string, as Lua holds it. */
    type LuaString = Uint8Array;
    type JsFunction = (L: LuaState) => number;

    /** Where a stack level stands (lua_getstack, lua_getinfo). */
    interface LuaDebug {
      currentline: number;
      what: LuaString | null;
    }

    interface LuaApi {
      readonly LUA_OK: number;
      readonly LUA_REGISTRYINDEX: number;
      readonly LUA_TNIL: number;
      readonly LUA_TBOOLEAN: number;
      readonly LUA_TNUMBER: number;
      readonly LUA_TSTRING: number;
      readonly LUA_TTABLE: number;
      readonly LUA_TFUNCTION: number;
      readonly LUA_OPLT: number;
      readonly lua_Debug: new () => LuaDebug;

      lua_gettop(L: LuaState): number;
      lua_settop(L: LuaState, index: number): void;
      lua_pop(L: LuaState, count: number): void;
      lua_pushvalue(L: LuaState, index: number): void;
      lua_type(L: LuaState, index: number): number;

      lua_pushnil(L: LuaState): void;
      lua_pushboolean(L: LuaState, value: boolean): void;
      lua_pushnumber(L: LuaState, value: number): void;
      lua_pushstring(L: LuaState, value: LuaString | string): void;
      lua_pushjsfunction(L: LuaState, fn: JsFunction): void;
      lua_pushglobaltable(L: LuaState): void;

      lua_toboolean(L: LuaState, index: number): boolean;
      lua_tonumber(L: LuaState, index: number): number;
      lua_tolstring(L: LuaState, index: number): LuaString | null;
      lua_tojsstring(L: LuaState, index: number): string | null;

      lua_createtable(L: LuaState, arrayHint: number, recordHint: number): void;
      lua_getfield(L: LuaState, index: number, key: LuaString | string): number;
      lua_setfield(L: LuaState, index: number, key: LuaString | string): void;
      lua_rawget(L: LuaState, index: number): number;
      lua_rawset(L: LuaState, index: number): void;
      lua_rawgeti(L: LuaState, index: number, n: number): number;
      lua_rawseti(L: LuaState, index: number, n: number): void;
      lua_setmetatable(L: LuaState, index: number): void;
      lua_getglobal(L: LuaState, name: LuaString | string): number;
      lua_setglobal(L: LuaState, name: LuaString | string): void;

      lua_rawlen(L: LuaState, index: number): number;
      lua_compare(L: LuaState, a: number, b: number, op: number): boolean;
      lua_call(L: LuaState, nargs: number, nresults: number): void;
      lua_concat(L: LuaState, count: number): void;
      lua_pcall(L: LuaState, nargs: number, nresults: number, handler: number): number;
      lua_error(L: LuaState): never;
      lua_getstack(L: LuaState, level: number, ar: LuaDebug): number;
      lua_getinfo(L: LuaState, what: LuaString | string, ar: LuaDebug): number;
    }

    interface AuxApi {
      luaL_newstate(): LuaState;
      luaL_loadbuffer(L: LuaState, text: LuaString, size: number | null, name: LuaString | string): number;
      luaL_requiref(L: LuaState, name: LuaString | string, open: JsFunction, global: boolean): void;
      luaL_ref(L: LuaState, table: number): number;
      luaL_checkany(L: LuaState, arg: number): void;
      luaL_checktype(L: LuaState, arg: number, type: number): void;
      luaL_checknumber(L: LuaState, arg: number): number;
      luaL_checklstring(L: LuaState, arg: number): LuaString;
      luaL_optinteger(L: LuaState, arg: number, fallback: number): number;
      luaL_tolstring(L: LuaState, index: number): LuaString;
      luaL_where(L: LuaState, level: number): void;
      luaL_error(L: LuaState, format: LuaString, ...args: unknown[]): never;
    }

    interface Libraries {
      luaopen_base: JsFunction;
      luaopen_string: JsFunction;
      luaopen_table: JsFunction;
      luaopen_math: JsFunction;
    }
  }

  const fengari: {
    lua: fengari.LuaApi;
    lauxlib: fengari.AuxApi;
    lualib: fengari.Libraries;
    to_luastring(text: string, cache?: boolean): fengari.LuaString;
    to_jsstring(bytes: fengari.LuaString): string;
  };
  export = fengari;
}

// The VM's internals that decide how numbers are read and written (lua-51.ts replaces both).
declare module 'fengari/src/lobject.js' {
  import type { LuaState, LuaString } from 'fengari';

  /** A value slot of the VM. */
  interface TValue {
    value: unknown;
    ttisinteger(): boolean;
    setfltvalue(value: number): void;
    setsvalue(value: unknown): void;
  }
  const lobject: {
    /** Reads a numeral; returns its length + 1, or 0 when `text` is not one. */
    luaO_str2num: (text: LuaString, into: TValue) => number;
    /** Turns the number in `slot` into its text, in place. */
    luaO_tostring: (L: LuaState, slot: TValue) => void;
  };
  export = lobject;
}

declare module 'fengari/src/lstring.js' {
  import type { LuaState, LuaString } from 'fengari';

  const lstring: {
    /** Makes a VM string of `bytes`. */
    luaS_bless(L: LuaState, bytes: LuaString): unknown;
  };
  export = lstring;
}
