/**
 * The semaphore benchmark: this library's fair semaphore (`acquire(key, { permits: 3 })`) against
 * redis-semaphore 5's `Semaphore` (limit 3, a retry every 10 ms). 4 processes × 10 workers, one key, 3
 * permits; each worker loops: acquire, INCR the holders' counter, hold 20 ms, DECR, release. Each run
 * has its own freshly started redis-server (a free port, never 6379); the libraries run one after the
 * other, 3 rounds in rotated order, and each figure is the median of a library's 3 runs (fairness and
 * holders at once: its worst run). Prints a table and the targets; writes
 * bench/results/<mode>-semaphore-<timestamp>.json and bench/results/latest-semaphore-<mode>.json.
 * The runs themselves are bench/kind-run.ts's, shared with bench/read-write.ts.
 *
 *   npx tsx bench/semaphore.ts            full: 2 s warm-up + 10 s measured per run (about 2 minutes)
 *   npx tsx bench/semaphore.ts --quick    0.5 s + 4 s per run (under a minute)
 *   options: --libs=nestjs-redis-lock,redis-semaphore  --rounds=N
 *
 * Quick mode exits non-zero only on a correctness failure (more holders than permits at once, a failed
 * acquisition of this library, a library with no complete run); the speed, fairness and command targets
 * are reported, never fatal.
 */
import { runKindBench } from './kind-run';
import { PEER_OPTIONS, WAIT_TIMEOUT_MS } from './kind-worker';
import { formatSemaphore, SEMAPHORE_LIBS, type SemaphoreLib, semaphoreTargets } from './semaphore-report';

/** The scenario of the issue: 4 processes × 10 workers, one key, 3 permits, each permit held 20 ms. */
const SHAPE = { processes: 4, workersPerProcess: 10, holdMs: 20 } as const;
const PERMITS = 3;
const SEMAPHORE_KEY = 'bench:semaphore';
/** INCRed by each holder after its grant, DECRed before its release. */
const HOLDERS_KEY = 'bench:semaphore-holders';

runKindBench<SemaphoreLib>({
  name: 'semaphore',
  title: 'nestjs-redis-lock semaphore benchmark',
  variants: SEMAPHORE_LIBS,
  shape: SHAPE,
  lock: (lib) => ({
    lib,
    key: SEMAPHORE_KEY,
    sides: [
      { name: 'holder', share: 1, options: { permits: PERMITS }, counter: HOLDERS_KEY, limit: PERMITS },
    ],
  }),
  describe: (timing) =>
    `semaphore: ${SHAPE.processes} processes x ${SHAPE.workersPerProcess} workers, 1 key, permits ${PERMITS}, ` +
    `each permit held ${SHAPE.holdMs} ms; ${timing.rounds} round(s) of ${timing.measureMs / 1000} s measured ` +
    `(median of the runs; grants, starved and holders: the worst run)\n` +
    `  nestjs-redis-lock: acquire(key, { permits: ${PERMITS}, waitTimeout: ${WAIT_TIMEOUT_MS} }), lease.release()\n` +
    `  redis-semaphore: new Semaphore(client, key, ${PERMITS}, ${JSON.stringify(PEER_OPTIONS)}) per ` +
    `acquisition (its defaults but acquireTimeout), acquire(), release()`,
  table: (metrics) => formatSemaphore(metrics, PERMITS),
  targets: (metrics) => semaphoreTargets(metrics, PERMITS),
  scenario: {
    permits: PERMITS,
    key: SEMAPHORE_KEY,
    holdersKey: HOLDERS_KEY,
    waitTimeoutMs: WAIT_TIMEOUT_MS,
    peerOptions: PEER_OPTIONS,
  },
});
