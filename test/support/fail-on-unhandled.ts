// Fails the running test if an unhandled rejection or uncaught exception was raised during it: a lock
// library must never leak one, so every suite watches for them (jest setupFilesAfterEnv).
//
// Listeners go on the real process: the `process` of a jest test file is a copy that the real process never
// emits events on, so `process.on('unhandledRejection')` there would silently catch nothing. This file is
// loaded once per test file, so it keeps at most one pair of listeners per process: the previous file's
// pair is removed at its end (afterAll), or here if that afterAll never ran.
import { setImmediate as nextTurn } from 'node:timers/promises';
import { afterAll, afterEach } from '@jest/globals';
import { hostProcess, processWide } from './processes';

interface Recorded {
  kind: 'unhandled rejection' | 'uncaught exception';
  error: unknown;
  /** The rejected promise, so that a rejection handled late can be forgotten again. */
  promise?: Promise<unknown>;
}

interface Listeners {
  uninstall?: () => void;
}

const recorded: Recorded[] = [];
const host = hostProcess();

const onRejection = (error: unknown, promise: Promise<unknown>): void => {
  recorded.push({ kind: 'unhandled rejection', error, promise });
};
const onException = (error: unknown): void => {
  recorded.push({ kind: 'uncaught exception', error });
};
// A rejection that gets a handler after all (a turn later) was not leaked after all.
const onHandled = (promise: Promise<unknown>): void => {
  const index = recorded.findIndex((entry) => entry.promise === promise);
  if (index >= 0) recorded.splice(index, 1);
};

const slot = processWide<Listeners>('fail-on-unhandled', () => ({}));
slot.uninstall?.();
host.on('unhandledRejection', onRejection);
host.on('uncaughtException', onException);
host.on('rejectionHandled', onHandled);
const uninstall = (): void => {
  host.off('unhandledRejection', onRejection);
  host.off('uncaughtException', onException);
  host.off('rejectionHandled', onHandled);
  if (slot.uninstall === uninstall) slot.uninstall = undefined;
};
slot.uninstall = uninstall;

const formatError = (error: unknown): string =>
  error instanceof Error ? (error.stack ?? `${error.name}: ${error.message}`) : String(error);

/** Throws if anything was recorded since the last check, listing it all. */
function check(when: string): void {
  if (recorded.length === 0) return;
  const entries = recorded.splice(0);
  throw new Error(
    `${entries.length} unhandled error(s) ${when}:\n` +
      entries.map((entry) => `- ${entry.kind}: ${formatError(entry.error)}`).join('\n'),
  );
}

afterEach(async () => {
  // Node reports unhandled rejections after the microtask queue drains: let the last test's ones arrive.
  await nextTurn();
  check('during the test');
});

afterAll(async () => {
  await nextTurn();
  try {
    check('in the hooks after the last test');
  } finally {
    uninstall();
  }
});
