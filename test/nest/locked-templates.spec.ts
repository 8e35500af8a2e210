// @Locked key templates end to end, on real Redis and real HTTP: placeholders and key functions resolve
// against the method's own arguments after Nest's pipes, and every doubtful value is a LockKeyError that
// names the method and the template, raised before anything is sent to Redis and before the method runs.
import { beforeEach, describe, expect, it } from '@jest/globals';
import {
  type ArgumentsHost,
  BadRequestException,
  Body,
  Catch,
  Controller,
  type ExceptionFilter,
  Get,
  Inject,
  Injectable,
  Param,
  ParseIntPipe,
  type PipeTransform,
  Post,
  Query,
} from '@nestjs/common';
import { APP_FILTER } from '@nestjs/core';
import { Observable, of } from 'rxjs';
import request from 'supertest';
import { Locked, LockService, LockUsageError, RedisLockModule } from '../../lib';
import { outcome } from '../support/lock-fixtures';
import { bootApp } from '../support/nest-apps';
import { useRedis } from '../support/redis-server';
import { connection, lockState, Meter, send } from './locked-fixtures';

const server = useRedis();
let meter: Meter;

beforeEach(() => {
  meter = new Meter();
});

class TransferDto {
  constructor(
    readonly from: { id: string },
    readonly amount: number,
  ) {}
}

/** Like ValidationPipe with `transform: true`: builds the DTO, and normalizes the account id on the way. */
@Injectable()
class TransferPipe implements PipeTransform {
  transform(value: { from?: { id?: unknown }; amount?: unknown }): TransferDto {
    const id = String(value.from?.id ?? '')
      .trim()
      .toLowerCase();
    return new TransferDto({ id }, Number(value.amount));
  }
}

@Controller()
class KeysController {
  runs = 0;

  constructor(@Inject(LockService) private readonly locks: LockService) {}

  @Post('orders/:id')
  @Locked('order:<0>')
  async pay(@Param('id', ParseIntPipe) id: number) {
    await meter.pass(id);
    return { key: this.locks.currentLease()?.key };
  }

  @Post('transfers')
  @Locked('account:<0.from.id>')
  async transfer(@Body(TransferPipe) dto: TransferDto) {
    await meter.pass(dto);
    return { key: this.locks.currentLease()?.key };
  }

  @Post('skus/:id')
  @Locked((id: number) => `sku:${id + 1}`)
  async nextSku(@Param('id', ParseIntPipe) _id: number) {
    return { key: this.locks.currentLease()?.key };
  }

  @Get('lookup')
  @Locked('lookup:<0>')
  async lookup(@Query('q') q?: string) {
    this.runs++;
    return { q };
  }
}

/** Calls made directly on the provider: every template form, and every way a key can be refused. */
@Injectable()
class Keyed {
  runs = 0;

  constructor(@Inject(LockService) private readonly locks: LockService) {}

  private key(): string | undefined {
    this.runs++;
    return this.locks.currentLease()?.key;
  }

  @Locked('first:<0>')
  first(_value: unknown) {
    return this.key();
  }

  @Locked('second:<1.id>')
  second(_a: unknown, _b?: unknown) {
    return this.key();
  }

  @Locked('nested:<0.a.b>')
  nested(_value: unknown) {
    return this.key();
  }

  @Locked('mixed:<1.id>/<0>/<2.a.b>')
  mixed(_a: unknown, _b: unknown, _c: unknown) {
    return this.key();
  }

  @Locked((id: number, dto: { sku: string }) => `sku:${dto.sku}:${id}`)
  byFunction(_id: number, _dto: { sku: string }) {
    return this.key();
  }

  @Locked(() => '')
  emptyFunction() {
    return this.key();
  }

  @Locked(() => 'a{b}')
  bracedFunction() {
    return this.key();
  }

  @Locked('stream:<0>')
  stream(_value: unknown): Observable<string | undefined> {
    return of(this.key());
  }
}

let apps = 0;
/** The key prefix of the latest application: each test's own, so it sees only its own keys. */
let prefix = '';

async function app(extraProviders: object[] = []) {
  prefix = `tpl${++apps}:`;
  return bootApp({
    imports: [RedisLockModule.forRoot({ ...connection(server()), prefix })],
    controllers: [KeysController],
    providers: [Keyed, ...(extraProviders as never[])],
  });
}

/** Nothing of any lock was written: no key under the prefix at all. */
async function expectNothingInRedis(): Promise<void> {
  expect(await server().keys(`${prefix}*`)).toEqual([]);
}

describe('@Locked key templates', () => {
  it.each<[string, (k: Keyed) => unknown, string]>([
    ['<0> is the first argument', (k) => k.first(42), 'first:42'],
    ['<1.id> is a property of the second argument', (k) => k.second('x', { id: 'u7' }), 'second:u7'],
    ['<0.a.b> follows a property path', (k) => k.nested({ a: { b: true } }), 'nested:true'],
    ['placeholders combine with text', (k) => k.mixed(3n, { id: 9 }, { a: { b: 'z' } }), 'mixed:9/3/z'],
    ['a function of the arguments', (k) => k.byFunction(5, { sku: 'A1' }), 'sku:A1:5'],
  ])('%s', async (_, call, key) => {
    const a = await app();
    await expect(call(a.get(Keyed))).resolves.toBe(key);
  });

  it('<0> is the argument after ParseIntPipe: /orders/007 locks order:7, and inspect sees it held', async () => {
    const a = await app();
    const locks = a.get(LockService);
    const response = send(request(a.getHttpServer()).post('/orders/007'));
    await meter.entries(1);
    expect((await locks.inspect('order:7')).held).toBe(true);
    expect((await locks.inspect('order:007')).held).toBe(false);
    meter.open();
    expect((await response).body).toEqual({ key: 'order:7' });
    await lockState(locks, 'order:7', (info) => !info.held);
  });

  it('<0.from.id> is read from the body a transforming pipe returned, not the raw JSON', async () => {
    const a = await app();
    const locks = a.get(LockService);
    const response = send(
      request(a.getHttpServer())
        .post('/transfers')
        .send({ from: { id: '  ACC-1 ' }, amount: '5' }),
    );
    await meter.entries(1);
    expect((await locks.inspect('account:acc-1')).held).toBe(true);
    meter.open();
    expect((await response).body).toEqual({ key: 'account:acc-1' });
  });

  it('a key function receives the piped arguments (a number, so 7 + 1 is sku:8, not sku:71)', async () => {
    const a = await app();
    const response = await request(a.getHttpServer()).post('/skus/7');
    expect(response.status).toBe(201);
    expect(response.body).toEqual({ key: 'sku:8' });
  });

  it.each<[string, (k: Keyed) => unknown, string, string, RegExp]>([
    [
      'a missing argument',
      (k) => k.second('only one'),
      'second',
      'second:<1.id>',
      /argument 1, but the call had 1/,
    ],
    ['an undefined argument', (k) => k.first(undefined), 'first', 'first:<0>', /<0> is undefined/],
    ['a null argument', (k) => k.first(null), 'first', 'first:<0>', /<0> is null/],
    ['null on the path', (k) => k.nested({ a: null }), 'nested', 'nested:<0.a.b>', /is null at 0\.a/],
    ['a missing property', (k) => k.nested({ a: {} }), 'nested', 'nested:<0.a.b>', /<0\.a\.b> is undefined/],
    ['an object where a scalar is needed', (k) => k.first({ id: 1 }), 'first', 'first:<0>', /an object/],
    ['an array where a scalar is needed', (k) => k.first(['a']), 'first', 'first:<0>', /an array/],
    ['NaN', (k) => k.first(Number.NaN), 'first', 'first:<0>', /is NaN/],
    ['an empty string', (k) => k.first(''), 'first', 'first:<0>', /empty string/],
    ['an empty key from a function', (k) => k.emptyFunction(), 'emptyFunction', 'fn', /must not be empty/],
    ['an opening brace in the result', (k) => k.first('a{'), 'first', 'first:<0>', /brace/],
    ['a closing brace in the result', (k) => k.first('}b'), 'first', 'first:<0>', /brace/],
    ['braces from a function', (k) => k.bracedFunction(), 'bracedFunction', 'fn', /brace/],
  ])(
    '%s is a key error (LOCK_INVALID_KEY) naming Keyed.method and the template; nothing runs or reaches Redis',
    async (_, call, method, template, why) => {
      const a = await app();
      const keyed = a.get(Keyed);
      const { error } = await outcome(Promise.resolve(call(keyed)));
      expect(error).toMatchObject({ code: 'LOCK_INVALID_KEY' });
      expect((error as LockUsageError).code).toBe('LOCK_INVALID_KEY');
      const message = (error as Error).message;
      expect(message).toContain(`Keyed.${method}`);
      expect(message).toContain(`'${template}'`);
      expect(message).toMatch(why);
      expect(keyed.runs).toBe(0);
      await expectNothingInRedis();
    },
  );

  it('an Observable method with a bad key errors its Observable with the key error, without running', async () => {
    const a = await app();
    const keyed = a.get(Keyed);
    const error = await new Promise((resolve) => keyed.stream(undefined).subscribe({ error: resolve }));
    expect(error).toMatchObject({ code: 'LOCK_INVALID_KEY' });
    expect((error as Error).message).toContain('Keyed.stream');
    expect(keyed.runs).toBe(0);
    await expectNothingInRedis();
  });

  it('over HTTP a key error is a 400 Bad Request (the request lacks what the key is made of), without Retry-After', async () => {
    const a = await app();
    const response = await request(a.getHttpServer()).get('/lookup');
    expect(response.status).toBe(400);
    expect(response.body).toMatchObject({ statusCode: 400, code: 'LOCK_INVALID_KEY' });
    expect(response.headers['retry-after']).toBeUndefined();
    expect(a.get(KeysController).runs).toBe(0);
    await expectNothingInRedis();
  });

  it("over HTTP the application's own filter receives a BadRequestException whose cause is the typed key error", async () => {
    const caught: BadRequestException[] = [];
    @Catch(BadRequestException)
    class BadRequestFilter implements ExceptionFilter {
      catch(error: BadRequestException, host: ArgumentsHost) {
        caught.push(error);
        host
          .switchToHttp()
          .getResponse<{ status(code: number): { json(body: unknown): void } }>()
          .status(400)
          .json({ code: (error.cause as LockUsageError).code });
      }
    }
    const a = await app([{ provide: APP_FILTER, useClass: BadRequestFilter }]);
    const response = await request(a.getHttpServer()).get('/lookup');
    expect(response.status).toBe(400);
    expect(response.body).toEqual({ code: 'LOCK_INVALID_KEY' });
    expect(caught).toHaveLength(1);
    const cause = caught[0].cause as LockUsageError;
    expect(cause).toMatchObject({ code: 'LOCK_INVALID_KEY' });
    expect(cause.message).toContain('KeysController.lookup');
    expect(cause.message).toContain("'lookup:<0>'");
    expect(a.get(KeysController).runs).toBe(0);
    await expectNothingInRedis();
  });
});
