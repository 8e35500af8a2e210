// A key built from a request can hold anything a client sends: a newline and a forged log line, a
// terminal escape, a huge value. Every path that writes such a value into a log line or an error message
// writes it quoted, escaped and cut, as one line: telemetry.logger's warnings and its lost-lease line,
// the errors' messages (which Nest logs for a lease lost under a handler), and the lock board's warning
// of a forced release, with the holder's token the request chose.
import { describe, expect, it } from '@jest/globals';
import type { LoggerService } from '@nestjs/common';
import request from 'supertest';
import { LockLostError, LockTimeoutError, RedisLockBoardModule, RedisLockModule } from '../../lib';
import { lockService, outcome, whenAborted } from '../support/lock-fixtures';
import { bootApp } from '../support/nest-apps';
import { useRedis } from '../support/redis-server';

const server = useRedis();

const FORGED = 'b\n[Nest] 1  - 12/03/2026, 10:00:00 AM   ERROR [FAKE] forged by client\u001b[2J\u009b\u202e';
/** How the forged part reads once escaped. */
const ESCAPED =
  'b\\n[Nest] 1  - 12/03/2026, 10:00:00 AM   ERROR [FAKE] forged by client\\u001b[2J\\u009b\\u202e';

/** One line, with nothing raw in it a terminal or a log reader would act on. */
function expectOneSafeLine(line: string): void {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is its purpose.
  expect(line).not.toMatch(/[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/);
}

function capture() {
  const lines: string[] = [];
  const logger = {
    warn: (message: string) => lines.push(message),
    error: (message: string) => lines.push(message),
  };
  return { lines, logger };
}

describe('a forged key in log lines and error messages', () => {
  it("telemetry.logger's warning and lost-lease line, and the errors' messages, are one line each", async () => {
    const { lines, logger } = capture();
    const locks = lockService(server(), { telemetry: { logger } });
    const key = `item:${FORGED}`;
    const holder = await locks.acquire(key, { ttl: 300, renew: false });
    const timedOut = await outcome(locks.acquire(key, { waitTimeout: 20 }));
    expect(timedOut.error).toBeInstanceOf(LockTimeoutError);
    const lost = (await whenAborted(holder.signal)) as LockLostError;
    expect(lost).toBeInstanceOf(LockLostError);
    await holder.release().catch(() => {});
    for (const message of [(timedOut.error as Error).message, lost.message]) {
      expectOneSafeLine(message);
      expect(message).toContain(`"item:${ESCAPED}"`);
    }
    expect(lines).toHaveLength(2);
    for (const line of lines) {
      expectOneSafeLine(line);
      expect(line).toContain(`"item:${ESCAPED}"`);
    }
  });

  it('a key longer than a line is cut, its length said; the full key stays on the error', async () => {
    const locks = lockService(server());
    const key = `item:${'x'.repeat(1_000)}`;
    const holder = await locks.acquire(key);
    const { error } = await outcome(locks.acquire(key, { waitTimeout: 20 }));
    await holder.release();
    expect((error as Error).message).toContain(`… (${key.length} characters)`);
    expect((error as Error).message.length).toBeLessThan(600);
    expect((error as LockTimeoutError).key).toBe(key);
  });

  it("the lock board's warning of a forced release quotes the key and the request's token, cut", async () => {
    const warnings: string[] = [];
    const logger: LoggerService = {
      log: () => {},
      error: (message: string) => warnings.push(message),
      warn: (message: string) => warnings.push(message),
    };
    const app = await bootApp({
      imports: [
        RedisLockModule.forRoot({ url: server().url }),
        RedisLockBoardModule.forRoot({ readOnly: false }),
      ],
      logger,
    });
    const key = `item:${FORGED}`;
    const token = `${FORGED}${'t'.repeat(90_000)}`;
    await request(app.getHttpServer())
      .post(`/locks/api/locks/${encodeURIComponent(key)}/release`)
      .set('x-lock-board', '1')
      .send({ token })
      .expect(200);
    const forced = warnings.filter((line) => line.startsWith('Forced release'));
    expect(forced).toHaveLength(1);
    expectOneSafeLine(forced[0]);
    expect(forced[0]).toContain(`"item:${ESCAPED}"`);
    expect(forced[0]).toContain(`"${ESCAPED}`);
    expect(forced[0]).toContain(`(${token.length} characters)`);
    expect(forced[0].length).toBeLessThan(1_000);
  });
});
