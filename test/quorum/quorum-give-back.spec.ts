// A waiter whose attempt fails gives back the votes it took, but not a hold a node handed it while the
// attempt was on its way: the node has announced that hand-off, and the waiter may count it towards a
// majority. Given back, the node is free for a third caller while the waiter holds on the others' word.
// Five nodes; the waiter's commands reach node 1 late (a proxy), so node 1 hands it the lock before its
// vote arrives there; node 4 and node 5 lost their state (a restart), and node 5 is stopped.
import { afterEach, describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { redisKeys, wakeChannelPrefix } from '../../lib/protocol/keys';
import type { LockTicket, WakeMessage } from '../../lib/store/lock-store';
import { QuorumLockStore } from '../../lib/store/quorum-store';
import { DelayProxy } from '../support/delay-proxy';
import { until } from '../support/lock-fixtures';
import { useQuorum } from './quorum-fixtures';

const quorum = useQuorum(5);
const PREFIX = 'lock:';
const TERMS = { ttl: 30_000, claimWindow: 2_000 };
/** How late the waiter's commands reach node 1: well past a vote's round trip to the other nodes. */
const COMMAND_DELAY = 60;

const stores: QuorumLockStore[] = [];
const clients: Redis[] = [];
afterEach(async () => {
  for (const store of stores.splice(0)) await store.close();
  for (const client of clients.splice(0)) client.disconnect();
});

function openStore(nodes: Redis[], wakes: WakeMessage[] = []): QuorumLockStore {
  const store = new QuorumLockStore(
    nodes,
    { prefix: PREFIX, nodeTimeout: 100 },
    { onWake: (message) => wakes.push(message), onResubscribed: () => {}, onEnded: () => {} },
  );
  stores.push(store);
  return store;
}

describe('quorum: a failed attempt gives back its votes', () => {
  it('but not a hold a node handed the waiter meanwhile, so no third caller takes the lock it counts', async () => {
    const key = 'q:handed-kept';
    const keys = redisKeys(PREFIX, key);
    const { servers } = quorum();
    const proxy = await DelayProxy.start(servers[0].port, COMMAND_DELAY, 'commands');
    const late = new Redis({ port: proxy.port });
    late.on('error', () => {});
    clients.push(late);
    const wakes: WakeMessage[] = [];
    const waiter = openStore([late, ...quorum().clients().slice(1)], wakes);
    const holder = openStore(quorum().clients());
    const third = openStore(quorum().clients());
    await waiter.subscribeWakes();
    await until(
      () => servers[0].client().pubsub('NUMSUB', `${wakeChannelPrefix(PREFIX)}${waiter.instance}`),
      (reply) => Number((reply as unknown[])[1]) === 1,
    );

    const held = holder.ticket(key, TERMS);
    const grant = await holder.acquire(held, 'try', 0);
    if (!grant.granted) throw new Error('the holder should take the free lock');
    const ticket: LockTicket = waiter.ticket(key, TERMS);
    expect((await waiter.acquire(ticket, 'join', 10_000)).granted).toBe(false);
    // Decided by the other nodes' refusals: its join reaches node 1 later.
    await until(
      () => servers[0].client().zrange(`${keys.owner}:l`, 0, -1),
      (line) => line.includes(ticket.token),
    );

    // Nodes 4 and 5 restart empty; node 5 stays stopped through the waiter's next attempt.
    for (const server of servers.slice(3)) await server.client().flushall();
    servers[4].pause();
    const attempt = waiter.acquire(ticket, 'wait', 10_000);
    // Node 1 hears the holder's release before the waiter's vote: it hands the lock to the waiter, and
    // the vote finds it the waiter's. Nodes 2 and 3 still refuse, node 5 does not answer: it fails.
    await holder.nodes[0].release(keys, held.token, wakeChannelPrefix(PREFIX), true, grant.fence, 60_000);
    expect((await attempt).granted).toBe(false);
    // Then nodes 2 and 3 hear the release: with node 1, a majority handed the lock to the waiter.
    for (const node of holder.nodes.slice(1, 3))
      await node.release(keys, held.token, wakeChannelPrefix(PREFIX), true, grant.fence, 60_000);
    await until(
      async () => wakes,
      (seen) => seen.some((wake) => wake.kind === 'grant' && wake.token === ticket.token),
    );
    // Everything the waiter sent node 1 (its give-back too) has run there once this is answered.
    await late.ping();

    servers[4].resume();
    const refused = await third.acquire(third.ticket(key, TERMS), 'try', 0);
    expect(refused.granted).toBe(false);
    expect(await servers[0].client().get(keys.owner)).toBe(ticket.token);
  });
});
