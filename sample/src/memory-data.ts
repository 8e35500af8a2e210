/**
 * The sample's data when no Redis is found: the few Redis commands its services call, kept in this
 * process with Redis' semantics (string values, null for a missing key, negative list indexes counted
 * from the end, WRONGTYPE on a list read as a string), so the services run unchanged on either.
 * Like Redis it keeps no timers: an EX expiry is checked when the key is next looked at, so nothing here
 * keeps the process alive.
 */

/** The commands the sample's services use: ioredis' `Redis` and MemoryData both satisfy it. */
export interface DataCommands {
  get(key: string): Promise<string | null>;
  set(key: string, value: string): Promise<unknown>;
  set(key: string, value: string, expiry: 'EX', seconds: number): Promise<unknown>;
  incr(key: string): Promise<number>;
  del(...keys: string[]): Promise<number>;
  mget(...keys: string[]): Promise<Array<string | null>>;
  rpush(key: string, ...values: string[]): Promise<number>;
  ltrim(key: string, start: number, stop: number): Promise<unknown>;
  lrange(key: string, start: number, stop: number): Promise<string[]>;
}

interface Entry {
  value: string | string[];
  /** Date.now() at which the key is gone; undefined: no expiry. */
  expiresAt?: number;
}

const WRONGTYPE = 'WRONGTYPE Operation against a key holding the wrong kind of value';

export class MemoryData implements DataCommands {
  private readonly entries = new Map<string, Entry>();

  async get(key: string): Promise<string | null> {
    return this.string(key) ?? null;
  }

  async set(key: string, value: string, expiry?: 'EX', seconds?: number): Promise<'OK'> {
    let expiresAt: number | undefined;
    if (expiry === 'EX') {
      if (seconds === undefined || !Number.isInteger(seconds) || seconds <= 0) {
        throw new Error("ERR invalid expire time in 'set' command");
      }
      expiresAt = Date.now() + seconds * 1000;
    }
    // As in Redis, a plain SET drops any expiry the key had.
    this.entries.set(key, { value, expiresAt });
    return 'OK';
  }

  async incr(key: string): Promise<number> {
    const current = this.string(key) ?? '0';
    if (!/^-?\d+$/.test(current) || !Number.isSafeInteger(Number(current) + 1)) {
      throw new Error('ERR value is not an integer or out of range');
    }
    const next = Number(current) + 1;
    // INCR keeps the key's expiry.
    this.entries.set(key, { value: String(next), expiresAt: this.entries.get(key)?.expiresAt });
    return next;
  }

  async del(...keys: string[]): Promise<number> {
    let removed = 0;
    for (const key of keys) {
      if (this.entry(key) !== undefined) {
        this.entries.delete(key);
        removed++;
      }
    }
    return removed;
  }

  /** Unlike GET, MGET answers null for a key of another type rather than failing. */
  async mget(...keys: string[]): Promise<Array<string | null>> {
    return keys.map((key) => {
      const value = this.entry(key)?.value;
      return typeof value === 'string' ? value : null;
    });
  }

  async rpush(key: string, ...values: string[]): Promise<number> {
    const list = this.list(key);
    list.push(...values);
    if (!this.entries.has(key)) this.entries.set(key, { value: list });
    return list.length;
  }

  async ltrim(key: string, start: number, stop: number): Promise<'OK'> {
    const list = this.list(key);
    const [from, to] = range(list.length, start, stop);
    // Redis deletes a list that becomes empty (a missing key is an empty list: nothing to do).
    if (from > to) this.entries.delete(key);
    else {
      list.splice(to + 1);
      list.splice(0, from);
    }
    return 'OK';
  }

  async lrange(key: string, start: number, stop: number): Promise<string[]> {
    const list = this.list(key);
    const [from, to] = range(list.length, start, stop);
    return from > to ? [] : list.slice(from, to + 1);
  }

  /** The live entry of a key, dropping it first if it has expired (Redis' lazy expiry). */
  private entry(key: string): Entry | undefined {
    const entry = this.entries.get(key);
    if (entry?.expiresAt !== undefined && entry.expiresAt <= Date.now()) {
      this.entries.delete(key);
      return undefined;
    }
    return entry;
  }

  private string(key: string): string | undefined {
    const value = this.entry(key)?.value;
    if (Array.isArray(value)) throw new Error(WRONGTYPE);
    return value;
  }

  /** The key's list (a new empty one, not stored, when the key is missing). */
  private list(key: string): string[] {
    const value = this.entry(key)?.value ?? [];
    if (!Array.isArray(value)) throw new Error(WRONGTYPE);
    return value;
  }
}

/**
 * Redis' reading of a start..stop range over a list of `length` items: negative indexes count from the
 * end, start is clamped at 0 and stop at the last item. Returns inclusive bounds; from > to is empty.
 */
function range(length: number, start: number, stop: number): [number, number] {
  const from = Math.max(0, start < 0 ? length + start : start);
  const to = Math.min(length - 1, stop < 0 ? length + stop : stop);
  return [from, to];
}
