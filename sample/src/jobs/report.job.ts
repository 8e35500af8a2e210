import { Injectable, Logger } from '@nestjs/common';
import { Cron } from '@nestjs/schedule';
import { Locked } from 'nestjs-redis-lock';
import { Data, pause } from '../data';

const PERIOD_SECONDS = 5;

/**
 * A report that must be built once per 5-second slot although every instance's scheduler fires. The
 * lock makes "was this slot done? if not, do it and mark it" exclusive; the others skip at once
 * (waitTimeout 0, onTimeout 'skip') instead of queueing behind it. minHold keeps the lock for most of
 * the slot after the report is built, so an instance whose scheduler fires a few ms later skips too,
 * without even reading the marker.
 */
@Injectable()
export class ReportJob {
  private readonly logger = new Logger(ReportJob.name);

  constructor(private readonly data: Data) {}

  @Cron(`*/${PERIOD_SECONDS} * * * * *`)
  tick(): Promise<void> {
    return this.build(Math.floor(Date.now() / 1000 / PERIOD_SECONDS)).catch((error: unknown) => {
      this.logger.warn(`report skipped: ${(error as Error).message}`);
    });
  }

  @Locked('job:report', {
    waitTimeout: 0,
    onTimeout: 'skip',
    ttl: (PERIOD_SECONDS - 1) * 1_000,
    minHold: (PERIOD_SECONDS - 1) * 1_000,
    renew: false,
  })
  async build(slot: number): Promise<void> {
    const { redis, instance } = this.data;
    if (Number((await redis.get('sample:job:last-slot')) ?? -1) >= slot) return;
    await pause(200); // building the report
    await redis.set('sample:job:last-slot', String(slot));
    await redis.rpush('sample:job:runs', JSON.stringify({ slot, instance, at: new Date().toISOString() }));
    await redis.ltrim('sample:job:runs', -100, -1);
  }

  async runs(): Promise<Array<{ slot: number; instance: string; at: string }>> {
    return (await this.data.redis.lrange('sample:job:runs', 0, -1)).map((raw) => JSON.parse(raw));
  }
}
