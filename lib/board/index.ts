export { type RedisLockBoardAsyncOptions, RedisLockBoardModule } from './board.module';
export { BoardData, type BoardEvent, type BoardLock, type BoardView } from './board-data';
export type { RedisLockBoardModuleOptions, RedisLockBoardOptions } from './board-options';
