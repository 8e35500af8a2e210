/**
 * The resource server's MONITOR stream: the exact order in which it ran every write, which is what the
 * fenced-write and lost-update checkers judge. Each workload recognises its own writes.
 */
import type { RedisServer } from '../../test/support/redis-server';
import type { History } from '../history';
import { counterWrite } from './counter';
import { fencedAccept } from './fenced-write';

/** The lock key inside a resource key's braces. */
export const lockOf = (resourceKey: string): string => resourceKey.slice(resourceKey.indexOf('{') + 1, -1);

/** The resource keys the workloads keep on purpose after a run (no TTL). */
export { COUNTER_PREFIX } from './counter';
export { FENCED_PREFIX } from './fenced-write';

export interface ResourceMonitor {
  /** Resolves once MONITOR has shown every write sent before it was called (or after 5 s). */
  catchUp(): Promise<void>;
  stop(): void;
}

export async function monitorResource(resource: RedisServer, history: History): Promise<ResourceMonitor> {
  const base = resource.client();
  const admin = resource.client();
  // Both ready first: a command of theirs echoed in the same read as MONITOR's reply would reach the
  // monitor connection before ioredis counts it as monitoring ("Command queue state error").
  await Promise.all([base.ping(), admin.ping()]);
  const monitor = await base.monitor();
  let sentinelSeen: () => void = () => {};
  monitor.on('error', () => {});
  monitor.on('monitor', (_time: string, args: string[], source: string) => {
    const accepted = fencedAccept(args, source, lockOf);
    if (accepted) {
      history.fencedAccepts.push(accepted);
      return;
    }
    const set = counterWrite(args, source, lockOf);
    if (set) history.twinSets.push(set);
    else if (args[0]?.toUpperCase() === 'ECHO' && args[1] === 'chaos-end') sentinelSeen();
  });
  return {
    async catchUp() {
      const sentinel = new Promise<void>((resolve) => {
        sentinelSeen = resolve;
      });
      await admin.echo('chaos-end');
      await Promise.race([sentinel, new Promise((resolve) => setTimeout(resolve, 5_000))]);
    },
    stop() {
      monitor.disconnect();
    },
  };
}
