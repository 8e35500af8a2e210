/**
 * Scenario 6, transfers: each acquisition locks two distinct accounts out of `accounts` at once (the
 * libraries' multi-key paths, see adapters.ts `acquireAll`), moves 1 unit from one balance to the other
 * with a read-modify-write in Redis, and releases. Here: the keys, the pair picked per acquisition, the
 * critical section (worker side), and the balance check (harness side).
 *
 * A record's `key` column holds the pair as `from * accounts + to`, so the per-key overlap check can
 * count both accounts' holders (stats.ts) and the harness can replay the transfers to know what every
 * balance must be.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Redis } from 'ioredis';
import { COUNTER_PREFIX, type LoadResult, RECORD, RECORD_STRIDE } from './ipc';

/** Every account starts with this much, so random transfers never take one below zero. */
export const INITIAL_BALANCE = 1_000_000;

/** The lock key of an account, as an application would name it. */
export const accountKey = (i: number): string => `account:${i}`;
/** Its balance: under COUNTER_PREFIX, so its GET/SET count as the critical section, not as lock commands. */
export const balanceKey = (i: number): string => `${COUNTER_PREFIX}account:${i}`;

export const pairCode = (from: number, to: number, accounts: number): number => from * accounts + to;
export const pairOf = (code: number, accounts: number): [from: number, to: number] => [
  Math.floor(code / accounts),
  code % accounts,
];

/** A random ordered pair of distinct accounts: both the pair and the direction are uniform. */
export function pickPair(accounts: number): [from: number, to: number] {
  const from = Math.floor(Math.random() * accounts);
  const to = (from + 1 + Math.floor(Math.random() * (accounts - 1))) % accounts;
  return [from, to];
}

/**
 * The critical section: read both balances (one round trip), hold for `csMs`, write both back. Without
 * the lock, two transfers touching one account would both read the same balance and one write would be
 * lost, which the harness' replay then sees.
 */
export async function transfer(client: Redis, from: number, to: number, csMs: number): Promise<void> {
  const [a, b] = await Promise.all([client.get(balanceKey(from)), client.get(balanceKey(to))]);
  await sleep(csMs);
  await Promise.all([
    client.set(balanceKey(from), String(Number(a) - 1)),
    client.set(balanceKey(to), String(Number(b) + 1)),
  ]);
}

export interface BalanceCheck {
  /** Units by which the accounts differ from the replayed transfers, summed over accounts: lost updates. */
  lost: number;
  /** Sum of the balances minus the sum they started with: must be 0 (a transfer creates no money). */
  sumDrift: number;
}

/** Replays every completed transfer of the run and compares the balances Redis ended with. */
export function checkBalances(results: LoadResult[], accounts: number, balances: number[]): BalanceCheck {
  const expected = new Array<number>(accounts).fill(INITIAL_BALANCE);
  for (const result of results) {
    const r = result.records;
    for (let i = 0; i < r.length; i += RECORD_STRIDE) {
      const [from, to] = pairOf(r[i + RECORD.key], accounts);
      expected[from]--;
      expected[to]++;
    }
  }
  let lost = 0;
  let sumDrift = -accounts * INITIAL_BALANCE;
  for (let i = 0; i < accounts; i++) {
    // A missing or non-numeric balance counts as fully off.
    const actual = Number.isFinite(balances[i]) ? balances[i] : 0;
    lost += Math.abs(actual - expected[i]);
    sumDrift += actual;
  }
  return { lost, sumDrift };
}
