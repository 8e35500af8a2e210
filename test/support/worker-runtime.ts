// The child side of spawnWorker(): arguments, IPC, and loud failure. Any unhandled rejection or uncaught
// exception in a worker is reported to the test ({ type: 'error', message, stack }) and ends the worker
// with code 1, so that a broken worker fails the test instead of leaving it waiting. A worker also exits
// by itself when its parent goes away, so that a test run that dies leaves no workers behind.

/** How long a failing worker waits for its error report to be flushed over IPC before exiting anyway. */
const REPORT_GRACE_MS = 1_000;

let failing = false;

function fail(error: unknown): void {
  // A second error while reporting the first one (or while exiting) adds nothing.
  if (failing) return;
  failing = true;
  process.exitCode = 1;
  const e = error instanceof Error ? error : new Error(String(error));
  if (process.connected && process.send) {
    process.send({ type: 'error', message: e.message, stack: e.stack }, () => process.exit(1));
    setTimeout(() => process.exit(1), REPORT_GRACE_MS).unref();
  } else {
    console.error(e);
    process.exit(1);
  }
}

process.on('unhandledRejection', fail);
process.on('uncaughtException', fail);
// The IPC channel closes when the parent exits or is killed.
process.on('disconnect', () => process.exit(failing ? 1 : 0));
// A 'disconnect' listener refs the channel, which would keep a worker alive after its work is done until
// the test kills it. Unref it: a worker that only reports exits by itself when done, like any Node
// program; onMessage() refs it again, as a worker that takes commands must wait for them.
process.channel?.unref();

/** The `args` given to spawnWorker(), parsed from the WORKER_ARGS environment variable. */
export function workerArgs<T>(): T {
  const raw = process.env.WORKER_ARGS;
  if (raw === undefined) throw new Error('WORKER_ARGS is not set: start this file with spawnWorker()');
  return JSON.parse(raw) as T;
}

/** Sends a message to the test over IPC. */
export function send(message: unknown): void {
  if (!process.send) throw new Error('no IPC channel: start this file with spawnWorker()');
  // A closed channel means the parent is gone: 'disconnect' is about to end this process anyway.
  if (!process.connected) return;
  process.send(message);
}

/**
 * Calls `handler` for each message from the test; an error it throws or rejects with fails the worker.
 * From then on the worker stays alive, waiting for messages, until it exits or the test disconnects.
 */
export function onMessage<T>(handler: (message: T) => void | Promise<void>): void {
  process.channel?.ref();
  process.on('message', (message: T) => {
    try {
      Promise.resolve(handler(message)).catch(fail);
    } catch (error) {
      fail(error);
    }
  });
}

/** Tells the test that the worker is set up: { type: 'ready' }. */
export function ready(): void {
  send({ type: 'ready' });
}
