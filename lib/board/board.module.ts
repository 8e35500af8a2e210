/**
 * RedisLockBoardModule: the lock board, a page and a JSON API in the application (off unless
 * imported). `forRoot({ path: 'locks', guard })` or `forRootAsync({ path, imports, inject, useFactory })`,
 * whose factory gives every option but the path (routes are fixed when the module is declared).
 */
import {
  type DynamicModule,
  type FactoryProvider,
  Inject,
  type InjectionToken,
  type MiddlewareConsumer,
  Module,
  type ModuleMetadata,
  type NestModule,
  type OptionalFactoryDependency,
  type Provider,
  type Type,
} from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import { LockUsageError } from '../errors/lock-usage.error';
import { LockService } from '../lock.service';
import { boardController } from './board.controller';
import { BoardData } from './board-data';
import { BOARD_OPTIONS, BoardGuard } from './board-guard';
import { boardHeaders } from './board-headers';
import {
  type RedisLockBoardModuleOptions,
  type RedisLockBoardOptions,
  type ResolvedBoardOptions,
  resolveBoardOptions,
  resolveBoardPath,
} from './board-options';

export interface RedisLockBoardAsyncOptions extends Pick<ModuleMetadata, 'imports'> {
  /** The path the page is served at (default 'locks'): given here, since routes are fixed up front. */
  path?: string;
  inject?: Array<InjectionToken | OptionalFactoryDependency>;
  useFactory: (...args: never[]) => RedisLockBoardOptions | Promise<RedisLockBoardOptions>;
}

/**
 * The data behind the page: the given LockService, or RedisLockModule's (injected, so it exists first;
 * global by default, else looked up in the whole application).
 */
const boardData: FactoryProvider<BoardData> = {
  provide: BoardData,
  inject: [BOARD_OPTIONS, ModuleRef, { token: LockService, optional: true }],
  useFactory: (options: ResolvedBoardOptions, moduleRef: ModuleRef, injected?: LockService) =>
    new BoardData(options.lockService ?? injected ?? moduleLockService(moduleRef), options),
};

function moduleLockService(moduleRef: ModuleRef): LockService {
  let found: LockService | undefined;
  try {
    found = moduleRef.get(LockService, { strict: false }) ?? undefined;
  } catch {
    // Not provided anywhere: said below.
  }
  if (!found) {
    throw new LockUsageError(
      'RedisLockBoardModule found no LockService: import RedisLockModule.forRoot(...) in the application, ' +
        'or pass the service to show as lockService.',
    );
  }
  return found;
}

/** The controller class this mount declared (one per path), which the headers' middleware covers. */
const BOARD_CONTROLLER = Symbol('BOARD_CONTROLLER');

@Module({})
export class RedisLockBoardModule implements NestModule {
  constructor(@Inject(BOARD_CONTROLLER) private readonly controller: Type<unknown>) {}

  configure(consumer: MiddlewareConsumer): void {
    consumer.apply(boardHeaders).forRoutes(this.controller);
  }

  static forRoot(options: RedisLockBoardModuleOptions = {}): DynamicModule {
    const { path, ...rest } = options ?? {};
    const resolved = resolveBoardOptions(rest);
    return RedisLockBoardModule.mount(path, [], { provide: BOARD_OPTIONS, useValue: resolved });
  }

  static forRootAsync(options: RedisLockBoardAsyncOptions): DynamicModule {
    if (options === null || typeof options !== 'object' || typeof options.useFactory !== 'function') {
      throw new LockUsageError(
        'RedisLockBoardModule.forRootAsync needs { useFactory } returning the options.',
      );
    }
    const { path, imports = [], inject = [], useFactory } = options;
    return RedisLockBoardModule.mount(path, imports, {
      provide: BOARD_OPTIONS,
      inject,
      useFactory: async (...args: never[]) => {
        const given = await useFactory(...args);
        if (given !== null && typeof given === 'object' && 'path' in given) {
          throw new LockUsageError(
            'RedisLockBoardModule.forRootAsync takes path beside useFactory, not from it: routes are fixed up front.',
          );
        }
        return resolveBoardOptions(given);
      },
    });
  }

  private static mount(
    path: unknown,
    imports: NonNullable<ModuleMetadata['imports']>,
    options: Provider,
  ): DynamicModule {
    const controller = boardController(resolveBoardPath(path));
    return {
      module: RedisLockBoardModule,
      imports,
      controllers: [controller],
      providers: [options, boardData, BoardGuard, { provide: BOARD_CONTROLLER, useValue: controller }],
    };
  }
}
