/**
 * What every run of a benchmark worker process shares: its reports to the harness, the errors a library
 * throws from a timer (counted, never fatal), how a failure is named, and its Redis connections.
 */
import Redis from 'ioredis';
import { type CommandCounts, instrument } from './instrument';
import type { FromWorker } from './ipc';

export const uncaught: string[] = [];
const describe = (error: unknown): string =>
  error instanceof Error ? `${error.name}: ${error.message}` : String(error);
// A library that throws from a timer (redis-semaphore's default onLockLost does) must not end the run:
// the error is counted and reported.
process.on('uncaughtException', (error) => uncaught.push(describe(error)));
process.on('unhandledRejection', (error) => uncaught.push(describe(error)));
// Stopped with SIGTERM only when profiling (BENCH_WORKER_ARGS): exit normally so profiles get written.
process.on('SIGTERM', () => process.exit(0));

export function send(message: FromWorker): void {
  process.send?.(message);
}

export const kindOf = (error: unknown): string => {
  if (!(error instanceof Error)) return typeof error;
  // Some libraries' error classes keep the name 'Error' (redis-semaphore's TimeoutError does).
  return error.constructor.name !== 'Error' ? error.constructor.name : error.name;
};

export const cpuNow = (): number => {
  const { user, system } = process.cpuUsage();
  return user + system;
};

export function bump(map: Record<string, number>, key: string): void {
  map[key] = (map[key] ?? 0) + 1;
}

export function diff(after: Record<string, number>, before: Record<string, number>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [k, v] of Object.entries(after)) if (v - (before[k] ?? 0) > 0) out[k] = v - (before[k] ?? 0);
  return out;
}

export async function connect(port: number, name: string, counts?: CommandCounts, onMessage?: OnMessage) {
  const client = new Redis({ host: '127.0.0.1', port, connectionName: name });
  client.on('error', () => {});
  if (counts) instrument(client, counts, onMessage);
  if (client.status !== 'ready') await new Promise((resolve) => client.once('ready', resolve));
  return client;
}

export type OnMessage = (channel: string, message: string) => void;
