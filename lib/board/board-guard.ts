/**
 * The lock board's guard: runs the guard the application gave (its own authentication) before every
 * page and API request. A guard class is taken from the application's providers when it is one of them,
 * else created with its dependencies, once.
 */
import { type CanActivate, type ExecutionContext, Inject, Injectable } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import { isObservable, lastValueFrom } from 'rxjs';
import type { ResolvedBoardOptions } from './board-options';

export const BOARD_OPTIONS = Symbol.for('nestjs-redis-lock: lock board options');

@Injectable()
export class BoardGuard implements CanActivate {
  private guard: Promise<CanActivate | undefined> | undefined;

  constructor(
    @Inject(BOARD_OPTIONS) private readonly options: ResolvedBoardOptions,
    private readonly moduleRef: ModuleRef,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    this.guard ??= this.resolve();
    const guard = await this.guard;
    if (!guard) return true;
    const result = guard.canActivate(context);
    return isObservable(result) ? lastValueFrom(result, { defaultValue: false }) : result;
  }

  private async resolve(): Promise<CanActivate | undefined> {
    const { guard } = this.options;
    if (guard === undefined || typeof guard !== 'function') return guard;
    try {
      return this.moduleRef.get(guard, { strict: false });
    } catch {
      return this.moduleRef.create(guard);
    }
  }
}
