import { Controller, Get } from '@nestjs/common';
import { HealthCheck, HealthCheckService } from '@nestjs/terminus';
import { RedisLockHealthIndicator } from 'nestjs-redis-lock';

@Controller()
export class OpsController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly redisLock: RedisLockHealthIndicator,
  ) {}

  @Get('health')
  @HealthCheck()
  check() {
    return this.health.check([() => this.redisLock.isHealthy('redis-lock', { timeout: 500 })]);
  }
}
