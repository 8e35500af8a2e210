import { Injectable } from '@nestjs/common';
import { Locked } from 'nestjs-redis-lock';
import { Data, pause } from '../data';

/** Serves tickets one at a time; the order they are served in shows the queue is first come, first served. */
@Injectable()
export class QueueService {
  constructor(private readonly data: Data) {}

  @Locked('queue:demo', { waitTimeout: 60_000 })
  async serve(ticket: string): Promise<{ ticket: string; position: number; instance: string }> {
    await pause(50); // the work each ticket needs
    const position = await this.data.redis.rpush('sample:queue:served', ticket);
    return { ticket, position, instance: this.data.instance };
  }

  async served(): Promise<string[]> {
    return this.data.redis.lrange('sample:queue:served', 0, -1);
  }

  async reset(): Promise<void> {
    await this.data.redis.del('sample:queue:served');
  }
}
