/**
 * The keys of one simulated server, their types and their expiry. Expiry is lazy and exact: a key
 * whose expiry (ms) is before `nowMs` is gone the moment anything looks at it, as Redis has it (a key
 * expiring at T still exists during ms T; PTTL then says 0). `nowMs` is set by the server for each
 * command, and once for a whole script, whose time Redis freezes at its start.
 */
import { wrongType } from './replies';
import { SortedSet } from './sorted-set';

export interface TypeData {
  string: string;
  list: string[];
  hash: Map<string, string>;
  zset: SortedSet;
}
export type RedisType = keyof TypeData;

export type Value = { [T in RedisType]: { type: T; data: TypeData[T] } }[RedisType];

interface Entry {
  value: Value;
  /** When the key expires, ms; none: it never does. */
  expireAt?: number;
}

/** One key as snapshot() reports it: a list's items in order, a hash's fields and a set's members sorted. */
export interface KeySnapshot {
  key: string;
  type: RedisType;
  value: string | string[] | [string, string][] | [string, number][];
  pexpireAt?: number;
}

const EMPTY: { [T in RedisType]: () => TypeData[T] } = {
  string: () => '',
  list: () => [],
  hash: () => new Map(),
  zset: () => new SortedSet(),
};

export class Keyspace {
  private readonly entries = new Map<string, Entry>();
  /** The time every expiry is judged by, ms. */
  nowMs = 0;

  /** The live entry at `key`, after dropping it if it expired. */
  private entry(key: string): Entry | undefined {
    const entry = this.entries.get(key);
    if (entry?.expireAt !== undefined && entry.expireAt < this.nowMs) {
      this.entries.delete(key);
      return undefined;
    }
    return entry;
  }

  has(key: string): boolean {
    return this.entry(key) !== undefined;
  }

  typeOf(key: string): RedisType | undefined {
    return this.entry(key)?.value.type;
  }

  /** The data at `key` if it is of `type`; nothing if the key is missing; WRONGTYPE otherwise. */
  read<T extends RedisType>(key: string, type: T): TypeData[T] | undefined {
    const entry = this.entry(key);
    if (!entry) return undefined;
    if (entry.value.type !== type) throw wrongType();
    return entry.value.data as TypeData[T];
  }

  /** As read(), creating an empty one (no expiry) when missing: a write to a list, hash or set. */
  write<T extends Exclude<RedisType, 'string'>>(key: string, type: T): TypeData[T] {
    const found = this.read(key, type);
    if (found) return found;
    const data = EMPTY[type]();
    this.entries.set(key, { value: { type, data } as Value });
    return data;
  }

  /** Replaces the key with a string (SET), without expiry unless `expireAt`. */
  setString(key: string, data: string, expireAt?: number): void {
    this.entries.set(key, { value: { type: 'string', data }, expireAt });
  }

  /** Writes a string keeping the key's expiry (INCR). */
  updateString(key: string, data: string): void {
    const entry = this.entry(key);
    if (entry) entry.value = { type: 'string', data };
    else this.setString(key, data);
  }

  /** Redis deletes a list, hash or set once it is empty. */
  dropIfEmpty(key: string): void {
    const entry = this.entries.get(key);
    if (!entry) return;
    const { value } = entry;
    const size = value.type === 'list' ? value.data.length : value.type === 'string' ? 1 : value.data.size;
    if (size === 0) this.entries.delete(key);
  }

  delete(key: string): boolean {
    return this.entry(key) !== undefined && this.entries.delete(key);
  }

  /** The key's expiry, ms: undefined without one (or without the key; ask has() first). */
  expireAt(key: string): number | undefined {
    return this.entry(key)?.expireAt;
  }

  setExpire(key: string, at: number): void {
    const entry = this.entry(key);
    if (entry) entry.expireAt = at;
  }

  /** PTTL: ms left, -1 without expiry, -2 without the key. */
  ttl(key: string): number {
    const entry = this.entry(key);
    if (!entry) return -2;
    return entry.expireAt === undefined ? -1 : Math.max(0, entry.expireAt - this.nowMs);
  }

  /** The live keys, sorted. */
  keys(): string[] {
    return [...this.entries.keys()].filter((key) => this.entry(key)).sort();
  }

  flush(): void {
    this.entries.clear();
  }

  snapshot(): KeySnapshot[] {
    return this.keys().map((key) => {
      const { value, expireAt } = this.entries.get(key) as Entry;
      const out: KeySnapshot = { key, type: value.type, value: copy(value) };
      if (expireAt !== undefined) out.pexpireAt = expireAt;
      return out;
    });
  }
}

function copy(value: Value): KeySnapshot['value'] {
  switch (value.type) {
    case 'string':
      return value.data;
    case 'list':
      return [...value.data];
    case 'hash':
      return [...value.data.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    case 'zset':
      return value.data.entries().map(({ member, score }): [string, number] => [member, score]);
  }
}
