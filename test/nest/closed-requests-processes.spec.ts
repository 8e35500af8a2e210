// Closed requests across processes: two instances of a Nest app (their own processes) serve one key's
// line to HTTP clients in two other processes. Clients that give up while they wait, the head of the line
// among them, leave it as their connections close; once the holder lets go, the instances serve exactly
// the clients still there, in the order they joined, one at a time, and nothing runs for those that left.
// The serving order and the count of bodies inside are written by the bodies themselves to Redis.
import { afterEach, describe, expect, it } from '@jest/globals';
import { lockService, until } from '../support/lock-fixtures';
import { spawnWorker, type Worker, workerPath } from '../support/processes';
import { useRedis } from '../support/redis-server';
import type { CallerCommand, CallerReport } from '../workers/http-caller.worker';
import type { AppReport } from '../workers/locked-http-app.worker';

const server = useRedis();
const started: Worker<unknown>[] = [];

afterEach(async () => {
  await Promise.all(started.splice(0).map((worker) => worker.stop()));
});

function start<M>(name: string, args: Record<string, unknown>): Worker<M> {
  const worker = spawnWorker<M>(workerPath(name), args);
  started.push(worker as Worker<unknown>);
  return worker;
}

const CALLS = 9;
/** The head of the line, two side by side, and the last: every place a departure can leave a gap. */
const LEAVERS = new Set(['c0', 'c3', 'c4', 'c8']);

describe.each(['express', 'fastify'] as const)(
  'on %s, instances in two processes and clients in two more',
  (platform) => {
    it('serve only the clients still there, in the order they joined, one at a time; nothing runs for those that left', async () => {
      const keys = { served: `served:${platform}`, inside: `inside:${platform}` };
      const apps = [0, 1].map(() =>
        start<AppReport>('locked-http-app', { url: server().url, platform, ...keys }),
      );
      const callers = [0, 1].map(() => start<CallerReport>('http-caller', {}));
      const ports = await Promise.all(
        apps.map(async (app) => {
          const listening = await app.next((m) => m.type === 'listening', 30_000);
          return (listening as Extract<AppReport, { type: 'listening' }>).port;
        }),
      );
      await Promise.all(callers.map((caller) => caller.next((m) => m.type === 'ready', 30_000)));

      const locks = lockService(server());
      const holder = await locks.acquire('order:1');
      const callerOf = (i: number) => callers[Math.floor(i / 2) % 2];
      const calls = Array.from({ length: CALLS }, (_, i) => `c${i}`);
      // One at a time, so that the order they joined in is the order they were sent in; the instances and
      // the client processes alternate in different rhythms, so each pairing occurs.
      for (const [i, call] of calls.entries()) {
        callerOf(i).send({
          type: 'send',
          call,
          port: ports[i % 2],
          path: '/orders/1/pay',
        } satisfies CallerCommand);
        await until(
          () => locks.inspect('order:1'),
          (info) => info.queueLength === i + 1,
        );
      }
      for (const [i, call] of calls.entries()) {
        if (!LEAVERS.has(call)) continue;
        callerOf(i).send({ type: 'give-up', call } satisfies CallerCommand);
        await callerOf(i).next((m) => m.type === 'gave-up' && m.call === call);
      }
      // Each leaver's waiter leaves as its connection closes: every wait is 2 minutes long.
      await until(
        () => locks.inspect('order:1'),
        (info) => info.queueLength === CALLS - LEAVERS.size,
      );
      await holder.release();

      const stayed = calls.filter((call) => !LEAVERS.has(call));
      const answers = await Promise.all(
        stayed.map(async (call) => {
          const i = calls.indexOf(call);
          return callerOf(i).next(
            (m) => m.type !== 'ready' && m.type !== 'gave-up' && m.call === call,
            30_000,
          );
        }),
      );
      expect(answers).toEqual(stayed.map((call) => ({ type: 'answered', call, status: 201, body: 'paid' })));

      const admin = server().client();
      expect(await admin.lrange(keys.served, 0, -1)).toEqual(stayed);
      const ran = apps.flatMap((app) => app.messages.filter((m) => m.type === 'ran'));
      expect(ran.filter((m) => m.overlap)).toEqual([]);
      expect(ran.map((m) => m.call).sort()).toEqual([...stayed].sort());
      // The last body's lease is given back, and nobody is left in line.
      await until(
        () => locks.inspect('order:1'),
        (info) => !info.held && info.queueLength === 0,
      );
    });
  },
);
