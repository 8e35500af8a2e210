/**
 * Faults on one lock server, through its admin connection: CLIENT PAUSE, CLIENT KILL (every command
 * connection, every wake connection, or one worker connection picked from CLIENT LIST), and a restart
 * at once without persistence (on a quorum: the early restart docs/guarantees.md warns about).
 */
import { hr, sleep } from '../common';
import type { FaultAction } from './kinds';

export const clientPause: FaultAction = async (fault, _host, prng, node) => {
  const ms = prng.int(200, 1_500);
  const mode = prng.chance(0.5) ? 'ALL' : 'WRITE';
  fault.t0 = hr();
  fault.detail = { ms, mode };
  await node.admin.call('CLIENT', 'PAUSE', String(ms), mode);
  await sleep(ms);
  fault.t1 = hr();
};

/** client-kill-normal and client-kill-pubsub. */
export const clientKillType: FaultAction = async (fault, _host, _prng, node) => {
  const type = fault.kind === 'client-kill-normal' ? 'normal' : 'pubsub';
  fault.t0 = hr();
  // SKIPME yes (the default) spares the admin connection itself.
  const killed = await node.admin.call('CLIENT', 'KILL', 'TYPE', type);
  fault.t1 = hr();
  fault.detail = { type, killed };
};

export const clientKillAddr: FaultAction = async (fault, _host, prng, node) => {
  const list = String(await node.admin.call('CLIENT', 'LIST'));
  const clients = list
    .split('\n')
    .map((line) =>
      Object.fromEntries(
        line
          .trim()
          .split(' ')
          .map((kv) => kv.split('=') as [string, string]),
      ),
    )
    .filter((c) => typeof c.name === 'string' && c.name.startsWith('chaos-w'));
  if (clients.length === 0) {
    fault.skipped = 'no worker connection';
    return;
  }
  const victim = prng.pick(clients);
  fault.t0 = hr();
  const killed = await node.admin.call('CLIENT', 'KILL', 'ADDR', victim.addr).catch((e: Error) => e.message);
  fault.t1 = hr();
  fault.detail = {
    name: victim.name,
    addr: victim.addr,
    connection: victim.flags?.includes('P') ? 'wake (pub/sub)' : 'commands',
    killed,
  };
};

export const redisRestart: FaultAction = async (fault, host, _prng, node) => {
  fault.t0 = hr();
  const { awayMs } = await host.restartNode(node, fault, 0);
  fault.t1 = hr();
  fault.detail = { downMs: Math.round(awayMs) };
};
