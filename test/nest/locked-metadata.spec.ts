// The @Locked wrapper looks like the method it wraps, whichever side of Nest's and Swagger's decorators it
// sits on: same `this`, name, length and metadata, so the route, its guard, pipe and status code, the lock
// itself and the Swagger document all work with @Locked above the others and with @Locked below them.
import { beforeEach, describe, expect, it } from '@jest/globals';
import {
  Body,
  type CanActivate,
  Controller,
  type ExecutionContext,
  Get,
  HttpCode,
  Inject,
  Injectable,
  Param,
  type PipeTransform,
  Post,
  UseGuards,
  UsePipes,
} from '@nestjs/common';
import {
  GUARDS_METADATA,
  HTTP_CODE_METADATA,
  METHOD_METADATA,
  PATH_METADATA,
  PIPES_METADATA,
} from '@nestjs/common/constants';
import { ApiOperation, DocumentBuilder, SwaggerModule } from '@nestjs/swagger';
import request from 'supertest';
import { Locked, LockService, RedisLockModule } from '../../lib';
import { LOCKED_METADATA } from '../../lib/nest/redis-lock.constants';
import { bootApp } from '../support/nest-apps';
import { useRedis } from '../support/redis-server';
import { connection, Meter, queued, send } from './locked-fixtures';

const server = useRedis();
let meter: Meter;
/** Request paths the guard saw. */
let guarded: string[];
/** `this` of each handler call. */
let selves: unknown[];

beforeEach(() => {
  meter = new Meter();
  guarded = [];
  selves = [];
});

@Injectable()
class TokenGuard implements CanActivate {
  canActivate(context: ExecutionContext): boolean {
    const req = context.switchToHttp().getRequest<{ path: string; headers: Record<string, unknown> }>();
    guarded.push(req.path);
    return req.headers['x-token'] === 'ok';
  }
}

/** Upper-cases string arguments: shows that the pipe ran, and that the key is read after it. */
@Injectable()
class UpperCasePipe implements PipeTransform {
  transform(value: unknown): unknown {
    return typeof value === 'string' ? value.toUpperCase() : value;
  }
}

@Injectable()
class Audit {
  readonly name = 'audit';
}

/** What both controllers answer: reads `this`, so a wrapper that lost it would fail here. */
async function respond(self: { audit: Audit; locks: LockService }, id: string, note: string | undefined) {
  selves.push(self);
  await meter.pass(id);
  return { id, note, audit: self.audit.name, key: self.locks.currentLease()?.key };
}

@Controller('above')
class AboveController {
  constructor(
    readonly audit: Audit,
    @Inject(LockService) readonly locks: LockService,
  ) {}

  @Locked('meta:<0>')
  @Post(':id')
  @HttpCode(202)
  @UseGuards(TokenGuard)
  @UsePipes(UpperCasePipe)
  @ApiOperation({ summary: 'Locked above the others' })
  async handle(@Param('id') id: string, @Body() body: { note?: string }) {
    return respond(this, id, body?.note);
  }

  @Locked('meta:above-list')
  @Get()
  @ApiOperation({ summary: 'List, locked above' })
  list() {
    selves.push(this);
    return { key: this.locks.currentLease()?.key };
  }
}

@Controller('below')
class BelowController {
  constructor(
    readonly audit: Audit,
    @Inject(LockService) readonly locks: LockService,
  ) {}

  @Post(':id')
  @HttpCode(202)
  @UseGuards(TokenGuard)
  @UsePipes(UpperCasePipe)
  @ApiOperation({ summary: 'Locked below the others' })
  @Locked('meta:<0>')
  async handle(@Param('id') id: string, @Body() body: { note?: string }) {
    return respond(this, id, body?.note);
  }

  @Get()
  @ApiOperation({ summary: 'List, locked below' })
  @Locked('meta:below-list')
  list() {
    selves.push(this);
    return { key: this.locks.currentLease()?.key };
  }
}

/** The same declarations without @Locked: the metadata the wrappers must carry. */
class PlainController {
  @Post(':id')
  @HttpCode(202)
  @UseGuards(TokenGuard)
  @UsePipes(UpperCasePipe)
  @ApiOperation({ summary: 'Locked above the others' })
  async handle(@Param('id') _id: string, @Body() _body: { note?: string }) {}
}

const controllers = { above: AboveController, below: BelowController } as const;
type Order = keyof typeof controllers;
const orders: Order[] = ['above', 'below'];

let apps = 0;

async function app() {
  const prefix = `meta${++apps}:`;
  const nest = await bootApp({
    imports: [RedisLockModule.forRoot({ ...connection(server()), prefix })],
    controllers: [AboveController, BelowController],
    providers: [Audit],
  });
  return { nest, prefix, locks: nest.get(LockService), http: () => request(nest.getHttpServer()) };
}

describe('@Locked keeps the identity of the method', () => {
  it.each(orders)('@Locked %s the others: the wrapper has the name and length of the method', (order) => {
    const handle = controllers[order].prototype.handle;
    expect(handle.name).toBe('handle');
    expect(handle.length).toBe(2);
    expect(controllers[order].prototype.list.name).toBe('list');
  });

  it.each(orders)('@Locked %s the others: the wrapper carries every metadata key of the method', (order) => {
    const handle = controllers[order].prototype.handle;
    const plain = PlainController.prototype.handle;
    const keys = Reflect.getOwnMetadataKeys(handle);
    expect(new Set(keys)).toEqual(new Set([...Reflect.getOwnMetadataKeys(plain), LOCKED_METADATA]));
    for (const key of [PATH_METADATA, METHOD_METADATA, HTTP_CODE_METADATA, GUARDS_METADATA, PIPES_METADATA]) {
      expect(keys).toContain(key);
    }
    for (const key of Reflect.getOwnMetadataKeys(plain)) {
      if (key === 'swagger/apiOperation') continue;
      expect(Reflect.getOwnMetadata(key, handle)).toEqual(Reflect.getOwnMetadata(key, plain));
    }
    expect(Reflect.getOwnMetadata('swagger/apiOperation', handle)).toMatchObject({
      summary: `Locked ${order} the others`,
    });
  });
});

describe('@Locked above and below route decorators, over HTTP', () => {
  it.each(orders)(
    '@Locked %s: the route answers with its @HttpCode, after the pipe ran, with `this` the controller',
    async (order) => {
      const { nest, http } = await app();
      meter.open();
      const response = await http().post(`/${order}/abc`).set('x-token', 'ok').send({ note: 'n' });
      expect(response.status).toBe(202);
      expect(response.body).toEqual({ id: 'ABC', note: 'n', audit: 'audit', key: 'meta:ABC' });
      expect(selves).toEqual([nest.get(controllers[order])]);
      expect(guarded).toEqual([`/${order}/abc`]);
    },
  );

  it.each(orders)('@Locked %s: the guard runs, and a refused request never takes the lock', async (order) => {
    const { http, prefix } = await app();
    const response = await http().post(`/${order}/abc`).send({});
    expect(response.status).toBe(403);
    expect(guarded).toEqual([`/${order}/abc`]);
    expect(meter.entered).toBe(0);
    expect(await server().keys(`${prefix}*`)).toEqual([]);
  });

  it.each(orders)('@Locked %s: @Get routes work under the lock', async (order) => {
    const { nest, http } = await app();
    const response = await http().get(`/${order}`);
    expect(response.status).toBe(200);
    expect(response.body).toEqual({ key: `meta:${order}-list` });
    expect(selves).toEqual([nest.get(controllers[order])]);
  });

  it.each(orders)('@Locked %s: two concurrent requests for one key exclude each other', async (order) => {
    const { http, locks } = await app();
    const first = send(http().post(`/${order}/x`).set('x-token', 'ok').send({}));
    await meter.entries(1);
    const second = send(http().post(`/${order}/x`).set('x-token', 'ok').send({}));
    await queued(locks, 'meta:X', 1);
    expect(meter.entered).toBe(1);
    meter.open();
    expect((await first).status).toBe(202);
    expect((await second).status).toBe(202);
    expect(meter.entered).toBe(2);
    expect(meter.max).toBe(1);
  });

  it('the Swagger document has each operation, its summary, path parameter and operationId, in both orders', async () => {
    const { nest } = await app();
    const document = SwaggerModule.createDocument(nest, new DocumentBuilder().build());
    for (const order of orders) {
      const post = document.paths[`/${order}/{id}`]?.post;
      expect(post?.summary).toBe(`Locked ${order} the others`);
      expect(post?.operationId).toBe(`${controllers[order].name}_handle`);
      expect(post?.parameters).toEqual(
        expect.arrayContaining([expect.objectContaining({ name: 'id', in: 'path' })]),
      );
      expect(document.paths[`/${order}`]?.get?.summary).toBe(`List, locked ${order}`);
    }
  });
});
