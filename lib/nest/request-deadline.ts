/**
 * The deadline of an HTTP request, which its locked calls carry (AcquireOptions.deadline): the earliest of
 * what the client or a proxy sent (else the patience its route's clients showed) and the module's budget.
 * Relative ones (`grpc-timeout`, Envoy's
 * `x-envoy-expected-rq-timeout-ms`, `budget`) count from the request's arrival, when Node read its
 * headers, not from when the locked call started: the time a request spent behind others on the
 * event loop, in guards and in pipes is part of what its client waits. An absolute one
 * (`x-request-deadline`) is ms since the epoch or a date, on the sender's clock.
 */
import type { IncomingMessage, Server } from 'node:http';
import type { OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import type { HttpAdapterHost } from '@nestjs/core';

/** The deadline header a client or another service sends: ms since the epoch, or a date. */
const DEADLINE_HEADER = 'x-request-deadline';

/** When each request arrived (Date.now()), for those read while the arrival hook was on. */
const arrivals = new WeakMap<IncomingMessage, number>();

/** When `request` arrived (Date.now() as Node read its headers), if the arrival hook was on. */
export function arrivalOf(request: IncomingMessage): number | undefined {
  return arrivals.get(request);
}

/**
 * The request's deadline in ms since the epoch, or undefined when neither it nor the module sets one.
 * `patience`: how long its route's clients wait (lib/nest/client-patience.ts), for a request that sent
 * no deadline of its own.
 */
export function deadlineOf(
  request: IncomingMessage,
  budgetMs: number | undefined,
  patience?: number,
): number | undefined {
  // Without the hook (an HTTP server the application made itself), from now: later than the arrival.
  const arrived = arrivals.get(request) ?? Date.now();
  const sent = sentDeadline(request, arrived);
  const client = sent ?? (patience === undefined ? undefined : arrived + patience);
  const budget = budgetMs === undefined ? undefined : arrived + budgetMs;
  if (client === undefined) return budget;
  return budget === undefined ? client : Math.min(client, budget);
}

/** The earliest deadline the client or a proxy sent, if any. */
function sentDeadline(request: IncomingMessage, arrived: number): number | undefined {
  const { headers } = request;
  let deadline = Number.POSITIVE_INFINITY;
  const grpc = grpcTimeout(headers['grpc-timeout']);
  if (grpc !== undefined) deadline = Math.min(deadline, arrived + grpc);
  const envoy = wholeMs(headers['x-envoy-expected-rq-timeout-ms']);
  if (envoy !== undefined) deadline = Math.min(deadline, arrived + envoy);
  const absolute = absoluteTime(headers[DEADLINE_HEADER]);
  if (absolute !== undefined) deadline = Math.min(deadline, absolute);
  return Number.isFinite(deadline) ? deadline : undefined;
}

const GRPC_UNITS: Readonly<Record<string, number>> = {
  H: 3_600_000,
  M: 60_000,
  S: 1_000,
  m: 1,
  u: 1e-3,
  n: 1e-6,
};

/** gRPC's TimeoutValue: at most 8 digits and a unit (`100m`, `2S`); anything else is no deadline. */
function grpcTimeout(value: unknown): number | undefined {
  const match = typeof value === 'string' ? /^(\d{1,8})([HMSmun])$/.exec(value) : null;
  return match ? Number(match[1]) * GRPC_UNITS[match[2]] : undefined;
}

function wholeMs(value: unknown): number | undefined {
  return typeof value === 'string' && /^\d{1,10}$/.test(value) ? Number(value) : undefined;
}

/**
 * ms since the epoch as `Date.now()` gives it, 13 digits (any time from 2001 to 2286), a fraction allowed
 * (`Date.now() + performance.now()` arithmetic gives one): a shorter number is a mistake, not a deadline.
 */
const EPOCH_MS = /^\d{13}(\.\d{1,6})?$/;
/** RFC 3339: a full date and time with its offset. */
const RFC_3339 = /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d{1,9})?([Zz]|[+-]\d{2}:\d{2})$/;
/** An HTTP date in its one current form (IMF-fixdate, RFC 9110): `Thu, 03 Dec 2026 10:00:00 GMT`. */
const HTTP_DATE =
  /^(Mon|Tue|Wed|Thu|Fri|Sat|Sun), \d{2} (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) \d{4} \d{2}:\d{2}:\d{2} GMT$/;

/**
 * One of the three forms above, or nothing: Date.parse alone reads far more (`-1`, `2026`, `1 2`), each
 * a deadline nobody meant, often one long past.
 */
function absoluteTime(value: unknown): number | undefined {
  if (typeof value !== 'string') return undefined;
  let at = Number.NaN;
  if (EPOCH_MS.test(value)) at = Number(value);
  else if (RFC_3339.test(value)) at = Date.parse(value.toUpperCase().replace(' ', 'T'));
  else if (HTTP_DATE.test(value)) at = Date.parse(value);
  return Number.isFinite(at) ? at : undefined;
}

/** The servers whose requests are timed already (one hook each, however many configurations). */
const timed = new WeakSet<Server>();

/**
 * Notes when each request of the application's HTTP server arrives, before Express or Fastify route it:
 * a listener put first on the server's `request` event. Skipped outside HTTP.
 */
export class RequestArrivals implements OnApplicationBootstrap, OnApplicationShutdown {
  private server: Server | undefined;

  constructor(
    private readonly host: HttpAdapterHost,
    /** Whether the module follows requests at all (the `requests` option). */
    private readonly wanted: boolean,
  ) {}

  onApplicationBootstrap(): void {
    if (!this.wanted) return;
    const server = this.host.httpAdapter?.getHttpServer?.() as Server | undefined;
    if (!server || typeof server.prependListener !== 'function' || timed.has(server)) return;
    timed.add(server);
    this.server = server;
    server.prependListener('request', arrived);
  }

  onApplicationShutdown(): void {
    if (!this.server) return;
    this.server.removeListener('request', arrived);
    timed.delete(this.server);
    this.server = undefined;
  }
}

function arrived(request: IncomingMessage): void {
  arrivals.set(request, Date.now());
}
