// Five throwaway redis-servers for the quorum store (Redlock over independent masters), and services on
// them. Each test file gets its own five, started once; keys are distinct per test, so tests share them.
import { afterAll, afterEach, beforeAll } from '@jest/globals';
import type { Redis } from 'ioredis';
import { LockService, type LockServiceOptions, type RedisClient } from '../../lib/core';
import { lockClient, lockLibrary } from '../support/lock-clients';
import { type RedisServer, startRedis } from '../support/redis-server';

export interface Quorum {
  servers: RedisServer[];
  /** A service on all five nodes (its own clients), closed after the test. */
  service(options?: LockServiceOptions): LockService;
  /** Fresh clients of the five nodes, disconnected after the test. */
  clients(): Redis[];
  urls(): string[];
}

export function useQuorum(count = 5): () => Quorum {
  let servers: RedisServer[] = [];
  const open: LockService[] = [];
  const clients: Redis[] = [];
  const closers: Array<() => void> = [];
  beforeAll(async () => {
    servers = await Promise.all(Array.from({ length: count }, () => startRedis()));
  });
  afterEach(async () => {
    for (const server of servers) server.resume();
    await Promise.all(open.splice(0).map((service) => service.close().catch(() => {})));
    for (const client of clients.splice(0)) client.disconnect();
    for (const close of closers.splice(0)) close();
  });
  afterAll(async () => {
    await Promise.all(servers.map((server) => server.dispose()));
  });
  const quorum: Quorum = {
    get servers() {
      return servers;
    },
    clients() {
      const made = servers.map((server) => {
        const client = server.client();
        client.on('error', () => {});
        return client;
      });
      clients.push(...made);
      return made;
    },
    service(options) {
      // The run's client library (test/support/lock-clients.ts).
      const clients: RedisClient[] =
        lockLibrary() === 'node-redis'
          ? servers.map((server) => {
              const made = lockClient(server.url);
              closers.push(made.close);
              return made.client;
            })
          : quorum.clients();
      const service = new LockService(clients, options);
      open.push(service);
      return service;
    },
    urls: () => servers.map((server) => server.url),
  };
  return () => quorum;
}
