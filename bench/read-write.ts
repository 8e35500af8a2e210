/**
 * The read-mostly benchmark: this library's read-write lock (`acquire(key, { mode: 'read' })` for 90 % of
 * the acquisitions, `{ mode: 'write' }` for 10 %) against its plain mutex taken for every acquisition,
 * reads and writes alike (what users do without a read-write lock). 4 processes × 10 workers, one key;
 * each acquisition's side is drawn from a seeded generator (per round, process and worker: the same
 * draws for both variants of a round); each holder INCRs the readers' or the writers' counter, GETs the
 * other (a writer must find itself alone and no reader in, a reader no writer), holds 20 ms, DECRs,
 * releases. Each run has its own freshly started redis-server (a free port, never 6379); the variants
 * run one after the other, 3 rounds in rotated order, and each figure is the median of a variant's 3 runs
 * (fairness and most at once: its worst run). No peer: no Node Redis read-write lock is installed.
 * Prints a table and the targets; writes bench/results/<mode>-read-write-<timestamp>.json and
 * bench/results/latest-read-write-<mode>.json. The runs are bench/kind-run.ts's, as the semaphore's.
 *
 *   npx tsx bench/read-write.ts            full: 2 s warm-up + 10 s measured per run (about 2 minutes)
 *   npx tsx bench/read-write.ts --quick    0.5 s + 4 s per run (under a minute)
 *   options: --libs=read-write,mutex  --rounds=N
 *
 * Quick mode exits non-zero only on a correctness failure (an overlap, a failed acquisition, a variant
 * with no complete run); the throughput and writer-wait targets are reported, never fatal.
 */
import { runKindBench } from './kind-run';
import type { KindSide } from './kind-worker';
import { WAIT_TIMEOUT_MS } from './kind-worker';
import {
  formatReadWrite,
  READ_WRITE_VARIANTS,
  type ReadWriteVariant,
  readWriteTargets,
  SIDES,
} from './read-write-report';

const SHAPE = { processes: 4, workersPerProcess: 10, holdMs: 20 } as const;
/** The share of the acquisitions that read. */
const READ_SHARE = 0.9;
const KEY = 'bench:read-write';
const COUNTERS = { write: 'bench:rw-writers', read: 'bench:rw-readers' } as const;

/** A write (alone) and a read (shared by readers), in SIDES order; `modes`: with their modes, or none. */
const sides = (modes: boolean): KindSide[] =>
  SIDES.map((name) => ({
    name,
    share: name === 'read' ? READ_SHARE : 1 - READ_SHARE,
    options: modes ? { mode: name } : {},
    counter: COUNTERS[name],
    ...(name === 'write' ? { limit: 1 } : {}),
  }));

runKindBench<ReadWriteVariant>({
  name: 'read-write',
  title: 'nestjs-redis-lock read-write benchmark',
  variants: READ_WRITE_VARIANTS,
  shape: SHAPE,
  lock: (variant) => ({ lib: 'nestjs-redis-lock', key: KEY, sides: sides(variant === 'read-write') }),
  describe: (timing) =>
    `read-mostly: ${SHAPE.processes} processes x ${SHAPE.workersPerProcess} workers, 1 key, each ` +
    `acquisition a read (${READ_SHARE * 100} %) or a write (${Math.round((1 - READ_SHARE) * 100)} %), drawn ` +
    `from a seeded generator (the same draws for both variants of a round), each held ${SHAPE.holdMs} ms; ` +
    `${timing.rounds} round(s) of ${timing.measureMs / 1000} s measured (median of the runs; grants, ` +
    `starved and most at once: the worst run)\n` +
    `  read-write: acquire(key, { mode: 'read' | 'write', waitTimeout: ${WAIT_TIMEOUT_MS} }), lease.release()\n` +
    `  mutex: acquire(key, { waitTimeout: ${WAIT_TIMEOUT_MS} }) for reads and writes alike\n` +
    `  each holder INCRs ${COUNTERS.read} or ${COUNTERS.write} and GETs the other: a writer must be ` +
    `alone, a reader see no writer\n` +
    '  no peer: no Node Redis read-write lock is installed (none in devDependencies)',
  table: formatReadWrite,
  targets: readWriteTargets,
  scenario: {
    key: KEY,
    readShare: READ_SHARE,
    counters: COUNTERS,
    waitTimeoutMs: WAIT_TIMEOUT_MS,
    peer: 'none: no Node Redis read-write lock is installed',
  },
});
