import { Controller, Get, Param } from '@nestjs/common';
import { HealthCheck, HealthCheckService } from '@nestjs/terminus';
import { type LockInfo, LockService, RedisLockHealthIndicator } from 'nestjs-redis-lock';
import { Data } from '../data';

@Controller()
export class OpsController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly redisLock: RedisLockHealthIndicator,
    private readonly locks: LockService,
    private readonly data: Data,
  ) {}

  @Get('health')
  @HealthCheck()
  check() {
    return this.health.check([() => this.redisLock.isHealthy('redis-lock', { timeout: 500 })]);
  }

  /** What the lock says about a key: holder, ttl left, waiters queued, last fencing token. */
  @Get('locks/:key')
  async inspect(@Param('key') key: string): Promise<LockInfo & { instance: string }> {
    return { ...(await this.locks.inspect(key)), instance: this.data.instance };
  }
}
