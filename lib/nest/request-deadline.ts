/**
 * The deadline of an HTTP request, which its locked calls carry (AcquireOptions.deadline): the earliest of
 * what the client or a proxy sent (else the patience its route's clients showed) and the module's budget.
 * Relative ones (`grpc-timeout`, Envoy's
 * `x-envoy-expected-rq-timeout-ms`, `budget`) count from the request's arrival, when Node read its
 * headers, not from when the locked call started: the time a request spent behind others on the
 * event loop, in guards and in pipes is part of what its client waits. An absolute one (`header`,
 * `x-request-deadline` by default) is ms since the epoch or a date, on the sender's clock.
 */
import type { IncomingMessage, Server } from 'node:http';
import type { OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import type { HttpAdapterHost } from '@nestjs/core';
import { LockOptionsError } from '../errors/lock-options.error';
import { describeValue } from '../options/describe-value';
import { checkKnownKeys, MAX_MS } from '../options/option-checks';

/** The module option `requestDeadline`. */
export interface RequestDeadline {
  /**
   * Every locked call made for a request is to be done this many ms after the request arrived; a
   * request that sent an earlier deadline keeps its own. Default: none.
   */
  budget?: number;
  /**
   * Read the deadline a client or proxy sent: `grpc-timeout`, `x-envoy-expected-rq-timeout-ms`, and the
   * absolute `header`. A request can only shorten its own waits this way. Default true.
   */
  headers?: boolean;
  /** The header of an absolute deadline (ms since the epoch, or a date). Default 'x-request-deadline'. */
  header?: string;
}

export interface ResolvedRequestDeadline {
  readonly budget: number | undefined;
  readonly headers: boolean;
  readonly header: string;
}

export const DEFAULT_REQUEST_DEADLINE: ResolvedRequestDeadline = {
  budget: undefined,
  headers: true,
  header: 'x-request-deadline',
};

export function checkRequestDeadline(value: unknown): ResolvedRequestDeadline {
  const fail = (why: string): never => {
    throw new LockOptionsError(
      `requestDeadline must be an object such as { budget: 2000 } (budget: ms from a request's arrival; ` +
        `headers: whether to read the deadline a client or proxy sent; header: the name of an absolute ` +
        `one); ${why}, got ${describeValue(value)}.`,
    );
  };
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return fail('it is not one');
  checkKnownKeys(value, ['budget', 'headers', 'header'], 'requestDeadline');
  const { budget, headers, header } = value as Record<string, unknown>;
  if (
    budget !== undefined &&
    !(Number.isInteger(budget) && (budget as number) > 0 && (budget as number) <= MAX_MS)
  )
    fail(`budget must be an integer number of ms from 1 to ${MAX_MS}`);
  if (headers !== undefined && typeof headers !== 'boolean') fail('headers must be true or false');
  if (header !== undefined && !(typeof header === 'string' && /^[!#$%&'*+.^_`|~0-9a-z-]+$/i.test(header)))
    fail('header must be an HTTP header name');
  return {
    budget: budget as number | undefined,
    headers: headers !== false,
    header: ((header as string | undefined) ?? DEFAULT_REQUEST_DEADLINE.header).toLowerCase(),
  };
}

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
  settings: ResolvedRequestDeadline,
  patience?: number,
): number | undefined {
  // Without the hook (an HTTP server the application made itself), from now: later than the arrival.
  const arrived = arrivals.get(request) ?? Date.now();
  const sent = settings.headers ? sentDeadline(request, arrived, settings.header) : undefined;
  const client = sent ?? (patience === undefined ? undefined : arrived + patience);
  const budget = settings.budget === undefined ? undefined : arrived + settings.budget;
  if (client === undefined) return budget;
  return budget === undefined ? client : Math.min(client, budget);
}

/** The earliest deadline the client or a proxy sent, if any. */
function sentDeadline(request: IncomingMessage, arrived: number, header: string): number | undefined {
  const { headers } = request;
  let deadline = Number.POSITIVE_INFINITY;
  const grpc = grpcTimeout(headers['grpc-timeout']);
  if (grpc !== undefined) deadline = Math.min(deadline, arrived + grpc);
  const envoy = wholeMs(headers['x-envoy-expected-rq-timeout-ms']);
  if (envoy !== undefined) deadline = Math.min(deadline, arrived + envoy);
  const absolute = absoluteTime(headers[header]);
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
 * ms since the epoch (digits, a fraction allowed: `Date.now() + performance.now()` arithmetic gives one),
 * or a date Date.parse reads (RFC 3339, an HTTP date).
 */
function absoluteTime(value: unknown): number | undefined {
  if (typeof value !== 'string' || value.length > 64) return undefined;
  const at = /^\d+(\.\d+)?$/.test(value) ? Number(value) : Date.parse(value);
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
    /** Whether the module takes anything from a request (relative deadlines, its clients' departures). */
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
