import { Module } from '@nestjs/common';
import { ConfigurableModuleClass } from './redis-lock.module-definition';

/**
 * Distributed locks on Redis for Nest: `RedisLockModule.forRoot({ url })` (or `forRootAsync`) provides
 * LockService, LockInterceptor (behind @Locked) and RedisLockHealthIndicator, globally by default.
 */
@Module({})
export class RedisLockModule extends ConfigurableModuleClass {}
