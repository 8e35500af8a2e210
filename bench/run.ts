/**
 * The benchmark: this library against redlock 5 (defaults, and retryCount -1) and redis-semaphore 5
 * (Mutex, defaults), in seven scenarios, each library against its own freshly started redis-server (five
 * of them in scenario 7, Redlock: RedlockMutex for redis-semaphore), with the workers in child processes. Prints tables and PASS/FAIL per target, writes
 * bench/results/<mode>-<timestamp>.json and bench/results/latest-<mode>.json, and the wait-time chart
 * (docs/bench/wait-times.svg in full mode, bench/results/wait-times-quick.svg in quick mode).
 *
 *   npx tsx bench/run.ts            full: ~20-25 s measured per library per scenario (about 12 minutes)
 *   npx tsx bench/run.ts --quick    a few seconds per library per scenario (several minutes)
 *   npx tsx bench/run.ts --smoke    this library only, about a second per scenario (CI's gate)
 *   options: --scenarios=2,3  --libs=nestjs-redis-lock,redlock  --dump=DIR (raw records of every run)
 *
 * Quick and smoke mode exit non-zero only on a correctness failure (a lost update, overlapping holders, a crash,
 * a failed acquisition of this library, scenario 6's balances not summing to what they started at) or
 * more than 4 commands sent per contended acquisition (scenarios 2-4); speed targets are reported, never
 * fatal.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { resolve } from 'node:path';
import { renderWaitChart, writeAtomically } from './chart';
import { sleepUntil } from './clock';
import {
  type LoadScenario,
  type LoadTiming,
  type ManyScenario,
  type Mode,
  type OpenScenario,
  PROBE_GAPS,
  SCENARIOS,
  SMOKE_LIBS,
  TIMING,
  type Timing,
} from './config';
import {
  counterKey,
  LIBS,
  type LibName,
  type LoadSpec,
  OURS,
  OURS_BASELINE,
  REQUEST,
  REQUEST_STRIDE,
} from './ipc';
import { commandStats, goAll, initAll, openWindow } from './load-run';
import { combineRounds, type FloorMetrics, type ManyMetrics, type RoundOutcome } from './metrics';
import type { RequestOutcome } from './open-loop';
import { Pool, WorkerProcess } from './processes';
import { startRedis } from './redis-server';
import { evaluateTargets, formatTables, formatTargets, type Results } from './report';
import { combineOpenRounds, type OpenMetrics } from './report-open';
import { failOnBroken, headline, libsArg, reportHead, rotate, startLog, writeResults } from './session';
import { analyzeRun, summarize } from './stats';
import { balanceKey, checkBalances, INITIAL_BALANCE, pairOf } from './transfer';

const ROOT = resolve(__dirname, '..');

// ---------------------------------------------------------------------------------------------------
// Runs

async function loadRound(
  pool: Pool,
  scenario: LoadScenario,
  lib: LibName,
  timing: LoadTiming,
  dump: string | undefined,
  /** Open loop: the total arrival rate (spread evenly over the processes), each request's deadline, and
   * the seed of the arrival schedule (the same for every library in a round). */
  open?: { ratePerS: number; timeoutMs: number; seed: number },
): Promise<RoundOutcome> {
  // One server, or every master of a quorum (scenario 7): the counters live on the first.
  const servers = await Promise.all(Array.from({ length: scenario.masters ?? 1 }, () => startRedis()));
  const redis = servers[0];
  const load = loadavg()[0];
  const transfer = scenario.transfer === true;
  const balances = Array.from({ length: scenario.keys }, (_, i) => balanceKey(i));
  let slowing: { stop(): Promise<void> } | undefined;
  try {
    if (transfer) await redis.admin.setAll(balances, INITIAL_BALANCE);
    const processes = pool.take(scenario.processes);
    await initAll(
      processes,
      (process: number): LoadSpec => ({
        lib,
        port: redis.port,
        quorum: servers.length > 1 ? servers.map((server) => server.port) : undefined,
        process,
        workers: scenario.workersPerProcess,
        keys: scenario.keys,
        csMs: scenario.csMs,
        transfer,
        open: open && {
          ratePerS: open.ratePerS / scenario.processes,
          seed: open.seed * 1_000 + process,
          timeoutMs: open.timeoutMs,
        },
      }),
    );
    await Promise.all(servers.map((server) => server.admin.resetStats()));
    const { window, executedInWindow } = openWindow(servers, timing);
    const { startAt, measureFrom, measureTo, stopAt } = window;
    if (scenario.slow) slowing = slowDown(processes[scenario.slow.process], scenario.slow, startAt, stopAt);
    const results = await goAll(processes, window);
    const { executed, redisCpuUs } = await executedInWindow();
    const executedTotal = await commandStats(servers);
    const counted = transfer
      ? undefined
      : await redis.admin.sum(Array.from({ length: scenario.keys }, (_, i) => counterKey(i)));
    const balanceCheck = transfer
      ? checkBalances(results, scenario.keys, await redis.admin.values(balances))
      : undefined;
    if (dump) {
      // Raw records, for digging into one run: see RECORD in ipc.ts for the columns.
      mkdirSync(dump, { recursive: true });
      const raw = {
        scenario: scenario.id,
        lib,
        measureFrom,
        measureTo,
        processes: results.map((result) => ({
          ...result,
          records: [...result.records],
          failures: [...result.failures],
        })),
      };
      writeFileSync(resolve(dump, `s${scenario.id}-${lib}-${Math.round(startAt)}.json`), JSON.stringify(raw));
    }
    const analysis = analyzeRun(
      results,
      scenario.workersPerProcess,
      { measureFrom, measureTo },
      scenario.csMs !== null,
      transfer ? (key) => pairOf(key, scenario.keys) : undefined,
    );
    const requests = open
      ? {
          outcomes: results.flatMap((result) => requestOutcomes(result.requests)),
          window: {
            from: measureFrom,
            to: measureTo,
            timeoutMs: open.timeoutMs,
            observedUntil: Math.min(...results.map((result) => result.reportedAt)),
          },
        }
      : undefined;
    return {
      analysis,
      executed,
      executedTotal,
      redisCpuUs,
      counted,
      ...balanceCheck,
      requests,
      loadavg: load,
    };
  } catch (error) {
    pool.reset();
    return { loadavg: load, error: error instanceof Error ? error.message : String(error) };
  } finally {
    await slowing?.stop();
    await Promise.all(servers.map((server) => server.stop()));
  }
}

function requestOutcomes(column: Float64Array): RequestOutcome[] {
  const out: RequestOutcome[] = [];
  for (let i = 0; i < column.length; i += REQUEST_STRIDE) {
    out.push({
      arrival: column[i + REQUEST.arrival],
      granted: column[i + REQUEST.grant],
      failed: column[i + REQUEST.failed],
      timedOut: column[i + REQUEST.timedOut] === 1,
    });
  }
  return out;
}

/**
 * Stops `worker` for `stopMs` every `everyMs` from `from` until `until` (SIGSTOP, then SIGCONT), as a
 * CPU quota or a stop-the-world pause would. `stop()` ends it and leaves the process running.
 */
function slowDown(
  worker: WorkerProcess,
  slow: NonNullable<LoadScenario['slow']>,
  from: number,
  until: number,
): { stop(): Promise<void> } {
  let ended = false;
  const cycle = (async () => {
    for (let at = from; at < until && !ended; at += slow.everyMs) {
      await sleepUntil(at);
      if (ended) break;
      worker.pause(true);
      try {
        await sleepUntil(at + slow.stopMs);
      } finally {
        worker.pause(false);
      }
    }
  })();
  return {
    async stop() {
      ended = true;
      await cycle.catch(() => {});
      worker.pause(false);
    },
  };
}

/** The critical section alone, back to back on one key, no lock: how many per second one key can serve. */
async function serialCapacity(pool: Pool, csMs: number, ms: number): Promise<number> {
  const redis = await startRedis();
  try {
    const [worker] = pool.take(1);
    const { perS } = await worker.request(
      { type: 'capacity', port: redis.port, csMs, ms },
      'capacity',
      ms + 30_000,
    );
    return perS;
  } finally {
    await redis.stop();
  }
}

/**
 * Scenario 8: the serial capacity first, then every key set at every load for every library, rounds
 * interleaved in rotated order; in a round every library gets the same arrival schedule (seed).
 */
async function openScenario(
  pool: Pool,
  scenario: OpenScenario,
  libs: LibName[],
  timing: Timing['open'],
  dump: string | undefined,
  log: (line: string) => void,
): Promise<OpenMetrics[]> {
  const capacity = await serialCapacity(pool, scenario.csMs, timing.capacityMs);
  log(`scenario 8: serial capacity of one key ${capacity.toFixed(0)}/s`);
  const run: LoadTiming = {
    rounds: timing.rounds,
    warmMs: timing.warmMs,
    measureMs: timing.measureMs,
    // Arrivals go on while the window's last requests may still wait, so they wait under the same load.
    graceMs: timing.timeoutMs,
  };
  const metrics: OpenMetrics[] = [];
  for (const keys of scenario.keySets) {
    const shape: LoadScenario = {
      kind: 'load',
      id: 8,
      title: scenario.title,
      processes: scenario.processes,
      workersPerProcess: 1,
      keys,
      csMs: scenario.csMs,
      libs,
    };
    for (const load of timing.loads ?? scenario.loads) {
      const ratePerS = load * capacity * keys;
      const outcomes = new Map<LibName, RoundOutcome[]>(libs.map((lib) => [lib, []]));
      for (let round = 0; round < timing.rounds; round++) {
        for (const lib of rotate(libs, round)) {
          log(
            `scenario 8, ${keys} key(s) at ${Math.round(load * 100)} %, round ${round + 1}/${timing.rounds}: ${lib}`,
          );
          const seed = keys * 1_000 + Math.round(load * 100) * 10 + round;
          const outcome = await loadRound(pool, shape, lib, run, dump, {
            ratePerS,
            timeoutMs: timing.timeoutMs,
            seed,
          });
          if (outcome.error) log(`  failed: ${outcome.error}`);
          outcomes.get(lib)?.push(outcome);
        }
      }
      for (const lib of libs) {
        metrics.push(
          combineOpenRounds(lib, keys, load, ratePerS, capacity, timing.timeoutMs, outcomes.get(lib) ?? []),
        );
      }
    }
  }
  return metrics;
}

/** Measures the machine's hand-off floor with two pool processes and a fresh redis-server. */
async function probeFloor(pool: Pool, gapMs: number, count: number): Promise<FloorMetrics> {
  const redis = await startRedis();
  try {
    const [sender, listener] = pool.take(2);
    await listener.request({ type: 'probe-listen', port: redis.port }, 'ready', 30_000);
    const { result } = await sender.request(
      { type: 'probe-send', spec: { port: redis.port, count, gapMs } },
      'probe-sent',
      count * (gapMs + 50) + 30_000,
    );
    await new Promise((resolve) => setTimeout(resolve, 50)); // let the last message arrive
    const { arrivals } = await listener.request({ type: 'probe-collect' }, 'probe-arrivals', 30_000);
    const push: number[] = [];
    // Messages on one connection arrive in order; match each with the send just before it.
    let j = 0;
    for (const at of arrivals) {
      while (j + 1 < result.sent.length && result.sent[j + 1] <= at) j++;
      push.push(at - result.sent[j]);
    }
    return {
      gapMs,
      push: summarize(push),
      reply: summarize(result.replyMs),
      lost: count - arrivals.length,
      errors: [],
    };
  } catch (error) {
    pool.reset();
    return {
      gapMs,
      push: summarize([]),
      reply: summarize([]),
      lost: count,
      errors: [error instanceof Error ? error.message : String(error)],
    };
  } finally {
    await redis.stop();
  }
}

async function manyRun(
  scenario: ManyScenario,
  variant: ManyScenario['variants'][number],
  lib: LibName,
  timing: (typeof TIMING)[Mode]['many'],
): Promise<ManyMetrics> {
  const redis = await startRedis();
  const worker = new WorkerProcess(true);
  const base: ManyMetrics = {
    scenario: 5,
    lib,
    variant: variant.name,
    waiters: scenario.waiters,
    keys: variant.keys,
    connections: Number.NaN,
    heapPerWaiter: Number.NaN,
    harnessHeapPerWaiter: Number.NaN,
    netHeapPerWaiter: Number.NaN,
    queued: null,
    idleCommandsPerWaiterPerS: Number.NaN,
    sentPerWaiter: Number.NaN,
    clientCpuUsPerWaiter: Number.NaN,
    redisCpuUsPerWaiter: Number.NaN,
    drainMs: Number.NaN,
    afterRelease: summarize([]),
    granted: 0,
    failures: 0,
    failureKinds: {},
    uncaught: 0,
    errors: [],
  };
  try {
    const redisCpuFrom = await redis.admin.cpuUs();
    const { waiting } = await worker.request(
      {
        type: 'many',
        spec: {
          lib,
          port: redis.port,
          variant: variant.name,
          waiters: scenario.waiters,
          keys: variant.keys,
          settleMs: timing.settleMs,
          holdMs: timing.holdMs,
        },
      },
      'waiting',
      120_000,
    );
    const connections = await redis.admin.clientCount();
    const { result } = await worker.request({ type: 'release' }, 'many-result', 120_000);
    return {
      ...base,
      connections,
      heapPerWaiter: waiting.heapPerWaiter,
      harnessHeapPerWaiter: waiting.harnessHeapPerWaiter,
      netHeapPerWaiter: waiting.heapPerWaiter - waiting.harnessHeapPerWaiter,
      queued: waiting.queued,
      idleCommandsPerWaiterPerS: result.idleCommandsPerWaiterPerS,
      sentPerWaiter: result.sentPerWaiter,
      clientCpuUsPerWaiter: result.cpuUsPerWaiter,
      redisCpuUsPerWaiter: ((await redis.admin.cpuUs()) - redisCpuFrom) / scenario.waiters,
      drainMs: result.drainMs,
      afterRelease: summarize(result.afterRelease),
      granted: result.granted,
      failures: result.failures,
      failureKinds: result.failureKinds,
      uncaught: result.uncaught.length,
    };
  } catch (error) {
    return { ...base, errors: [error instanceof Error ? error.message : String(error)] };
  } finally {
    worker.kill();
    await redis.stop();
  }
}

// ---------------------------------------------------------------------------------------------------

function parseArgs(argv: string[]) {
  let mode: Mode = 'full';
  let scenarios: number[] | undefined;
  let libs: LibName[] | undefined;
  let dump: string | undefined;
  let rounds: number | undefined;
  let baseline = false;
  for (const arg of argv) {
    if (arg === '--quick') mode = 'quick';
    else if (arg === '--smoke') mode = 'smoke';
    else if (arg === '--full') mode = 'full';
    else if (arg.startsWith('--dump=')) dump = resolve(arg.slice(7));
    else if (arg.startsWith('--scenarios=')) scenarios = arg.slice(12).split(',').map(Number);
    else if (arg.startsWith('--libs=')) libs = libsArg(arg, LIBS);
    else if (arg.startsWith('--rounds=')) rounds = Number(arg.slice(9));
    else if (arg.startsWith('--baseline=')) {
      // Another build of this library (`tsc -p tsconfig.build.json --outDir DIR`, inside the project, so
      // that it finds its dependencies), run as OURS_BASELINE beside this one; the workers inherit it.
      process.env.BENCH_BASELINE = resolve(arg.slice(11));
      baseline = true;
    } else
      throw new Error(
        `unknown argument ${arg}; usage: bench/run.ts [--smoke|--quick] [--scenarios=1,2] [--libs=a,b] [--dump=DIR] [--rounds=N] [--baseline=DIR]`,
      );
  }
  if (mode === 'smoke') libs ??= SMOKE_LIBS;
  return { mode, scenarios, libs, dump, rounds, baseline };
}

/** The scenario's libraries, with the baseline build after this library's when one was given. */
function withBaseline(libs: readonly LibName[], baseline: boolean): LibName[] {
  return baseline && libs.includes(OURS)
    ? libs.flatMap((lib) => (lib === OURS ? [lib, OURS_BASELINE] : [lib]))
    : [...libs];
}

async function main(): Promise<void> {
  const { mode, scenarios, libs, dump, rounds, baseline } = parseArgs(process.argv.slice(2));
  const timing = TIMING[mode];
  const started = new Date();
  const results: Results = { load: [], many: [], floors: [], open: [] };
  const pool = new Pool(() => new WorkerProcess(false));
  const log = startLog(mode);
  try {
    if (!scenarios || scenarios.some((id) => id >= 2 && id <= 4)) {
      for (const [gap, count] of [
        [PROBE_GAPS.short, timing.probe.short],
        [PROBE_GAPS.long, timing.probe.long],
      ]) {
        log(`hand-off floor: bare PUBLISH to another process after ${gap} ms idle, ${count} times`);
        results.floors.push(await probeFloor(pool, gap, count));
      }
    }
    for (const scenario of SCENARIOS) {
      if (scenarios && !scenarios.includes(scenario.id)) continue;
      const scenarioLibs = withBaseline(scenario.libs, baseline).filter(
        (lib) => !libs || libs.includes(lib) || lib === OURS_BASELINE,
      );
      if (scenario.kind === 'load') {
        const timed =
          scenario.id === 1 ? timing.uncontended : scenario.id === 3 ? timing.long : timing.contended;
        const t = rounds ? { ...timed, rounds } : timed;
        const outcomes = new Map<LibName, RoundOutcome[]>(scenarioLibs.map((lib) => [lib, []]));
        for (let round = 0; round < t.rounds; round++) {
          for (const lib of rotate(scenarioLibs, round)) {
            log(`scenario ${scenario.id}, round ${round + 1}/${t.rounds}: ${lib}`);
            const outcome = await loadRound(pool, scenario, lib, t, dump);
            if (outcome.error) log(`  failed: ${outcome.error}`);
            outcomes.get(lib)?.push(outcome);
          }
        }
        for (const lib of scenarioLibs) {
          const workers = scenario.processes * scenario.workersPerProcess;
          results.load.push(
            combineRounds(scenario.id, lib, workers, outcomes.get(lib) ?? [], scenario.slow?.process),
          );
        }
      } else if (scenario.kind === 'open') {
        results.open.push(...(await openScenario(pool, scenario, scenarioLibs, timing.open, dump, log)));
      } else {
        pool.close();
        for (const variant of scenario.variants) {
          for (const lib of scenarioLibs) {
            log(`scenario ${scenario.id} (${variant.name}): ${lib}`);
            const metrics = await manyRun(scenario, variant, lib, timing.many);
            if (metrics.errors.length) log(`  failed: ${metrics.errors.join(' | ')}`);
            results.many.push(metrics);
          }
        }
      }
    }
  } finally {
    pool.close();
  }

  const targets = evaluateTargets(results);
  const finished = new Date();
  console.log(headline('nestjs-redis-lock benchmark', mode, started));
  console.log(formatTables(results));
  const gated = (t: (typeof targets)[number]) => t.correctness || t.name.startsWith('commands sent');
  // A smoke's second or two per scenario says nothing about speed: only what it gates is shown.
  if (mode === 'smoke')
    console.log(`\nGated targets (smoke: no speed measured):\n${formatTargets(targets.filter(gated))}`);
  else console.log(`\nTargets (within this run; * = correctness):\n${formatTargets(targets)}`);

  const caption = `${mode} run of ${started.toISOString().slice(0, 16).replace('T', ' ')} UTC, ${cpus().length} CPUs`;
  const report = {
    ...reportHead(mode, started, finished, caption),
    timing,
    scenarios: SCENARIOS,
    floors: results.floors,
    load: results.load,
    many: results.many,
    open: results.open,
    targets,
  };
  const complete = !scenarios && !libs;
  writeResults(report, { mode, started, complete });
  const svgPath =
    mode === 'full' && complete
      ? resolve(ROOT, 'docs/bench/wait-times.svg')
      : resolve(ROOT, `bench/results/wait-times-${mode}.svg`);
  const charted = results.load.some((m) => m.scenario === 2 || m.scenario === 3);
  if (charted) writeAtomically(svgPath, await renderWaitChart(results.load, caption));
  if (charted) console.log(`wrote ${svgPath.slice(ROOT.length + 1)}`);

  // CI gates on correctness and on the Redis load bound, which is a count and so immune to a noisy
  // machine; speed targets are reported only, since a shared CI machine cannot time them fairly.
  failOnBroken(
    mode,
    targets.filter((t) => gated(t) && !t.pass),
  );
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
