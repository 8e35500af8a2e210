// Module options built to break the checks: a getter that throws, a Proxy whose keys cannot be listed,
// an own "__proto__" key (JSON.parse makes one) at the top, in the ioredis options, in defaults and in
// requests. Each is refused with LockUsageError (LOCK_INVALID_OPTIONS) saying what was wrong, at forRoot
// or as the module starts, as every other unknown or bad option is; none escapes as a plain Error or is
// taken silently.
import { describe, expect, it } from '@jest/globals';
import { Test } from '@nestjs/testing';
import { LockUsageError, RedisLockModule } from '../../lib';

const URL = 'redis://127.0.0.1:1';

/** What forRoot(options) and starting the module with it throw, if anything. */
async function refusal(options: () => unknown): Promise<unknown> {
  try {
    const moduleRef = await Test.createTestingModule({
      imports: [RedisLockModule.forRoot(options() as never)],
    }).compile();
    await moduleRef.close();
  } catch (error) {
    return error;
  }
  return undefined;
}

describe('module options built to break the checks', () => {
  it.each<[string, () => unknown, RegExp]>([
    [
      'a getter that throws',
      () => ({
        url: URL,
        get defaults(): never {
          throw new Error('boom');
        },
      }),
      /Reading the option defaults threw \(boom\)/,
    ],
    [
      'a Proxy whose keys cannot be listed',
      () =>
        new Proxy(
          {},
          {
            ownKeys() {
              throw new Error('boom');
            },
          },
        ),
      /Listing the keys of the RedisLockModule options threw/,
    ],
    [
      'an own __proto__ key',
      () => JSON.parse(`{"url":"${URL}","__proto__":{"x":1}}`),
      /Unknown option "__proto__"/,
    ],
    [
      'an own __proto__ key in redis',
      () => JSON.parse('{"redis":{"port":1,"__proto__":{"x":1}}}'),
      /"__proto__"/,
    ],
    [
      'an own __proto__ key in defaults',
      () => JSON.parse(`{"url":"${URL}","defaults":{"__proto__":{"ttl":5}}}`),
      /Unknown option "__proto__" in defaults/,
    ],
    [
      'an own __proto__ key in requests',
      () => JSON.parse(`{"url":"${URL}","requests":{"__proto__":{"budget":5}}}`),
      /Unknown option "__proto__" in requests/,
    ],
    ['a budget of -1', () => ({ url: URL, requests: { budget: -1 } }), /requests\.budget .* got -1\./],
    [
      'a budget given as text',
      () => ({ url: URL, requests: { budget: '5' } }),
      /requests\.budget .* got "5"\./,
    ],
  ])('%s is refused with LockUsageError', async (_name, options, message) => {
    const error = await refusal(options);
    expect(error).toBeInstanceOf(LockUsageError);
    expect(error).toMatchObject({ code: 'LOCK_INVALID_OPTIONS' });
    expect((error as Error).message).toMatch(message);
  });
});
