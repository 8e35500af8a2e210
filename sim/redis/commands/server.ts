/**
 * Server commands: PING, TIME, INFO (what the library reads of it), WAIT and WAITAOF (no replicas, no
 * AOF: they answer at once), PUBLISH and PUBSUB NUMSUB, whose deliveries and counts the simulation
 * decides (SimRedis' publish and subscribers options).
 */

import { versionText } from '../number-text';
import { type Reply, ReplyError, StatusReply, wrongArity } from '../replies';
import { type CommandTable, integerArg, refuse, type Server } from './command';

/** INFO: a plain standalone master, no persistence, no memory limit, no replicas. */
function info(server: Server, args: readonly string[]): string {
  const { keyspace } = server;
  const keys = keyspace.keys();
  const expiring = keys.filter((key) => keyspace.expireAt(key) !== undefined).length;
  const sections: Record<string, string[]> = {
    server: [`redis_version:${versionText(server.version)}`, 'redis_mode:standalone', 'tcp_port:6379'],
    clients: ['connected_clients:1'],
    memory: ['maxmemory:0', 'maxmemory_human:0B', 'maxmemory_policy:noeviction'],
    persistence: ['loading:0', 'rdb_saves:0', 'aof_enabled:0'],
    stats: [`evicted_keys:${server.evictedKeys}`],
    replication: ['role:master', 'connected_slaves:0'],
    keyspace: keys.length > 0 ? [`db0:keys=${keys.length},expires=${expiring},avg_ttl=0`] : [],
  };
  const asked = args.slice(1).map((name) => name.toLowerCase());
  const all = asked.length === 0 || asked.some((name) => ['all', 'default', 'everything'].includes(name));
  return Object.entries(sections)
    .filter(([name]) => all || asked.includes(name))
    .map(([name, lines]) => [`# ${name[0].toUpperCase()}${name.slice(1)}`, ...lines].join('\r\n'))
    .join('\r\n\r\n')
    .concat('\r\n');
}

function pubsub(server: Server, args: readonly string[]): Reply {
  const sub = args[1].toUpperCase();
  if (sub === 'NUMSUB') return args.slice(2).flatMap((channel) => [channel, server.subscribers(channel)]);
  if (sub === 'NUMPAT' && args.length === 2) return 0;
  return refuse(`ERR unknown subcommand '${args[1]}'. Try PUBSUB HELP.`);
}

function timeout(text: string): void {
  if (integerArg(text) < 0) refuse('ERR timeout is negative');
}

export const SERVER_COMMANDS: CommandTable = {
  PING: {
    arity: -1,
    run: (_, args) => {
      if (args.length > 2) throw wrongArity('ping');
      return args.length === 2 ? args[1] : new StatusReply('PONG');
    },
  },
  TIME: {
    arity: 1,
    run: ({ nowUs }) => [String(Math.floor(nowUs / 1e6)), String(nowUs % 1e6)],
  },
  INFO: { arity: -1, run: info },
  WAIT: {
    arity: 3,
    noScript: true,
    run: (_, args) => {
      integerArg(args[1]);
      timeout(args[2]);
      return 0;
    },
  },
  WAITAOF: {
    arity: 4,
    noScript: true,
    since: 0x070200,
    run: (_, args) => {
      const local = integerArg(args[1]);
      integerArg(args[2]);
      timeout(args[3]);
      if (local > 0) {
        throw new ReplyError('ERR WAITAOF cannot be used when numlocal is set but appendonly is disabled.');
      }
      return [0, 0];
    },
  },
  PUBLISH: { arity: 3, run: (server, args) => server.publish(args[1], args[2]) },
  PUBSUB: { arity: -2, run: pubsub },
};
