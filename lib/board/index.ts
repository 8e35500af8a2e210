export { type RedisLockBoardAsyncOptions, RedisLockBoardModule } from './board.module';
export type { RedisLockBoardModuleOptions, RedisLockBoardOptions } from './board-options';
