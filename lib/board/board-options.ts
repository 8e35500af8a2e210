/**
 * Options of RedisLockBoardModule, the lock board: a page and a JSON API in the application, showing
 * who holds each lock, since when, and who waits in line.
 */
import type { CanActivate, Type } from '@nestjs/common';
import { LockUsageError } from '../errors/lock-usage.error';
import type { LockService } from '../lock.service';
import { describeValue as describe } from '../options/describe-value';
import { checkKnownKeys } from '../options/option-checks';

export interface RedisLockBoardOptions {
  /**
   * Guards the page and the API: any Nest guard (a class, resolved from the application's providers or
   * created with its dependencies, or an instance), so the application's own authentication applies.
   * Without one, anyone who reaches the path sees the lock keys: set one outside local development.
   */
  guard?: Type<CanActivate> | CanActivate;
  /** Default true. false adds a "force release" button (LockService.forceRelease), logged, guarded. */
  readOnly?: boolean;
  /** The service whose locks are shown; default: the LockService of RedisLockModule (unnamed). */
  lockService?: LockService;
  /** Locks listed at most per refresh (1 to 10 000; default 500); the page says when there were more. */
  limit?: number;
  /** Recent timeouts and lost leases of this process kept for the page (0 to 1 000; default 50). */
  recentEvents?: number;
  /**
   * When to record this process's timeouts and lost leases: `while-viewed` (default) from a viewer's
   * first request until a minute after its last, so an unwatched board costs nothing; `always` from
   * start-up (every lock call then keeps a small record of itself).
   */
  history?: 'while-viewed' | 'always';
  /** The page's title. Default "Locks". */
  title?: string;
}

/** forRoot's options: where the board is mounted, and the rest. */
export interface RedisLockBoardModuleOptions extends RedisLockBoardOptions {
  /** The path the page is served at, its API under `<path>/api`. Default 'locks'. */
  path?: string;
}

export interface ResolvedBoardOptions {
  guard?: Type<CanActivate> | CanActivate;
  readOnly: boolean;
  lockService?: LockService;
  limit: number;
  recentEvents: number;
  history: 'while-viewed' | 'always';
  title: string;
}

const KNOWN: readonly string[] = [
  'guard',
  'readOnly',
  'lockService',
  'limit',
  'recentEvents',
  'history',
  'title',
  'path',
];

/** The mount path without slashes at its ends: letters, digits and - _ . ~ / only. */
export function resolveBoardPath(path: unknown = 'locks'): string {
  if (typeof path !== 'string') {
    throw new LockUsageError(
      `RedisLockBoardModule path must be a string such as 'locks', got ${describe(path)}.`,
    );
  }
  const trimmed = path.replace(/^\/+|\/+$/g, '');
  if (
    !/^[A-Za-z0-9\-_.~/]+$/.test(trimmed) ||
    trimmed.split('/').some((part) => part === '' || /^\.+$/.test(part))
  ) {
    throw new LockUsageError(
      `RedisLockBoardModule path ${describe(path)} is not a plain URL path: use letters, digits, - _ . ~ ` +
        `and / between non-empty parts, such as 'locks' or 'admin/locks'.`,
    );
  }
  return trimmed;
}

function isGuard(value: unknown): value is Type<CanActivate> | CanActivate {
  if (typeof value === 'function') return true;
  return (
    value !== null && typeof value === 'object' && typeof (value as CanActivate).canActivate === 'function'
  );
}

export function resolveBoardOptions(options: RedisLockBoardOptions | undefined): ResolvedBoardOptions {
  if (options !== undefined && (options === null || typeof options !== 'object')) {
    throw new LockUsageError(`RedisLockBoardModule options must be an object, got ${describe(options)}.`);
  }
  const given = options ?? {};
  checkKnownKeys(given, KNOWN, 'RedisLockBoardModule options');
  const {
    guard,
    readOnly = true,
    lockService,
    limit = 500,
    recentEvents = 50,
    history = 'while-viewed',
    title = 'Locks',
  } = given;
  if (guard !== undefined && !isGuard(guard)) {
    throw new LockUsageError(
      `RedisLockBoardModule guard must be a Nest guard (a class or an object with canActivate), got ${describe(guard)}.`,
    );
  }
  if (typeof readOnly !== 'boolean') {
    throw new LockUsageError(
      `RedisLockBoardModule readOnly must be true or false, got ${describe(readOnly)}.`,
    );
  }
  if (
    lockService !== undefined &&
    (lockService === null || typeof (lockService as LockService).list !== 'function')
  ) {
    throw new LockUsageError(
      `RedisLockBoardModule lockService must be a LockService, got ${describe(lockService)}.`,
    );
  }
  const integer = (name: string, value: unknown, max: number, min: number) => {
    if (!Number.isInteger(value) || (value as number) < min || (value as number) > max) {
      throw new LockUsageError(
        `RedisLockBoardModule ${name} must be an integer from ${min} to ${max}, got ${describe(value)}.`,
      );
    }
  };
  integer('limit', limit, 10_000, 1);
  integer('recentEvents', recentEvents, 1_000, 0);
  if (history !== 'while-viewed' && history !== 'always') {
    throw new LockUsageError(
      `RedisLockBoardModule history must be 'while-viewed' or 'always', got ${describe(history)}.`,
    );
  }
  if (typeof title !== 'string' || title.length > 200) {
    throw new LockUsageError(`RedisLockBoardModule title must be a string of at most 200 characters.`);
  }
  return { guard, readOnly, lockService, limit, recentEvents, history, title };
}
