// Nest applications for a test, closed after it: what the suites on the testing module share.
import { afterEach } from '@jest/globals';
import type { DynamicModule, INestApplication, Type } from '@nestjs/common';
import { Test } from '@nestjs/testing';

const apps: INestApplication[] = [];

afterEach(async () => {
  await Promise.all(apps.splice(0).map((app) => app.close()));
});

export interface AppParts {
  imports: DynamicModule[];
  providers?: Type[];
  controllers?: Type[];
}

/** Compiles and initialises an application of `parts` (quiet), to be closed after the test. */
export async function bootApp({
  imports,
  providers = [],
  controllers = [],
}: AppParts): Promise<INestApplication> {
  const moduleRef = await Test.createTestingModule({ imports, providers, controllers }).compile();
  const app = moduleRef.createNestApplication({ logger: false });
  apps.push(app);
  await app.init();
  return app;
}
