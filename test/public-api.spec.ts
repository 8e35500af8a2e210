// What the package's two entries export, name by name: `nestjs-redis-lock` (lib/index.ts) and
// `nestjs-redis-lock/testing` (lib/testing/index.ts). An entry exports what a user writes: the classes and
// functions the README, docs/ or the sample use, and the types of what a user passes or keeps (options, a
// lease, an event). A type reached through another (a field's, an error's detail) is read through it
// (`LockInfo['holders']`, `LockEvent['kind']`); the rest (the store seam, the metadata keys, defaults and
// helpers the code shares) stays in its module. A name added to or taken from an entry is a change to the
// package's API: it changes these lists, and CHANGELOG.md says why.
import { join } from 'node:path';
import { describe, expect, it } from '@jest/globals';
import ts from 'typescript';
import * as main from '../lib';
import * as testing from '../lib/testing';
import { userCompilerOptions } from './support/typescript-options';

const MAIN_VALUES = [
  'FencedStore',
  'InjectLockService',
  'InjectRedisLockHealth',
  'LOCK_CHANNELS',
  'LockAbortedError',
  'RequestClosedError',
  'LockError',
  'LockInterceptor',
  'LockLostError',
  'LockNotHeldError',
  'LockNotReplicatedError',
  'LockUsageError',
  'LockQuorumError',
  'LockService',
  'LockServiceClosedError',
  'LockShedError',
  'LockTimeoutError',
  'Locked',
  'LockedRoute',
  'MAX_KEYS',
  'MemoryLockBackend',
  'RedisLockBoardModule',
  'RedisLockHealthIndicator',
  'RedisLockModule',
  'RedisUnavailableError',
  'getLockBackendToken',
  'getLockServiceToken',
  'isRedisClient',
  'lockErrorResponse',
];

const MAIN_TYPES = [
  'AcquireOptions',
  'FencedStoreOptions',
  'FencedValue',
  'FencedWriteResult',
  'Lease',
  'ListLocksOptions',
  'LockBackend',
  'LockErrorCode',
  'LockErrorResponse',
  'LockEvent',
  'LockInfo',
  'LockKeyFunction',
  'LockKeyTemplate',
  'LockKeys',
  'LockUsageCode',
  'LockList',
  'LockLogger',
  'LockMode',
  'LockServiceOptions',
  'LockWarning',
  'LockedKeyWarning',
  'LockedMethodRunner',
  'LockedOptions',
  'RedisClient',
  'RedisLockBoardAsyncOptions',
  'RedisLockBoardModuleOptions',
  'RedisLockBoardOptions',
  'RedisLockHealthOptions',
  'RedisLockHealthResult',
  'RedisLockHealthStatus',
  'RedisLockModuleExtras',
  'KeyScope',
  'RedisLockModuleOptions',
  'ServerReport',
  'ServerRisk',
  'TelemetryOptions',
  'TryAcquireOptions',
];

const TESTING_VALUES = ['LockService', 'MemoryLockBackend', 'RedisLockTestingModule', 'getLockBackendToken'];

const TESTING_TYPES = ['LockedMethodRunner', 'RedisLockTestingOptions'];

const sorted = (names: Iterable<string>) => [...names].sort();

/** The names an entry's typings export, split into values (also there at run time) and types only. */
function typedExports(entry: string): { values: string[]; types: string[] } {
  const root = process.cwd();
  const file = join(root, entry);
  const program = ts.createProgram([file], userCompilerOptions(root));
  const checker = program.getTypeChecker();
  const source = program.getSourceFile(file);
  const module = source && checker.getSymbolAtLocation(source);
  if (!module) throw new Error(`${entry} is not a module`);
  const values: string[] = [];
  const types: string[] = [];
  for (const symbol of checker.getExportsOfModule(module)) {
    const target = symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol;
    (target.flags & ts.SymbolFlags.Value ? values : types).push(symbol.name);
  }
  return { values: sorted(values), types: sorted(types) };
}

describe('the package entries', () => {
  it('nestjs-redis-lock exports these values at run time, and nothing else', () => {
    expect(sorted(Object.keys(main))).toEqual(sorted(MAIN_VALUES));
  });

  it('nestjs-redis-lock/testing exports these values at run time, and nothing else', () => {
    expect(sorted(Object.keys(testing))).toEqual(sorted(TESTING_VALUES));
  });

  it("nestjs-redis-lock's typings export these values and types, and nothing else", () => {
    expect(typedExports('lib/index.ts')).toEqual({ values: sorted(MAIN_VALUES), types: sorted(MAIN_TYPES) });
  });

  it("nestjs-redis-lock/testing's typings export these values and types, and nothing else", () => {
    expect(typedExports('lib/testing/index.ts')).toEqual({
      values: sorted(TESTING_VALUES),
      types: sorted(TESTING_TYPES),
    });
  });
});
