// Nest applications for a test, closed after it: what the suites on the Nest module share.
import { afterEach } from '@jest/globals';
import type { INestApplication, LoggerService, ModuleMetadata } from '@nestjs/common';
import type { AbstractHttpAdapter } from '@nestjs/core';
import { Test, type TestingModuleBuilder } from '@nestjs/testing';

const apps: INestApplication[] = [];

// A close that fails is not what these tests check (those that check one close the application
// themselves); an application a test closed already is closed again here, which does nothing.
afterEach(async () => {
  await Promise.all(apps.splice(0).map((app) => app.close().catch(() => {})));
});

export interface AppParts extends Pick<ModuleMetadata, 'imports' | 'providers' | 'controllers'> {
  /** What the test sets on the testing module before it compiles: overrides, its logger. */
  configure?: (builder: TestingModuleBuilder) => TestingModuleBuilder;
  /** The application's logger; quiet if none. */
  logger?: LoggerService | false;
  /** The HTTP adapter, where it is not Express's (Fastify's). */
  adapter?: AbstractHttpAdapter;
  /** false: returned before init(), for a test that initialises it (or listens) itself. */
  init?: boolean;
}

/** Compiles an application of `parts` and initialises it, to be closed after the test. */
export async function bootApp({
  imports = [],
  providers = [],
  controllers = [],
  configure = (builder) => builder,
  logger = false,
  adapter,
  init = true,
}: AppParts): Promise<INestApplication> {
  const moduleRef = await configure(Test.createTestingModule({ imports, providers, controllers })).compile();
  const app = adapter
    ? moduleRef.createNestApplication(adapter, { logger })
    : moduleRef.createNestApplication({ logger });
  apps.push(app);
  if (init) await app.init();
  return app;
}
