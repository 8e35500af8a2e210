import { Inject } from '@nestjs/common';
import { getLockServiceToken, getRedisLockHealthToken } from './redis-lock.tokens';

/** Injects the LockService of configuration `name` (the unnamed one when omitted). */
export const InjectLockService = (name?: string): ParameterDecorator & PropertyDecorator =>
  Inject(getLockServiceToken(name));

/** Injects the health indicator of configuration `name` (the unnamed one when omitted). */
export const InjectRedisLockHealth = (name?: string): ParameterDecorator & PropertyDecorator =>
  Inject(getRedisLockHealthToken(name));
