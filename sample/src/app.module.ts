// Placeholder sample: one LockService over REDIS_URL and a route that shows a lock's state. The full
// sample (orders, stock, cache stampede, cron singleton, health) builds on the Nest module.
import { Controller, Get, Inject, Module, type OnApplicationShutdown, Param } from '@nestjs/common';
import Redis from 'ioredis';
import { type LockInfo, LockService } from 'nestjs-redis-lock';

const REDIS = Symbol('REDIS');

@Controller()
class LocksController {
  constructor(@Inject(LockService) private readonly locks: LockService) {}

  @Get('locks/:key')
  inspect(@Param('key') key: string): Promise<LockInfo> {
    return this.locks.inspect(key);
  }
}

class RedisLifecycle implements OnApplicationShutdown {
  constructor(
    @Inject(REDIS) private readonly redis: Redis,
    @Inject(LockService) private readonly locks: LockService,
  ) {}

  async onApplicationShutdown(): Promise<void> {
    await this.locks.close();
    this.redis.disconnect();
  }
}

@Module({
  controllers: [LocksController],
  providers: [
    {
      provide: REDIS,
      useFactory: () => new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', { lazyConnect: true }),
    },
    { provide: LockService, inject: [REDIS], useFactory: (redis: Redis) => new LockService(redis) },
    RedisLifecycle,
  ],
})
export class AppModule {}
