/**
 * The shape of a waiter's or owner's token, shared by the stores: `<instance>:<n>~<claim window ms>`.
 * The instance names the service whose wake-ups reach it; the claim window tells whoever hands the lock
 * on how long to reserve it (the Redis scripts read the same two parts: common.lua).
 */

/** The token of call number `n` of store instance `instance`. */
export function lockToken(instance: string, n: number, claimWindow: number): string {
  return `${instance}:${n.toString(36)}~${claimWindow}`;
}

/**
 * The token of key number `index` (from 1) of a multi-key call whose first key holds `first`: the same
 * instance and claim window, so the scripts route and reserve it alike.
 */
export function memberToken(first: string, index: number): string {
  const tilde = first.lastIndexOf('~');
  return `${first.slice(0, tilde)}.${index.toString(36)}${first.slice(tilde)}`;
}

/** The instance part of a token. */
export function instanceOf(token: string): string {
  return token.slice(0, token.indexOf(':'));
}

/** How long a grant to `token` stays reserved until it confirms, ms. */
export function claimWindowOf(token: string): number {
  return Number(token.slice(token.lastIndexOf('~') + 1));
}
