// Hostile input to the Nest layer: RedisLockModule.forRoot / forRootAsync options, @Locked templates and
// options (at class definition and against one call's arguments), and RedisLockHealthIndicator.isHealthy
// arguments (it never rejects: bad input is a `down` status that says what to pass).
import { describe, expect } from '@jest/globals';
import { Injectable, type ModuleMetadata } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { lastValueFrom, Observable, of } from 'rxjs';
import {
  Locked,
  LockService,
  LockUsageError,
  RedisLockHealthIndicator,
  type RedisLockHealthResult,
  RedisLockModule,
  type RedisLockModuleOptions,
} from '../../lib';
import { until } from '../support/lock-fixtures';
import { useRedis } from '../support/redis-server';
import {
  type Base,
  circular,
  closedPort,
  HUGE,
  hostileTable,
  type Row,
  throwingGetter,
  throwingProxy,
  throwingToString,
} from './hostile-fixtures';

const server = useRedis();

const OPTIONS = { error: LockUsageError, code: 'LOCK_INVALID_OPTIONS' } as const;
const KEY = { error: LockUsageError, code: 'LOCK_INVALID_KEY' } as const;

// ---------------------------------------------------------------------------------------------------------
// RedisLockModule.forRoot / forRootAsync
// ---------------------------------------------------------------------------------------------------------

interface Module extends Base {
  /** redis:// URL of a port where nothing listens: the module connects lazily, so compile never does. */
  nowhere: string;
  /** Compiles a testing module with `imports` (closed after the row). */
  compile(imports: ModuleMetadata['imports']): Promise<unknown>;
}

async function moduleSetup(base: Base): Promise<Module> {
  const nowhere = `redis://127.0.0.1:${await closedPort()}`;
  return {
    ...base,
    nowhere,
    async compile(imports) {
      const ref = await Test.createTestingModule({ imports }).compile();
      base.defer(() => ref.close());
      return ref;
    },
  };
}

// forRoot() and forRootAsync() throw synchronously, when the module is declared: the rows are async so
// that a throw and a failed compile are checked alike.
const forRoot =
  (options: unknown) =>
  async ({ compile }: Module) =>
    compile([RedisLockModule.forRoot(options as RedisLockModuleOptions)]);
/** forRoot with a connection that never connects (compile only), plus `extra`. */
const withUrl =
  (extra: Record<string, unknown>) =>
  async ({ compile, nowhere }: Module) =>
    compile([RedisLockModule.forRoot({ url: nowhere, ...extra } as RedisLockModuleOptions)]);
const factory =
  (make: (nowhere: string) => unknown) =>
  ({ compile, nowhere }: Module) =>
    compile([RedisLockModule.forRootAsync({ useFactory: () => make(nowhere) as RedisLockModuleOptions })]);

const ms = (name: string, got: string) =>
  new RegExp(`${name} must be an integer number of milliseconds between \\d+ and 2147483647, got ${got}\\.`);

const moduleRows: Row<Module>[] = [
  {
    name: 'forRoot(null)',
    run: forRoot(null),
    ...OPTIONS,
    message:
      /RedisLockModule\.forRoot\(\) needs an options object such as \{ url: 'redis:\/\/host:6379' \}, got null/,
  },
  {
    name: 'forRoot(a URL string instead of { url })',
    run: forRoot('redis://127.0.0.1:1'),
    ...OPTIONS,
    message: /forRoot\(\) needs an options object.*got "redis:\/\/127\.0\.0\.1:1"/,
  },
  {
    name: 'url a number',
    run: forRoot({ url: 6380 }),
    ...OPTIONS,
    message:
      /url must be a redis:\/\/ or rediss:\/\/ URL such as redis:\/\/user:pass@host:6379\/0 \(or an array of 3, 5 or 7 for a quorum\); it is not a string, got 6380/,
  },
  {
    name: 'url without a host (redis:// + an unset HOST)',
    run: forRoot({ url: 'redis://' }),
    ...OPTIONS,
    message: /url must be .*; it has no host, got "redis:\/\/"/,
  },
  {
    name: 'url with a port that is not a number',
    run: forRoot({ url: 'redis://127.0.0.1:notaport' }),
    ...OPTIONS,
    message: /url must be .*; it does not parse as a URL/,
  },
  {
    name: 'url of 10 MB',
    run: forRoot({ url: `redis://${HUGE}` }),
    ...OPTIONS,
    message: /url must be .*got "redis:\/\/k+…"/,
  },
  {
    name: 'client not a Redis client (a plain object)',
    run: forRoot({ client: { get() {}, set() {} } }),
    ...OPTIONS,
    message:
      /client must be an ioredis Redis or Cluster \(new Redis\(\.\.\.\)\), a node-redis client or Cluster \(createClient\(\), connected\), an array of 3, 5 or 7 such clients of independent masters, or a lock backend such as new MemoryLockBackend\(\); got an object\. To let the module connect, pass url or redis/,
  },
  {
    name: "url an array with a bad entry (a quorum's URLs)",
    run: forRoot({ url: ['redis://127.0.0.1:1', 'http://127.0.0.1:2', 'redis://127.0.0.1:3'] }),
    ...OPTIONS,
    message:
      /RedisLockModule \(url\[1\]\): url must be .*the scheme is not redis:\/\/ or rediss:\/\/, got "http:/,
  },
  {
    name: 'client an array of strings (a quorum given as URLs in the wrong option)',
    run: forRoot({ client: ['redis://127.0.0.1:1', 'redis://127.0.0.1:2', 'redis://127.0.0.1:3'] }),
    ...OPTIONS,
  },
  {
    name: 'client a URL string',
    run: forRoot({ client: 'redis://127.0.0.1:1' }),
    ...OPTIONS,
    message: /client must be an ioredis Redis or Cluster.*got "redis:\/\/127\.0\.0\.1:1"/,
  },
  {
    name: 'redis options a string (would spread into { 0: "l", ... } and reach localhost:6379)',
    run: forRoot({ redis: 'localhost' }),
    ...OPTIONS,
    message: /redis must be an object of ioredis options such as \{ host, port \}, got "localhost"/,
  },
  {
    name: 'redis options null (would mean localhost:6379)',
    run: forRoot({ redis: null }),
    ...OPTIONS,
    message: /redis must be an object of ioredis options.*got null/,
  },
  {
    name: 'claimWindow NaN',
    run: withUrl({ claimWindow: Number.NaN }),
    ...OPTIONS,
    message: ms('claimWindow', 'NaN'),
  },
  { name: 'claimWindow -1', run: withUrl({ claimWindow: -1 }), ...OPTIONS, message: ms('claimWindow', '-1') },
  {
    name: 'claimWindow 1e12',
    run: withUrl({ claimWindow: 1e12 }),
    ...OPTIONS,
    message: ms('claimWindow', '1000000000000'),
  },
  {
    name: 'unknown key "claimwindow"',
    run: withUrl({ claimwindow: 500 }),
    ...OPTIONS,
    message: /Unknown option "claimwindow" in the RedisLockModule options: did you mean "claimWindow"\?/,
  },
  {
    name: 'unknown key "host"',
    run: withUrl({ host: 'redis.internal' }),
    ...OPTIONS,
    message: /Unknown option "host" in the RedisLockModule options \(known: client, url, redis, gracePeriod/,
  },
  {
    name: 'unknown key "waitTimeout" at the top level',
    run: withUrl({ waitTimeout: 100 }),
    ...OPTIONS,
    message: /Unknown option "waitTimeout" .*go in defaults, as in \{ defaults: \{ waitTimeout/,
  },
  {
    name: 'prefix with braces',
    run: withUrl({ prefix: '{app}:' }),
    ...OPTIONS,
    message: /prefix .*without braces.*got "\{app\}:"/,
  },
  {
    name: 'prefix a number',
    run: withUrl({ prefix: 7 }),
    ...OPTIONS,
    message: /prefix must be a string.*got 7/,
  },
  {
    name: 'gracePeriod 1e12 (a Node timer would fire at once)',
    run: withUrl({ gracePeriod: 1e12 }),
    ...OPTIONS,
    message:
      /gracePeriod must be an integer number of milliseconds between 0 and 2147483647, got 1000000000000/,
  },
  {
    name: 'isGlobal (the module is always global)',
    run: withUrl({ isGlobal: false }),
    ...OPTIONS,
    message: /Unknown option "isGlobal" in the RedisLockModule options/,
  },
  {
    name: 'isGlobal beside useFactory',
    run: async () => RedisLockModule.forRootAsync({ useFactory: () => ({}), isGlobal: false } as never),
    ...OPTIONS,
    message: /Unknown option "isGlobal" in RedisLockModule\.forRootAsync\(\) \(known: /,
  },
  {
    name: 'name ""',
    run: withUrl({ name: '' }),
    ...OPTIONS,
    message: /name must be a non-empty string.*got ""/,
  },
  {
    name: 'name a Symbol',
    run: withUrl({ name: Symbol('n') }),
    ...OPTIONS,
    message: /name must be a non-empty string.*got a symbol/,
  },

  {
    name: 'httpErrors 0',
    run: withUrl({ httpErrors: 0 }),
    ...OPTIONS,
    message: /httpErrors must be true or false, got 0/,
  },
  {
    name: 'forRootAsync(null)',
    run: async ({ compile }) => compile([RedisLockModule.forRootAsync(null as never)]),
    ...OPTIONS,
    message: /forRootAsync\(\) needs an object with useFactory, useClass or useExisting, got null/,
  },
  {
    name: 'forRootAsync({}) without a provider',
    run: async ({ compile }) => compile([RedisLockModule.forRootAsync({})]),
    ...OPTIONS,
    message: /forRootAsync\(\) needs exactly one of useFactory, useClass or useExisting, got none/,
  },
  {
    name: 'forRootAsync with useFactory and useClass',
    run: async ({ compile }) =>
      compile([RedisLockModule.forRootAsync({ useFactory: () => ({}), useClass: class {} as never })]),
    ...OPTIONS,
    message: /exactly one of .*, got useFactory and useClass/,
  },
  {
    name: 'forRootAsync useFactory not a function',
    run: async ({ compile }) => compile([RedisLockModule.forRootAsync({ useFactory: 'config' as never })]),
    ...OPTIONS,
    message: /useFactory must be a function returning the options, got "config"/,
  },
  {
    name: 'useFactory returns null',
    run: factory(() => null),
    ...OPTIONS,
    message: /RedisLockModule options must be an object with client, url or redis, got null/,
  },
  {
    name: 'useFactory resolves to a URL string',
    run: factory(async (nowhere) => nowhere),
    ...OPTIONS,
    message: /options must be an object with client, url or redis, got "redis:/,
  },
  {
    name: 'useFactory returns options with a getter that throws',
    run: factory(() => throwingGetter('url')),
    ...OPTIONS,
    message: /Reading the option url threw \(getter url exploded\)/,
  },
  {
    name: 'useFactory returns options with httpErrors inside',
    run: factory((nowhere) => ({ url: nowhere, httpErrors: false })),
    ...OPTIONS,
    message: /"httpErrors" is not a connection or lock option; give it beside useFactory/,
  },
  {
    name: 'useFactory returns options with a negative claimWindow',
    run: factory((nowhere) => ({ url: nowhere, claimWindow: -5 })),
    ...OPTIONS,
    message: ms('claimWindow', '-5'),
  },
  {
    name: 'an empty prefix and a named configuration compile',
    accept: true,
    run: withUrl({ prefix: '', name: 'second' }),
  },
];

describe('hostile input: RedisLockModule options', () => hostileTable(moduleRows, server, moduleSetup));

// ---------------------------------------------------------------------------------------------------------
// RedisLockHealthIndicator.isHealthy(key, { timeout })
// ---------------------------------------------------------------------------------------------------------

interface Health extends Base {
  health: RedisLockHealthIndicator;
  /** An indicator on a client that was disconnected for good. */
  ended(): Promise<RedisLockHealthIndicator>;
}

async function healthSetup(base: Base): Promise<Health> {
  const indicator = (): { health: RedisLockHealthIndicator; locks: LockService } => {
    const client = base.server.client();
    const locks = new LockService(client);
    base.defer(async () => {
      await locks.close();
      client.disconnect();
    });
    return { health: new RedisLockHealthIndicator(locks), locks };
  };
  const { health, locks } = indicator();
  await locks.client.ping();
  return {
    ...base,
    health,
    async ended() {
      const { health, locks } = indicator();
      await locks.client.ping();
      locks.client.disconnect();
      await until(
        async () => locks.client.status,
        (status) => status === 'end',
        2_000,
      );
      return health;
    },
  };
}

/** isHealthy never rejects: each row expects one result, under one key. */
function healthRow(
  name: string,
  call: (ctx: Health) => Promise<RedisLockHealthResult>,
  key: string,
  status: 'up' | 'down',
  message?: RegExp,
): Row<Health> {
  return {
    name,
    accept: true,
    within: 1_500,
    run: call,
    after: (_, { value }) => {
      const result = value as RedisLockHealthResult;
      expect(Object.keys(result)).toEqual([key]);
      expect(result[key].status).toBe(status);
      if (message) expect(result[key].message).toMatch(message);
    },
  };
}

const badTimeout = (got: string) =>
  new RegExp(`^invalid timeout ${got}: give a positive integer of ms up to 2147483647$`);
const healthRows: Row<Health>[] = [
  ...(
    [
      ['NaN', Number.NaN, 'NaN'],
      ['-1', -1, '-1'],
      ['0', 0, '0'],
      ['Infinity', Infinity, 'Infinity'],
      ['1e12 (a Node timer would fire at once)', 1e12, '1000000000000'],
      ['a string', '100', '"100"'],
      ['a BigInt', 100n, '100n \\(a bigint\\)'],
      ['with a throwing toString', throwingToString, 'an object'],
    ] as const
  ).map(([what, timeout, got]) =>
    healthRow(
      `timeout ${what}`,
      ({ health }) => health.isHealthy('redis-lock', { timeout: timeout as never }),
      'redis-lock',
      'down',
      badTimeout(got),
    ),
  ),
  healthRow(
    'timeout 2**31-1, the largest a timer holds',
    ({ health }) => health.isHealthy('redis-lock', { timeout: 2 ** 31 - 1 }),
    'redis-lock',
    'up',
  ),
  healthRow(
    'options a string',
    ({ health }) => health.isHealthy('redis-lock', 'fast' as never),
    'redis-lock',
    'down',
    /^invalid options "fast": give an object such as \{ timeout: 1000 \}$/,
  ),
  healthRow(
    'options with a timeout getter that throws',
    ({ health }) => health.isHealthy('redis-lock', throwingGetter('timeout') as never),
    'redis-lock',
    'down',
    /^invalid options an object/,
  ),
  healthRow(
    'options null: the defaults',
    ({ health }) => health.isHealthy('redis', null as never),
    'redis',
    'up',
  ),
  ...(
    [
      ['42', 42, '42'],
      ['a Symbol', Symbol('k'), 'a symbol'],
      ['""', '', '""'],
      ['with a throwing toString', throwingToString, 'an object'],
    ] as const
  ).map(([what, key, got]) =>
    healthRow(
      `key ${what}: reported under 'redis-lock'`,
      ({ health }) => health.isHealthy(key as never),
      'redis-lock',
      'down',
      new RegExp(`^invalid key ${got}: give a non-empty string such as 'redis-lock'$`),
    ),
  ),
  healthRow(
    "a disconnected client (status 'end')",
    async (ctx) => (await ctx.ended()).isHealthy('redis', { timeout: 5_000 }),
    'redis',
    'down',
    /^Redis connection is end$/,
  ),
];

describe('hostile input: RedisLockHealthIndicator.isHealthy', () =>
  hostileTable(healthRows, server, healthSetup));

// ---------------------------------------------------------------------------------------------------------
// @Locked: at class definition
// ---------------------------------------------------------------------------------------------------------

/** Applies @Locked(template, options) to Hostile.m, as a class declaration would. */
function declare(template: unknown, options?: unknown): void {
  class Hostile {
    m(_arg?: unknown): void {}
  }
  const descriptor = Object.getOwnPropertyDescriptor(Hostile.prototype, 'm') as PropertyDescriptor;
  Locked(template as never, options as never)(Hostile.prototype, 'm', descriptor);
}

const declarationRows: Row<Base>[] = [
  ...(
    [
      ['a Symbol', Symbol('t'), 'symbol'],
      ['null', null, 'object'],
      ['a number', 42, 'number'],
      ['a String object', new String('order:<0>'), 'object'],
    ] as const
  ).map(
    ([what, template, type]): Row<Base> => ({
      name: `@Locked(template = ${what})`,
      sync: true,
      run: () => declare(template),
      ...KEY,
      message: new RegExp(
        `@Locked\\(\\) on Hostile\\.m: the key must be a template string such as 'order:<0>' or a function of the arguments, got ${type}`,
      ),
    }),
  ),
  ...(
    [
      ["'<0.__proto__>'", 'order:<0.__proto__>', /<0\.__proto__> has an invalid property name "__proto__"/],
      ["'<0.constructor.name>'", 'order:<0.constructor.name>', /has an invalid property name "constructor"/],
      ["'<-1>'", 'order:<-1>', /<-1> must start with an argument index/],
      ["'<0..id>'", 'order:<0..id>', /has an invalid property name ""/],
      ["'a\\n{<0>}'", 'a\n{<0>}', /braces would break the \{key\} hash tag; remove them/],
    ] as const
  ).map(
    ([what, template, message]): Row<Base> => ({
      name: `@Locked(${what})`,
      sync: true,
      run: () => declare(template),
      ...KEY,
      message: new RegExp(`on Hostile\\.m: .*${message.source}`),
    }),
  ),
  {
    name: "@Locked('order:<0>', waitTimeout Infinity) is a valid declaration (wait without limit)",
    sync: true,
    accept: true,
    run: () => declare('order:<0>', { waitTimeout: Number.POSITIVE_INFINITY }),
  },
  ...[10, 11, 1_000].map(
    (ttl): Row<Base> => ({
      name: `@Locked('order:<0>', ttl ${ttl}) is a valid declaration with the default claim window`,
      sync: true,
      accept: true,
      run: () => declare('order:<0>', { ttl }),
    }),
  ),
  {
    name: '@Locked(a 10 MB template) fails at definition, with a short message',
    sync: true,
    run: () => declare(HUGE),
    ...KEY,
    message: /^.{1,400}Hostile\.m: its fixed text is \d+ characters/s,
  },
  {
    name: '@Locked(a template with a lone surrogate) fails at definition',
    sync: true,
    run: () => declare('order:\uD800<0>'),
    ...KEY,
    message: /Hostile\.m.*lone surrogate/,
  },
  ...(
    [
      [
        'ttl 2**53',
        { ttl: 2 ** 53 },
        /ttl must be an integer number of milliseconds between 10 and 2147483647, got 9007199254740992/,
      ],
      [
        'ttl 9',
        { ttl: 9 },
        /ttl must be an integer number of milliseconds between 10 and 2147483647, got 9\./,
      ],
      ['ttl 10.5', { ttl: 10.5 }, /ttl must be .* between 10 and 2147483647, got 10\.5\./],
      ['ttl NaN', { ttl: Number.NaN }, /ttl must be .* between 10 and 2147483647, got NaN\./],
      ['ttl -1', { ttl: -1 }, /ttl must be .* between 10 and 2147483647, got -1\./],
      ['minHold -1', { minHold: -1 }, /minHold must be an integer number of milliseconds between 0 and/],
      ['minHold 2.5', { minHold: 2.5 }, /minHold must be .* got 2\.5\./],
      [
        'minHold longer than its ttl',
        { ttl: 1_000, minHold: 5_000 },
        /minHold \(5000 ms\) must not be longer than ttl \(1000 ms\)/,
      ],
      ['ttl 1e12', { ttl: 1e12 }, /ttl must be .* got 1000000000000/],
      ['ttl a Symbol', { ttl: Symbol('ttl') }, /ttl must be .* got a symbol/],
      [
        'waitTimeout -Infinity',
        { waitTimeout: -Infinity },
        /waitTimeout must be .* or Infinity to wait without limit, got -Infinity/,
      ],
      ['renew "false"', { renew: 'false' }, /renew must be true or false, got "false"/],
      ['onTimeout a Symbol', { onTimeout: Symbol('skip') }, /onTimeout must be 'throw' or 'skip'/],
      ['service 42', { service: 42 }, /service must be the non-empty name given to forRoot/],
      ['options null', null, /options must be an object/],
      ['options an array', [1_000], /options must be an object/],
      [
        'unknown option "waittimeout"',
        { waittimeout: 1 },
        /Unknown option "waittimeout" in its options: did you mean "waitTimeout"\?/,
      ],
      [
        'a ttl getter that throws',
        throwingGetter('ttl'),
        /Reading the option ttl threw \(getter ttl exploded\)/,
      ],
    ] as const
  ).map(
    ([what, options, message]): Row<Base> => ({
      name: `@Locked('order:<0>', ${what})`,
      sync: true,
      run: () => declare('order:<0>', options),
      ...OPTIONS,
      message: new RegExp(`@Locked\\(\\) on Hostile\\.m: ${message.source}`),
    }),
  ),
];

describe('hostile input: @Locked at class definition', () =>
  hostileTable(declarationRows, server, (base) => base));

// ---------------------------------------------------------------------------------------------------------
// @Locked: one call's arguments
// ---------------------------------------------------------------------------------------------------------

@Injectable()
class Orders {
  runs = 0;

  @Locked('order:<0>')
  async byArg(_arg: unknown) {
    this.runs++;
  }

  @Locked('order:<0.id>')
  async byPath(_arg: unknown) {
    this.runs++;
  }

  @Locked('order:<0.a.b>')
  async byDeepPath(_arg: unknown) {
    this.runs++;
  }

  @Locked(() => {
    throw new Error('template exploded');
  })
  async byThrowingFunction() {
    this.runs++;
  }

  @Locked((arg: unknown) => arg as string)
  async byFunction(_arg: unknown) {
    this.runs++;
  }

  @Locked('order:<0>')
  observe(_arg: unknown): Observable<string> {
    this.runs++;
    return of('ran');
  }
}

interface Calls extends Base {
  orders: Orders;
}

async function callSetup(base: Base): Promise<Calls> {
  const ref = await Test.createTestingModule({
    imports: [RedisLockModule.forRoot({ url: base.server.url, redis: { disconnectTimeout: 100 } })],
    providers: [Orders],
  }).compile();
  const app = ref.createNestApplication({ logger: false });
  base.defer(() => app.close());
  await app.init();
  const client = app.get(LockService).client;
  await until(
    async () => client.status,
    (status) => status === 'ready',
    2_000,
  );
  return { ...base, orders: app.get(Orders) };
}

const revoked = Proxy.revocable({}, {});
revoked.revoke();
const neverRan = ({ orders }: Calls) => expect(orders.runs).toBe(0);

const callRows: Row<Calls>[] = [
  ...(
    [
      ['a Symbol', Symbol('id'), /<0> is a symbol, not a string or number/],
      ['a function', () => 1, /<0> is a function, not a string or number/],
      [
        'a circular object',
        circular(),
        /<0> is an object; point at a string or number inside it, as in <0\.id>/,
      ],
      ['an object whose toString throws', throwingToString, /<0> is an object; point at/],
      ['a Buffer', Buffer.from('1'), /<0> is an object/],
      ['Infinity', Infinity, /<0> is Infinity, not a usable key part/],
      [
        'a 10 MB string',
        HUGE,
        /the key built from <0> is 10485766 characters, over the 1024-character limit/,
      ],
      ['a lone surrogate', 'id\uD800', /<0> holds half of a UTF-16 surrogate pair alone/],
      ['a string with braces', 'a{b}', /<0> holds a brace/],
    ] as const
  ).map(
    ([what, arg, message]): Row<Calls> => ({
      name: `@Locked('order:<0>') called with ${what}`,
      run: ({ orders }) => orders.byArg(arg),
      ...KEY,
      message: new RegExp(`@Locked\\('order:<0>'\\) on Orders\\.byArg: .*${message.source}`),
      after: neverRan,
    }),
  ),
  ...(
    [
      ['byPath', "'order:<0.id>'", 'a getter that throws', throwingGetter('id'), /reading 0\.id threw/],
      ['byPath', "'order:<0.id>'", 'a Proxy whose traps throw', throwingProxy(), /reading 0\.id threw/],
      ['byPath', "'order:<0.id>'", 'a revoked Proxy', revoked.proxy, /reading 0\.id threw/],
      ['byPath', "'order:<0.id>'", 'no argument', undefined, /<0\.id> is undefined at 0/],
      ['byDeepPath', "'order:<0.a.b>'", 'a circular path', { a: circular() }, /<0\.a\.b> is undefined/],
    ] as const
  ).map(
    ([method, template, what, arg, message]): Row<Calls> => ({
      name: `@Locked(${template}) called with ${what}`,
      run: ({ orders }) => orders[method](arg),
      ...KEY,
      message: new RegExp(
        `@Locked\\(${template.replace(/[.()]/g, '\\$&')}\\) on Orders\\.${method}: ${message.source}`,
      ),
      after: neverRan,
    }),
  ),
  {
    name: '@Locked(fn) whose function throws (a fault of the application, not of the call)',
    run: ({ orders }) => orders.byThrowingFunction(),
    error: LockUsageError,
    code: 'LOCK_KEY_FUNCTION_FAILED',
    message: /@Locked\(fn\) on Orders\.byThrowingFunction: the key function threw: template exploded$/,
    after: (ctx, { error }) => {
      neverRan(ctx);
      expect((error as Error).cause).toEqual(new Error('template exploded'));
    },
  },
  ...(
    [
      ['a Symbol', Symbol('k'), /the key function returned symbol, not a string/],
      ['a circular object', circular(), /the key function returned object, not a string/],
      ['a BigInt', 5n, /the key function returned bigint, not a string/],
      ['a 10 MB string', HUGE, /A lock key must be at most 1024 characters, got 10485760/],
      ['a lone surrogate', '\uDBFF', /lone surrogate/],
    ] as const
  ).map(
    ([what, arg, message]): Row<Calls> => ({
      name: `@Locked(fn) whose function returns ${what}`,
      run: ({ orders }) => orders.byFunction(arg),
      ...KEY,
      // The function's own failures say @Locked(fn), the key rules @Locked('fn'): either names it.
      message: new RegExp(`@Locked\\('?fn'?\\) on Orders\\.byFunction: .*${message.source}`),
      after: neverRan,
    }),
  ),
  {
    name: '@Locked Observable method called with a Symbol: the Observable errors',
    run: ({ orders }) => lastValueFrom(orders.observe(Symbol('id'))),
    ...KEY,
    message: /@Locked\('order:<0>'\) on Orders\.observe: <0> is a symbol/,
    after: neverRan,
  },
  ...(
    [
      ['a BigInt', 10n, 'order:10'],
      ['a newline and a NUL', 'a\nb\u0000c', 'order:a\nb\u0000c'],
      ['an emoji', '🔒', 'order:🔒'],
    ] as const
  ).map(
    ([what, arg, key]): Row<Calls> => ({
      name: `@Locked('order:<0>') called with ${what}: runs under "${JSON.stringify(key).slice(1, -1)}"`,
      accept: true,
      run: ({ orders }) => orders.byArg(arg),
      after: ({ orders }) => expect(orders.runs).toBe(1),
      keys: [`lock:{${key}}:fence`],
      probe: key,
    }),
  ),
  {
    name: "@Locked('order:<0.a.b>') called with a BigInt at the end: runs",
    accept: true,
    run: ({ orders }) => orders.byDeepPath({ a: { b: 7n } }),
    after: ({ orders }) => expect(orders.runs).toBe(1),
    keys: ['lock:{order:7}:fence'],
    probe: 'order:7',
  },
];

describe('hostile input: @Locked call arguments', () => hostileTable(callRows, server, callSetup));
