// The sample app: orders paid once, stock never oversold, a cache without stampedes, a job that runs on
// one instance, health and a lock board at /locks. Run several instances against one Redis to see the lock work.
// With no Redis to be found it still starts, on in-memory stores: its locks then hold within this process.
import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { AppModule } from './app.module';
import { ConfigError, loadConfig } from './config';
import { findRedis } from './embedded-redis';

// One line, so it is seen among the start-up logs: without Redis the sample works, but its locks no
// longer exclude other instances, which is the point of the library.
const NO_REDIS =
  'No Redis found (REDIS_URL unset, nothing on 127.0.0.1:6379, no redis-server installed): locks and data ' +
  'are kept in memory, so locks hold within this process only. For locks across instances, set ' +
  'REDIS_URL=redis://host:6379 or install redis-server (apt-get install redis-server, or brew install redis).';

async function bootstrap(): Promise<void> {
  const logger = new Logger('Sample');
  const config = loadConfig();
  const redis = await findRedis(config.redisUrl);
  if (redis) logger.log(`Redis: ${redis.url} (${redis.origin})`);
  else logger.warn(NO_REDIS);
  const stopRedis = () => redis?.stop() ?? Promise.resolve();
  try {
    const app = await NestFactory.create(
      AppModule.register({
        redisUrl: redis?.url,
        instance: config.instance,
        dbDelayMs: config.dbDelayMs,
        boardPassword: config.boardPassword,
      }),
      { logger: ['log', 'warn', 'error'] },
    );
    // Our own signal handling rather than enableShutdownHooks(): the child redis-server must stop only
    // after the app has released its locks and closed its connections, and the process then ends by
    // itself (nothing of ours keeps it alive). A second signal forces the exit.
    let closing = false;
    for (const signal of ['SIGINT', 'SIGTERM'] as const) {
      process.on(signal, () => {
        if (closing) process.exit(1);
        closing = true;
        logger.log(`${signal}: shutting down`);
        app
          .close()
          .then(stopRedis)
          .catch((error: unknown) => {
            logger.error(error);
            process.exitCode = 1;
          });
      });
    }
    await app.listen(config.port, '127.0.0.1');
    logger.log(`instance "${config.instance}" listening on http://127.0.0.1:${config.port}`);
    const at = `localhost:${config.port}`;
    logger.log(`try: POST ${at}/orders/1/pay · GET ${at}/products/1 · GET ${at}/health`);
    logger.log(
      `lock board: http://${at}/locks${config.boardPassword ? ' (BOARD_PASSWORD, any user name)' : ''}`,
    );
  } catch (error) {
    await stopRedis();
    throw error;
  }
}

bootstrap().catch((error: unknown) => {
  console.error(error instanceof ConfigError ? error.message : error);
  process.exit(1);
});
