// Jest runs in ESM mode (ts-jest with useESM) because NestJS 12 ships ES modules only.
// Tests start their own redis-server processes, so suites run in a few workers at most.
export default {
  rootDir: '.',
  testEnvironment: 'node',
  testMatch: ['<rootDir>/test/**/*.spec.ts'],
  extensionsToTreatAsEsm: ['.ts'],
  moduleNameMapper: {
    '^nestjs-redis-lock$': '<rootDir>/lib/index.ts',
    '^(\\.{1,2}/.*)\\.js$': '$1',
  },
  transform: {
    '^.+\\.ts$': ['ts-jest', { useESM: true, tsconfig: '<rootDir>/tsconfig.spec.json' }],
  },
  setupFilesAfterEnv: ['<rootDir>/test/support/fail-on-unhandled.ts'],
  maxWorkers: 2,
  testTimeout: 60_000,
};
