/**
 * Nemesis run: `tsx chaos/run.ts [--quick] [--seed N] [--duration S] [--topology single|redlock|sentinel]
 * [--workload all|mutex|semaphore|rw] [--sentinel-down-after MS]` (`both` is read as `all`).
 *
 * Starts a topology (chaos/topologies/: one lock server, five holding each lock on a majority, or a
 * Sentinel-managed master and its replica, each behind a fault-injecting TCP proxy, and a "resource"
 * server reached directly, standing for the application's database), N worker processes
 * that take locks and run the workloads under them (chaos/workloads/), and a seeded nemesis
 * (chaos/faults/). Then the checkers (chaos/checks/) judge the history the run recorded: fenced writes
 * in the resource's own order, lost updates of the unfenced twin (which must occur: the checkers are
 * shown to see), overlapping validity windows, hangs, unhandled rejections and untyped errors, keys
 * without a TTL. With the semaphore and read-write workloads (by default, but on redlock), other agents
 * take permits, or read or write, on keys of their own: never more holders than permits, a writer
 * always alone, fences in grant order, no waiter left behind, their keys gone after the run. Exits 1
 * on any violation, printing the seed to reproduce; writes chaos/results/.
 */
import { writeFileSync } from 'node:fs';
import { checkHistory } from './checks';
import { type CheckContext } from './checks/check';
import { checkKeyHygiene } from './checks/key-hygiene';
import { effectiveness } from './checks/sensitivity';
import { hr, Prng, sleep, writeResult } from './common';
import { settingsFrom } from './config';
import { closeAll, drain, probe, sharedLockKeys, untilGone } from './coordinator/end-phases';
import { nemesisHost } from './coordinator/host';
import { WorkerPool } from './coordinator/workers';
import { type Fault, type FaultKind, quickPlan, randomKind } from './faults/kinds';
import { Nemesis } from './faults/nemesis';
import { emptyHistory, type Violation } from './history';
import { buildResult, printSummary } from './report';
import { topologyNamed } from './topologies';
import { COUNTER_PREFIX, FENCED_PREFIX, monitorResource } from './workloads/resource-monitor';

const settings = settingsFrom(process.argv.slice(2));
const { quick, seed, cfg, reproduce } = settings;
/** The locks several callers hold at once: the semaphores, then the read-write locks. */
const sharedKeys = [...(cfg.semaphore?.keys ?? []), ...(cfg.readWrite?.keys ?? [])];
/** Every lock the workers take: the mutexes, then the others. */
const allKeys = [...cfg.keys, ...sharedKeys];
/**
 * With no mutex workload there is no twin read to aim a GC pause at: it aims at a semaphore's or a
 * read-write lock's hold.
 */
const mutex = cfg.agents > 0;
const topology = topologyNamed(settings.topology, settings);
const prng = new Prng(seed);
const history = emptyHistory();
const violations: Violation[] = [];

process.on('unhandledRejection', (error) =>
  violations.push({ check: 'coordinator unhandled rejection', detail: String(error) }),
);

async function main(): Promise<number> {
  const started = hr();
  const pool = new WorkerPool(
    history,
    violations,
    (slot, generation) => ({
      slot,
      lockPorts: topology.lockPorts(),
      sentinel: topology.sentinel?.(),
      resourcePort: topology.resource.port,
      keys: cfg.keys,
      agents: cfg.agents,
      ttl: cfg.ttl,
      claimWindow: cfg.claimWindow,
      waitTimeout: cfg.waitTimeout,
      commandTimeout: cfg.commandTimeout,
      nodeTimeout: cfg.nodeTimeout,
      lockPrefix: cfg.lockPrefix,
      workMs: cfg.workMs,
      semaphore: cfg.semaphore,
      readWrite: cfg.readWrite,
      seed: seed * 31 + slot * 1_000 + generation,
    }),
    mutex ? 'read' : 'work',
  );
  setTimeout(() => {
    console.log(
      `\nFAIL: the run exceeded its ${settings.budgetMs / 1000} s budget (a hang?); reproduce with: ${reproduce}`,
    );
    for (const v of violations.slice(0, 20))
      console.log(`  - ${v.check}: ${JSON.stringify(v.detail).slice(0, 600)}`);
    const stuck = [...pool.open].map((r) => ({ op: r.op, key: r.key, ageMs: Math.round(hr() - r.t0) }));
    console.log(`  calls still open: ${JSON.stringify(stuck).slice(0, 1000)}`);
    process.exit(1);
  }, settings.budgetMs).unref();
  const { semaphore: sem, readWrite: rw } = cfg;
  console.log(
    `chaos: ${quick ? 'quick' : 'full'} run on ${topology.name}` +
      (settings.topology === 'sentinel' ? ` (down-after ${settings.sentinelDownAfterMs} ms)` : '') +
      `, seed ${seed}, ` +
      `${cfg.workers} workers x ${cfg.agents} agents on ${cfg.keys.length} locks` +
      (sem ? ` + ${sem.agents} agents on ${sem.keys.length} semaphores of ${sem.permits} permits` : '') +
      (rw
        ? ` + ${rw.agents} agents on ${rw.keys.length} read-write locks (1 call in ${1 / rw.writes} writes)`
        : '') +
      `, ttl ${cfg.ttl} ms, claim window ${cfg.claimWindow} ms, nemesis ${Math.round(cfg.nemesisMs / 1000)} s`,
  );
  if (settings.workload === 'all' && !sem && !rw)
    console.log('  (no semaphore or read-write workload: redlock has neither)');
  await topology.start();
  const monitor = await monitorResource(topology.resource, history);
  await Promise.all(Array.from({ length: cfg.workers }, (_, slot) => pool.spawn(slot)));
  const tReady = hr();
  await sleep(1_000);

  // --- nemesis ---------------------------------------------------------------------------------
  const nemesis = new Nemesis(nemesisHost(pool, topology, history, cfg), prng);
  history.faults = nemesis.faults;
  const tNemesis = hr();
  // Quick mode ends its nemesis 38 s after the start at the latest, whatever the start-up took.
  const deadline = Math.min(tNemesis + cfg.nemesisMs, quick ? started + 38_000 : Infinity);
  const plan: FaultKind[] = quick ? (topology.quickPlan?.(prng) ?? quickPlan(prng, topology.faults)) : [];
  // Quick mode repeats GC pauses until one shows the twin losing an update; without a twin, none can.
  let effectivePauseSeen = !mutex;
  // Quick mode's promise is every fault kind of the topology at least once, and one GC pause that shows
  // the twin losing an update: once both have happened, its nemesis is done.
  const quickDone = () => quick && plan.length === 0 && effectivePauseSeen;
  while (hr() < deadline && !quickDone()) {
    let kind = plan.shift();
    if (!kind && quick && !effectivePauseSeen) kind = 'gc-pause';
    kind ??= randomKind(prng, topology.faults);
    const fault = await nemesis.inject(kind);
    logFault(fault, tNemesis);
    await sleep(prng.int(cfg.gapMs[0], cfg.gapMs[1]));
    if (!effectivePauseSeen)
      effectivePauseSeen = nemesis.faults.some((f) => effectiveness(history, f).effective);
  }
  const tNemesisEnd = hr();

  // --- heal and calm, then drain, probe and close ---------------------------------------------------
  await topology.heal();
  await pool.heal();
  await Promise.all(topology.nodes.map((node) => node.admin.ping()));
  const tCalm = hr();
  await sleep(cfg.calmMs);
  const drainMs = await drain(pool, cfg, violations);
  const probeMax = await probe(pool, { ...cfg, keys: allKeys }, violations);
  const closedAll = await closeAll(pool, history, violations);
  const tClosed = hr();
  await sleep(300);
  const gone = sharedLockKeys(cfg.lockPrefix, sharedKeys);
  const goneBy = tClosed + Math.max(cfg.waitTimeout, cfg.ttl) + cfg.claimWindow;
  const goneWaitMs = gone.length > 0 ? await untilGone(topology.nodes, gone, goneBy) : 0;

  // --- let MONITOR catch up, then read what Redis holds ----------------------------------------
  await monitor.catchUp();
  const snapshot = await topology.snapshotKeys([COUNTER_PREFIX, FENCED_PREFIX]);
  const hygiene = checkKeyHygiene({ ...snapshot, gone });
  violations.push(...hygiene.violations);
  monitor.stop();
  await topology.stop();

  const ctx: CheckContext = {
    ...cfg,
    keys: allKeys,
    now: hr(),
    tCalm,
    quick,
    nodes: topology.nodes.length,
    mutex,
  };
  const verdicts = checkHistory(history, ctx);
  violations.push(...verdicts.violations);
  const result = buildResult(settings, history, verdicts, violations, {
    now: ctx.now,
    started,
    tReady,
    tNemesis,
    tNemesisEnd,
    drainMs,
    probeMax,
    hygiene: { ...hygiene.stats, sharedKeysGoneWaitMs: Math.round(goneWaitMs) },
    workerRestarts: [...pool.slots.values()].reduce((n, s) => n + s.generation, 0),
    crashes: pool.crashes,
    workersKilledAtClose: closedAll.filter(({ killed }) => killed).length,
    workerLeftovers: closedAll.map(({ slot, closed }) => ({
      slot,
      resources: closed?.resources,
      redisErrors: closed?.redisErrors,
    })),
    proxy: Object.fromEntries(topology.nodes.map((node) => [node.name, node.proxy.stats])),
    notes: topology.notes?.() ?? [],
  });
  const name = `chaos${quick ? '-quick' : ''}${settings.topology === 'single' ? '' : `-${settings.topology}`}${
    settings.workload === 'all' ? '' : `-${settings.workload}`
  }`;
  const file = writeResult(name, result);
  // Every call, one per line, for digging into a failure (the JSON keeps only a sample in full mode).
  writeFileSync(
    file.replace(/\.json$/, '.calls.jsonl'),
    [...history.ops.values()].map((r) => JSON.stringify(r)).join('\n'),
  );
  printSummary(result, file);
  return violations.length === 0 ? 0 : 1;
}

function logFault(f: Fault, t0: number): void {
  const at = ((f.t0 - t0) / 1000).toFixed(1).padStart(6);
  const detail = f.skipped ? `skipped: ${f.skipped}` : JSON.stringify(f.detail);
  console.log(`  ${at}s  ${f.kind.padEnd(19)} ${detail}`);
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(`chaos run crashed (seed ${seed}; reproduce with: ${reproduce})`, error);
    process.exit(2);
  },
);
