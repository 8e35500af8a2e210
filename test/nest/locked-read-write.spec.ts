// @Locked with `mode` on real Redis: two app instances share a read-write lock (readers run together, a
// writer alone, in arrival order), a plain @Locked on the same key is refused, and a bad mode is refused
// where the decorator is applied.
import { describe, expect, it } from '@jest/globals';
import { Injectable } from '@nestjs/common';
import { Locked, LockService, LockUsageError, RedisLockModule } from '../../lib';
import { bootApp } from '../support/nest-apps';
import { useRedis } from '../support/redis-server';
import { connection, lockState, Meter } from './locked-fixtures';

const server = useRedis();

describe('@Locked with mode', () => {
  it('readers of two instances run together; the writer waits for them and runs alone', async () => {
    const reads = new Meter();
    const writes = new Meter();
    @Injectable()
    class Documents {
      @Locked('doc:<0>', { mode: 'read' })
      read(id: string): Promise<string> {
        return reads.pass(id);
      }

      @Locked('doc:<0>', { mode: 'write' })
      write(id: string): Promise<string> {
        return writes.pass(id);
      }

      @Locked('doc:<0>')
      plain(id: string): Promise<string> {
        return writes.pass(id);
      }
    }
    const apps = await Promise.all(
      [0, 1].map(() =>
        bootApp({ imports: [RedisLockModule.forRoot(connection(server()))], providers: [Documents] }),
      ),
    );
    const [a, b] = apps.map((app) => app.get(Documents));
    const locks = apps[0].get(LockService);
    const first = [a.read('1'), b.read('1')];
    await reads.entries(2);
    const written = a.write('1');
    await lockState(locks, 'doc:1', (info) => info.queueLength === 1);
    // A reader arriving behind the writer waits for it, although readers hold the key.
    const late = b.read('1');
    await lockState(locks, 'doc:1', (info) => info.queueLength === 2);
    expect(reads.running).toBe(2);
    expect(writes.entered).toBe(0);
    await expect(b.plain('1')).rejects.toMatchObject({ code: 'LOCK_KIND' });
    reads.open();
    await Promise.all(first);
    await writes.entries(1);
    expect(reads.entered).toBe(2); // the late reader still waits for the writer
    writes.open();
    expect(await written).toBe('1');
    expect(await late).toBe('1');
    expect(writes.max).toBe(1);
  });

  it('a bad mode is refused where the decorator is applied', () => {
    for (const mode of ['READ', 'shared', 1]) {
      expect(() => {
        class Bad {
          @Locked('x', { mode: mode as 'read' })
          run(): Promise<void> {
            return Promise.resolve();
          }
        }
        return Bad;
      }).toThrow(LockUsageError);
    }
  });
});
