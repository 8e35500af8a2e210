// Hostile input to FencedStore: its constructor, set() and get(). Bad arguments are a LockUsageError
// before anything is sent, so no resource key appears in Redis; odd-but-valid ones simply work.
import { describe, expect } from '@jest/globals';
import type { Redis } from 'ioredis';
import { FencedStore, LockError, LockUsageError } from '../../lib';
import { useRedis } from '../support/redis-server';
import {
  type Base,
  HUGE,
  hostileTable,
  type Row,
  throwingGetter,
  throwingToString,
} from './hostile-fixtures';

const server = useRedis();

interface Fenced extends Base {
  client: Redis;
  store: FencedStore;
}

function setup(base: Base): Fenced {
  const client = base.server.client();
  base.defer(() => client.disconnect());
  return { ...base, client, store: new FencedStore(client) };
}

const OPTIONS = { error: LockUsageError, code: 'LOCK_INVALID_OPTIONS' } as const;

const rows: Row<Fenced>[] = [
  ...(
    [
      ['undefined', undefined],
      ['a URL string', 'redis://127.0.0.1:6379'],
      ['a plain object', { get() {} }],
      ['a Symbol', Symbol('redis')],
    ] as const
  ).map(
    ([what, client]): Row<Fenced> => ({
      name: `new FencedStore(client = ${what})`,
      sync: true,
      run: () => new FencedStore(client as never),
      ...OPTIONS,
      message:
        /FencedStore needs a Redis client \(ioredis new Redis\(\.\.\.\) or new Cluster\(\.\.\.\), or node-redis createClient\(\) or createCluster\(\)\), got/,
    }),
  ),
  ...(
    [
      [
        'commandTimeout NaN',
        { commandTimeout: Number.NaN },
        /commandTimeout must be an integer number of milliseconds between 1 and 2147483647, got NaN/,
      ],
      ['commandTimeout 1e12', { commandTimeout: 1e12 }, /commandTimeout must be .* got 1000000000000/],
      ['options a string', 'fast', /FencedStore options must be an object, got "fast"/],
    ] as const
  ).map(
    ([what, options, message]): Row<Fenced> => ({
      name: `new FencedStore(client, ${what})`,
      sync: true,
      run: ({ client }) => new FencedStore(client, options as never),
      ...OPTIONS,
      message,
    }),
  ),
  ...(
    [
      ['key empty', ['', 1, 'v'], /A fenced key must be a non-empty string .*got ""/],
      [
        'key a Buffer',
        [Buffer.from('r'), 1, 'v'],
        /fenced key must be a non-empty string.*got a Buffer of 1 bytes/,
      ],
      ['key a Symbol', [Symbol('r'), 1, 'v'], /got a symbol/],
      ['key with a throwing toString', [throwingToString, 1, 'v'], /got an object/],
      ['key a lone surrogate', ['r\uD800', 1, 'v'], /fenced key must be well-formed Unicode.*base64/],
      [
        'fence NaN',
        ['r', Number.NaN, 'v'],
        /fence must be a lease's fence \(a non-negative safe integer\), got NaN\. Pass lease\.fence/,
      ],
      ['fence -1', ['r', -1, 'v'], /fence must be .* got -1/],
      ['fence 2**53', ['r', 2 ** 53, 'v'], /fence must be .* got 9007199254740992/],
      ['fence a string', ['r', '1', 'v'], /fence must be .* got "1"/],
      ['fence a BigInt', ['r', 1n, 'v'], /fence must be .* got 1n/],
      [
        'value a Buffer',
        ['r', 1, Buffer.from('v')],
        /fenced value must be a string, got a Buffer of 1 bytes\. Serialize/,
      ],
      ['value null', ['r', 1, null], /fenced value must be a string, got null/],
      [
        'value an object',
        ['r', 1, { id: 1 }],
        /fenced value must be a string, got an object\. Serialize objects with JSON\.stringify/,
      ],
      [
        'value a lone surrogate',
        ['r', 1, 'v\uDC00'],
        /fenced value must be well-formed Unicode.*U\+FFFD.*base64/,
      ],
      [
        'ttl NaN',
        ['r', 1, 'v', { ttl: Number.NaN }],
        /ttl must be a non-negative safe integer of ms .*got NaN/,
      ],
      ['ttl -1', ['r', 1, 'v', { ttl: -1 }], /ttl must be .* got -1/],
      ['ttl 2**53', ['r', 1, 'v', { ttl: 2 ** 53 }], /ttl must be .* got 9007199254740992/],
      ['ttl a string', ['r', 1, 'v', { ttl: '100' }], /ttl must be .* got "100"/],
      ['a ttl getter that throws', ['r', 1, 'v', throwingGetter('ttl')], /Reading the option ttl threw/],
      ['options a string', ['r', 1, 'v', 'forever'], /set\(\) options must be an object, got "forever"/],
    ] as const
  ).map(
    ([what, args, message]): Row<Fenced> => ({
      name: `set(${what})`,
      run: ({ store }) => (store.set as (...a: unknown[]) => Promise<unknown>)(...args),
      ...OPTIONS,
      message,
    }),
  ),
  ...(
    [
      ['undefined', undefined],
      ['42', 42],
      ['a Buffer', Buffer.from('r')],
      ['10 MB with a lone surrogate', `${HUGE}\uD800`],
    ] as const
  ).map(
    ([what, key]): Row<Fenced> => ({
      name: `get(key = ${what})`,
      run: ({ store }) => store.get(key as never),
      ...OPTIONS,
      message: /A fenced key must be/,
    }),
  ),
  {
    name: 'set over a key of another type: a LOCK_REDIS_ERROR, the key untouched',
    run: async ({ client, store }) => {
      await client.set('r', 'a string, not a hash');
      return store.set('r', 1, 'v');
    },
    error: LockError,
    code: 'LOCK_REDIS_ERROR',
    message: /Redis rejected a fenced store command for "r": .*WRONGTYPE.*used by something else/,
    after: async ({ client }) => expect(await client.get('r')).toBe('a string, not a hash'),
    keys: ['r'],
  },
  {
    name: 'keys with braces, newlines and NUL, a ttl of 1e12 ms: accepted (resource keys are the app’s own)',
    accept: true,
    run: async ({ store }) => {
      expect(await store.set('{user:1}:\n\u0000', 7, 'v', { ttl: 1e12 })).toEqual({
        written: true,
        fence: 7,
      });
      expect(await store.get('{user:1}:\n\u0000')).toEqual({ value: 'v', fence: 7 });
    },
    keys: ['{user:1}:\n\u0000'],
  },
];

describe('hostile input: FencedStore', () => hostileTable(rows, server, setup));
