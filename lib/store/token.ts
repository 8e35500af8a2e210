import { randomBytes } from 'node:crypto';
import type { LockTicket, TicketTerms } from './lock-store';

/**
 * The shape of a waiter's or owner's token, shared by the stores: `<instance>:<n>~<claim window ms>`.
 * The instance names the service whose wake-ups reach it; the window tells whoever hands the lock on
 * how long to reserve it (the Redis scripts read the same parts: prelude.lua).
 */

/**
 * The token of call number `n` of store instance `instance`. A read-write lock's reader has `!` before
 * the claim window: the scripts tell readers from writers by their tokens, in line and holding.
 */
export function lockToken(instance: string, n: number, claimWindow: number, reader = false): string {
  return `${instance}:${n.toString(36)}${reader ? '!' : ''}~${claimWindow}`;
}

/** Whether a token is a read-write lock's reader's. */
export function isReaderToken(token: string): boolean {
  return token.charCodeAt(token.lastIndexOf('~') - 1) === 33;
}

/**
 * The token of key number `index` (from 1) of a multi-key call whose first key holds `first`: the same
 * instance and claim window, so the scripts route and reserve it alike.
 */
export function memberToken(first: string, index: number): string {
  const tilde = first.lastIndexOf('~');
  return `${first.slice(0, tilde)}.${index.toString(36)}${first.slice(tilde)}`;
}

/**
 * A store's id in its tokens and wake channel: random, after the service's `instanceName` if it has one
 * (`<name>@<random>`). Never a ":" (the scripts read the instance up to the first one).
 */
export function storeInstanceId(name: string | undefined): string {
  return name === undefined
    ? randomBytes(9).toString('base64url')
    : `${name}@${randomBytes(6).toString('base64url')}`;
}

/** The instance part of a token. */
export function instanceOf(token: string): string {
  return token.slice(0, token.indexOf(':'));
}

/** How long a grant to `token` stays reserved until it confirms, ms. */
export function claimWindowOf(token: string): number {
  return Number(token.slice(token.lastIndexOf('~') + 1));
}

/**
 * What every store's ticket holds: the key, a token (the call's `n`-th of `instance`, a reader's
 * marked; or, for a later key of a multi-key call, derived from its first key's), the ttl, claim
 * window, and the kind of lock (a semaphore's permits above 1, a read-write lock's mode).
 */
export function ticketFields(
  instance: string,
  n: number,
  key: string,
  { ttl, claimWindow, member, kind }: TicketTerms,
): LockTicket {
  const permits = kind?.permits !== undefined && kind.permits > 1 ? kind.permits : undefined;
  const mode = kind?.mode;
  const token = member
    ? memberToken(member.of, member.index)
    : lockToken(instance, n, claimWindow, mode === 'read');
  const ticket: { -readonly [F in keyof LockTicket]: LockTicket[F] } = { key, token, ttl, claimWindow };
  if (permits !== undefined) ticket.permits = permits;
  if (mode !== undefined) ticket.mode = mode;
  return ticket;
}

/** semaphore.lua's kind of a ticket: a semaphore's permits, "rw" for a read-write lock; "" for a mutex. */
export function kindOf(ticket: LockTicket): string {
  return ticket.mode !== undefined ? 'rw' : ticket.permits ? String(ticket.permits) : '';
}
